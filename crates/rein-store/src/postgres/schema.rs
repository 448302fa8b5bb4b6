//! The PostgreSQL schema, as ordered migration steps per component.
//!
//! One database can hold both the sessions and the long-term memory, so
//! the `rein_schema` table keeps a version per component (`sessions`,
//! `memory`): how many of its steps have run. Connecting runs the missing
//! ones in one transaction, under a transaction-scoped advisory lock, so
//! two processes starting at once take turns and the second finds the work
//! done. A database with more steps than this build knows was written by a
//! newer rein and is refused.
//!
//! Ids are `COLLATE "C"`: they sort and compare byte by byte, as in
//! SQLite, whatever the database's locale. Messages and the other records
//! are stored as the exact serde_json text (`text`, not `jsonb`: jsonb
//! rewrites the text and refuses `\u0000`, which a message may hold).

use tokio_postgres::Client;

use super::error::{PgContext, PgFail};
use rein_core::StoreError;

/// The advisory lock key every rein migration takes ("reinschm").
const MIGRATION_LOCK: i64 = 0x7265_696e_7363_686d;

/// The sessions schema. Step `i` brings a database from version `i` to
/// `i + 1`; append new steps, never edit a released one.
pub(crate) const SESSION_MIGRATIONS: &[&str] = &[
    // 1: sessions and everything kept per session, as in the SQLite store.
    r#"CREATE TABLE sessions (
        id            text COLLATE "C" PRIMARY KEY,
        workspace     text NOT NULL,
        title         text NOT NULL,
        model         text NOT NULL,
        created_at    bigint NOT NULL,
        updated_at    bigint NOT NULL,
        message_count bigint NOT NULL DEFAULT 0,
        last_stop     text,
        parent_id     text COLLATE "C"
    );
    CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at, id);
    CREATE INDEX sessions_by_update ON sessions (updated_at, id);
    CREATE INDEX sessions_by_parent ON sessions (parent_id);
    CREATE TABLE messages (
        session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        bigint NOT NULL,
        role       text NOT NULL,
        body       text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE todos (
        session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        body       text NOT NULL
    );
    CREATE TABLE grants (
        session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        bigint NOT NULL,
        rule       text NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, rule)
    );
    CREATE TABLE ledger (
        session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        bigint NOT NULL,
        body       text NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE compactions (
        session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        bigint NOT NULL,
        upto_seq   bigint NOT NULL,
        body       text NOT NULL,
        PRIMARY KEY (session_id, seq)
    );"#,
    // 2: which server drives a session, until when (the database's clock).
    // `token` (from the sequence) tells one holding of a lease from the
    // next, even by the same owner.
    r#"CREATE TABLE session_leases (
        session_id  text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        owner       text NOT NULL,
        token       bigint NOT NULL,
        acquired_at timestamptz NOT NULL,
        renewed_at  timestamptz NOT NULL,
        expires_at  timestamptz NOT NULL
    );
    CREATE INDEX session_leases_by_expiry ON session_leases (expires_at);
    CREATE SEQUENCE session_lease_tokens;"#,
    // 3: the session's event log (each an `Event` JSON, numbered from
    // `last_event`, which only grows), for `rein serve`'s streams on any
    // server.
    r#"ALTER TABLE sessions ADD COLUMN last_event bigint NOT NULL DEFAULT 0;
    CREATE TABLE session_events (
        session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        bigint NOT NULL,
        body       text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (session_id, seq)
    );"#,
    // 4: controls sent to a running session through any server (an
    // approval once per call), the approvals its run waits for (on the
    // lease row, so they go with it) and the mode set through any server.
    r#"CREATE TABLE session_controls (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        kind       text NOT NULL,
        call_id    text,
        body       text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        outcome    text,
        answer     text,
        settled_at timestamptz
    );
    CREATE UNIQUE INDEX session_controls_one_decision
        ON session_controls (session_id, call_id) WHERE kind = 'approval';
    CREATE INDEX session_controls_pending ON session_controls (session_id) WHERE outcome IS NULL;
    ALTER TABLE session_leases ADD COLUMN waiting text;
    ALTER TABLE sessions ADD COLUMN mode text;"#,
    // 5: the workspace root `rein serve` was first used with (the id in
    // the root's id file), which every server must share.
    r#"CREATE TABLE serve_root (
        one         boolean PRIMARY KEY DEFAULT true CHECK (one),
        id          text NOT NULL,
        path        text NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now()
    );"#,
];

