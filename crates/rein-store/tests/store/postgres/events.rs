//! The session event log (`SessionEvents`) on both stores: numbering that
//! only grows (across writers, retention and concurrent appenders), reads
//! from a number on, retention by count and by age, and on PostgreSQL the
//! notification each append sends, heard by one listening connection that
//! comes back after the server drops it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_core::{SessionStore, StoreError};
use rein_store::events::{EVENTS_CHANNEL, parse_events_payload};
use rein_store::{Heard, LISTENER_NAME, Retention, SessionEvents};

use super::pg_store;
use super::server::raw;
use crate::fixtures::session;

fn bodies(range: std::ops::RangeInclusive<u32>) -> Vec<String> {
    range.map(|i| format!("{{\"n\":{i}}}")).collect()
}

const KEEP_ALL: Retention = Retention {
    keep: 1_000_000,
    max_age: Duration::from_secs(3600),
};

/// The checks both stores pass.
async fn shared_checks<S: SessionStore + SessionEvents>(store: &S) {
    let s = session(store, "/events", "t").await;
    let empty = store.events_after(&s.id, 0, 10).await.unwrap();
    assert_eq!((empty.last, empty.first_kept), (0, None));
    assert_eq!(
        store
            .append_events(&s.id, bodies(1..=3), KEEP_ALL)
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        store
            .append_events(&s.id, bodies(4..=5), KEEP_ALL)
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        store.append_events(&s.id, vec![], KEEP_ALL).await.unwrap(),
        5
    );
    let page = store.events_after(&s.id, 2, 2).await.unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [3, 4], "from the number on, at most the limit");
    assert_eq!(page.events[0].body, "{\"n\":3}");
    assert_eq!((page.last, page.first_kept), (5, Some(1)));
    assert!(!page.dropped_after(2));

    // Retention by count: only the newest `keep` stay, the numbering goes on.
    let keep3 = Retention {
        keep: 3,
        ..KEEP_ALL
    };
    assert_eq!(
        store
            .append_events(&s.id, bodies(6..=9), keep3)
            .await
            .unwrap(),
        9
    );
    let page = store.events_after(&s.id, 0, 100).await.unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [7, 8, 9]);
    assert!(page.dropped_after(0) && page.dropped_after(5) && !page.dropped_after(6));

    // Retention by age: at the next check (crossing 64) everything older
    // than the age goes, however few there are.
    let t = session(store, "/events", "aged").await;
    store
        .append_events(&t.id, bodies(1..=62), KEEP_ALL)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(30)).await;
    let young = Retention {
        max_age: Duration::from_millis(10),
        ..KEEP_ALL
    };
    store
        .append_events(&t.id, bodies(63..=64), young)
        .await
        .unwrap();
    let page = store.events_after(&t.id, 0, 100).await.unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [63, 64]);

    // Unknown sessions are not found; deleting a session deletes its log.
    for r in [
        store
            .append_events("nope", bodies(1..=1), KEEP_ALL)
            .await
            .map(|_| ()),
        store.events_after("nope", 0, 1).await.map(|_| ()),
    ] {
        assert!(matches!(r, Err(StoreError::NotFound(_))), "{r:?}");
    }
    store.delete_session(&s.id).await.unwrap();
    assert!(store.events_after(&s.id, 0, 1).await.is_err());
}

