//! Sessions and their messages in PostgreSQL, and the [`SessionStore`]
//! implementation of [`PgStore`]. Each write is one transaction, committed
//! before the method returns; reads that check a session and then read its
//! rows do both in one transaction, so they see one state.

use async_trait::async_trait;
use tokio_postgres::{Client, GenericClient, Row};

use rein_core::time::now_millis;
use rein_core::{
    CompactionRecord, LedgerEntry, Message, NewSession, Rule, SessionInfo, SessionStore,
    StopReason, StoreError, Todo,
};
use rein_core::{new_session_id, resolve_prefix};

use super::PgStore;
use super::error::{PgContext, PgFail};
use super::fence;
use super::pool::Conn;
use super::records;

const SESSION_COLUMNS: &str =
    "id, workspace, title, model, created_at, updated_at, message_count, last_stop, parent_id";

fn session_from_row(row: &Row) -> Result<SessionInfo, tokio_postgres::Error> {
    Ok(SessionInfo {
        id: row.try_get(0)?,
        workspace: row.try_get(1)?,
        title: row.try_get(2)?,
        model: row.try_get(3)?,
        created_at: row.try_get(4)?,
        updated_at: row.try_get(5)?,
        message_count: u64::try_from(row.try_get::<_, i64>(6)?).unwrap_or(0),
        // A name this build does not know (a newer rein wrote it) reads as
        // none, as in SQLite.
        last_stop: row
            .try_get::<_, Option<String>>(7)?
            .and_then(|s| StopReason::parse(&s)),
        parent_id: row.try_get(8)?,
    })
}

/// The full id for an id or unique id prefix, with [`resolve_prefix`]'s
/// rules: an exact id wins, two candidates are ambiguous, none is not found.
pub(super) async fn resolve(db: &impl GenericClient, wanted: &str) -> Result<String, PgFail> {
    let exact = db
        .query_opt("SELECT id FROM sessions WHERE id = $1", &[&wanted])
        .await
        .ctx("looking up a session")?;
    if let Some(row) = exact {
        return row.try_get(0).ctx("looking up a session");
    }
    // One more than is listed, to know there are more. `starts_with`
    // takes the prefix as text: no wildcard in it means anything.
    let most = rein_core::AMBIGUOUS_SHOWN as i64 + 1;
    let rows = db
        .query(
            "SELECT id FROM sessions WHERE $1 <> '' AND starts_with(id, $1)
             ORDER BY id LIMIT $2",
            &[&wanted, &most],
        )
        .await
        .ctx("looking up a session")?;
    let candidates = rows
        .iter()
        .map(|r| r.try_get::<_, String>(0))
        .collect::<Result<Vec<_>, _>>()
        .ctx("looking up a session")?;
    Ok(resolve_prefix(candidates.iter(), wanted)?)
}

/// Fail with `NotFound` unless the session `id` (a full id) exists.
pub(super) async fn ensure_exists(db: &impl GenericClient, id: &str) -> Result<(), PgFail> {
    let found = db
        .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id])
        .await
        .ctx("looking up a session")?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::NotFound(id.to_string()).into()),
    }
}

/// One session by its exact id, the common case of [`get_session`]'s
/// lookup, in one statement.
const SESSION_BY_ID: &str = "SELECT id, workspace, title, model, created_at, updated_at,
    message_count, last_stop, parent_id FROM sessions WHERE id = $1";

async fn get_session(db: &impl GenericClient, id: &str) -> Result<SessionInfo, PgFail> {
    let row = db
        .query_opt(
            &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"),
            &[&id],
        )
        .await
        .ctx("reading a session")?
        .ok_or_else(|| StoreError::NotFound(id.to_string()))?;
    session_from_row(&row).ctx("reading a session")
}

const INSERT_SESSION: &str = "INSERT INTO sessions (id, workspace, title, model, created_at,
        updated_at, message_count, parent_id)
    VALUES ($1, $2, $3, $4, $5, $5, 0, $6) ON CONFLICT (id) DO NOTHING";

