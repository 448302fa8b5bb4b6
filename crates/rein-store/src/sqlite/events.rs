//! The session event log in SQLite (see [`crate::events`]): an append
//! takes its numbers from the session's `last_event` and inserts the
//! events in one write transaction; a read sees one snapshot.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use rein_core::StoreError;
use rein_core::time::now_millis;

use super::{SqliteStore, ensure_exists};
use crate::error::{Context, Fail};
use crate::events::{EventPage, Retention, SessionEvents, StoredEvent, TRIM, UNCLOSED, to_db};

fn append(
    conn: &mut Connection,
    id: &str,
    bodies: &[String],
    retention: Retention,
) -> Result<u64, Fail> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("appending events")?;
    let count = bodies.len() as u64;
    let last: i64 = tx
        .query_row(
            "UPDATE sessions SET last_event = last_event + ?2 WHERE id = ?1 RETURNING last_event",
            params![id, to_db(count)],
            |r| r.get(0),
        )
        .optional()
        .ctx("appending events")?
        .ok_or_else(|| StoreError::NotFound(id.to_string()))?;
    let last = u64::try_from(last)
        .map_err(|_| Fail::Corrupt(format!("session {id} has event number {last}")))?;
    let now = now_millis();
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO session_events (session_id, seq, body, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .ctx("appending events")?;
        let first = last + 1 - count;
        for (i, body) in bodies.iter().enumerate() {
            insert
                .execute(params![id, to_db(first + i as u64), body, now])
                .ctx("appending events")?;
        }
    }
    if let Some((below, cutoff)) = retention.trim(last, count, now) {
        tx.execute(TRIM, params![id, below, cutoff])
            .ctx("removing old events")?;
    }
    tx.commit().ctx("committing events")?;
    Ok(last)
}

fn read(conn: &mut Connection, id: &str, after: u64, limit: usize) -> Result<EventPage, Fail> {
    let tx = conn.transaction().ctx("reading events")?;
    ensure_exists(&tx, id)?;
    let (last, first_kept): (i64, Option<i64>) = tx
        .query_row(
            "SELECT last_event, (SELECT MIN(seq) FROM session_events WHERE session_id = ?1)
             FROM sessions WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ctx("reading events")?;
    let events = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT seq, body, created_at FROM session_events WHERE session_id = ?1 AND seq > ?2
                 ORDER BY seq LIMIT ?3",
            )
            .ctx("reading events")?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        stmt.query_map(params![id, to_db(after), limit], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .ctx("reading events")?
    };
    let number = |n: i64| {
        u64::try_from(n).map_err(|_| Fail::Corrupt(format!("session {id} has event number {n}")))
    };
    Ok(EventPage {
        events: events
            .into_iter()
            .map(|(seq, body, created_at)| {
                Ok(StoredEvent {
                    seq: number(seq)?,
                    body,
                    created_at,
                })
            })
            .collect::<Result<_, Fail>>()?,
        last: number(last)?,
        first_kept: first_kept.map(number).transpose()?,
    })
}

#[async_trait]
impl SessionEvents for SqliteStore {
    async fn append_events(
        &self,
        session_id: &str,
        bodies: Vec<String>,
        retention: Retention,
    ) -> Result<u64, StoreError> {
        let id = session_id.to_string();
        self.run(move |conn| append(conn, &id, &bodies, retention))
            .await
    }

    async fn events_after(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<EventPage, StoreError> {
        let id = session_id.to_string();
        self.run(move |conn| read(conn, &id, after, limit)).await
    }

    async fn unclosed_streams(&self) -> Result<Vec<String>, StoreError> {
        self.run(|conn| {
            let mut stmt = conn.prepare(UNCLOSED).ctx("finding open event streams")?;
            stmt.query_map([], |r| r.get(0))
                .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
                .ctx("finding open event streams")
        })
        .await
    }
}
