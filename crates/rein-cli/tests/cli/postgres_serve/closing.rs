//! A server killed between committing its run's answer and storing the
//! run's `stopped` event leaves the answer stored, the stream open and its
//! lease expired. The test writes exactly that state through the store
//! (as the killed server's writes left it, so the window is not a matter
//! of timing) next to a running server, which takes the orphan's lease,
//! finds its run finished and closes its stream with one `stopped`,
//! numbered after the last stored event; a session whose `stopped` was
//! stored (killed before giving its lease back) gets none more.

use std::time::{Duration, Instant};

use rein_core::{
    AssistantMessage, CallKind, ContentPart, FinishReason, LedgerEntry, Message, SessionStore,
    Usage,
};
use rein_store::{PgStore, Retention, SessionEvents};
use serde_json::{Value, json};

use super::EventStream;
use crate::cli::postgres::{block_on, database};
use crate::cli::serve::Served;
use crate::cli::support::*;

/// What the killed server stored of a one-turn run answering `answer`
/// (`finish`: how the model's answer ended), and, with `stopped`, that
/// event too (the lease, on PostgreSQL, is the caller's).
pub(crate) fn killed_run<S: SessionStore + SessionEvents>(
    store: &S,
    id: &str,
    answer: &str,
    finish: Option<FinishReason>,
    stopped: bool,
) {
    block_on(async {
        let usage = Usage {
            input_tokens: 120,
            output_tokens: 7,
            ..Usage::default()
        };
        let user = Message::user("look");
        let reply = Message::Assistant(AssistantMessage {
            content: vec![ContentPart::Text {
                text: answer.into(),
            }],
            usage: Some(usage),
            finish,
        });
        let mut events = vec![
            json!({"type": "run_started", "session_id": id, "provider": "openai",
                   "model": "gpt-4o-mini", "workspace": "w", "resumed": false}),
        ];
        for message in [&user, &reply] {
            let seq = store.append_message(id, message).await.unwrap();
            if matches!(message, Message::Assistant(_)) {
                events.push(json!({"type": "turn_started", "turn": 1}));
            }
            events.push(json!({"type": "message_committed", "seq": seq, "message": message}));
        }
        if stopped {
            events.push(json!({"type": "stopped", "reason": "completed", "turns": 1}));
        }
        let bodies = events.iter().map(Value::to_string).collect();
        store
            .append_events(id, bodies, Retention::default())
            .await
            .unwrap();
        let entry = LedgerEntry {
            kind: CallKind::Turn,
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
            usage,
            cost_usd: Some(0.25),
            ok: true,
            duration_ms: 40,
            at: rein_core::time::now_millis(),
        };
        store.add_ledger(id, &entry).await.unwrap();
    });
}

/// [`killed_run`] on PostgreSQL, its lease taken and never renewed nor
/// given back: the server died.
fn killed_holding(
    pg: &PgStore,
    id: &str,
    answer: &str,
    finish: Option<FinishReason>,
    stopped: bool,
) {
    killed_run(pg, id, answer, finish, stopped);
    let ttl = Duration::from_millis(1);
    block_on(pg.acquire_lease(id, "killed/1/0", ttl)).unwrap();
}

/// Session `id`'s stored events.
fn stored(pg: &PgStore, id: &str) -> Vec<(u64, Value)> {
    let page = block_on(pg.events_after(id, 0, 10_000)).unwrap();
    let events = page.events.iter();
    events
        .map(|e| (e.seq, serde_json::from_str(&e.body).unwrap()))
        .collect()
}

#[test]
fn a_run_whose_server_died_before_storing_stopped_gets_one_from_the_server_that_finds_it() {
    let Some(url) = database("serve_closing") else {
        return;
    };
    let env = Env::new();
    // No prompt is sent to it: its model is never asked.
    let script = env.script("unused.json", &json!({"turns": [{"text": "unused"}]}));
    let s = Served::start(
        &env,
        &["--store", &url, "--lease-secs", "1", "--script", &script],
    );
    let pg = block_on(PgStore::connect(&url)).unwrap();
    let mut ids = Vec::new();
    for workspace in ["open", "cut", "closed"] {
        let (status, session) = s.call("POST", "/sessions", Some(json!({"workspace": workspace})));
        assert_eq!(status, 201, "{session}");
        ids.push(session["id"].as_str().unwrap().to_string());
    }
    let (open, cut, closed) = (&ids[0], &ids[1], &ids[2]);
    // A client follows the open session from before the server finds it.
    let mut stream = EventStream::open(&s.addr, &s.token, open, None);
    killed_holding(&pg, open, "Done.", Some(FinishReason::Stop), false);
    killed_holding(&pg, cut, "Half an ans", None, false);
    killed_holding(&pg, closed, "Done.", Some(FinishReason::Stop), true);

    // The server takes each expired lease and gives it back once done.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !block_on(pg.list_orphaned(Duration::ZERO))
        .unwrap()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the orphans were never taken");
        std::thread::sleep(Duration::from_millis(50));
    }

    // The client's stream ends with the closing `stopped`, numbered next.
    let seen = stream.until("stopped");
    assert_eq!(seen, stored(&pg, open), "the stream is the stored log");
    let (seq, stopped) = seen.last().unwrap();
    assert_eq!(
        *seq, 5,
        "after run_started, 2 commits, turn_started: {seen:?}"
    );
    assert_eq!(stopped["reason"], "completed", "{stopped}");
    assert_eq!(stopped["final_text"], "Done.");
    assert_eq!(stopped["turns"], 1);
    assert_eq!(stopped["usage"]["input_tokens"], 120);
    assert_eq!(stopped["totals"]["calls"], 1);
    assert_eq!(stopped["totals"]["cost_usd"], 0.25);
    let one = |id: &str| {
        let events = stored(&pg, id);
        let stops = events.iter().filter(|(_, e)| e["type"] == "stopped");
        assert_eq!(stops.count(), 1, "{events:?}");
        events
    };
    one(open);
    let (_, view) = s.call("GET", &format!("/sessions/{open}"), None);
    assert_eq!(view["running"], false, "{view}");

    // An answer cut short: the run did not complete, and it says why.
    let cut_log = one(cut);
    let stopped = &cut_log.last().unwrap().1;
    assert_eq!(stopped["reason"], "harness_error", "{stopped}");
    assert!(
        stopped["error"]
            .as_str()
            .unwrap()
            .contains("partial answer"),
        "{stopped}"
    );
    assert_eq!(stopped["final_text"], "Half an ans");

    // A `stopped` already stored: nothing added.
    let closed_log = one(closed);
    assert_eq!(closed_log.len(), 5, "{closed_log:?}");
    assert_eq!(closed_log.last().unwrap().1["turns"], 1);
}