async fn create_session(conn: &mut Conn, new: NewSession) -> Result<SessionInfo, PgFail> {
    let now = now_millis();
    // Ids are 32 random bits plus the second; a clash is unlikely but cheap to
    // avoid: the insert does nothing on a taken id and a new one is tried.
    for _ in 0..8 {
        let id = new_session_id();
        let statement = conn
            .prepared(INSERT_SESSION)
            .await
            .ctx("creating a session")?;
        let inserted = conn
            .execute(
                &statement,
                &[
                    &id,
                    &new.workspace,
                    &new.title,
                    &new.model,
                    &now,
                    &new.parent_id,
                ],
            )
            .await
            .ctx("creating a session")?;
        if inserted == 1 {
            return Ok(SessionInfo {
                id,
                workspace: new.workspace,
                title: new.title,
                model: new.model,
                created_at: now,
                updated_at: now,
                message_count: 0,
                last_stop: None,
                parent_id: new.parent_id,
            });
        }
    }
    Err(StoreError::Other("could not find a free session id after 8 tries".into()).into())
}

async fn list_sessions(
    client: &Client,
    workspace: Option<&str>,
    limit: usize,
) -> Result<Vec<SessionInfo>, PgFail> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = client
        .query(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions
                 WHERE $1::text IS NULL OR workspace = $1
                 ORDER BY updated_at DESC, id DESC LIMIT $2"
            ),
            &[&workspace, &limit],
        )
        .await
        .ctx("listing sessions")?;
    rows.iter()
        .map(session_from_row)
        .collect::<Result<_, _>>()
        .ctx("listing sessions")
}

async fn delete_session(client: &mut Client, wanted: &str) -> Result<(), PgFail> {
    let tx = client.transaction().await.ctx("deleting a session")?;
    let id = resolve(&tx, wanted).await?;
    // Messages, todos, grants, the ledger, compactions and a lease go with
    // it (ON DELETE CASCADE).
    tx.execute("DELETE FROM sessions WHERE id = $1", &[&id])
        .await
        .ctx("deleting a session")?;
    tx.commit().await.ctx("committing a deletion")
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
            SessionField::Title => "UPDATE sessions SET title = $2 WHERE id = $1",
            SessionField::Model => "UPDATE sessions SET model = $2 WHERE id = $1",
            SessionField::LastStop => "UPDATE sessions SET last_stop = $2 WHERE id = $1",
        }
    }
}

/// The last stop, while the session's lease still has token `$3`.
const SET_LAST_STOP_FENCED: &str = "WITH fence AS (
        SELECT 1 FROM session_leases WHERE session_id = $1 AND token = $3 FOR SHARE)
    UPDATE sessions SET last_stop = $2 WHERE id = $1 AND EXISTS (SELECT 1 FROM fence)";

async fn set_field(
    conn: &mut Conn,
    id: &str,
    field: SessionField,
    value: &str,
) -> Result<(), PgFail> {
    let statement = conn
        .prepared(field.update_sql())
        .await
        .ctx("updating a session")?;
    let changed = conn
        .execute(&statement, &[&id, &value])
        .await
        .ctx("updating a session")?;
    if changed == 0 {
        return Err(StoreError::NotFound(id.to_string()).into());
    }
    Ok(())
}

/// Count the message and insert it under the new count, in one statement
/// (so one round trip, committed when it returns). The update locks the
/// session's row until then, so concurrent appenders take turns and each
/// gets the next number; no row means no session.
const APPEND_MESSAGE: &str = "WITH counted AS (
        UPDATE sessions SET message_count = message_count + 1,
                            updated_at = GREATEST(updated_at, $2)
        WHERE id = $1 RETURNING message_count)
    INSERT INTO messages (session_id, seq, role, body, created_at)
    SELECT $1, message_count, $3::text, $4::text, $2 FROM counted
    RETURNING seq";

/// [`APPEND_MESSAGE`] while the session's lease still has token `$5` (see
/// [`super::fence`]); no row: no session, or the lease is lost.
const APPEND_MESSAGE_FENCED: &str = "WITH fence AS (
        SELECT 1 FROM session_leases WHERE session_id = $1 AND token = $5 FOR SHARE),
    counted AS (
        UPDATE sessions SET message_count = message_count + 1,
                            updated_at = GREATEST(updated_at, $2)
        WHERE id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING message_count)
    INSERT INTO messages (session_id, seq, role, body, created_at)
    SELECT $1, message_count, $3::text, $4::text, $2 FROM counted
    RETURNING seq";

