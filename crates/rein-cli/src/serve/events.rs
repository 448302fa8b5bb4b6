//! How a served session's events reach the store: each event (its JSON)
//! is queued as the run emits it, and one task per session appends what
//! has queued up as one batch (one transaction), then tells the server's
//! [`EventFeed`] the newest number so its streams read on.
//!
//! The store numbers the events (see [`rein_store::events`]), so a run
//! taken over by another server goes on with the same numbering. A batch
//! the store refuses is lost and said so on stderr; streams show only
//! what was stored.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::feed::EventFeed;

/// The most events appended in one transaction.
const BATCH: usize = 512;

enum Item {
    Event(String),
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
        let (queue, mut items) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut batch = Vec::new();
            let mut flushed = Vec::new();
            while let Some(item) = items.recv().await {
                let mut next = Some(item);
                while let Some(item) = next.take() {
                    match item {
                        Item::Event(json) => batch.push(json),
                        Item::Waiting(json) => {
                            // In order: the events before it first.
                            if !batch.is_empty() {
                                feed.append(&session_id, std::mem::take(&mut batch)).await;
                            }
                            feed.set_waiting(&session_id, &json).await;
                        }
                        Item::Flush(done) => flushed.push(done),
                    }
                    if batch.len() < BATCH {
                        next = items.try_recv().ok();
                    }
                }
                if !batch.is_empty() {
                    feed.append(&session_id, std::mem::take(&mut batch)).await;
                }
                for done in flushed.drain(..) {
                    let _ = done.send(());
                }
            }
        });
        EventWriter { queue }
    }

    /// Queue one event.
    pub fn push(&self, json: String) {
        let _ = self.queue.send(Item::Event(json));
    }

    /// Queue the approvals the run waits for now, for every server to show.
    pub fn waiting(&self, json: String) {
        let _ = self.queue.send(Item::Waiting(json));
    }

    /// Wait until every event queued so far was appended (or refused).
    pub async fn flush(&self) {
        let (done, flushed) = oneshot::channel();
        if self.queue.send(Item::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }
}