/// The long-term memory schema (see [`SESSION_MIGRATIONS`] for the rules).
pub(crate) const MEMORY_MIGRATIONS: &[&str] = &[
    // 1: entries as in SQLite (`project` '' for a global one, `tags` a JSON
    // array), with a weighted full-text vector kept by the database: title
    // A, tags B, content D. The 'simple' configuration lowercases and does
    // not stem or drop stop words, so every word is searchable as written.
    // Identity ids are never handed out twice, so removed ids never return.
    r#"CREATE TABLE memories (
        id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        project      text NOT NULL,
        title        text NOT NULL,
        content      text NOT NULL,
        tags         text NOT NULL,
        content_hash text NOT NULL,
        uses         bigint NOT NULL DEFAULT 0,
        created_at   bigint NOT NULL,
        updated_at   bigint NOT NULL,
        origin       text NOT NULL DEFAULT 'model',
        search       tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple'::regconfig, title), 'A')
            || setweight(to_tsvector('simple'::regconfig, tags), 'B')
            || setweight(to_tsvector('simple'::regconfig, content), 'D')
        ) STORED
    );
    CREATE UNIQUE INDEX memories_by_hash ON memories (project, content_hash);
    CREATE INDEX memories_by_use ON memories (project, uses, updated_at);
    CREATE INDEX memories_search ON memories USING gin (search);"#,
];

/// One part of the schema with its own version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Component {
    /// Its name in `rein_schema`.
    pub name: &'static str,
    /// What people call its database in messages.
    pub what: &'static str,
    pub steps: &'static [&'static str],
}

/// The sessions part of the schema.
pub(crate) const SESSIONS: Component = Component {
    name: "sessions",
    what: "session database",
    steps: SESSION_MIGRATIONS,
};

/// The long-term memory part of the schema.
pub(crate) const MEMORY: Component = Component {
    name: "memory",
    what: "memory database",
    steps: MEMORY_MIGRATIONS,
};

/// Bring `component` up to date: all missing steps in one transaction, so
/// the database ends at the new version or is untouched.
pub(crate) async fn migrate(client: &mut Client, component: Component) -> Result<(), PgFail> {
    let tx = client
        .transaction()
        .await
        .ctx("starting the schema migration")?;
    // Held until commit or rollback: concurrent migrators run one by one,
    // and each statement after it sees what the one before committed.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .ctx("waiting for another process's schema migration")?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS rein_schema (
            component text PRIMARY KEY,
            version   integer NOT NULL
        )",
    )
    .await
    .ctx("creating the schema version table")?;
    let row = tx
        .query_opt(
            "SELECT version FROM rein_schema WHERE component = $1",
            &[&component.name],
        )
        .await
        .ctx("reading the schema version")?;
    let version: i32 = match row {
        Some(row) => row.try_get(0).ctx("reading the schema version")?,
        None => 0,
    };
    let known = component.steps.len();
    let done = usize::try_from(version)
        .map_err(|_| PgFail::Corrupt(format!("schema version {version} is not one rein writes")))?;
    if done > known {
        return Err(StoreError::Other(format!(
            "the {} was created by a newer rein (schema version {version}, this rein knows up \
             to {known}); upgrade rein to use it",
            component.what
        ))
        .into());
    }
    if done == known {
        return tx.commit().await.ctx("finishing the schema check");
    }
    for (i, step) in component.steps.iter().enumerate().skip(done) {
        tx.batch_execute(step)
            .await
            .ctx("applying a schema migration")?;
        let reached = i32::try_from(i + 1).unwrap_or(i32::MAX);
        tx.execute(
            "INSERT INTO rein_schema (component, version) VALUES ($1, $2)
             ON CONFLICT (component) DO UPDATE SET version = excluded.version",
            &[&component.name, &reached],
        )
        .await
        .ctx("recording the schema version")?;
    }
    tx.commit().await.ctx("committing the schema migration")
}
