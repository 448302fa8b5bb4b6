//! The small profile's checks on its model's work, against a server
//! speaking the OpenAI chat wire API: the check the task names runs after
//! the model's edit, through the gate and the sandbox, and its failure
//! reaches the model in the next request; a mode that refuses commands
//! skips it and says so; a check that keeps failing is handed back a
//! bounded number of times; a command AGENTS.md names cannot reach
//! outside the workspace; a count no command printed gets one nudge.

use rein_providers::mock_server::{MockResponse, MockServer};
use serde_json::{Value, json};

use super::{openai_env, server, sse};
use crate::cli::support::*;

/// One streamed chat answer calling `name` with `arguments`.
fn call(id: &str, name: &str, arguments: Value) -> MockResponse {
    let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut body = sse(
        &[
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
        ],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    MockResponse::sse(body)
}

/// One streamed chat answer with `text` and no call.
fn answer(text: &str) -> MockResponse {
    let mut body = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]})],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    MockResponse::sse(body)
}

fn edit(id: &str, old: &str, new: &str) -> MockResponse {
    call(
        id,
        "edit_file",
        json!({"path": "calc.py", "old_string": old, "new_string": new}),
    )
}

/// A project whose test fails: `mean` divides by one too few.
fn failing_project(env: &Env) {
    std::fs::write(
        env.path("calc.py"),
        "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    )
    .unwrap();
    std::fs::write(
        env.path("test_calc.py"),
        "from calc import mean\n\nassert mean([2, 4]) == 3, 'mean is wrong: ' + str(mean([2, 4]))\nprint('ok')\n",
    )
    .unwrap();
}

/// `rein exec --json --profile small --mode MODE` on `prompt` against `server`.
fn run_small(env: &Env, server: &MockServer, mode: &str, prompt: &str) -> Vec<Value> {
    let mut cmd = env.command();
    cmd.args(["exec", "--json", "--profile", "small", "--mode", mode])
        .args(["--provider", "openai", "--", prompt]);
    for (k, v) in openai_env(server, "sk-test") {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let events = json_lines(&o);
    assert!(!events.is_empty(), "{}", stderr(&o));
    events
}

fn notices(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "notice")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

/// The text of every message of request `i` the server got.
fn request_text(server: &MockServer, i: usize) -> String {
    server.requests()[i].json()["messages"].to_string()
}

#[test]
fn the_check_runs_after_an_edit_and_its_failure_reaches_the_model() {
    let (_rt, server) = server();
    let env = Env::new();
    failing_project(&env);
    server.push(call("c1", "read_file", json!({"path": "calc.py"})));
    // A plausible but wrong fix, then an answer that would end the run.
    server.push(edit("c2", "(len(values) - 1)", "(len(values) + 1)"));
    server.push(answer("Fixed calc.py."));
    server.push(edit("c3", "(len(values) + 1)", "len(values)"));
    server.push(answer("Fixed calc.py for real."));
    let events = run_small(
        &env,
        &server,
        "auto",
        "Run python3 test_calc.py: it fails. Fix calc.py.",
    );
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "completed", "{events:?}");
    assert_eq!(last["final_text"], "Fixed calc.py for real.");
    assert_eq!(server.requests().len(), 5, "{:?}", notices(&events));
    // The check's failure, as the test printed it in the sandbox, is in
    // the request after the first answer, and not before.
    let before = request_text(&server, 2);
    assert!(!before.contains("still fails"), "{before}");
    let after = request_text(&server, 3);
    assert!(
        after.contains("The task is not done: I ran `python3 test_calc.py` and it still fails"),
        "{after}"
    );
    assert!(after.contains("mean is wrong: 2.0"), "{after}");
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.starts_with("the check `python3 test_calc.py` failed")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|n| n == "the check `python3 test_calc.py` passed"),
        "{said:?}"
    );
    assert!(
        std::fs::read_to_string(env.path("calc.py"))
            .unwrap()
            .contains("/ len(values)")
    );
}

#[test]
fn the_check_is_not_a_lever_of_the_full_profile_nor_when_switched_off() {
    for extra in [&["--profile", "full"][..], &["--without", "check"][..]] {
        let (_rt, server) = server();
        let env = Env::new();
        failing_project(&env);
        server.push(call("c1", "read_file", json!({"path": "calc.py"})));
        server.push(edit("c2", "(len(values) - 1)", "(len(values) + 1)"));
        server.push(answer("Fixed calc.py."));
        let mut cmd = env.command();
        cmd.args(["exec", "--json", "--mode", "auto", "--provider", "openai"])
            .args(extra)
            .args(["--", "Run python3 test_calc.py: it fails. Fix calc.py."]);
        for (k, v) in openai_env(&server, "sk-test") {
            cmd.env(k, v);
        }
        let events = json_lines(&cmd.output().unwrap());
        assert_eq!(events.last().unwrap()["reason"], "completed");
        assert_eq!(server.requests().len(), 3, "{extra:?}");
        assert!(
            !notices(&events).iter().any(|n| n.contains("the check")),
            "{extra:?}"
        );
    }
}

