//! The memory database's schema and how a connection to it is set up.

use rusqlite::Connection;

use super::Oops;
use crate::SqliteOptions;
use crate::error::{Context, Fail};
use crate::migrations::{check_known, migrate, user_version};
use rein_core::memory::MemoryError;

/// The memory schema, as migration steps (see `migrations.rs` for the
/// rules): step `i` brings a database from version `i` to `i + 1`.
pub(super) const MEMORY_MIGRATIONS: &[&str] = &[
    // 1: entries, their full-text index kept in step by triggers.
    // `project` is '' for an entry that holds in every project; `tags` is
    // a JSON array (the tokenizer skips its punctuation when indexing).
    "CREATE TABLE memories (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        project      TEXT NOT NULL,
        title        TEXT NOT NULL,
        content      TEXT NOT NULL,
        tags         TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        uses         INTEGER NOT NULL DEFAULT 0,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX memories_by_hash ON memories (project, content_hash);
    CREATE INDEX memories_by_use ON memories (project, uses, updated_at);
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        title, content, tags, tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_after_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memory_fts (rowid, title, content, tags)
        VALUES (new.id, new.title, new.content, new.tags);
    END;
    CREATE TRIGGER memories_after_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_fts WHERE rowid = old.id;
    END;
    CREATE TRIGGER memories_after_update AFTER UPDATE OF title, content, tags ON memories BEGIN
        UPDATE memory_fts SET title = new.title, content = new.content, tags = new.tags
        WHERE rowid = new.id;
    END;",
    // 2: who wrote each entry ('user', 'model', 'model_approved'). Entries
    // from before were all written by the model: only its tool could add.
    "ALTER TABLE memories ADD COLUMN origin TEXT NOT NULL DEFAULT 'model';",
];

/// The memory schema version this build writes.
pub const MEMORY_SCHEMA_VERSION: u32 = MEMORY_MIGRATIONS.len() as u32;

/// Set the connection up and bring the memory schema up to date.
pub(super) fn prepare(
    conn: &mut Connection,
    shown: &str,
    options: &SqliteOptions,
) -> Result<(), Oops> {
    conn.busy_timeout(options.busy_timeout)
        .ctx("setting the busy timeout")?;
    let version = user_version(conn)?;
    let known = i64::from(MEMORY_SCHEMA_VERSION);
    if version > 0 && !has_memories_table(conn)? {
        // The sessions database, say, given by mistake.
        return Err(Fail::Corrupt(format!(
            "it has schema version {version} but no memories; not a rein memory database"
        ))
        .into());
    }
    if version > known {
        return Err(MemoryError::Other(format!(
            "the memory database {shown} was created by a newer rein (schema version \
             {version}, this rein knows up to {known}); upgrade rein to open it"
        ))
        .into());
    }
    check_known(version, MEMORY_MIGRATIONS)?;
    let mode = crate::conn::switch_to_wal(conn, options.busy_timeout)?;
    let synchronous = if mode.eq_ignore_ascii_case("wal") {
        "NORMAL"
    } else {
        "FULL"
    };
    conn.pragma_update(None, "synchronous", synchronous)
        .ctx("setting synchronous")?;
    Ok(migrate(conn, MEMORY_MIGRATIONS)?)
}

fn has_memories_table(conn: &Connection) -> Result<bool, Fail> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories')",
        [],
        |r| r.get(0),
    )
    .ctx("inspecting the memory schema")
}