async fn append_message(
    conn: &mut Conn,
    id: &str,
    role: &str,
    body: &str,
    token: Option<i64>,
) -> Result<u64, PgFail> {
    let now = now_millis();
    let row = match token {
        None => {
            let statement = conn
                .prepared(APPEND_MESSAGE)
                .await
                .ctx("appending a message")?;
            conn.query_opt(&statement, &[&id, &now, &role, &body]).await
        }
        Some(token) => {
            let statement = conn
                .prepared(APPEND_MESSAGE_FENCED)
                .await
                .ctx("appending a message")?;
            conn.query_opt(&statement, &[&id, &now, &role, &body, &token])
                .await
        }
    };
    let Some(row) = row.ctx("appending a message")? else {
        return Err(match token {
            None => StoreError::NotFound(id.to_string()).into(),
            Some(_) => fence::refused(&**conn, id).await,
        });
    };
    let seq: i64 = row.try_get(0).ctx("appending a message")?;
    u64::try_from(seq).map_err(|_| PgFail::Corrupt(format!("session {id} has message seq {seq}")))
}

/// The session's messages, or no row when there is no session: one
/// statement, so the check and the rows see one snapshot.
const MESSAGES: &str = "SELECT m.seq, m.body FROM sessions s
    LEFT JOIN messages m ON m.session_id = s.id
    WHERE s.id = $1 ORDER BY m.seq";

async fn messages(conn: &mut Conn, id: &str) -> Result<Vec<Message>, PgFail> {
    let statement = conn.prepared(MESSAGES).await.ctx("reading messages")?;
    let rows = conn
        .query(&statement, &[&id])
        .await
        .ctx("reading messages")?;
    if rows.is_empty() {
        return Err(StoreError::NotFound(id.to_string()).into());
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        // The one row of a session without messages has no message in it.
        let Some(seq) = row.try_get::<_, Option<i64>>(0).ctx("reading messages")? else {
            continue;
        };
        let body: &str = row.try_get(1).ctx("reading messages")?;
        out.push(serde_json::from_str::<Message>(body).map_err(|e| {
            PgFail::Corrupt(format!("message {seq} of session {id} cannot be read: {e}"))
        })?);
    }
    Ok(out)
}

fn to_json<T: serde::Serialize + ?Sized>(value: &T, what: &str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Other(format!("encoding {what}: {e}")))
}

#[async_trait]
impl SessionStore for PgStore {
    async fn create_session(&self, new: NewSession) -> Result<SessionInfo, StoreError> {
        self.run("creating a session", move |mut c| async move {
            create_session(&mut c, new).await
        })
        .await
    }

    async fn get_session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        let id = id.to_string();
        self.run("reading a session", move |mut c| async move {
            // An exact id needs no prefix search, so no transaction either.
            let statement = c.prepared(SESSION_BY_ID).await.ctx("reading a session")?;
            if let Some(row) = c
                .query_opt(&statement, &[&id])
                .await
                .ctx("reading a session")?
            {
                return session_from_row(&row).ctx("reading a session");
            }
            let tx = c.transaction().await.ctx("reading a session")?;
            let id = resolve(&tx, &id).await?;
            let info = get_session(&tx, &id).await?;
            tx.commit().await.ctx("reading a session")?;
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
        self.run("listing sessions", move |c| async move {
            list_sessions(&c, workspace.as_deref(), limit).await
        })
        .await
    }

    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        self.run("deleting a session", move |mut c| async move {
            delete_session(&mut c, &id).await
        })
        .await
    }

