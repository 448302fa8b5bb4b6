//! Runs over HTTP: a prompt that asks approval and streams its events, a
//! mode change for the next prompt, cancelling, per-session budgets and
//! shutting down on SIGTERM.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Served, create, write_script};
use crate::cli::support::*;

#[test]
fn serve_runs_a_prompt_asks_approval_over_http_and_streams_events() {
    let env = Env::new();
    let script = write_script(&env);
    // A hook of the user's (so the session gets a hook transcript) and a
    // command of theirs with a context line.
    crate::cli::hooks::settings(
        &env.home.path().join("settings.json"),
        json!({"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "true"}]}]}),
    );
    let own = env.home.path().join("commands");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("mark.md"), "Mark: !`touch ran.txt`\n").unwrap();
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({"workspace": "proj"}));
    let (status, accepted) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "write out.txt"})),
    );
    assert_eq!(status, 202, "{accepted}");
    // The write waits for an approval, seen on the stream and the session.
    let events = s.events_until(&id, None, "approval_required");
    let ask = &events.last().unwrap().1;
    assert_eq!(ask["request"]["tool"], "write_file", "{ask}");
    let (_, session) = s.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(session["running"], true);
    assert_eq!(
        session["pending_approvals"][0]["call_id"], "w1",
        "{session}"
    );
    // A second prompt while it runs is a conflict.
    let (status, busy) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "again"})),
    );
    assert_eq!(status, 409, "{busy}");
    // So is a command to it: its context line never runs.
    let (status, busy) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "/mark"})),
    );
    assert_eq!(status, 409, "{busy}");
    assert!(!env.ws.path().join("proj/ran.txt").exists());
    let (status, _) = s.call(
        "POST",
        &format!("/sessions/{id}/approvals/w1"),
        Some(json!({"decision": "approve"})),
    );
    assert_eq!(status, 204);
    let events = s.events_until(&id, Some(events.last().unwrap().0), "stopped");
    let stopped = &events.last().unwrap().1;
    assert_eq!(stopped["reason"], "completed", "{events:?}");
    assert_eq!(stopped["final_text"], "Wrote out.txt.");
    let file = env.ws.path().join("proj/out.txt");
    assert_eq!(std::fs::read_to_string(file).unwrap(), "served\n");
    // Ids follow on: a reconnect after the first gets the rest only.
    let all = s.events_until(&id, None, "stopped");
    let ids: Vec<u64> = all.iter().map(|(i, _)| *i).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let rest = s.events_until(&id, Some(ids[2]), "stopped");
    assert_eq!(rest[0].0, ids[3]);
    assert_eq!(rest.len(), all.len() - 3);
    // Its first run is a new session's, and its first prompt names it.
    let started = all
        .iter()
        .find(|(_, e)| e["type"] == "run_started")
        .unwrap();
    assert_eq!(started.1["resumed"], false, "{started:?}");
    // The session is listed and stored.
    let (_, list) = s.call("GET", "/sessions", None);
    assert_eq!(list["sessions"][0]["id"], id.as_str(), "{list}");
    assert_eq!(list["sessions"][0]["title"], "write out.txt", "{list}");
    assert_eq!(stored(&env, &id).len(), 4);
    // Deleted, it takes its hook transcript with it.
    let transcript = env.home.path().join(format!("transcripts/{id}.jsonl"));
    assert!(transcript.exists());
    let (status, _) = s.call("DELETE", &format!("/sessions/{id}"), None);
    assert_eq!(status, 204);
    assert!(!transcript.exists());
}

#[test]
fn serve_mode_change_applies_to_the_next_prompt() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({"workspace": "m"}));
    let (status, body) = s.call(
        "POST",
        &format!("/sessions/{id}/mode"),
        Some(json!({"mode": "plan"})),
    );
    assert_eq!(status, 200, "{body}");
    let (_, session) = s.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(session["mode"], "plan");
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "write out.txt"})),
    );
    let events = s.events_until(&id, None, "stopped");
    // Plan mode: the write is refused without an approval being asked.
    assert_eq!(events[0].1["mode"], "plan", "{events:?}");
    let refused = events
        .iter()
        .find(|(_, e)| e["type"] == "tool_finished")
        .unwrap();
    assert_eq!(refused.1["is_error"], true, "{events:?}");
    let why = refused.1["output_preview"].as_str().unwrap();
    assert!(why.contains("plan mode"), "{why}");
    assert!(!events.iter().any(|(_, e)| e["type"] == "approval_required"));
    assert!(!env.ws.path().join("m/out.txt").exists());
}

