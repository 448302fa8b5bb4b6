//! What a session keeps besides its messages: todos, approval grants, the
//! cost ledger and compaction records, each read and written in its own
//! transaction.

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use rein_core::{CompactionRecord, LedgerEntry, Todo};

use super::ensure_exists;
use crate::error::{Context, Fail};

pub(super) fn set_todos(conn: &mut Connection, id: &str, body: &str) -> Result<(), Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("saving todos")?;
    ensure_exists(&tx, id)?;
    tx.execute(
        "INSERT INTO todos (session_id, body) VALUES (?1, ?2)
         ON CONFLICT (session_id) DO UPDATE SET body = excluded.body",
        params![id, body],
    )
    .ctx("saving todos")?;
    tx.commit().ctx("committing todos")
}

pub(super) fn todos(conn: &mut Connection, id: &str) -> Result<Vec<Todo>, Fail> {
    let tx = conn.transaction().ctx("reading todos")?;
    ensure_exists(&tx, id)?;
    let body: Option<String> = tx
        .query_row("SELECT body FROM todos WHERE session_id = ?1", [id], |r| {
            r.get(0)
        })
        .optional()
        .ctx("reading todos")?;
    tx.finish().ctx("reading todos")?;
    match body {
        None => Ok(Vec::new()),
        Some(body) => serde_json::from_str(&body)
            .map_err(|e| Fail::Corrupt(format!("the todos of session {id} cannot be read: {e}"))),
    }
}

pub(super) fn add_grant(conn: &mut Connection, id: &str, rule: &str) -> Result<(), Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("saving an approval")?;
    ensure_exists(&tx, id)?;
    tx.execute(
        "INSERT OR IGNORE INTO grants (session_id, seq, rule)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM grants WHERE session_id = ?1), ?2)",
        params![id, rule],
    )
    .ctx("saving an approval")?;
    tx.commit().ctx("committing an approval")
}

pub(super) fn grants(conn: &mut Connection, id: &str) -> Result<Vec<String>, Fail> {
    let tx = conn.transaction().ctx("reading approvals")?;
    ensure_exists(&tx, id)?;
    let rules = {
        let mut stmt = tx
            .prepare("SELECT rule FROM grants WHERE session_id = ?1 ORDER BY seq")
            .ctx("reading approvals")?;
        let rows = stmt
            .query_map([id], |r| r.get::<_, String>(0))
            .ctx("reading approvals")?;
        rows.collect::<Result<Vec<_>, _>>()
            .ctx("reading approvals")?
    };
    tx.finish().ctx("reading approvals")?;
    Ok(rules)
}

pub(super) fn add_ledger(conn: &mut Connection, id: &str, body: &str) -> Result<(), Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("recording a model call")?;
    ensure_exists(&tx, id)?;
    tx.execute(
        "INSERT INTO ledger (session_id, seq, body)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ledger WHERE session_id = ?1), ?2)",
        params![id, body],
    )
    .ctx("recording a model call")?;
    tx.commit().ctx("committing a model call")
}

/// The ledger in call order and how many rows could not be read: a row
/// that does not parse (a damaged file, a newer rein's shape) is skipped,
/// since costs are informative and must never make a session unreadable.
pub(super) fn ledger(conn: &mut Connection, id: &str) -> Result<(Vec<LedgerEntry>, usize), Fail> {
    let tx = conn.transaction().ctx("reading the ledger")?;
    ensure_exists(&tx, id)?;
    let mut entries = Vec::new();
    let mut skipped = 0usize;
    {
        let mut stmt = tx
            .prepare_cached("SELECT body FROM ledger WHERE session_id = ?1 ORDER BY seq")
            .ctx("reading the ledger")?;
        let mut rows = stmt.query([id]).ctx("reading the ledger")?;
        while let Some(row) = rows.next().ctx("reading the ledger")? {
            let parsed = row
                .get_ref(0)
                .ok()
                .and_then(|v| v.as_bytes().ok())
                .and_then(|bytes| serde_json::from_slice::<LedgerEntry>(bytes).ok());
            match parsed {
                Some(entry) => entries.push(entry),
                None => skipped += 1,
            }
        }
    }
    tx.finish().ctx("reading the ledger")?;
    Ok((entries, skipped))
}

pub(super) fn add_compaction(
    conn: &mut Connection,
    id: &str,
    upto_seq: i64,
    body: &str,
) -> Result<(), Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("saving a compaction")?;
    ensure_exists(&tx, id)?;
    tx.execute(
        "INSERT INTO compactions (session_id, seq, upto_seq, body)
         VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM compactions WHERE session_id = ?1),
                 ?2, ?3)",
        params![id, upto_seq, body],
    )
    .ctx("saving a compaction")?;
    tx.commit().ctx("committing a compaction")
}

/// The compactions, oldest first. Unlike the ledger, a damaged row fails
/// the read: it decides what the model sees, like a message does.
pub(super) fn compactions(conn: &mut Connection, id: &str) -> Result<Vec<CompactionRecord>, Fail> {
    let tx = conn.transaction().ctx("reading compactions")?;
    ensure_exists(&tx, id)?;
    let mut out = Vec::new();
    {
        let mut stmt = tx
            .prepare_cached("SELECT seq, body FROM compactions WHERE session_id = ?1 ORDER BY seq")
            .ctx("reading compactions")?;
        let mut rows = stmt.query([id]).ctx("reading compactions")?;
        while let Some(row) = rows.next().ctx("reading compactions")? {
            let seq: i64 = row.get(0).ctx("reading compactions")?;
            let parsed = row
                .get_ref(1)
                .map_err(|e| e.to_string())
                .and_then(|v| v.as_bytes().map_err(|e| e.to_string()))
                .and_then(|bytes| {
                    serde_json::from_slice::<CompactionRecord>(bytes).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(record) => out.push(record),
                Err(e) => {
                    return Err(Fail::Corrupt(format!(
                        "compaction {seq} of session {id} cannot be read: {e}"
                    )));
                }
            }
        }
    }
    tx.finish().ctx("reading compactions")?;
    Ok(out)
}
