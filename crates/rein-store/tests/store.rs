//! Integration tests of `SqliteStore` against real database files, and of
//! `PgStore`/`PgMemory` against a real PostgreSQL (the `postgres` module).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "store/checkpoints/mod.rs"]
mod checkpoints;
#[path = "store/concurrency.rs"]
mod concurrency;
#[path = "store/fixtures.rs"]
mod fixtures;
#[path = "store/ledger.rs"]
mod ledger;
#[path = "store/memory.rs"]
mod memory;
#[path = "store/messages.rs"]
mod messages;
#[path = "store/parity.rs"]
mod parity;
#[path = "store/postgres/mod.rs"]
mod postgres;
#[path = "store/schema.rs"]
mod schema;
#[path = "store/sessions.rs"]
mod sessions;
