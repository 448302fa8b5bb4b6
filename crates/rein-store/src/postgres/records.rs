//! What a session keeps besides its messages, in PostgreSQL: todos,
//! approval grants, the cost ledger and compaction records, each written
//! in its own transaction and read in one statement, with the SQLite
//! store's rules.

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Transaction};

use rein_core::{CompactionRecord, LedgerEntry, StoreError, Todo};

use super::error::{PgContext, PgFail};
use super::fence::check_held;
use super::pool::Conn;

/// A session's rows of one list, in `seq` order, with one prepared
/// statement that joins them to the session: no row at all means no
/// session, and a session without any gives one row whose `seq` (the
/// first column) is NULL, left out here. One statement reads one snapshot,
/// so the check and the rows agree.
async fn session_rows(
    conn: &mut Conn,
    sql: &'static str,
    id: &str,
    context: &'static str,
) -> Result<Vec<tokio_postgres::Row>, PgFail> {
    let statement = conn.prepared(sql).await.ctx(context)?;
    let rows = conn.query(&statement, &[&id]).await.ctx(context)?;
    if rows.is_empty() {
        return Err(StoreError::NotFound(id.to_string()).into());
    }
    let mut listed = Vec::with_capacity(rows.len());
    for row in rows {
        if row.try_get::<_, Option<i64>>(0).ctx(context)?.is_some() {
            listed.push(row);
        }
    }
    Ok(listed)
}

/// Lock the session's row until commit (and fail when there is none):
/// writers of one session's records take turns, so the next `seq` of a
/// record list is computed by one of them at a time.
async fn lock_session(tx: &Transaction<'_>, id: &str) -> Result<(), PgFail> {
    let found = tx
        .query_opt("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", &[&id])
        .await
        .ctx("looking up a session")?;
    match found {
        Some(_) => Ok(()),
        None => Err(rein_core::StoreError::NotFound(id.to_string()).into()),
    }
}

pub(super) async fn set_todos(
    client: &mut Client,
    id: &str,
    body: &str,
    token: Option<i64>,
) -> Result<(), PgFail> {
    let tx = client.transaction().await.ctx("saving todos")?;
    // The lease before the session, as a fenced append takes them.
    check_held(&tx, id, token).await?;
    lock_session(&tx, id).await?;
    tx.execute(
        "INSERT INTO todos (session_id, body) VALUES ($1, $2)
         ON CONFLICT (session_id) DO UPDATE SET body = excluded.body",
        &[&id, &body],
    )
    .await
    .ctx("saving todos")?;
    tx.commit().await.ctx("committing todos")
}

/// The session's todos (NULL when none were saved), or no row when there is
/// no session: one statement, so both are read from one snapshot.
const TODOS: &str =
    "SELECT (SELECT body FROM todos WHERE session_id = $1) FROM sessions WHERE id = $1";

pub(super) async fn todos(conn: &mut Conn, id: &str) -> Result<Vec<Todo>, PgFail> {
    let statement = conn.prepared(TODOS).await.ctx("reading todos")?;
    let row = conn
        .query_opt(&statement, &[&id])
        .await
        .ctx("reading todos")?
        .ok_or_else(|| rein_core::StoreError::NotFound(id.to_string()))?;
    let Some(body) = row.try_get::<_, Option<&str>>(0).ctx("reading todos")? else {
        return Ok(Vec::new());
    };
    serde_json::from_str(body)
        .map_err(|e| PgFail::Corrupt(format!("the todos of session {id} cannot be read: {e}")))
}

pub(super) async fn add_grant(client: &mut Client, id: &str, rule: &str) -> Result<(), PgFail> {
    let tx = client.transaction().await.ctx("saving an approval")?;
    lock_session(&tx, id).await?;
    // A rule granted twice is kept once, where it was first granted.
    tx.execute(
        "INSERT INTO grants (session_id, seq, rule)
         VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM grants WHERE session_id = $1), $2)
         ON CONFLICT (session_id, rule) DO NOTHING",
        &[&id, &rule],
    )
    .await
    .ctx("saving an approval")?;
    tx.commit().await.ctx("committing an approval")
}

const GRANTS: &str = "SELECT g.seq, g.rule FROM sessions s
    LEFT JOIN grants g ON g.session_id = s.id WHERE s.id = $1 ORDER BY g.seq";

pub(super) async fn grants(conn: &mut Conn, id: &str) -> Result<Vec<String>, PgFail> {
    let rows = session_rows(conn, GRANTS, id, "reading approvals").await?;
    rows.iter()
        .map(|r| r.try_get::<_, String>(1))
        .collect::<Result<_, _>>()
        .ctx("reading approvals")
}

