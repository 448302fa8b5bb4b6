//! The server's view of every session's stored event log, for Server-Sent
//! Events from any server:
//!
//! 1. A stream reads the stored log from the event after `Last-Event-ID`
//!    (a page at a time) and sends it, each event with its number as the
//!    SSE `id`; first a `dropped` marker when the retention removed some
//!    of what the client asked for.
//! 2. With nothing more stored it waits for the session's newest number
//!    to move: on this server the [`EventWriter`](super::events) says so
//!    after each append; on PostgreSQL the one listening connection of the
//!    server (see [`super::control::listen`]) hears every other server's
//!    appends (`NOTIFY` with the session and number). Then it reads on from the table, the one truth, so the
//!    switch from stored to live neither loses nor repeats an event.
//! 3. When the listening connection was lost and is back, every stream
//!    reads again (what was notified meanwhile is not heard); a quiet
//!    stream also reads again with each keep-alive comment.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::StreamBody;
use hyper::body::Frame;
use rein_store::{PgStore, Retention, SessionEvents};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A comment line this often keeps proxies from closing a quiet stream
/// (and the stream reads the store again).
const PING: Duration = Duration::from_secs(15);
/// The most events read from the store at once.
const PAGE: usize = 500;

/// Every session's event log as this server follows it.
pub struct EventFeed {
    store: Arc<dyn SessionEvents>,
    retention: Retention,
    /// The newest number known per session being streamed here.
    heads: Mutex<HashMap<String, watch::Sender<u64>>>,
    /// Moves when notifications may have been missed.
    catch_up: watch::Sender<u64>,
    /// Where the approvals a run waits for are shown to every server
    /// (PostgreSQL, with this server's lease name).
    board: Option<(PgStore, String)>,
}

impl EventFeed {
    pub fn new(
        store: Arc<dyn SessionEvents>,
        retention: Retention,
        board: Option<(PgStore, String)>,
    ) -> EventFeed {
        EventFeed {
            store,
            retention,
            heads: Mutex::new(HashMap::new()),
            catch_up: watch::channel(0).0,
            board,
        }
    }

    /// Append a batch of `session_id`'s events and wake its streams here.
    pub async fn append(&self, session_id: &str, batch: Vec<String>) {
        let count = batch.len();
        match self.store_events(session_id, batch).await {
            Ok(_) => {}
            // Deleted meanwhile: nothing to keep its events for.
            Err(rein_core::StoreError::NotFound(_)) => {}
            Err(e) => crate::output::err(&format!(
                "rein serve: {count} events of session {session_id} were not stored: {e}"
            )),
        }
    }

    /// Append a batch of `session_id`'s events and wake its streams here;
    /// the number of the last.
    pub async fn store_events(
        &self,
        session_id: &str,
        batch: Vec<String>,
    ) -> Result<u64, rein_core::StoreError> {
        let last = self
            .store
            .append_events(session_id, batch, self.retention)
            .await?;
        self.heard(session_id, last);
        Ok(last)
    }

    /// The stored event log.
    pub fn events(&self) -> &Arc<dyn SessionEvents> {
        &self.store
    }

    /// Every stream reads the store again (notifications may have been
    /// missed).
    pub fn catch_up(&self) {
        self.catch_up.send_modify(|n| *n += 1);
    }

    /// Record, for every server, the approvals `session_id`'s run here
    /// waits for (a JSON array; PostgreSQL only).
    pub async fn set_waiting(&self, session_id: &str, waiting: &str) {
        let Some((pg, owner)) = &self.board else {
            return;
        };
        if let Err(e) = pg.set_waiting(session_id, owner, waiting).await {
            crate::output::err(&format!(
                "rein serve: cannot record the approvals session {session_id} waits for: {e}"
            ));
        }
    }

    /// The session's events up to `last` are stored.
    pub fn heard(&self, session_id: &str, last: u64) {
        let heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(head) = heads.get(session_id) {
            head.send_if_modified(|known| {
                let newer = last > *known;
                *known = (*known).max(last);
                newer
            });
        }
    }

    fn subscribe(&self, session_id: &str) -> watch::Receiver<u64> {
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        if heads.len() >= 1024 {
            heads.retain(|_, head| head.receiver_count() > 0);
        }
        heads
            .entry(session_id.to_string())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// An SSE body of `session_id`'s events from the one after `after`
    /// on, open until `closed` fires (the server shutting down), the
    /// client goes, or the store fails.
    pub fn stream(
        self: &Arc<Self>,
        session_id: &str,
        after: u64,
        closed: CancellationToken,
    ) -> StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + use<>>
    {
        let follow = Follow {
            head: self.subscribe(session_id),
            catch_up: self.catch_up.subscribe(),
            feed: self.clone(),
            session_id: session_id.to_string(),
            after,
            closed,
            first: true,
            ended: false,
        };
        let frames = futures_util::stream::unfold(follow, |mut follow| async move {
            let text = follow.next().await?;
            Some((Ok(Frame::data(Bytes::from(text))), follow))
        });
        StreamBody::new(frames)
    }
}

/// One client's place in a session's log.
struct Follow {
    feed: Arc<EventFeed>,
    session_id: String,
    head: watch::Receiver<u64>,
    catch_up: watch::Receiver<u64>,
    after: u64,
    closed: CancellationToken,
    first: bool,
    ended: bool,
}

impl Follow {
    /// The next text to send (events, the marker, or a keep-alive), or
    /// `None` when the stream ends.
    async fn next(&mut self) -> Option<String> {
        if self.ended {
            return None;
        }
        loop {
            // Seen before reading: a number that moves after the read
            // wakes the wait below.
            self.head.borrow_and_update();
            self.catch_up.borrow_and_update();
            let page = match self
                .feed
                .store
                .events_after(&self.session_id, self.after, PAGE)
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    // The client reconnects with its Last-Event-ID.
                    self.ended = true;
                    let why = e.to_string().replace('\n', " ");
                    return Some(format!(": the event log cannot be read: {why}\n\n"));
                }
            };
            let mut text = String::new();
            if std::mem::take(&mut self.first) && page.dropped_after(self.after) {
                text.push_str(&dropped_marker(self.after, &page));
            }
            for event in &page.events {
                text.push_str(&format!("id: {}\ndata: {}\n\n", event.seq, event.body));
                self.after = event.seq;
            }
            if !text.is_empty() {
                return Some(text);
            }
            tokio::select! {
                _ = self.closed.cancelled() => return None,
                changed = self.head.changed() => changed.ok()?,
                changed = self.catch_up.changed() => changed.ok()?,
                _ = tokio::time::sleep(PING) => return Some(": ping\n\n".into()),
            }
        }
    }
}

/// The event that tells a client the retention removed events it asked
/// for (no `id`: its place stays where it was until the next event).
fn dropped_marker(after: u64, page: &rein_store::EventPage) -> String {
    let next = page.first_kept.unwrap_or(page.last + 1);
    let marker = serde_json::json!({
        "type": "events_dropped",
        "after": after,
        "next": next,
        "message": format!(
            "events {} to {} are no longer kept (retention); the stream goes on from {next}",
            after + 1,
            next - 1
        ),
    });
    format!("event: dropped\ndata: {marker}\n\n")
}
