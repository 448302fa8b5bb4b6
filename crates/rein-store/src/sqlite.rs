//! `SqliteStore`: sessions in one SQLite file.
//!
//! rusqlite is synchronous, so the connection sits behind a mutex and every
//! operation runs on tokio's blocking pool. Each write is one transaction,
//! committed before the method returns.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use rein_core::time::now_millis;
use rein_core::{
    CompactionRecord, LedgerEntry, Message, NewSession, Rule, SessionInfo, SessionStore,
    StopReason, StoreError, Todo,
};
use rein_core::{new_session_id, resolve_prefix};

use crate::conn::ConnThread;
use crate::error::{Context, Fail};
use crate::migrations::{MIGRATIONS, check_known, migrate, user_version};

mod events;
mod records;

use records::*;

/// How a [`SqliteStore`] opens its database. Build with
/// `SqliteOptions { busy_timeout, ..Default::default() }`.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How long an operation waits for another process's write lock before
    /// failing with [`StoreError::Locked`]. Default 5 s.
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// The durable session store: one SQLite database in WAL mode. Cloning is
/// cheap and shares the connection.
/// The name of the connection's thread.
const THREAD: &str = "rein-sessions-db";

#[derive(Clone)]
pub struct SqliteStore {
    conn: ConnThread,
    path: Arc<PathBuf>,
    busy_timeout: Duration,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Open (creating it and its parent directories if needed) the database
    /// at `path`, with default options. Blocks briefly: call it at start-up.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// [`open`](Self::open) with explicit options. A file that is not a rein
    /// database fails here with [`StoreError::Corrupt`]; one written by a newer
    /// rein is refused with [`StoreError::Other`].
    pub fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        let shown = path.display().to_string();
        crate::conn::private_db_file(path).map_err(StoreError::Other)?;
        let conn = Connection::open(path)
            .ctx("opening the database")
            .and_then(|mut conn| prepare(&mut conn, &options).map(|()| conn))
            .map_err(|f| f.into_store(&shown, options.busy_timeout))?;
        Ok(SqliteStore {
            conn: ConnThread::start(conn, THREAD).map_err(|e| {
                StoreError::Other(format!("cannot start the thread of {shown}: {e}"))
            })?,
            path: Arc::new(path.to_path_buf()),
            busy_timeout: options.busy_timeout,
        })
    }

    /// The database file this store uses.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` with the connection on its thread.
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Fail> + Send + 'static,
    {
        let joined = self.conn.run(f).await;
        match joined {
            Ok(result) => result
                .map_err(|f| f.into_store(&self.path.display().to_string(), self.busy_timeout)),
            Err(e) => Err(StoreError::Other(format!(
                "session store operation on {} did not finish: {e}",
                self.path.display()
            ))),
        }
    }
}

/// Set the connection up and bring its schema to the current version.
fn prepare(conn: &mut Connection, options: &SqliteOptions) -> Result<(), Fail> {
    conn.busy_timeout(options.busy_timeout)
        .ctx("setting the busy timeout")?;
    // Reads the file header: a file that is not a database fails now, and a
    // newer rein's database is refused before anything in it is changed.
    check_known(user_version(conn)?, MIGRATIONS)?;
    let mode = crate::conn::switch_to_wal(conn, options.busy_timeout)?;
    // In WAL mode NORMAL loses nothing committed when the process crashes;
    // without WAL (a filesystem that cannot do it) only FULL is safe.
    let synchronous = if mode.eq_ignore_ascii_case("wal") {
        "NORMAL"
    } else {
        "FULL"
    };
    conn.pragma_update(None, "synchronous", synchronous)
        .ctx("setting synchronous")?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .ctx("enabling foreign keys")?;
    migrate(conn, MIGRATIONS)
}

const SESSION_COLUMNS: &str =
    "id, workspace, title, model, created_at, updated_at, message_count, last_stop, parent_id";

