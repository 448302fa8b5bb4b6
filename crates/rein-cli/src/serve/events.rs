//! A session's events as `rein serve` keeps them for Server-Sent Events:
//! each numbered (the SSE `id`), the latest [`KEPT`] in memory, so a
//! client that reconnects with `Last-Event-ID` gets what it missed.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::StreamBody;
use hyper::body::Frame;
use tokio::sync::watch;

/// How many events a session keeps for reconnecting clients.
pub const KEPT: usize = 10_000;
/// A comment line this often keeps proxies from closing a quiet stream.
const PING: Duration = Duration::from_secs(15);

/// One session's numbered events.
pub struct EventLog {
    inner: Mutex<Kept>,
    /// The number of the newest event (0: none yet).
    newest: watch::Sender<u64>,
}

struct Kept {
    /// (number, JSON) oldest first.
    events: VecDeque<(u64, Arc<str>)>,
    next: u64,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog {
            inner: Mutex::new(Kept {
                events: VecDeque::new(),
                next: 1,
            }),
            newest: watch::channel(0).0,
        }
    }
}

impl EventLog {
    /// Add one event (its JSON) and wake the streams.
    pub fn push(&self, json: String) -> u64 {
        let id = {
            let mut kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let id = kept.next;
            kept.next += 1;
            kept.events.push_back((id, json.into()));
            if kept.events.len() > KEPT {
                kept.events.pop_front();
            }
            id
        };
        self.newest.send_replace(id);
        id
    }

    /// The events after `after`, and whether some after it were dropped
    /// (the client was away longer than the log reaches).
    fn since(&self, after: u64) -> (Vec<(u64, Arc<str>)>, bool) {
        let kept = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = kept.events.front().map_or(kept.next, |(id, _)| *id);
        let gap = after + 1 < oldest;
        let events = kept
            .events
            .iter()
            .filter(|(id, _)| *id > after)
            .cloned()
            .collect();
        (events, gap)
    }

    /// An SSE body from the event after `after` on, open until `closed`
    /// fires (the server shutting down) or the client goes.
    pub fn stream(
        self: &Arc<Self>,
        after: u64,
        closed: tokio_util::sync::CancellationToken,
    ) -> StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, Infallible>> + use<>>
    {
        let state = (self.clone(), after, self.newest.subscribe(), closed, true);
        let frames = futures_util::stream::unfold(
            state,
            |(log, after, mut newest, closed, first)| async move {
                loop {
                    let (events, gap) = log.since(after);
                    if !events.is_empty() || (first && gap) {
                        let mut text = String::new();
                        if first && gap {
                            text.push_str("event: gap\ndata: {\"type\":\"gap\"}\n\n");
                        }
                        let mut last = after;
                        for (id, json) in &events {
                            text.push_str(&format!("id: {id}\ndata: {json}\n\n"));
                            last = *id;
                        }
                        let frame = Frame::data(Bytes::from(text));
                        return Some((Ok(frame), (log, last, newest, closed, false)));
                    }
                    tokio::select! {
                        _ = closed.cancelled() => return None,
                        changed = newest.changed() => changed.ok()?,
                        _ = tokio::time::sleep(PING) => {
                            let ping = Frame::data(Bytes::from_static(b": ping\n\n"));
                            return Some((Ok(ping), (log, after, newest, closed, false)));
                        }
                    }
                }
            },
        );
        StreamBody::new(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_numbered_and_read_from_an_id_on() {
        let log = EventLog::default();
        for i in 0..5 {
            log.push(format!("{{\"n\":{i}}}"));
        }
        let (events, gap) = log.since(3);
        let ids: Vec<u64> = events.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, [4, 5]);
        assert!(!gap);
    }

    #[test]
    fn a_client_away_longer_than_the_log_is_told_of_the_gap() {
        let log = EventLog::default();
        for i in 0..(KEPT + 10) {
            log.push(format!("{i}"));
        }
        let (events, gap) = log.since(2);
        assert!(gap);
        assert_eq!(events.len(), KEPT);
        assert_eq!(events[0].0, 11);
    }
}
