//! rein on a real PostgreSQL: sessions and memories kept there when
//! `REIN_STORE` or the user's `store` names it (and every command that
//! reads sessions reads them there), and two `rein serve` processes on one
//! database:
//! a session is driven by one at a time, and when that one dies mid-run
//! the other takes the session over and finishes it, nothing lost and
//! nothing done twice.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve::Served;
use super::support::*;

#[allow(dead_code)]
#[path = "../../../rein-store/tests/store/postgres/server.rs"]
pub mod pg;

/// A fresh database on the tests' PostgreSQL, or a printed reason to skip.
pub fn database(name: &str) -> Option<String> {
    block_on(pg::db_or_skip(name))
}

/// Run `f` to its end on a runtime of its own.
pub fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// `rein exec --json` of the replay `script` with `REIN_STORE=url`.
fn exec_in(env: &Env, url: &str, script: &str) -> std::process::Output {
    env.command()
        .args([
            "exec",
            "--json",
            "--provider",
            "replay",
            "--script",
            script,
            "hello",
        ])
        .env("REIN_STORE", url)
        .output()
        .unwrap()
}

pub fn stored_messages(url: &str, id: &str) -> Vec<Value> {
    block_on(async {
        use rein_core::SessionStore;
        let store = rein_store::PgStore::connect(url).await.unwrap();
        let messages = store.messages(id).await.unwrap();
        messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect()
    })
}

#[test]
fn a_second_server_finishes_the_session_of_one_killed_mid_run() {
    let Some(url) = database("takeover") else {
        return;
    };
    let env = Env::new();
    let first = env.script(
        "first.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "step.txt", "content": "done once\n"}}]},
            {"text": "this answer never ends", "delay_ms": 30000, "chunk_chars": 1}
        ]}),
    );
    let second = env.script(
        "second.json",
        &json!({"turns": [{"text": "Finished after the takeover."}]}),
    );
    let common = [
        "--store",
        url.as_str(),
        "--lease-secs",
        "2",
        "--mode",
        "accept-edits",
    ];
    let mut a = Served::start(&env, &[&common[..], &["--script", &first]].concat());
    let (status, session) = a.call("POST", "/sessions", Some(json!({"workspace": "shared"})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    a.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "make step.txt"})),
    );
    // The call ran and its result is committed; the next answer is under way.
    let events = a.events_until(&id, None, "turn_started");
    let events = a.events_until(&id, Some(events.last().unwrap().0), "turn_started");
    assert!(
        events.iter().any(|(_, e)| e["type"] == "tool_finished"),
        "{events:?}"
    );

    let b = Served::start(&env, &[&common[..], &["--script", &second]].concat());
    // While the first server holds the session, the second refuses it.
    let (status, body) = b.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "mine"})),
    );
    assert_eq!(status, 409, "{body}");

    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let started = Instant::now();
    let events = b.events_until(&id, None, "stopped");
    let stopped = &events.last().unwrap().1;
    assert_eq!(stopped["reason"], "completed", "{events:?}");
    assert_eq!(stopped["final_text"], "Finished after the takeover.");
    assert!(started.elapsed() < Duration::from_secs(30));

    let messages = stored_messages(&url, &id);
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "{messages:#?}"
    );
    assert_eq!(messages[0]["content"], "make step.txt");
    assert_eq!(messages[2]["call_id"], "w1");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("shared/step.txt")).unwrap(),
        "done once\n"
    );
    b.wait_idle(&id);
}

#[test]
fn exec_keeps_its_session_in_the_postgresql_database_rein_store_names() {
    let Some(url) = database("exec_store") else {
        return;
    };
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "Stored far away."}]}));
    let out = exec_in(&env, &url, &script);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&json_lines(&out));
    let messages = stored_messages(&url, &id);
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{messages:#?}");
    // Nothing went to the SQLite file under the home.
    let local = env.rein(&["sessions", "list"]);
    assert_eq!(local.status.code(), Some(0), "{}", stderr(&local));
    assert!(!stdout(&local).contains(&id[..8]), "{}", stdout(&local));
}