fn session_from_row(row: &Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: row.get(0)?,
        workspace: row.get(1)?,
        title: row.get(2)?,
        model: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
        message_count: u64::try_from(row.get::<_, i64>(6)?).unwrap_or(0),
        // A name this build does not know (a newer rein wrote it) reads as
        // none.
        last_stop: row
            .get::<_, Option<String>>(7)?
            .and_then(|s| StopReason::parse(&s)),
        parent_id: row.get(8)?,
    })
}

/// A `GLOB` pattern matching ids that start with `prefix` (GLOB, unlike LIKE,
/// is case-sensitive, as ids are; its wildcards are escaped as classes).
fn glob_prefix(prefix: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + 1);
    for c in prefix.chars() {
        if matches!(c, '*' | '?' | '[') {
            out.push('[');
            out.push(c);
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out.push('*');
    out
}

/// The full id for an id or unique id prefix, with [`resolve_prefix`]'s
/// rules: an exact id wins, two candidates are ambiguous, none is not found.
fn resolve(conn: &Connection, wanted: &str) -> Result<String, Fail> {
    let exact: Option<String> = conn
        .query_row("SELECT id FROM sessions WHERE id = ?1", [wanted], |r| {
            r.get(0)
        })
        .optional()
        .ctx("looking up a session")?;
    if let Some(id) = exact {
        return Ok(id);
    }
    let mut stmt = conn
        .prepare_cached("SELECT id FROM sessions WHERE id GLOB ?1 ORDER BY id LIMIT ?2")
        .ctx("looking up a session")?;
    // One more than is listed, to know there are more.
    let most = rein_core::AMBIGUOUS_SHOWN as i64 + 1;
    let candidates = stmt
        .query_map(rusqlite::params![glob_prefix(wanted), most], |r| {
            r.get::<_, String>(0)
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .ctx("looking up a session")?;
    Ok(resolve_prefix(candidates.iter(), wanted)?)
}

/// Fail with `NotFound` unless the session `id` (a full id) exists.
fn ensure_exists(conn: &Connection, id: &str) -> Result<(), Fail> {
    let found: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )
        .ctx("looking up a session")?;
    if found {
        Ok(())
    } else {
        Err(StoreError::NotFound(id.to_string()).into())
    }
}

fn get_session(conn: &Connection, id: &str) -> Result<SessionInfo, Fail> {
    conn.query_row(
        &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"),
        [id],
        session_from_row,
    )
    .optional()
    .ctx("reading a session")?
    .ok_or_else(|| StoreError::NotFound(id.to_string()).into())
}

fn create_session(conn: &mut Connection, new: NewSession) -> Result<SessionInfo, Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("creating a session")?;
    let now = now_millis();
    // Ids are 32 random bits plus the second; a clash is unlikely but
    // cheap to avoid.
    let mut id = new_session_id();
    for _ in 0..8 {
        let taken: bool = tx
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
                [&id],
                |r| r.get(0),
            )
            .ctx("creating a session")?;
        if !taken {
            break;
        }
        id = new_session_id();
    }
    tx.execute(
        "INSERT INTO sessions (id, workspace, title, model, created_at, updated_at, message_count, parent_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0, ?6)",
        params![id, new.workspace, new.title, new.model, now, new.parent_id],
    )
    .ctx("creating a session")?;
    tx.commit().ctx("committing a new session")?;
    Ok(SessionInfo {
        id,
        workspace: new.workspace,
        title: new.title,
        model: new.model,
        created_at: now,
        updated_at: now,
        message_count: 0,
        last_stop: None,
        parent_id: new.parent_id,
    })
}

fn list_sessions(
    conn: &Connection,
    workspace: Option<&str>,
    limit: usize,
) -> Result<Vec<SessionInfo>, Fail> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = match workspace {
        Some(workspace) => conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions WHERE workspace = ?1
                 ORDER BY updated_at DESC, id DESC LIMIT ?2"
            ))
            .and_then(|mut stmt| {
                stmt.query_map(params![workspace, limit], session_from_row)?
                    .collect()
            }),
        None => conn
            .prepare_cached(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions
                 ORDER BY updated_at DESC, id DESC LIMIT ?1"
            ))
            .and_then(|mut stmt| stmt.query_map([limit], session_from_row)?.collect()),
    };
    rows.ctx("listing sessions")
}