/// Append to the ledger in one statement, without locking the session's
/// row: the next seq is taken from the statement's snapshot, and should a
/// concurrent call have committed that seq meanwhile, the insert does
/// nothing (after waiting for that call to finish) and says so. The
/// columns: whether the session exists, whether the entry went in.
const ADD_LEDGER: &str = "WITH s AS (SELECT id FROM sessions WHERE id = $1),
    added AS (
        INSERT INTO ledger (session_id, seq, body)
        SELECT id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ledger WHERE session_id = $1),
               $2::text
        FROM s
        ON CONFLICT (session_id, seq) DO NOTHING RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM s), EXISTS (SELECT 1 FROM added)";

/// How often [`add_ledger`] tries again after a clash. Each clash means
/// another call's entry went in, so this bounds only a flood of writers on
/// one session, where the server runs one model call at a time.
const LEDGER_TRIES: usize = 256;

pub(super) async fn add_ledger(conn: &mut Conn, id: &str, body: &str) -> Result<(), PgFail> {
    let statement = conn
        .prepared(ADD_LEDGER)
        .await
        .ctx("recording a model call")?;
    for _ in 0..LEDGER_TRIES {
        // Not a lock-then-insert transaction: that was four round trips,
        // and mixing a row lock with the insert's foreign-key lock can
        // deadlock. A retry is a new statement, so a new snapshot.
        let row = match conn.query_one(&statement, &[&id, &body]).await {
            Ok(row) => row,
            // The session was deleted after the statement's snapshot.
            Err(e) if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => {
                return Err(StoreError::NotFound(id.to_string()).into());
            }
            Err(e) => return Err(e).ctx("recording a model call"),
        };
        let exists: bool = row.try_get(0).ctx("recording a model call")?;
        let added: bool = row.try_get(1).ctx("recording a model call")?;
        if !exists {
            return Err(StoreError::NotFound(id.to_string()).into());
        }
        if added {
            return Ok(());
        }
    }
    Err(StoreError::Locked(format!(
        "recording a model call of session {id} clashed with others {LEDGER_TRIES} times"
    ))
    .into())
}

/// The ledger in call order and how many rows could not be read: a row
/// that does not parse (a newer rein's shape, a hand edit) is skipped,
/// since costs are informative and must never make a session unreadable.
const LEDGER: &str = "SELECT l.seq, l.body FROM sessions s
    LEFT JOIN ledger l ON l.session_id = s.id WHERE s.id = $1 ORDER BY l.seq";

pub(super) async fn ledger(conn: &mut Conn, id: &str) -> Result<(Vec<LedgerEntry>, usize), PgFail> {
    let rows = session_rows(conn, LEDGER, id, "reading the ledger").await?;
    let mut entries = Vec::with_capacity(rows.len());
    let mut skipped = 0usize;
    for row in &rows {
        let parsed = row
            .try_get::<_, &str>(1)
            .ok()
            .and_then(|body| serde_json::from_str::<LedgerEntry>(body).ok());
        match parsed {
            Some(entry) => entries.push(entry),
            None => skipped += 1,
        }
    }
    Ok((entries, skipped))
}

pub(super) async fn add_compaction(
    client: &mut Client,
    id: &str,
    upto_seq: i64,
    body: &str,
    token: Option<i64>,
) -> Result<(), PgFail> {
    let tx = client.transaction().await.ctx("saving a compaction")?;
    // The lease before the session, as a fenced append takes them.
    check_held(&tx, id, token).await?;
    lock_session(&tx, id).await?;
    tx.execute(
        "INSERT INTO compactions (session_id, seq, upto_seq, body)
         VALUES ($1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM compactions WHERE session_id = $1),
                 $2, $3)",
        &[&id, &upto_seq, &body],
    )
    .await
    .ctx("saving a compaction")?;
    tx.commit().await.ctx("committing a compaction")
}

/// The compactions, oldest first. Unlike the ledger, a damaged row fails
/// the read: it decides what the model sees, like a message does.
const COMPACTIONS: &str = "SELECT c.seq, c.body FROM sessions s
    LEFT JOIN compactions c ON c.session_id = s.id WHERE s.id = $1 ORDER BY c.seq";

pub(super) async fn compactions(
    conn: &mut Conn,
    id: &str,
) -> Result<Vec<CompactionRecord>, PgFail> {
    let rows = session_rows(conn, COMPACTIONS, id, "reading compactions").await?;
    rows.iter()
        .map(|row| {
            let seq: i64 = row.try_get(0).ctx("reading compactions")?;
            let body: &str = row.try_get(1).ctx("reading compactions")?;
            serde_json::from_str::<CompactionRecord>(body).map_err(|e| {
                PgFail::Corrupt(format!(
                    "compaction {seq} of session {id} cannot be read: {e}"
                ))
            })
        })
        .collect()
}
