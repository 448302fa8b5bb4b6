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

mod candidates;
use crate::cli::support::*;

/// One streamed chat answer calling `name` with `arguments`.
fn call(id: &str, name: &str, arguments: Value) -> MockResponse {
    calls(&[(id, name, arguments)])
}

/// One streamed chat answer making each `(id, name, arguments)` call.
fn calls(list: &[(&str, &str, Value)]) -> MockResponse {
    let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let made: Vec<Value> = list
        .iter()
        .enumerate()
        .map(|(i, (id, name, arguments))| {
            json!({"index": i, "id": id, "type": "function",
                   "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    let mut body = sse(
        &[
            chunk(
                json!({"role": "assistant", "tool_calls": made}),
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

/// One test's model server (with its runtime) and workspace: the set-up
/// every test here shares.
struct Case {
    _rt: tokio::runtime::Runtime,
    server: MockServer,
    env: Env,
}

impl Case {
    /// An empty workspace; the model answers `responses` in turn.
    fn new(responses: Vec<MockResponse>) -> Case {
        let (_rt, server) = server();
        for r in responses {
            server.push(r);
        }
        Case {
            _rt,
            server,
            env: Env::new(),
        }
    }

    /// The failing `mean` project; the model reads calc.py, then answers
    /// `responses`.
    fn failing(responses: Vec<MockResponse>) -> Case {
        let mut all = vec![call("c1", "read_file", json!({"path": "calc.py"}))];
        all.extend(responses);
        let case = Case::new(all);
        failing_project(&case.env);
        case
    }

    /// `rein exec --json --provider openai ARGS -- PROMPT`: its events.
    fn run(&self, args: &[&str], prompt: &str) -> Vec<Value> {
        let o = self.command(args, prompt).output().unwrap();
        let events = json_lines(&o);
        assert!(!events.is_empty(), "{}", stderr(&o));
        events
    }

    /// The command [`Case::run`] runs.
    fn command(&self, args: &[&str], prompt: &str) -> std::process::Command {
        let mut cmd = self.env.command();
        cmd.args(["exec", "--json", "--provider", "openai"])
            .args(args)
            .args(["--", prompt]);
        for (k, v) in openai_env(&self.server, "sk-test") {
            cmd.env(k, v);
        }
        cmd
    }

    /// A small-profile run in `mode`.
    fn small(&self, mode: &str, prompt: &str) -> Vec<Value> {
        self.run(&["--profile", "small", "--mode", mode], prompt)
    }

    fn requests(&self) -> usize {
        self.server.requests().len()
    }

    /// Request `i` the server got, as JSON.
    fn request(&self, i: usize) -> Value {
        self.server.requests()[i].json()
    }

    /// The text of every message of request `i` the server got.
    fn request_text(&self, i: usize) -> String {
        self.request(i)["messages"].to_string()
    }
}

fn notices(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "notice")
        .map(|e| e["message"].as_str().unwrap().to_string())
        .collect()
}

/// The prompt of the tests on the `mean` project.
const FIX_MEAN: &str = "Run python3 test_calc.py: it fails. Fix calc.py.";

#[test]
fn the_check_runs_after_an_edit_and_its_failure_reaches_the_model() {
    // A plausible but wrong fix, then an answer that would end the run.
    let case = Case::failing(vec![
        edit("c2", "(len(values) - 1)", "(len(values) + 1)"),
        answer("Fixed calc.py."),
        edit("c3", "(len(values) + 1)", "len(values)"),
        answer("Fixed calc.py for real."),
    ]);
    let events = case.small("auto", FIX_MEAN);
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "completed", "{events:?}");
    assert_eq!(last["final_text"], "Fixed calc.py for real.");
    assert_eq!(case.requests(), 5, "{:?}", notices(&events));
    // The check's failure, as the test printed it in the sandbox, is in
    // the request after the first answer, and not before.
    let before = case.request_text(2);
    assert!(!before.contains("still fails"), "{before}");
    let after = case.request_text(3);
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
        std::fs::read_to_string(case.env.path("calc.py"))
            .unwrap()
            .contains("/ len(values)")
    );
}

#[test]
fn the_check_is_not_a_lever_of_the_full_profile_nor_when_switched_off() {
    for extra in [&["--profile", "full"][..], &["--without", "check"][..]] {
        let case = Case::failing(vec![
            edit("c2", "(len(values) - 1)", "(len(values) + 1)"),
            answer("Fixed calc.py."),
        ]);
        let args = [&["--mode", "auto"][..], extra].concat();
        let events = case.run(&args, FIX_MEAN);
        assert_eq!(events.last().unwrap()["reason"], "completed");
        assert_eq!(case.requests(), 3, "{extra:?}");
        assert!(
            !notices(&events).iter().any(|n| n.contains("the check")),
            "{extra:?}"
        );
    }
}

/// Three wrong fixes of the `mean` project (+2, +3, +4), each followed by
/// an answer that would end the run.
fn three_wrong_fixes() -> Vec<MockResponse> {
    let mut out = Vec::new();
    for (i, n) in [2, 3, 4].iter().enumerate() {
        let old = match i {
            0 => "(len(values) - 1)".to_string(),
            _ => format!("(len(values) + {})", n - 1),
        };
        out.push(edit(
            &format!("e{n}"),
            &old,
            &format!("(len(values) + {n})"),
        ));
        out.push(answer("Fixed."));
    }
    out
}

#[test]
fn a_check_that_keeps_failing_is_handed_back_twice_then_the_run_ends() {
    let case = Case::failing(three_wrong_fixes());
    let args = [
        "--profile",
        "small",
        "--mode",
        "auto",
        "--without",
        "candidates",
    ];
    let events = case.run(&args, FIX_MEAN);
    assert_eq!(events.last().unwrap()["reason"], "completed");
    assert_eq!(case.requests(), 7);
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

/// A right fix of the `mean` project, and an answer.
fn right_fix() -> Vec<MockResponse> {
    vec![
        edit("c2", "(len(values) - 1)", "len(values)"),
        answer("Fixed calc.py."),
    ]
}

#[test]
fn a_check_named_in_agents_md_runs_in_the_sandbox_not_on_the_host() {
    let case = Case::failing(right_fix());
    let escaped = hostile_agents_md(&case.env);
    let events = case.small("auto", "Fix the bug in calc.py.");
    assert_eq!(events.last().unwrap()["reason"], "completed");
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.contains("checking the change: running `sh run_tests.sh`")),
        "{said:?}"
    );
    assert!(case.env.path("ran.txt").exists(), "the check ran: {said:?}");
    assert!(!escaped.exists(), "the check wrote outside the workspace");
}

#[test]
fn a_mode_that_refuses_commands_skips_the_check_and_says_so() {
    let case = Case::failing(right_fix());
    let escaped = hostile_agents_md(&case.env);
    // Edits run in accept-edits; commands would ask, and a headless run
    // has nobody to ask.
    let events = case.small("accept-edits", "Fix the bug in calc.py.");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(case.requests(), 3);
    let said = notices(&events);
    assert!(
        said.iter()
            .any(|n| n.starts_with("the check `sh run_tests.sh` was not run")),
        "{said:?}"
    );
    assert!(!case.env.path("ran.txt").exists());
    assert!(!escaped.exists());
}

#[test]
fn a_count_answered_by_eye_is_nudged_once_to_count_with_a_command() {
    let case = Case::new(vec![
        call("c1", "read_file", json!({"path": "names.txt"})),
        answer("There are 3 names."),
        call("c2", "bash", json!({"command": "wc -l < names.txt"})),
        answer("There are 3 names."),
    ]);
    std::fs::write(case.env.path("names.txt"), "ada\nbrian\ncleo\n").unwrap();
    let events = case.small("auto", "How many names are in names.txt?");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(case.requests(), 4);
    let nudge = case.request_text(2);
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
    // No change, twice: the change nudge first, then the check.
    let case = Case::failing(vec![
        answer("calc.py is correct."),
        answer("calc.py is correct."),
        edit("c2", "(len(values) - 1)", "len(values)"),
        answer("Fixed calc.py."),
    ]);
    let events = case.small("auto", FIX_MEAN);
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    assert_eq!(case.requests(), 5, "{:?}", notices(&events));
    assert!(case.request_text(2).contains("no file has changed"));
    let after = case.request_text(3);
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