#[test]
fn a_check_that_keeps_failing_is_handed_back_twice_then_the_run_ends() {
    let (_rt, server) = server();
    let env = Env::new();
    failing_project(&env);
    server.push(call("c1", "read_file", json!({"path": "calc.py"})));
    for (i, n) in [2, 3, 4].iter().enumerate() {
        let old = match i {
            0 => "(len(values) - 1)".to_string(),
            _ => format!("(len(values) + {})", n - 1),
        };
        server.push(edit(
            &format!("e{n}"),
            &old,
            &format!("(len(values) + {n})"),
        ));
        server.push(answer("Fixed."));
    }
    let events = run_small(
        &env,
        &server,
        "auto",
        "Run python3 test_calc.py: it fails. Fix calc.py.",
    );
    assert_eq!(events.last().unwrap()["reason"], "completed");
    assert_eq!(server.requests().len(), 7);
    let failed = notices(&events)
        .iter()
        .filter(|n| n.contains("failed"))
        .count();
    assert_eq!(failed, 2, "{:?}", notices(&events));
}

/// The test command AGENTS.md names: it leaves a mark in the workspace and
/// tries to write into rein's home, outside it.
fn hostile_agents_md(env: &Env) -> std::path::PathBuf {
    failing_project(env);
    let escaped = env.home.path().join("escaped.txt");
    std::fs::write(
        env.path("AGENTS.md"),
        "# Work\n\nRun the tests with `sh run_tests.sh` before you finish.\n",
    )
    .unwrap();
    std::fs::write(
        env.path("run_tests.sh"),
        format!(
            "echo ran > ran.txt\necho pwned > {}\npython3 test_calc.py\n",
            escaped.display()
        ),
    )
    .unwrap();
    escaped
}

#[test]
fn a_check_named_in_agents_md_runs_in_the_sandbox_not_on_the_host() {
    let (_rt, server) = server();
    let env = Env::new();
    let escaped = hostile_agents_md(&env);
    server.push(call("c1", "read_file", json!({"path": "calc.py"})));
    server.push(edit("c2", "(len(values) - 1)", "len(values)"));
    server.push(answer("Fixed calc.py."));
    let events = run_small(&env, &server, "auto", "Fix the bug in calc.py.");
    assert_eq!(events.last().unwrap()["reason"], "completed");
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.contains("checking the change: running `sh run_tests.sh`")),
        "{said:?}"
    );
    assert!(env.path("ran.txt").exists(), "the check ran: {said:?}");
    assert!(!escaped.exists(), "the check wrote outside the workspace");
}

#[test]
fn a_mode_that_refuses_commands_skips_the_check_and_says_so() {
    let (_rt, server) = server();
    let env = Env::new();
    let escaped = hostile_agents_md(&env);
    server.push(call("c1", "read_file", json!({"path": "calc.py"})));
    server.push(edit("c2", "(len(values) - 1)", "len(values)"));
    server.push(answer("Fixed calc.py."));
    // Edits run in accept-edits; commands would ask, and a headless run
    // has nobody to ask.
    let events = run_small(&env, &server, "accept-edits", "Fix the bug in calc.py.");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(server.requests().len(), 3);
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.starts_with("the check `sh run_tests.sh` was not run")),
        "{said:?}"
    );
    assert!(!env.path("ran.txt").exists());
    assert!(!escaped.exists());
}

#[test]
fn a_count_answered_by_eye_is_nudged_once_to_count_with_a_command() {
    let (_rt, server) = server();
    let env = Env::new();
    std::fs::write(env.path("names.txt"), "ada\nbrian\ncleo\n").unwrap();
    server.push(call("c1", "read_file", json!({"path": "names.txt"})));
    server.push(answer("There are 3 names."));
    server.push(call("c2", "bash", json!({"command": "wc -l < names.txt"})));
    server.push(answer("There are 3 names."));
    let events = run_small(&env, &server, "auto", "How many names are in names.txt?");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(server.requests().len(), 4);
    let nudge = request_text(&server, 2);
    assert!(
        nudge.contains("No command of this run printed 3"),
        "{nudge}"
    );
    // The command's count backs the same answer: no second nudge.
    let nudges = notices(&events)
        .iter()
        .filter(|n| n.starts_with("nudged the model"))
        .count();
    assert_eq!(nudges, 1, "{:?}", notices(&events));
}

#[test]
fn a_fix_called_unneeded_is_checked_and_the_failure_reaches_the_model() {
    let (_rt, server) = server();
    let env = Env::new();
    failing_project(&env);
    server.push(call("c1", "read_file", json!({"path": "calc.py"})));
    // No change, twice: the change nudge first, then the check.
    server.push(answer("calc.py is correct."));
    server.push(answer("calc.py is correct."));
    server.push(edit("c2", "(len(values) - 1)", "len(values)"));
    server.push(answer("Fixed calc.py."));
    let events = run_small(
        &env,
        &server,
        "auto",
        "Run python3 test_calc.py: it fails. Fix calc.py.",
    );
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(server.requests().len(), 5, "{:?}", notices(&events));
    assert!(request_text(&server, 2).contains("no file has changed"));
    let after = request_text(&server, 3);
    assert!(after.contains("The task is not done"), "{after}");
    assert!(after.contains("mean is wrong: 6.0"), "{after}");
    assert!(
        notices(&events)
            .iter()
            .any(|n| n == "the check `python3 test_calc.py` passed"),
        "{:?}",
        notices(&events)
    );
}