    async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let (id, title) = (id.to_string(), title.to_string());
        self.run("updating a session", move |mut c| async move {
            set_field(&mut c, &id, SessionField::Title, &title).await
        })
        .await
    }

    async fn set_model(&self, id: &str, model: &str) -> Result<(), StoreError> {
        let (id, model) = (id.to_string(), model.to_string());
        self.run("updating a session", move |mut c| async move {
            set_field(&mut c, &id, SessionField::Model, &model).await
        })
        .await
    }

    async fn set_last_stop(&self, id: &str, reason: StopReason) -> Result<(), StoreError> {
        let id = id.to_string();
        let token = self.fences.token(&id);
        self.run("updating a session", move |mut c| async move {
            let Some(token) = token else {
                return set_field(&mut c, &id, SessionField::LastStop, reason.as_str()).await;
            };
            let statement = c
                .prepared(SET_LAST_STOP_FENCED)
                .await
                .ctx("updating a session")?;
            let changed = c
                .execute(&statement, &[&id, &reason.as_str(), &token])
                .await
                .ctx("updating a session")?;
            match changed {
                0 => Err(fence::refused(&*c, &id).await),
                _ => Ok(()),
            }
        })
        .await
    }

    async fn append_message(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        let id = id.to_string();
        let body = to_json(message, "a message")?;
        let role = message.role().as_str();
        let token = self.fences.token(&id);
        self.run("appending a message", move |mut c| async move {
            append_message(&mut c, &id, role, &body, token).await
        })
        .await
    }

    async fn messages(&self, id: &str) -> Result<Vec<Message>, StoreError> {
        let id = id.to_string();
        self.run("reading messages", move |mut c| async move {
            messages(&mut c, &id).await
        })
        .await
    }

    async fn set_todos(&self, id: &str, todos: &[Todo]) -> Result<(), StoreError> {
        let id = id.to_string();
        let body = to_json(todos, "todos")?;
        let token = self.fences.token(&id);
        self.run("saving todos", move |mut c| async move {
            records::set_todos(&mut c, &id, &body, token).await
        })
        .await
    }

    async fn todos(&self, id: &str) -> Result<Vec<Todo>, StoreError> {
        let id = id.to_string();
        self.run("reading todos", move |mut c| async move {
            records::todos(&mut c, &id).await
        })
        .await
    }

    async fn add_grant(&self, id: &str, rule: &Rule) -> Result<(), StoreError> {
        let id = id.to_string();
        // Stored as the rule's own text, read back with its parser.
        let rule = rule.to_string();
        self.run("saving an approval", move |mut c| async move {
            records::add_grant(&mut c, &id, &rule).await
        })
        .await
    }

    async fn grants(&self, id: &str) -> Result<(Vec<Rule>, usize), StoreError> {
        let id = id.to_string();
        let rows = self
            .run("reading approvals", move |mut c| async move {
                records::grants(&mut c, &id).await
            })
            .await?;
        let total = rows.len();
        let rules: Vec<Rule> = rows.iter().filter_map(|r| r.parse().ok()).collect();
        let unreadable = total - rules.len();
        Ok((rules, unreadable))
    }

    async fn add_ledger(&self, id: &str, entry: &LedgerEntry) -> Result<(), StoreError> {
        let id = id.to_string();
        let body = to_json(entry, "a ledger entry")?;
        self.run("recording a model call", move |mut c| async move {
            records::add_ledger(&mut c, &id, &body).await
        })
        .await
    }

    async fn ledger(&self, id: &str) -> Result<(Vec<LedgerEntry>, usize), StoreError> {
        let id = id.to_string();
        self.run("reading the ledger", move |mut c| async move {
            records::ledger(&mut c, &id).await
        })
        .await
    }

    async fn add_compaction(&self, id: &str, record: &CompactionRecord) -> Result<(), StoreError> {
        let id = id.to_string();
        let body = to_json(record, "a compaction")?;
        let upto_seq = i64::try_from(record.upto_seq).map_err(|_| {
            StoreError::Other(format!(
                "compaction up to message {} is out of range",
                record.upto_seq
            ))
        })?;
        let token = self.fences.token(&id);
        self.run("saving a compaction", move |mut c| async move {
            records::add_compaction(&mut c, &id, upto_seq, &body, token).await
        })
        .await
    }

    async fn compactions(&self, id: &str) -> Result<Vec<CompactionRecord>, StoreError> {
        let id = id.to_string();
        self.run("reading compactions", move |mut c| async move {
            records::compactions(&mut c, &id).await
        })
        .await
    }
}