fn delete_session(conn: &mut Connection, wanted: &str) -> Result<(), Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("deleting a session")?;
    let id = resolve(&tx, wanted)?;
    // Messages, todos, grants, the ledger and compactions go with it (ON
    // DELETE CASCADE).
    tx.execute("DELETE FROM sessions WHERE id = ?1", [&id])
        .ctx("deleting a session")?;
    tx.commit().ctx("committing a deletion")
}

/// The text columns of a session that can be changed after it is made.
#[derive(Debug, Clone, Copy)]
enum SessionField {
    Title,
    Model,
    LastStop,
}

impl SessionField {
    /// The whole statement, spelled out: no name is ever formatted into SQL.
    fn update_sql(self) -> &'static str {
        match self {
            SessionField::Title => "UPDATE sessions SET title = ?2 WHERE id = ?1",
            SessionField::Model => "UPDATE sessions SET model = ?2 WHERE id = ?1",
            SessionField::LastStop => "UPDATE sessions SET last_stop = ?2 WHERE id = ?1",
        }
    }
}

/// Set one text field of a session.
fn set_field(
    conn: &mut Connection,
    id: &str,
    field: SessionField,
    value: &str,
) -> Result<(), Fail> {
    let changed = conn
        .execute(field.update_sql(), params![id, value])
        .ctx("updating a session")?;
    if changed == 0 {
        return Err(StoreError::NotFound(id.to_string()).into());
    }
    Ok(())
}

fn append_message(conn: &mut Connection, id: &str, role: &str, body: &str) -> Result<u64, Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("appending a message")?;
    let now = now_millis();
    // Count the message and take its seq in one step; no row means no session.
    let seq: i64 = tx
        .query_row(
            "UPDATE sessions SET message_count = message_count + 1,
                                 updated_at = MAX(updated_at, ?2)
             WHERE id = ?1 RETURNING message_count",
            params![id, now],
            |r| r.get(0),
        )
        .optional()
        .ctx("appending a message")?
        .ok_or_else(|| StoreError::NotFound(id.to_string()))?;
    tx.execute(
        "INSERT INTO messages (session_id, seq, role, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, seq, role, body, now],
    )
    .ctx("appending a message")?;
    tx.commit().ctx("committing a message")?;
    u64::try_from(seq).map_err(|_| Fail::Corrupt(format!("session {id} has message seq {seq}")))
}