#[test]
fn a_stopped_event_as_rein_stores_it_is_what_the_sieve_takes_for_closed() {
    use rein_core::{Event, LedgerTotals, StopReason, Usage};
    let stopped = Event::Stopped {
        reason: StopReason::Completed,
        turns: 1,
        usage: Usage::default(),
        final_text: "done".into(),
        error: None,
        totals: LedgerTotals::default(),
        refused: Vec::new(),
    };
    let body = serde_json::to_string(&stopped).unwrap();
    // UNCLOSED's `NOT LIKE '{"type":"stopped",%'`.
    assert!(body.starts_with(r#"{"type":"stopped","#), "{body}");
    assert!(rein_store::events::UNCLOSED.contains(r#"'{"type":"stopped",%'"#));
}

/// The sessions a restarted server looks at: those whose newest event is
/// not a `stopped`, whatever came before it.
async fn unclosed_checks<S: SessionStore + SessionEvents>(store: &S) {
    let event = |kind: &str| format!("{{\"type\":\"{kind}\",\"turn\":1}}");
    let mut expected = Vec::new();
    for (name, kinds) in [
        ("open", &["run_started", "turn_started"][..]),
        ("closed", &["run_started", "stopped"]),
        ("reopened", &["run_started", "stopped", "run_started"]),
        ("never run", &[]),
        ("named stopped_x", &["stopped_x"]),
    ] {
        let s = session(store, "/unclosed", name).await;
        let bodies: Vec<String> = kinds.iter().map(|k| event(k)).collect();
        if !bodies.is_empty() {
            store.append_events(&s.id, bodies, KEEP_ALL).await.unwrap();
        }
        if matches!(name, "open" | "reopened" | "named stopped_x") {
            expected.push(s.id);
        }
    }
    expected.sort();
    assert_eq!(store.unclosed_streams().await.unwrap(), expected);
}

#[tokio::test]
async fn sqlite_keeps_a_numbered_event_log_with_retention() {
    let db = crate::fixtures::temp_db();
    let store = crate::fixtures::open(&db.path);
    unclosed_checks(&store).await;
    shared_checks(&store).await;
}

#[tokio::test]
async fn postgresql_keeps_the_same_numbered_event_log_with_retention() {
    let (_url, store) = pg_store!("events_shared");
    unclosed_checks(&store).await;
    shared_checks(&store).await;
}

#[tokio::test]
async fn concurrent_appenders_on_two_stores_get_distinct_numbers_with_no_hole() {
    let (url, a) = pg_store!("events_concurrent");
    let b = rein_store::PgStore::connect(&url).await.unwrap();
    let s = session(&a, "/w", "t").await;
    let mut tasks = Vec::new();
    for (i, store) in [a.clone(), b.clone()]
        .into_iter()
        .cycle()
        .take(8)
        .enumerate()
    {
        let id = s.id.clone();
        tasks.push(tokio::spawn(async move {
            for j in 0..10 {
                let body = vec![format!("{i}-{j}"); 3];
                store.append_events(&id, body, KEEP_ALL).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let page = a.events_after(&s.id, 0, 1000).await.unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=240).collect::<Vec<u64>>());
    // Each batch stayed together, in order.
    for batch in page.events.chunks(3) {
        assert!(batch.iter().all(|e| e.body == batch[0].body), "{batch:?}");
    }
}

/// Collects what a listener hears.
fn recorder() -> (
    Arc<Mutex<Vec<Heard>>>,
    impl Fn(Heard) + Send + Sync + 'static,
) {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    (heard, move |x| h.lock().unwrap().push(x))
}

/// Wait (at most 30 s) until `pred` holds of what was heard.
async fn until(heard: &Mutex<Vec<Heard>>, pred: impl Fn(&[Heard]) -> bool) {
    for _ in 0..600 {
        if pred(&heard.lock().unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never heard it: {:?}", heard.lock().unwrap());
}

fn notified_up_to(heard: &[Heard], id: &str, last: u64) -> bool {
    heard.iter().any(|h| match h {
        Heard::Notified { channel, payload } => {
            channel == EVENTS_CHANNEL && parse_events_payload(payload) == Some((id, last))
        }
        _ => false,
    })
}

#[tokio::test]
async fn an_append_notifies_the_listener_which_comes_back_after_its_connection_is_killed() {
    let (url, store) = pg_store!("events_listen");
    let s = session(&store, "/w", "t").await;
    let (heard, on) = recorder();
    let _listener = store.listen(&[EVENTS_CHANNEL], on).unwrap();
    until(&heard, |h| h.contains(&Heard::Listening)).await;
    store
        .append_events(&s.id, bodies(1..=2), KEEP_ALL)
        .await
        .unwrap();
    until(&heard, |h| notified_up_to(h, &s.id, 2)).await;

    // The server drops the listening connection: it is lost, then
    // listening again (the caller's cue to catch up), then hears again.
    let killed: i64 = raw(&url)
        .await
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name = $1",
            &[&LISTENER_NAME],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 1, "exactly one listening connection");
    until(&heard, |h| {
        let lost = h.iter().position(|x| matches!(x, Heard::Lost(_)));
        lost.is_some_and(|i| h[i..].contains(&Heard::Listening))
    })
    .await;
    store
        .append_events(&s.id, bodies(3..=3), KEEP_ALL)
        .await
        .unwrap();
    until(&heard, |h| notified_up_to(h, &s.id, 3)).await;
}