#[test]
fn a_store_that_is_not_postgresql_or_unreachable_is_a_one_line_error() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "x"}]}));
    let run = |store: &str| {
        env.command()
            .args(["exec", "--provider", "replay", "--script", &script, "hello"])
            .env("REIN_STORE", store)
            .output()
            .unwrap()
    };
    let wrong = run("mysql://root:hunter2@x");
    assert_clean_failure(&wrong, 2, "nor a PostgreSQL connection string");
    assert!(!stderr(&wrong).contains("hunter2"), "{}", stderr(&wrong));
    let out = run("postgres://rein:hunter2@127.0.0.1:1/nothing");
    assert_clean_failure(&out, 2, "127.0.0.1");
    assert!(!stderr(&out).contains("hunter2"), "{}", stderr(&out));
}

#[test]
fn memories_live_in_the_postgresql_database_rein_store_names() {
    let Some(url) = database("memory_store") else {
        return;
    };
    let env = Env::new();
    let rein = |args: &[&str]| {
        env.command()
            .args(args)
            .env("REIN_STORE", &url)
            .output()
            .unwrap()
    };
    let added = rein(&["memory", "add", "Tests", "run make check before a commit"]);
    assert_eq!(added.status.code(), Some(0), "{}", stderr(&added));
    let listed = rein(&["memory", "list"]);
    assert!(
        stdout(&listed).contains("make check"),
        "{}",
        stdout(&listed)
    );
    assert!(
        !env.home.path().join("memory.db").exists(),
        "the SQLite memory was used"
    );
    // A run opens the memory there too.
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let run = exec_in(&env, &url, &script);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        !env.home.path().join("memory.db").exists(),
        "the run opened the SQLite memory"
    );
}

#[test]
fn the_users_config_store_keeps_sessions_in_postgresql_and_every_command_reads_them_there() {
    let Some(url) = database("config_store") else {
        return;
    };
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("store = \"{url}\"\n"),
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [{"text": "Kept in the database."}]}),
    );
    let out = env.replay_json(&script, &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&json_lines(&out));
    assert_eq!(stored_messages(&url, &id).len(), 2);
    assert!(
        !env.home.path().join("sessions.db").exists(),
        "the SQLite file was used"
    );
    // `rein sessions` and `rein rewind` read the same store.
    let listed = env.rein(&["sessions", "list"]);
    assert!(stdout(&listed).contains(&id[..8]), "{}", stdout(&listed));
    let shown = env.rein(&["sessions", "show", &id]);
    assert!(
        stdout(&shown).contains("Kept in the database."),
        "{}",
        stdout(&shown)
    );
    // REIN_STORE=sqlite overrides the config for one command.
    let local = env
        .command()
        .args(["sessions", "list"])
        .env("REIN_STORE", "sqlite")
        .output()
        .unwrap();
    assert_eq!(local.status.code(), Some(0), "{}", stderr(&local));
    assert!(!stdout(&local).contains(&id[..8]), "{}", stdout(&local));
}

#[test]
fn a_projects_store_never_redirects_its_sessions_trusted_or_not() {
    let Some(url) = database("project_store") else {
        return;
    };
    let env = Env::new();
    std::fs::create_dir_all(env.ws.path().join(".rein")).unwrap();
    std::fs::write(
        env.ws.path().join(".rein/config.toml"),
        format!("store = \"{url}\"\n"),
    )
    .unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "Stays home."}]}));
    let out = env.replay_json(&script, &["hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&json_lines(&out));
    // The session is in the home's SQLite file, not the project's database.
    let listed = env.rein(&["sessions", "list"]);
    assert!(stdout(&listed).contains(&id[..8]), "{}", stdout(&listed));
    let in_pg = block_on(async {
        use rein_core::SessionStore;
        let store = rein_store::PgStore::connect(&url).await.unwrap();
        store.list_sessions(None, 100).await.unwrap()
    });
    assert!(in_pg.is_empty(), "{in_pg:?}");
    // Its value (which may hold a password) is never shown.
    assert!(!stderr(&out).contains(&url), "{}", stderr(&out));
    // Trusting the folder does not hand it the store either.
    let trusted = env.replay_json(&script, &["--trust", "hello"]);
    assert_eq!(trusted.status.code(), Some(0), "{}", stderr(&trusted));
    let id = session_id(&json_lines(&trusted));
    let listed = env.rein(&["sessions", "list"]);
    assert!(stdout(&listed).contains(&id[..8]), "{}", stdout(&listed));
    let in_pg = block_on(async {
        use rein_core::SessionStore;
        let store = rein_store::PgStore::connect(&url).await.unwrap();
        store.list_sessions(None, 100).await.unwrap()
    });
    assert!(in_pg.is_empty(), "{in_pg:?}");
}