#[test]
fn serve_cancel_stops_a_run_and_budgets_hold_per_session() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"turns": [
            {"text": "slowly", "delay_ms": 30000, "chunk_chars": 1},
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            {"text": "never"}
        ]}),
    );
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({}));
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "go"})),
    );
    s.events_until(&id, None, "turn_started");
    let (status, _) = s.call("POST", &format!("/sessions/{id}/cancel"), None);
    assert_eq!(status, 202);
    let events = s.events_until(&id, None, "stopped");
    assert_eq!(events.last().unwrap().1["reason"], "cancelled");
    s.wait_idle(&id);
    // A budget of one turn stops the next prompt after its first.
    let limited = create(&s, json!({"budget": {"max_turns": 1}}));
    s.call(
        "POST",
        &format!("/sessions/{limited}/prompt"),
        Some(json!({"text": "go"})),
    );
    let events = s.events_until(&limited, None, "stopped");
    assert_eq!(
        events.last().unwrap().1["reason"],
        "max_turns",
        "{events:?}"
    );
    let (status, body) = s.call(
        "POST",
        "/sessions",
        Some(json!({"budget": {"max_cost_usd": -1}})),
    );
    assert_eq!(status, 400, "{body}");
}

#[test]
fn serve_shuts_down_on_sigterm_cancelling_runs() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"turns": [{"text": "slowly", "delay_ms": 30000, "chunk_chars": 1}]}),
    );
    let mut s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({}));
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "go"})),
    );
    s.events_until(&id, None, "turn_started");
    let started = Instant::now();
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    let status = s.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(15));
    let list = env.rein(&["sessions", "list", "--json"]);
    assert!(stdout(&list).contains("cancelled"), "{}", stdout(&list));
}

/// An MCP server whose first start outlasts `startup_timeout_sec` (as an
/// `npx` server downloading on first use) is started once more (with twice
/// the time: a loaded machine starts Python slowly) and its tools work; one that misses both starts is not offered. Both are told
/// to the session's event stream in notices naming the setting to raise.
#[test]
fn serve_starts_a_slow_mcp_server_once_more_and_its_notices_name_the_setting() {
    let env = Env::new();
    let Some((sdk, server)) = crate::cli::mcp::python_server() else {
        return;
    };
    // The first start only sleeps (and leaves a mark); later ones serve.
    let mark = env.ws.path().join("downloaded");
    let first_slow = format!(
        "if [ -e {mark:?} ]; then exec python3 {server:?}; fi; touch {mark:?}; sleep 60",
        mark = mark.display().to_string(),
        server = server.display().to_string()
    );
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.py]\ncommand = \"bash\"\nargs = [\"-c\", {first_slow:?}]\n\
             startup_timeout_sec = 5\nenv = {{ PYTHONPATH = {:?} }}\n\n\
             [mcp_servers.never]\ncommand = \"sleep\"\nargs = [\"60\"]\nstartup_timeout_sec = 1\n",
            sdk.display().to_string()
        ),
    )
    .unwrap();
    let script = env.script(
        "mcp.json",
        &json!({"turns": [
            {"tool_calls": [
                {"id": "c1", "name": "mcp__py__shout", "arguments": {"text": "late"}},
                {"id": "c2", "name": "mcp__never__anything", "arguments": {}}
            ]},
            {"text": "done"}
        ]}),
    );
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({"workspace": "proj"}));
    let (status, _) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "shout"})),
    );
    assert_eq!(status, 202);
    let events = s.events_until(&id, None, "stopped");
    let finished = |call: &str| {
        events
            .iter()
            .map(|(_, e)| e)
            .find(|e| e["type"] == "tool_finished" && e["call_id"] == call)
            .unwrap_or_else(|| panic!("{events:?}"))
            .clone()
    };
    let shouted = finished("c1");
    assert_eq!(shouted["is_error"], false, "{shouted}");
    assert!(
        shouted["output_preview"].as_str().unwrap().contains("LATE"),
        "{shouted}"
    );
    let refused = finished("c2");
    assert_eq!(refused["is_error"], true, "{refused}");
    let why = refused["output_preview"].as_str().unwrap();
    assert!(why.contains("startup_timeout_sec"), "{why}");
    // The notices (read until they are all in): each server's first
    // start, then `never`'s second.
    let told = |notices: &[String], name: &str, end: &str| {
        notices
            .iter()
            .any(|n| n.contains(&format!("`{name}`")) && n.ends_with(end))
    };
    let mut notices: Vec<String> = Vec::new();
    let mut last = None;
    while !(told(&notices, "py", "once more")
        && told(&notices, "never", "once more")
        && told(&notices, "never", "not offered"))
    {
        let got = s.events_until(&id, last, "notice");
        last = got.last().map(|(i, _)| *i);
        notices.extend(
            got.iter()
                .filter(|(_, e)| e["type"] == "notice")
                .map(|(_, e)| e["message"].as_str().unwrap().to_string()),
        );
    }
    for name in ["py", "never"] {
        let retry = notices
            .iter()
            .find(|n| n.contains(&format!("`{name}`")) && n.ends_with("starting it once more"))
            .unwrap_or_else(|| panic!("{notices:?}"));
        assert!(
            retry.contains(&format!(
                "`startup_timeout_sec` in its [mcp_servers.{name}] section"
            )),
            "{retry}"
        );
    }
    let failed = notices.iter().find(|n| n.contains("not offered")).unwrap();
    assert!(failed.contains("startup_timeout_sec"), "{failed}");
    assert!(
        failed.contains("nor in twice that when started once more"),
        "{failed}"
    );
    assert!(
        !notices
            .iter()
            .any(|n| n.contains("`py`") && n.contains("not offered")),
        "{notices:?}"
    );
}
