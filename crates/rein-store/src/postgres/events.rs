//! The session event log in PostgreSQL (see [`crate::events`]): an append
//! takes its numbers from the session's `last_event` (the row lock makes
//! concurrent appends to one session take turns), inserts the events and
//! notifies [`EVENTS_CHANNEL`] in one transaction, so the notification is
//! delivered only once the events can be read.

use async_trait::async_trait;
use rein_core::StoreError;
use rein_core::time::now_millis;

use super::PgStore;
use super::error::{PgContext, PgFail};
use super::pool::Conn;
use crate::events::{
    EVENTS_CHANNEL, EventPage, Retention, SessionEvents, StoredEvent, events_payload, to_db,
};

/// Number and insert a batch in one statement.
const APPEND: &str = "WITH head AS (
        UPDATE sessions SET last_event = last_event + cardinality($2::text[])
        WHERE id = $1 RETURNING last_event)
    INSERT INTO session_events (session_id, seq, body, created_at)
    SELECT $1, head.last_event - cardinality($2::text[]) + b.n, b.body, $3
    FROM head, unnest($2::text[]) WITH ORDINALITY AS b(body, n)
    RETURNING seq";

const TRIM: &str =
    "DELETE FROM session_events WHERE session_id = $1 AND (seq <= $2 OR created_at < $3)";

/// The session's head and up to `$3` events after `$2`, in one snapshot;
/// no row when there is no session.
const READ: &str = "SELECT s.last_event,
        (SELECT min(seq) FROM session_events WHERE session_id = $1), e.seq, e.body,
        e.created_at
    FROM sessions s LEFT JOIN LATERAL (
        SELECT seq, body, created_at FROM session_events WHERE session_id = $1 AND seq > $2
        ORDER BY seq LIMIT $3) e ON true
    WHERE s.id = $1 ORDER BY e.seq";

async fn append(
    mut conn: Conn,
    id: String,
    bodies: Vec<String>,
    retention: Retention,
) -> Result<u64, PgFail> {
    let (append, trim) = (
        conn.prepared(APPEND).await.ctx("appending events")?,
        conn.prepared(TRIM).await.ctx("removing old events")?,
    );
    let count = bodies.len() as u64;
    let now = now_millis();
    let tx = conn.transaction().await.ctx("appending events")?;
    let rows = tx
        .query(&append, &[&id, &bodies, &now])
        .await
        .ctx("appending events")?;
    let numbered = rows
        .iter()
        .map(|r| r.try_get::<_, i64>(0))
        .collect::<Result<Vec<_>, _>>()
        .ctx("appending events")?;
    let last = match numbered.into_iter().max() {
        Some(seq) => seq,
        None => {
            // Nothing numbered: no such session, or nothing to append.
            let row = tx
                .query_opt("SELECT last_event FROM sessions WHERE id = $1", &[&id])
                .await
                .ctx("appending events")?
                .ok_or_else(|| StoreError::NotFound(id.clone()))?;
            row.try_get::<_, i64>(0).ctx("appending events")?
        }
    };
    let last = u64::try_from(last)
        .map_err(|_| PgFail::Corrupt(format!("session {id} has event number {last}")))?;
    if count > 0 {
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[&EVENTS_CHANNEL, &events_payload(&id, last)],
        )
        .await
        .ctx("notifying of events")?;
    }
    if count > 0 && retention.due(last, count) {
        let below = to_db(retention.below(last));
        tx.execute(&trim, &[&id, &below, &retention.cutoff(now)])
            .await
            .ctx("removing old events")?;
    }
    tx.commit().await.ctx("committing events")?;
    Ok(last)
}

async fn read(mut conn: Conn, id: String, after: u64, limit: usize) -> Result<EventPage, PgFail> {
    let statement = conn.prepared(READ).await.ctx("reading events")?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = conn
        .query(&statement, &[&id, &to_db(after), &limit])
        .await
        .ctx("reading events")?;
    let first = rows
        .first()
        .ok_or_else(|| StoreError::NotFound(id.clone()))?;
    let number = |n: i64| {
        u64::try_from(n).map_err(|_| PgFail::Corrupt(format!("session {id} has event number {n}")))
    };
    let last = number(first.try_get(0).ctx("reading events")?)?;
    let first_kept: Option<i64> = first.try_get(1).ctx("reading events")?;
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        let seq: Option<i64> = row.try_get(2).ctx("reading events")?;
        let body: Option<String> = row.try_get(3).ctx("reading events")?;
        let created_at: Option<i64> = row.try_get(4).ctx("reading events")?;
        if let (Some(seq), Some(body)) = (seq, body) {
            events.push(StoredEvent {
                seq: number(seq)?,
                body,
                created_at: created_at.unwrap_or_default(),
            });
        }
    }
    Ok(EventPage {
        events,
        last,
        first_kept: first_kept.map(number).transpose()?,
    })
}

#[async_trait]
impl SessionEvents for PgStore {
    async fn append_events(
        &self,
        session_id: &str,
        bodies: Vec<String>,
        retention: Retention,
    ) -> Result<u64, StoreError> {
        let id = session_id.to_string();
        self.run("appending events", move |conn| {
            append(conn, id, bodies, retention)
        })
        .await
    }

    async fn events_after(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<EventPage, StoreError> {
        let id = session_id.to_string();
        self.run("reading events", move |conn| read(conn, id, after, limit))
            .await
    }
}
