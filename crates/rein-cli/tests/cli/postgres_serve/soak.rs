//! A bounded soak: six sessions run at once on three servers behind
//! nginx while a random server is killed (SIGKILL) and started again on
//! its port, three times. Every session still ends with its whole
//! conversation stored once, and each session's stored event log is
//! numbered 1..n with no gap, ends `stopped: completed`, and commits no
//! message twice.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_core::SessionStore;
use rein_providers::mock_server::{MockResponse, Part, RecordedRequest};
use rein_store::SessionEvents;
use serde_json::{Value, json};

use super::nginx::{Three, chunk, chunk_stream, nginx_binary};
use crate::cli::postgres::{block_on, database};
use crate::cli::support::*;

/// Tool rounds per session before its answer.
const ROUNDS: usize = 3;
const SESSIONS: usize = 6;
const KILLS: usize = 3;

/// A `glob` call per round (each answer after a pause), then the answer.
fn model(request: &RecordedRequest) -> MockResponse {
    let body = request.json();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return MockResponse::sse(chunk_stream(&["A title"], None));
    }
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let answer = if results < ROUNDS {
        let call = json!({"index": 0, "id": format!("g{results}"), "type": "function",
            "function": {"name": "glob", "arguments": "{\"pattern\":\"*.txt\"}"}});
        chunk_stream(
            &[],
            Some(json!({"role": "assistant", "tool_calls": [call]})),
        )
    } else {
        chunk_stream(&["Done."], None)
    };
    let opening = chunk(json!({"role": "assistant", "content": ""}), None);
    MockResponse::sse_parts(vec![
        Part::Bytes(opening.into_bytes()),
        Part::Pause(Duration::from_millis(400)),
        Part::Bytes(answer),
    ])
}

fn roles(messages: &[rein_core::Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            serde_json::to_value(m).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn sessions_on_three_servers_survive_random_kills_with_nothing_lost_or_doubled() {
    let Some(bin) = nginx_binary() else {
        rein_test_support::skip(rein_test_support::Component::Nginx, "no nginx binary");
        return;
    };
    let Some(url) = database("serve_soak") else {
        return;
    };
    let env = Env::new();
    let (_rt, mock) = mock_server();
    mock.respond_with(Arc::new(model));
    let dir = tempfile::tempdir().unwrap();
    let mut three = Three::start(&env, &url, 2, &mock, &bin, dir.path());
    let front = &three.front;

    let mut ids = Vec::new();
    for i in 0..SESSIONS {
        let (status, s) = front.call(
            "POST",
            "/sessions",
            Some(json!({"workspace": format!("s{i}")})),
        );
        assert_eq!(status, 201, "{s}");
        let id = s["id"].as_str().unwrap().to_string();
        let (status, body) = front.call(
            "POST",
            &format!("/sessions/{id}/prompt"),
            Some(json!({"text": "look"})),
        );
        assert_eq!(status, 202, "{body}");
        ids.push(id);
    }
    for _ in 0..KILLS {
        std::thread::sleep(Duration::from_millis(fastrand::u64(300..1500)));
        three.kill_and_restart(&env, fastrand::usize(..3));
    }
    let front = &three.front;

    // Every session ends (bounded), its conversation stored once.
    let store = block_on(rein_store::PgStore::connect(&url)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    for id in &ids {
        let messages = loop {
            let (_, view) = front.call("GET", &format!("/sessions/{id}"), None);
            let messages = block_on(store.messages(id)).unwrap();
            let done = messages
                .last()
                .is_some_and(|m| !roles(std::slice::from_ref(m)).contains(&"tool".into()))
                && messages.len() == 2 + 2 * ROUNDS;
            // Closed: a run ended by a server found dead after its
            // answer is closed by the server that finds it.
            let page = block_on(store.events_after(id, 0, 100_000)).unwrap();
            let closed = page.events.last().is_some_and(|e| {
                serde_json::from_str::<Value>(&e.body).unwrap()["type"] == "stopped"
            });
            if view["running"] == false && done && closed {
                break messages;
            }
            assert!(
                Instant::now() < deadline,
                "session {id} never ended: {view} {messages:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut expected = vec!["user".to_string()];
        for _ in 0..ROUNDS {
            expected.extend(["assistant".to_string(), "tool".to_string()]);
        }
        expected.push("assistant".into());
        assert_eq!(roles(&messages), expected, "{messages:#?}");

        check_event_log(&store, id);
    }
}

/// Session `id`'s stored event log: numbered 1..n with no gap, ending
/// `stopped: completed` (also when its server died right after the answer
/// was committed: the server that found the orphan closed it), with no
/// other `stopped` before it (a run that lost its lease, its server killed
/// or too slow to renew on a loaded machine, stores nothing more); no
/// message committed twice.
fn check_event_log(store: &rein_store::PgStore, id: &str) {
    let page = block_on(store.events_after(id, 0, 100_000)).unwrap();
    let seqs: Vec<u64> = page.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=page.last).collect::<Vec<_>>(), "session {id}");
    let events: Vec<Value> = page
        .events
        .iter()
        .map(|e| serde_json::from_str(&e.body).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "stopped", "session {id}: {events:?}");
    assert_eq!(last["reason"], "completed", "{events:?}");
    assert_eq!(last["final_text"], "Done.", "{events:?}");
    let stops = events.iter().filter(|e| e["type"] == "stopped").count();
    assert_eq!(stops, 1, "{events:?}");
    let mut committed: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "message_committed")
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    let all = committed.len();
    committed.sort_unstable();
    committed.dedup();
    assert_eq!(committed.len(), all, "{events:?}");
}
