//! A run's events reach the store in few commits: a scripted answer
//! streamed as many small deltas, a few milliseconds apart, is stored in
//! batches at least the writer's gathering time (20 ms) apart, not one
//! commit per delta. Each row of `session_events` carries the id of the
//! transaction that inserted it (`xmin`), so the test counts the commits
//! that stored the session's events exactly, and bounds them by the time
//! the run's appends spanned (their `created_at`).

use serde_json::json;

use super::EventStream;
use crate::cli::postgres::{block_on, database, pg};
use crate::cli::serve::Served;
use crate::cli::support::*;

/// The writer's gathering time in ms (`serve::events::GATHER`).
const GATHER_MS: i64 = 20;

#[test]
fn a_streamed_answer_is_stored_in_a_few_commits_not_one_per_delta() {
    let Some(url) = database("serve_batching") else {
        return;
    };
    let env = Env::new();
    let answer = "x".repeat(80);
    let script = env.script(
        "run.json",
        &json!({"turns": [{"text": answer, "delay_ms": 2, "chunk_chars": 1}]}),
    );
    let server = Served::start(&env, &["--store", &url, "--script", &script]);
    let (status, session) = server.call("POST", "/sessions", Some(json!({"workspace": "b"})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    let mut stream = EventStream::open(&server.addr, &server.token, &id, None);
    let (status, body) = server.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "answer"})),
    );
    assert_eq!(status, 202, "{body}");

    // Every event reaches the client live, in order, each once.
    let seen = stream.until("stopped");
    let got: Vec<u64> = seen.iter().map(|(n, _)| *n).collect();
    assert_eq!(got, (1..=got.len() as u64).collect::<Vec<_>>(), "{seen:?}");
    let deltas = seen.iter().filter(|(_, e)| e["type"] == "text_delta");
    assert_eq!(deltas.count(), 80, "{seen:?}");
    server.wait_idle(&id);

    let (events, commits, first_ms, last_ms): (i64, i64, i64, i64) = block_on(async {
        let row = pg::raw(&url)
            .await
            .query_one(
                "SELECT count(*), count(DISTINCT xmin::text), min(created_at), max(created_at)
                 FROM session_events WHERE session_id = $1",
                &[&id],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1), row.get(2), row.get(3))
    });
    assert_eq!(events, got.len() as i64, "every event streamed is stored");
    // One append per gathering time while the run emits, and a little
    // slack for the clock read on another thread than the writer's.
    let bound = (last_ms - first_ms) / GATHER_MS + 5;
    assert!(
        commits <= bound,
        "{events} events in {commits} commits over {} ms (at most {bound})",
        last_ms - first_ms
    );
}
