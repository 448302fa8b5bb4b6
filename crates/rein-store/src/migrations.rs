//! The database schema, as an ordered list of migration steps.
//!
//! `PRAGMA user_version` holds how many steps a database has had. Opening runs
//! the missing ones in one transaction; a database with more steps than this
//! build knows was written by a newer rein and is refused rather than guessed at.

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Context, Fail};
use rein_core::StoreError;

/// Step `i` (0-based) brings a database from version `i` to `i + 1`.
/// Append new steps; never edit a released one.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: sessions, their messages (each the full `Message` JSON) and todos.
    "CREATE TABLE sessions (
        id            TEXT PRIMARY KEY NOT NULL,
        workspace     TEXT NOT NULL,
        title         TEXT NOT NULL,
        model         TEXT NOT NULL,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at, id);
    CREATE INDEX sessions_by_update ON sessions (updated_at, id);
    CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        role       TEXT NOT NULL,
        body       TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE todos (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        body       TEXT NOT NULL
    );",
    // 2: approvals granted for the rest of a session.
    "CREATE TABLE grants (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        rule       TEXT NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, rule)
    );",
    // 3: the ledger of model calls (each a `LedgerEntry` JSON) and the
    // compactions of a session's history (each a `CompactionRecord` JSON).
    "CREATE TABLE ledger (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        body       TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE compactions (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        upto_seq   INTEGER NOT NULL,
        body       TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );",
    // 4: how the session's last run ended (a `StopReason` name), for
    // `rein sessions list`.
    "ALTER TABLE sessions ADD COLUMN last_stop TEXT;",
    // 5: the session a sub-agent's session was started from.
    "ALTER TABLE sessions ADD COLUMN parent_id TEXT;
    CREATE INDEX sessions_by_parent ON sessions (parent_id);",
    // 6: the session's event log (each an `Event` JSON, numbered from
    // `last_event`, which only grows), for `rein serve`'s streams.
    "ALTER TABLE sessions ADD COLUMN last_event INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE session_events (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        body       TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    );",
];

/// The schema version this build writes (the number of migration steps).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The database's `user_version`. Reading it reads the file header, so a file
/// that is not a SQLite database fails here.
pub(crate) fn user_version(conn: &Connection) -> Result<i64, Fail> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .ctx("reading the schema version")
}

/// Refuse a version this build cannot read.
pub(crate) fn check_known(version: i64, steps: &[&str]) -> Result<(), Fail> {
    let known = steps.len() as i64;
    if version < 0 {
        return Err(Fail::Corrupt(format!(
            "schema version {version} is not one rein writes; not a rein database"
        )));
    }
    if version > known {
        return Err(Fail::Store(StoreError::Other(format!(
            "the session database was created by a newer rein (schema version {version}, \
             this rein knows up to {known}); upgrade rein to open it"
        ))));
    }
    Ok(())
}

/// Bring the database up to `steps.len()`, all missing steps in one
/// transaction: either the database ends at the new version or is untouched.
pub(crate) fn migrate(conn: &mut Connection, steps: &[&str]) -> Result<(), Fail> {
    let known = steps.len() as i64;
    let version = user_version(conn)?;
    check_known(version, steps)?;
    if version == known {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("starting the schema migration")?;
    // Another process may have migrated while we waited for the write lock.
    let version = user_version(&tx)?;
    check_known(version, steps)?;
    if version == 0 {
        let tables: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'",
                [],
                |r| r.get(0),
            )
            .ctx("inspecting the schema")?;
        if tables > 0 {
            return Err(Fail::Corrupt(
                "the file holds tables but no rein schema version; not a rein database".into(),
            ));
        }
    }
    for (done, step) in steps.iter().enumerate().skip(version as usize) {
        tx.execute_batch(step).ctx("applying a schema migration")?;
        tx.pragma_update(None, "user_version", done as i64 + 1)
            .ctx("recording the schema version")?;
    }
    tx.commit().ctx("committing the schema migration")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const STEPS: &[&str] = &[
        "CREATE TABLE runs (n INTEGER); INSERT INTO runs VALUES (1);",
        "INSERT INTO runs VALUES (2);",
    ];

    fn runs(conn: &Connection) -> Vec<i64> {
        let mut stmt = conn.prepare("SELECT n FROM runs ORDER BY n").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn every_step_runs_once_and_the_version_records_it() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, &STEPS[..1]).unwrap();
        assert_eq!(user_version(&conn).unwrap(), 1);
        migrate(&mut conn, STEPS).unwrap();
        migrate(&mut conn, STEPS).unwrap();
        assert_eq!(user_version(&conn).unwrap(), 2);
        assert_eq!(runs(&conn), [1, 2]);
    }

    #[test]
    fn a_failing_step_leaves_the_database_untouched() {
        let mut conn = Connection::open_in_memory().unwrap();
        let steps = [STEPS[0], "THIS IS NOT SQL"];
        let err = migrate(&mut conn, &steps).unwrap_err();
        assert!(matches!(err, Fail::Sql { .. }), "{err:?}");
        assert_eq!(user_version(&conn).unwrap(), 0);
        let tables: i64 = conn
            .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tables, 0);
    }

    #[test]
    fn a_newer_version_is_refused_without_changes() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
        let err = migrate(&mut conn, STEPS).unwrap_err();
        assert!(
            matches!(&err, Fail::Store(StoreError::Other(m)) if m.contains("newer rein")),
            "{err:?}"
        );
        assert_eq!(user_version(&conn).unwrap(), 7);
    }

    #[test]
    fn a_foreign_database_is_not_adopted() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE other (x)").unwrap();
        let err = migrate(&mut conn, STEPS).unwrap_err();
        assert!(matches!(err, Fail::Corrupt(_)), "{err:?}");
        assert_eq!(user_version(&conn).unwrap(), 0);
    }

    #[test]
    fn an_older_database_gains_the_ledger_the_last_stop_and_the_parent_and_keeps_its_rows() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, &MIGRATIONS[..2]).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, workspace, title, model, created_at, updated_at)
             VALUES ('s1', '/w', 't', 'm', 1, 2);
             INSERT INTO grants (session_id, seq, rule) VALUES ('s1', 1, 'bash(ls)');",
        )
        .unwrap();
        migrate(&mut conn, MIGRATIONS).unwrap();
        assert_eq!(user_version(&conn).unwrap(), i64::from(SCHEMA_VERSION));
        let (last, parent): (Option<String>, Option<String>) = conn
            .query_row(
                "SELECT last_stop, parent_id FROM sessions WHERE id = 's1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(last, None, "an old session has no recorded end");
        assert_eq!(parent, None, "an old session is nobody's sub-agent");
        let rule: String = conn
            .query_row("SELECT rule FROM grants WHERE session_id = 's1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(rule, "bash(ls)");
        conn.execute(
            "INSERT INTO ledger (session_id, seq, body) VALUES ('s1', 1, '{}')",
            [],
        )
        .unwrap();
    }

    #[test]
    fn the_real_schema_applies_cleanly() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, MIGRATIONS).unwrap();
        assert_eq!(user_version(&conn).unwrap(), i64::from(SCHEMA_VERSION));
    }
}
