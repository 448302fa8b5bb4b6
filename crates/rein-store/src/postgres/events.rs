//! The session event log in PostgreSQL (see [`crate::events`]). An
//! append is two statements on one connection:
//!
//! 1. One statement takes the numbers from the session's `last_event` (the
//!    row lock makes concurrent appends to one session take turns),
//!    inserts the events and commits. The lock on the session's row is
//!    held only while it runs and commits: a message committed to the same
//!    session (which counts on that row too) waits for no more than that.
//! 2. Then `pg_notify` on [`EVENTS_CHANNEL`], in a transaction of its own
//!    that writes nothing, so the notification is delivered only once the
//!    events can be read. Not in the append's transaction: PostgreSQL
//!    takes one lock for the whole cluster while a transaction that
//!    notified commits, so every notifying commit waits for the one
//!    before it, disk write and all, and with many sessions appending the
//!    appends queued there one durable commit at a time (and the message
//!    commits behind their row locks). A transaction that writes nothing
//!    commits without waiting for the disk, so it holds that lock for a
//!    moment. A notification lost (the server dying between the two, the
//!    connection failing) delays other servers' streams until they read
//!    again (at their next keep-alive, or when their listening connection
//!    is back); the events are stored either way.
//! 3. The retention, when due, is a statement of its own after it (one
//!    that fails is done at the next check).
//!
//! While this store holds the session's lease, step 1 is made only if the
//! lease still has its token (see [`super::fence`]).

use async_trait::async_trait;
use rein_core::StoreError;
use rein_core::time::now_millis;

use super::PgStore;
use super::error::{PgContext, PgFail};
use super::fence;
use super::pool::Conn;
use crate::events::{
    EVENTS_CHANNEL, EventPage, Retention, SessionEvents, StoredEvent, TRIM, events_payload, to_db,
};

/// Number and insert a batch in one statement; the session's new head, or
/// no row when there is no session. (A data-modifying `WITH` runs whether
/// or not the query reads it.)
const APPEND: &str = "WITH head AS (
        UPDATE sessions SET last_event = last_event + cardinality($2::text[])
        WHERE id = $1 RETURNING last_event),
    added AS (
        INSERT INTO session_events (session_id, seq, body, created_at)
        SELECT $1, head.last_event - cardinality($2::text[]) + b.n, b.body, $3
        FROM head, unnest($2::text[]) WITH ORDINALITY AS b(body, n))
    SELECT last_event FROM head";

/// [`APPEND`] while the session's lease still has token `$4` (see
/// [`super::fence`]); no row: no session, or the lease is lost.
const APPEND_FENCED: &str = "WITH fence AS (
        SELECT 1 FROM session_leases WHERE session_id = $1 AND token = $4 FOR SHARE),
    head AS (
        UPDATE sessions SET last_event = last_event + cardinality($2::text[])
        WHERE id = $1 AND EXISTS (SELECT 1 FROM fence) RETURNING last_event),
    added AS (
        INSERT INTO session_events (session_id, seq, body, created_at)
        SELECT $1, head.last_event - cardinality($2::text[]) + b.n, b.body, $3
        FROM head, unnest($2::text[]) WITH ORDINALITY AS b(body, n))
    SELECT last_event FROM head";

const NOTIFY: &str = "SELECT pg_notify($1, $2)";

const HEAD: &str = "SELECT last_event FROM sessions WHERE id = $1";

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
    token: Option<i64>,
) -> Result<u64, PgFail> {
    let count = bodies.len() as u64;
    let now = now_millis();
    let row = match (count, token) {
        (0, _) => {
            let head = conn.prepared(HEAD).await.ctx("reading events")?;
            conn.query_opt(&head, &[&id]).await
        }
        (_, None) => {
            let append = conn.prepared(APPEND).await.ctx("appending events")?;
            conn.query_opt(&append, &[&id, &bodies, &now]).await
        }
        (_, Some(token)) => {
            let append = conn.prepared(APPEND_FENCED).await.ctx("appending events")?;
            conn.query_opt(&append, &[&id, &bodies, &now, &token]).await
        }
    };
    let Some(row) = row.ctx("appending events")? else {
        return Err(match token {
            Some(_) if count > 0 => fence::refused(&*conn, &id).await,
            _ => StoreError::NotFound(id.clone()).into(),
        });
    };
    let last: i64 = row.try_get(0).ctx("appending events")?;
    let last = u64::try_from(last)
        .map_err(|_| PgFail::Corrupt(format!("session {id} has event number {last}")))?;
    if count > 0 {
        // Stored whatever this does (see the module's step 2).
        let payload = events_payload(&id, last);
        if let Ok(notify) = conn.prepared(NOTIFY).await {
            let _ = conn.execute(&notify, &[&EVENTS_CHANNEL, &payload]).await;
        }
    }
    if let Some((below, cutoff)) = retention.trim(last, count, now) {
        let trim = conn.prepared(TRIM).await.ctx("removing old events")?;
        // The events are stored whatever this does; a failed trim is
        // done at the next check.
        let _ = conn.execute(&trim, &[&id, &below, &cutoff]).await;
    }
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
        let token = self.fences.token(&id);
        self.run("appending events", move |conn| {
            append(conn, id, bodies, retention, token)
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

    async fn unclosed_streams(&self) -> Result<Vec<String>, StoreError> {
        self.run("finding open event streams", |conn| async move {
            let rows = conn
                .query(crate::events::UNCLOSED, &[])
                .await
                .ctx("finding open event streams")?;
            rows.iter()
                .map(|r| r.try_get(0).ctx("finding open event streams"))
                .collect()
        })
        .await
    }
}
