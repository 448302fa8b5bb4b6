//! How a served session's events reach the store: each event (its JSON)
//! is queued as the run emits it, and one task per session appends them
//! in batches (one statement, one commit each), then tells the server's
//! [`EventFeed`] the newest number so its streams read on.
//!
//! Steps of the appending task:
//! 1. Wait for an item. An event opens a batch; it is due at once when
//!    no append was made in the last [`GATHER`], else [`GATHER`] after
//!    the last append.
//! 2. Until the batch is due, take every event that arrives into it. A
//!    full batch ([`BATCH`]), a flush (shutdown) or a change of the
//!    approvals waited for appends it at once; the approvals are recorded
//!    after the events before them.
//! 3. Append the batch, answer the flushes waiting for it, go to 1.
//!
//! So an event after a quiet spell (an approval asked for, a run's first
//! event) is appended as soon as it comes, and a busy run (streamed text,
//! a turn's tool calls and results) commits its events at most once per
//! [`GATHER`] instead of once per event, at the cost of at most
//! [`GATHER`] more before a client sees one.
//!
//! The store numbers the events (see [`rein_store::events`]), so a run
//! taken over by another server goes on with the same numbering. A batch
//! the store refuses is lost and said so on stderr; streams show only
//! what was stored.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::feed::EventFeed;

/// The most events appended in one transaction.
const BATCH: usize = 512;

/// The shortest time between two appends of a session's events while it
/// emits them (the longest an event waits before it is appended).
pub const GATHER: Duration = Duration::from_millis(20);

enum Item {
    Event(String),
    Other(Other),
}

/// What is queued besides events: applied after the events before it
/// were appended.
enum Other {
    /// The approvals the run waits for now (a JSON array).
    Waiting(String),
    /// Answered once everything queued before it was appended.
    Flush(oneshot::Sender<()>),
}

/// One session's queue of events on their way to the store.
#[derive(Clone)]
pub struct EventWriter {
    queue: mpsc::UnboundedSender<Item>,
}

impl EventWriter {
    /// A queue for `session_id`, with its appending task.
    pub fn start(feed: Arc<EventFeed>, session_id: String) -> EventWriter {
        let (queue, items) = mpsc::unbounded_channel();
        let appender = Appender {
            feed,
            session_id,
            batch: Vec::new(),
            due: None,
            last: None,
        };
        tokio::spawn(appender.run(items));
        EventWriter { queue }
    }

    /// Queue one event.
    pub fn push(&self, json: String) {
        let _ = self.queue.send(Item::Event(json));
    }

    /// Queue the approvals the run waits for now, for every server to show.
    pub fn waiting(&self, json: String) {
        let _ = self.queue.send(Item::Other(Other::Waiting(json)));
    }

    /// Wait until every event queued so far was appended (or refused).
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.queue.send(Item::Other(Other::Flush(done))).is_ok() {
            let _ = flushed.await;
        }
    }
}

/// The appending task's state.
struct Appender {
    feed: Arc<EventFeed>,
    session_id: String,
    batch: Vec<String>,
    /// When the open batch is appended (`None`: no batch open).
    due: Option<Instant>,
    /// When the last append was started.
    last: Option<Instant>,
}

impl Appender {
    /// Append batches until the queue closes (its last batch too).
    async fn run(mut self, mut items: mpsc::UnboundedReceiver<Item>) {
        loop {
            let item = match self.due {
                None => items.recv().await,
                Some(due) => match tokio::time::timeout_at(due, items.recv()).await {
                    Ok(item) => item,
                    Err(_) => {
                        self.append().await;
                        continue;
                    }
                },
            };
            match item {
                Some(Item::Event(json)) => {
                    self.batch.push(json);
                    let now = Instant::now();
                    let due = *self.due.get_or_insert_with(|| match self.last {
                        Some(last) => (last + GATHER).max(now),
                        None => now,
                    });
                    if due <= now || self.batch.len() >= BATCH {
                        self.take_queued(&mut items).await;
                    }
                }
                Some(Item::Other(other)) => {
                    self.append().await;
                    self.apply(other).await;
                }
                None => return self.append().await,
            }
        }
    }

    /// Append the open batch with the events queued behind it (up to
    /// [`BATCH`]), then what follows them when it is not an event.
    async fn take_queued(&mut self, items: &mut mpsc::UnboundedReceiver<Item>) {
        let mut after = None;
        while self.batch.len() < BATCH {
            match items.try_recv() {
                Ok(Item::Event(json)) => self.batch.push(json),
                Ok(Item::Other(other)) => {
                    after = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        self.append().await;
        if let Some(other) = after {
            self.apply(other).await;
        }
    }

    async fn apply(&self, other: Other) {
        match other {
            Other::Waiting(json) => self.feed.set_waiting(&self.session_id, &json).await,
            Other::Flush(done) => {
                let _ = done.send(());
            }
        }
    }

    /// Append the open batch, if any.
    async fn append(&mut self) {
        self.due = None;
        if !self.batch.is_empty() {
            self.last = Some(Instant::now());
            let batch = std::mem::take(&mut self.batch);
            self.feed.append(&self.session_id, batch).await;
        }
    }
}
