//! rein-store: where rein keeps its sessions.
//!
//! [`SqliteStore`] is the durable [`SessionStore`](rein_core::SessionStore):
//! one SQLite file (WAL mode), every message committed the moment it is
//! appended. [`MemoryStore`] is re-exported so callers find both stores here.

mod error;
mod migrations;
mod sqlite;

pub use migrations::SCHEMA_VERSION;
pub use rein_core::MemoryStore;
pub use sqlite::{SqliteOptions, SqliteStore};
