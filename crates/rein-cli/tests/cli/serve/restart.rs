//! One server on SQLite, stopped without closing its runs (SIGKILL): the
//! next start takes them up before it answers anyone. A run killed
//! mid-turn goes on from its last committed message, its events
//! numbered on with no gap; a run whose answer was stored but not its
//! `stopped` gets that event. A second server on the same database is
//! refused, since it would take up the runs the first is driving.

use std::process::Stdio;

use rein_core::FinishReason;
use rein_store::{SessionEvents, SqliteStore};
use serde_json::{Value, json};

use super::{Served, create};
use crate::cli::postgres::block_on;
use crate::cli::postgres_serve::closing::killed_run;
use crate::cli::support::*;

fn ids(events: &[(u64, Value)]) -> Vec<u64> {
    events.iter().map(|(i, _)| *i).collect()
}

#[test]
fn a_run_killed_mid_turn_on_sqlite_goes_on_at_the_next_start_numbered_without_gap() {
    let env = Env::new();
    let first = super::write_then_answer_slowly(&env);
    let second = env.script(
        "second.json",
        &json!({"turns": [{"text": "Finished after the restart."}]}),
    );
    let mut a = Served::start(&env, &["--mode", "accept-edits", "--script", &first]);
    let id = create(&a, json!({"workspace": "proj"}));
    let (status, body) = a.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "make step.txt"})),
    );
    assert_eq!(status, 202, "{body}");
    let before = a.events_until(&id, None, "text_delta");
    a.child.kill().unwrap();
    a.child.wait().unwrap();

    let b = Served::start(&env, &["--mode", "accept-edits", "--script", &second]);
    let seen = b.events_until(&id, None, "stopped");
    assert_eq!(seen[..before.len()], before[..], "the stored log kept");
    assert_eq!(ids(&seen), (1..=seen.len() as u64).collect::<Vec<_>>());
    let stopped = &seen.last().unwrap().1;
    assert_eq!(stopped["reason"], "completed", "{seen:?}");
    assert_eq!(stopped["final_text"], "Finished after the restart.");
    let resumed = seen
        .iter()
        .filter(|(_, e)| e["type"] == "run_started")
        .count();
    assert_eq!(resumed, 2, "the first run and its continuation: {seen:?}");
    b.wait_idle(&id);
    // The tool ran once, before the kill; its result was kept.
    let step = std::fs::read_to_string(env.ws.path().join("proj/step.txt")).unwrap();
    assert_eq!(step, "done once\n");
    assert!(
        b.log
            .lock()
            .unwrap()
            .contains(&format!("taking over session {id}")),
        "the server says what it took up"
    );
}

#[test]
fn a_run_stored_to_its_answer_without_stopped_is_closed_at_the_next_start_on_sqlite() {
    let env = Env::new();
    let script = env.script("unused.json", &json!({"turns": [{"text": "unused"}]}));
    let s = Served::start(&env, &["--script", &script]);
    let open = create(&s, json!({"workspace": "open"}));
    let closed = create(&s, json!({"workspace": "closed"}));
    drop(s);
    // What a server killed between the answer and `stopped` leaves, and
    // one killed after `stopped`.
    let db = env.home.path().join("sessions.db");
    let store = SqliteStore::open(&db).unwrap();
    killed_run(&store, &open, "Done.", Some(FinishReason::Stop), false);
    killed_run(&store, &closed, "Done.", Some(FinishReason::Stop), true);

    let s = Served::start(&env, &["--script", &script]);
    let seen = s.events_until(&open, None, "stopped");
    let (seq, stopped) = seen.last().unwrap();
    assert_eq!(*seq, 5, "numbered after the stored events: {seen:?}");
    assert_eq!(stopped["reason"], "completed", "{stopped}");
    assert_eq!(stopped["final_text"], "Done.");
    let (_, view) = s.call("GET", &format!("/sessions/{open}"), None);
    assert_eq!(view["last_stop"], "completed", "{view}");
    // A closed stream gets nothing more.
    let page = block_on(store.events_after(&closed, 0, 100)).unwrap();
    assert_eq!(page.last, 5, "{:?}", page.events);
}

#[test]
fn a_second_server_on_the_same_sqlite_database_is_refused() {
    let env = Env::new();
    let script = env.script("unused.json", &json!({"turns": [{"text": "unused"}]}));
    let _first = Served::start(&env, &["--script", &script]);
    let out = env
        .command()
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(env.ws.path())
        .args(["--script", &script])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("another rein serve already uses the session database"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}
