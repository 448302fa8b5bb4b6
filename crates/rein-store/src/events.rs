//! A session's event log in the store: every event a run emits (its JSON),
//! numbered per session from 1. The number comes from a counter kept on
//! the session's row, so it only grows: across servers, across a server
//! taking a run over after a crash, and across retention removing old
//! events. Both stores implement [`SessionEvents`]; `rein serve` streams
//! from it.
//!
//! Retention ([`Retention`]) is applied by the writer as it appends: the
//! events more than `keep` behind the newest, and those older than
//! `max_age`, are removed (checked every [`TRIM_EVERY`] numbers, or
//! every `keep` when that is fewer, so the log holds at most that many past
//! the count between checks).

use std::time::Duration;

use async_trait::async_trait;
use rein_core::StoreError;

/// How often (in event numbers) an append also applies the retention.
pub const TRIM_EVERY: u64 = 64;

/// How many of a session's events are kept, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// The newest this many are kept (at least 1).
    pub keep: u64,
    /// Older ones are removed.
    pub max_age: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep: 10_000,
            max_age: Duration::from_secs(7 * 24 * 60 * 60),
        }
    }
}

impl Retention {
    /// Whether appending up to `last` (from `last - count`) crosses a
    /// check: every [`TRIM_EVERY`] numbers, or every `keep` when fewer.
    pub(crate) fn due(&self, last: u64, count: u64) -> bool {
        let every = self.keep.clamp(1, TRIM_EVERY);
        last / every != last.saturating_sub(count) / every
    }

    /// The highest number removed by count at `last` (0: none).
    pub(crate) fn below(&self, last: u64) -> u64 {
        last.saturating_sub(self.keep.max(1))
    }

    /// The creation time (ms since the epoch) before which events go.
    pub(crate) fn cutoff(&self, now_ms: i64) -> i64 {
        let age = i64::try_from(self.max_age.as_millis()).unwrap_or(i64::MAX);
        now_ms.saturating_sub(age)
    }

    /// Whether appending `count` events up to `last` at `now_ms` applies
    /// the retention; then [`TRIM`]'s parameters after the session: the
    /// highest number removed by count and the creation cutoff.
    pub(crate) fn trim(&self, last: u64, count: u64, now_ms: i64) -> Option<(i64, i64)> {
        (count > 0 && self.due(last, count)).then(|| (to_db(self.below(last)), self.cutoff(now_ms)))
    }
}

/// The retention's statement, one text for both stores (SQLite numbers
/// `$1`, `$2`, `$3` in the order they appear, so they bind as PostgreSQL's
/// do): the session, then [`Retention::trim`]'s two parameters.
pub(crate) const TRIM: &str =
    "DELETE FROM session_events WHERE session_id = $1 AND (seq <= $2 OR created_at < $3)";

/// One stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its number in the session (1, 2, ...).
    pub seq: u64,
    /// The event's JSON, as it was appended.
    pub body: String,
    /// When it was appended: ms since the epoch by the appending server's
    /// clock.
    pub created_at: i64,
}

/// A read of a session's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventPage {
    /// The events after the number asked for, oldest first (at most the
    /// limit asked for).
    pub events: Vec<StoredEvent>,
    /// The newest number given out (0: none yet).
    pub last: u64,
    /// The oldest number still kept (`None`: none kept).
    pub first_kept: Option<u64>,
}

impl EventPage {
    /// Whether events after `after` were numbered but are no longer kept
    /// (a reader away longer than the retention).
    pub fn dropped_after(&self, after: u64) -> bool {
        match self.first_kept {
            Some(first) => first > after + 1,
            None => self.last > after,
        }
    }
}

/// Where a session's events are kept. Every method is committed (or has
/// read one consistent state) before it returns.
#[async_trait]
pub trait SessionEvents: Send + Sync {
    /// Append `bodies` to session `session_id`'s log in this order; the
    /// number of the last one. On PostgreSQL the commit also notifies
    /// [`EVENTS_CHANNEL`] with `"<session> <last>"`.
    async fn append_events(
        &self,
        session_id: &str,
        bodies: Vec<String>,
        retention: Retention,
    ) -> Result<u64, StoreError>;

    /// Up to `limit` of the session's events numbered above `after`.
    async fn events_after(
        &self,
        session_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<EventPage, StoreError>;

    /// The sessions whose newest stored event is not a `stopped`: those a
    /// server may have left with a run open (it died before closing the
    /// stream). A first sieve ([`UNCLOSED`]): the caller reads the log to
    /// know.
    async fn unclosed_streams(&self) -> Result<Vec<String>, StoreError>;
}

/// The sessions whose newest kept event does not begin as a `stopped`
/// does (an event's `type` is written first), in both stores' SQL.
pub const UNCLOSED: &str = r#"SELECT e.session_id FROM session_events e
    JOIN sessions s ON s.id = e.session_id AND e.seq = s.last_event
    WHERE e.body NOT LIKE '{"type":"stopped",%'
    ORDER BY e.session_id"#;

/// The PostgreSQL channel an append notifies.
pub const EVENTS_CHANNEL: &str = "rein_events";

/// A notification's payload: the session and the number of its newest
/// event.
pub fn events_payload(session_id: &str, last: u64) -> String {
    format!("{session_id} {last}")
}

/// [`events_payload`] read back (`None`: not one).
pub fn parse_events_payload(payload: &str) -> Option<(&str, u64)> {
    let (id, last) = payload.rsplit_once(' ')?;
    Some((id, last.parse().ok()?))
}

/// A number as the databases store it.
pub(crate) fn to_db(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_is_told_of_dropped_events_only_when_some_were_numbered_and_removed() {
        let page = |first_kept, last| EventPage {
            events: vec![],
            last,
            first_kept,
        };
        assert!(!page(Some(1), 5).dropped_after(0));
        assert!(!page(Some(4), 5).dropped_after(3));
        assert!(page(Some(5), 5).dropped_after(3));
        assert!(page(None, 5).dropped_after(3), "all removed");
        assert!(!page(None, 5).dropped_after(5), "nothing new");
        assert!(!page(None, 0).dropped_after(0), "an empty log");
    }

    #[test]
    fn retention_checks_when_an_append_crosses_a_multiple() {
        let r = Retention {
            keep: 100,
            max_age: Duration::from_secs(1),
        };
        assert!(!r.due(10, 3));
        assert!(r.due(64, 1));
        assert!(r.due(70, 10));
        let small = Retention { keep: 5, ..r };
        assert!(small.due(5, 1) && !small.due(6, 1));
        assert_eq!(r.below(50), 0);
        assert_eq!(r.below(150), 50);
        assert_eq!(r.cutoff(5_000), 4_000);
    }

    #[test]
    fn the_notification_payload_names_the_session_and_the_newest_number() {
        let p = events_payload("01J abc", 42);
        assert_eq!(parse_events_payload(&p), Some(("01J abc", 42)));
        assert_eq!(parse_events_payload("nonsense"), None);
    }
}