fn messages(conn: &mut Connection, id: &str) -> Result<Vec<Message>, Fail> {
    // One read transaction: the session check and the rows see the same state.
    let tx = conn.transaction().ctx("reading messages")?;
    ensure_exists(&tx, id)?;
    let mut out = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached("SELECT seq, body FROM messages WHERE session_id = ?1 ORDER BY seq")
            .ctx("reading messages")?;
        let mut rows = stmt.query([id]).ctx("reading messages")?;
        while let Some(row) = rows.next().ctx("reading messages")? {
            let seq: i64 = row.get(0).ctx("reading messages")?;
            let parsed = row
                .get_ref(1)
                .map_err(|e| e.to_string())
                .and_then(|v| v.as_bytes().map_err(|e| e.to_string()))
                .and_then(|bytes| {
                    serde_json::from_slice::<Message>(bytes).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(message) => out.push(message),
                Err(e) => {
                    return Err(Fail::Corrupt(format!(
                        "message {seq} of session {id} cannot be read: {e}"
                    )));
                }
            }
        }
    }
    tx.finish().ctx("reading messages")?;
    Ok(out)
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Other(format!("encoding {what}: {e}")))
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn create_session(&self, new: NewSession) -> Result<SessionInfo, StoreError> {
        self.run(move |conn| create_session(conn, new)).await
    }

    async fn get_session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        let wanted = id.to_string();
        self.run(move |conn| {
            let tx = conn.transaction().ctx("reading a session")?;
            let id = resolve(&tx, &wanted)?;
            let info = get_session(&tx, &id)?;
            tx.finish().ctx("reading a session")?;
            Ok(info)
        })
        .await
    }

    async fn list_sessions(
        &self,
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, StoreError> {
        let workspace = workspace.map(str::to_string);
        self.run(move |conn| list_sessions(conn, workspace.as_deref(), limit))
            .await
    }

    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let wanted = id.to_string();
        self.run(move |conn| delete_session(conn, &wanted)).await
    }

    async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let (id, title) = (id.to_string(), title.to_string());
        self.run(move |conn| set_field(conn, &id, SessionField::Title, &title))
            .await
    }

    async fn set_model(&self, id: &str, model: &str) -> Result<(), StoreError> {
        let (id, model) = (id.to_string(), model.to_string());
        self.run(move |conn| set_field(conn, &id, SessionField::Model, &model))
            .await
    }

    async fn set_last_stop(&self, id: &str, reason: StopReason) -> Result<(), StoreError> {
        let id = id.to_string();
        self.run(move |conn| set_field(conn, &id, SessionField::LastStop, reason.as_str()))
            .await
    }

    async fn append_message(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        let body = to_json(message, "a message")?;
        let role = message.role().as_str();
        let id = id.to_string();
        self.run(move |conn| append_message(conn, &id, role, &body))
            .await
    }

    async fn messages(&self, id: &str) -> Result<Vec<Message>, StoreError> {
        let id = id.to_string();
        self.run(move |conn| messages(conn, &id)).await
    }

    async fn set_todos(&self, id: &str, todos: &[Todo]) -> Result<(), StoreError> {
        let body = to_json(todos, "todos")?;
        let id = id.to_string();
        self.run(move |conn| set_todos(conn, &id, &body)).await
    }

    async fn todos(&self, id: &str) -> Result<Vec<Todo>, StoreError> {
        let id = id.to_string();
        self.run(move |conn| todos(conn, &id)).await
    }

    async fn add_grant(&self, id: &str, rule: &Rule) -> Result<(), StoreError> {
        // Stored as the rule's own text, read back with its parser.
        let (id, rule) = (id.to_string(), rule.to_string());
        self.run(move |conn| add_grant(conn, &id, &rule)).await
    }

    async fn grants(&self, id: &str) -> Result<(Vec<Rule>, usize), StoreError> {
        let id = id.to_string();
        let rows = self.run(move |conn| grants(conn, &id)).await?;
        let total = rows.len();
        let rules: Vec<Rule> = rows.iter().filter_map(|r| r.parse().ok()).collect();
        let unreadable = total - rules.len();
        Ok((rules, unreadable))
    }

    async fn add_ledger(&self, id: &str, entry: &LedgerEntry) -> Result<(), StoreError> {
        let body = to_json(entry, "a ledger entry")?;
        let id = id.to_string();
        self.run(move |conn| add_ledger(conn, &id, &body)).await
    }

    async fn ledger(&self, id: &str) -> Result<(Vec<LedgerEntry>, usize), StoreError> {
        let id = id.to_string();
        self.run(move |conn| ledger(conn, &id)).await
    }

    async fn add_compaction(&self, id: &str, record: &CompactionRecord) -> Result<(), StoreError> {
        let body = to_json(record, "a compaction")?;
        let upto_seq = i64::try_from(record.upto_seq).map_err(|_| {
            StoreError::Other(format!(
                "compaction up to message {} is out of range",
                record.upto_seq
            ))
        })?;
        let id = id.to_string();
        self.run(move |conn| add_compaction(conn, &id, upto_seq, &body))
            .await
    }

    async fn compactions(&self, id: &str) -> Result<Vec<CompactionRecord>, StoreError> {
        let id = id.to_string();
        self.run(move |conn| compactions(conn, &id)).await
    }
}

#[cfg(test)]
mod tests;
