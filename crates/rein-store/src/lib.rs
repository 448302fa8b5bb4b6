//! rein-store: where rein keeps its sessions.
//!
//! [`SqliteStore`] is the durable [`SessionStore`](rein_core::SessionStore):
//! one SQLite file (WAL mode), every message committed the moment it is
//! appended ([`InMemorySessionStore`](rein_core::InMemorySessionStore) is
//! the one that lives as long as the process).
//! [`FileSpill`] saves tool outputs too big for the context beside them.
//! [`SqliteMemory`] is the long-term memory
//! ([`LongTermMemory`](rein_core::memory::LongTermMemory)): its own SQLite file with
//! a full-text index.
//! [`PgStore`] and [`PgMemory`] keep the same in PostgreSQL, for several
//! machines sharing one database; a [`Lease`] makes one server at a time
//! drive a session.
//! [`SessionEvents`] is a session's numbered event log in either store, for
//! `rein serve`'s streams on any server.
//! [`Checkpoints`] snapshots a whole workspace into a private git
//! repository and restores it, for rewinding a session's turns.

pub mod checkpoints;
mod conn;
mod error;
pub mod events;
mod memory;
mod migrations;
mod postgres;
pub mod spill;
mod sqlite;

pub use checkpoints::{
    ChangeKind, Checkpoint, CheckpointError, CheckpointOptions, Checkpoints, FileChange, FileMode,
    RestoreGuard, Restored,
};
pub use events::{EventPage, Retention, SessionEvents, StoredEvent};
pub use memory::{MEMORY_SCHEMA_VERSION, SqliteMemory};
pub use migrations::SCHEMA_VERSION;
pub use postgres::{
    CONTROL_LIFETIME, CONTROLS_CHANNEL, Control, ControlKind, Heard, Heartbeat, LISTENER_NAME,
    Lease, LeaseError, Listener, OrphanedSession, Outcome, PG_MEMORY_SCHEMA_VERSION,
    PG_SCHEMA_VERSION, PgMemory, PgOptions, PgStore, RecordedRoot, SETTLED_CHANNEL, Sent,
    password_spans,
};
pub use spill::FileSpill;
pub use sqlite::{SqliteOptions, SqliteStore};
