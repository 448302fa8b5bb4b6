//! The event log lives in the store (SQLite here; PostgreSQL in
//! `cluster`): a restarted server streams a finished run's events with the
//! same numbers, a client behind the retention is told what was dropped,
//! and a malformed `Last-Event-ID` is refused.

use serde_json::{Value, json};

use super::{Served, create, write_script};
use crate::cli::support::*;

/// Run the write script to its end (approving its write) on `s`.
fn finished_run(s: &Served) -> String {
    let id = create(s, json!({"workspace": "proj"}));
    let (status, _) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "write out.txt"})),
    );
    assert_eq!(status, 202);
    s.events_until(&id, None, "approval_required");
    let (status, _) = s.call(
        "POST",
        &format!("/sessions/{id}/approvals/w1"),
        Some(json!({"decision": "approve"})),
    );
    assert_eq!(status, 204);
    s.events_until(&id, None, "stopped");
    s.wait_idle(&id);
    id
}

fn ids(events: &[(u64, Value)]) -> Vec<u64> {
    events.iter().map(|(i, _)| *i).collect()
}

#[test]
fn a_restarted_server_streams_the_stored_events_with_the_same_numbers() {
    let env = Env::new();
    let script = write_script(&env);
    let first = Served::start(&env, &["--script", &script]);
    let id = finished_run(&first);
    let before = first.events_until(&id, None, "stopped");
    drop(first);

    let second = Served::start(&env, &["--script", &script]);
    let after = second.events_until(&id, None, "stopped");
    assert_eq!(after, before, "the same events, the same numbers");
    assert_eq!(ids(&after), (1..=after.len() as u64).collect::<Vec<_>>());
    // From a number on: the rest only.
    let rest = second.events_until(&id, Some(3), "stopped");
    assert_eq!(rest[..], after[3..]);
}

#[test]
fn a_client_behind_the_retention_is_told_events_were_dropped_then_gets_the_rest() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script, "--events-kept", "4"]);
    let id = finished_run(&s);
    let events = s.events_until(&id, Some(1), "stopped");
    let (marker_id, marker) = &events[0];
    assert_eq!(marker["type"], "events_dropped", "{events:?}");
    assert_eq!(*marker_id, 0, "the marker carries no id: {events:?}");
    assert_eq!(marker["after"], 1);
    let next = marker["next"].as_u64().unwrap();
    assert!(next > 2, "{marker}");
    assert!(
        marker["message"]
            .as_str()
            .unwrap()
            .contains("no longer kept")
    );
    let kept = ids(&events[1..]);
    assert_eq!(kept[0], next);
    assert!(kept.windows(2).all(|w| w[1] == w[0] + 1), "{kept:?}");
    assert!(
        kept.len() <= 4 + 3,
        "at most the kept count past a check: {kept:?}"
    );
    // A client that missed nothing gets no marker.
    let last = *kept.last().unwrap();
    let tail = s.events_until(&id, Some(last - 1), "stopped");
    assert_eq!(ids(&tail), [last]);
}

#[test]
fn a_malformed_last_event_id_is_a_400_naming_it() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({}));
    let auth = format!("Bearer {}", s.token);
    for bad in ["abc", "-1", "1.5", "99999999999999999999999"] {
        let (status, _, body) = s.raw(
            "GET",
            &format!("/sessions/{id}/events"),
            &[("Authorization", &auth), ("Last-Event-ID", bad)],
            None,
        );
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("is not a number"), "{body}");
    }
}
