//! The candidates lever on the OpenAI wire: when the check still fails
//! after the model's own rounds, alternative fixes are sampled (warmer,
//! worded anew, edits only), each tried in a scratch copy under rein's
//! home with the real check in the real sandbox; the first to pass is
//! applied, the others leave nothing behind. Hostile candidates (paths
//! out of the copy, a link out of the workspace, deleting or editing
//! the check) and a hostile check cannot reach the workspace or the
//! host, and a run killed mid-candidate leaves no copy for long.

use std::path::{Path, PathBuf};

use rein_providers::mock_server::{MockResponse, Part};
use serde_json::{Value, json};

use super::{Case, FIX_MEAN, answer, call, calls, edit, notices, right_fix};

/// A wrong fix, its check's failure handed back, then a model that gives
/// up: the check lever's rounds are spent.
fn gives_up() -> Vec<MockResponse> {
    vec![
        edit("c2", "(len(values) - 1)", "(len(values) + 1)"),
        answer("Fixed calc.py."),
        answer("I cannot fix it."),
    ]
}

/// What calc.py holds after the wrong fix of [`gives_up`].
const AFTER_WRONG: &str = "def mean(values):\n    return sum(values) / (len(values) + 1)\n";
/// What calc.py holds once fixed.
const FIXED: &str = "def mean(values):\n    return sum(values) / len(values)\n";

/// The right fix, as a candidate gives it (from [`AFTER_WRONG`]).
fn right_candidate(id: &str) -> MockResponse {
    edit(id, "(len(values) + 1)", "len(values)")
}

/// The scratch copies left under rein's home.
fn copies(case: &Case) -> Vec<PathBuf> {
    match std::fs::read_dir(case.env.home.path().join("scratch")) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The workspace's entries (names, sorted), `__pycache__` left out: the
/// check's own runs in the workspace make it.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "__pycache__")
        .collect();
    names.sort();
    names
}

fn calc(case: &Case) -> String {
    std::fs::read_to_string(case.env.path("calc.py")).unwrap()
}

fn said(events: &[Value], needle: &str) -> bool {
    notices(events).iter().any(|n| n.contains(needle))
}

/// `git` in the workspace: its output.
fn git(case: &Case, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args(args)
        .current_dir(case.env.ws.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_fix_that_still_fails_gets_alternatives_in_scratch_copies_and_the_first_to_pass_wins() {
    let mut script = gives_up();
    // Candidate 1 is wrong too; candidate 2 is right.
    script.push(edit("k1", "(len(values) + 1)", "(len(values) + 2)"));
    script.push(right_candidate("k2"));
    script.push(answer("The mean divides by the count now."));
    let case = Case::failing(script);
    let git_at = |args: &[&str]| git(&case, args);
    git_at(&["init", "-q"]);
    git_at(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qam",
        "x",
        "--allow-empty",
    ]);
    let events = case.small("auto", FIX_MEAN);
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "completed", "{:?}", notices(&events));
    assert_eq!(
        last["final_text"],
        "The mean divides by the count now.",
        "{:?}",
        notices(&events)
    );
    assert_eq!(case.requests(), 7, "{:?}", notices(&events));
    // The winner is applied; the wrong candidate left nothing.
    assert_eq!(calc(&case), FIXED);
    assert_eq!(
        entries(case.env.ws.path()),
        [".git", "calc.py", "test_calc.py"]
    );
    assert!(copies(&case).is_empty(), "{:?}", copies(&case));
    assert_eq!(git_at(&["worktree", "list"]).lines().count(), 1);
    assert_eq!(git_at(&["branch", "--list"]).lines().count(), 1);
    assert_eq!(git_at(&["stash", "list"]), "");
    // Each candidate was sampled warmer, worded anew, offered edits only
    // and required to call one.
    let asked: Vec<Value> = (4..6).map(|i| case.request(i)).collect();
    for (req, temperature) in asked.iter().zip([0.6, 0.8]) {
        let t = req["temperature"].as_f64().unwrap();
        assert!((t - temperature).abs() < 1e-6, "{t}");
        assert_eq!(req["tool_choice"], "required");
        let tools: Vec<&str> = req["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(
            !tools.contains(&"bash") && tools.contains(&"edit_file"),
            "{tools:?}"
        );
        let last = req["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .to_string();
        assert!(
            last.contains("`python3 test_calc.py`") && last.contains("mean is wrong"),
            "{last}"
        );
    }
    assert_ne!(
        asked[0]["messages"].as_array().unwrap().last(),
        asked[1]["messages"].as_array().unwrap().last()
    );
    // The turns themselves keep the provider's own sampling.
    assert!(case.request(0).get("temperature").is_none());
    for needle in [
        "trying up to 3 alternative fixes",
        "alternative fix 1: the check failed in its copy",
        "alternative fix 2 passed the check `python3 test_calc.py` in its copy",
        "alternative fix 2 is applied; the check `python3 test_calc.py` passes",
    ] {
        assert!(said(&events, needle), "{needle}: {:?}", notices(&events));
    }
}

#[test]
fn a_candidate_is_asked_from_the_request_the_failure_and_the_files_not_the_conversation() {
    let mut script = gives_up();
    script.push(right_candidate("k1"));
    script.push(answer("Fixed."));
    let case = Case::failing(script);
    let events = case.small("auto", FIX_MEAN);
    assert!(
        said(&events, "alternative fix 1 is applied"),
        "{:?}",
        notices(&events)
    );
    // The last turn before the candidates had the whole conversation.
    let before = case.request_text(3);
    assert!(before.contains("I cannot fix it") || before.contains("Fixed calc.py."));
    let asked = case.request(4);
    let messages: Vec<&Value> = asked["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .collect();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["user", "user"],
        "{texts:?}"
    );
    assert_eq!(texts[0], FIX_MEAN);
    let failure = texts[1];
    // The failure as the check printed it, and both files as they are now.
    assert!(failure.contains("mean is wrong: 2.0"), "{failure}");
    assert!(
        failure.contains(&format!("calc.py:\n```\n{}", AFTER_WRONG.trim_end())),
        "{failure}"
    );
    assert!(
        failure.contains("test_calc.py:\n```\nfrom calc import mean"),
        "{failure}"
    );
    // None of the conversation: the model's answers, calls and results.
    let all = asked["messages"].to_string();
    for earlier in [
        "Fixed calc.py.",
        "I cannot fix it",
        "tool_calls",
        "The task is not done",
    ] {
        assert!(!all.contains(earlier), "{earlier} in {all}");
    }
    assert_eq!(calc(&case), FIXED);
}

#[test]
fn candidates_come_after_the_checks_rounds_and_none_passing_leaves_the_workspace_as_it_was() {
    let mut script = super::three_wrong_fixes();
    for (i, n) in [5, 6, 7].iter().enumerate() {
        let id = format!("k{i}");
        script.push(edit(
            &id,
            "(len(values) + 4)",
            &format!("(len(values) + {n})"),
        ));
    }
    let case = Case::failing(script);
    let events = case.small("auto", FIX_MEAN);
    assert_eq!(events.last().unwrap()["reason"], "completed");
    // 1 read, 3 fixes and answers, 3 candidates.
    assert_eq!(case.requests(), 10, "{:?}", notices(&events));
    let handed_back = notices(&events)
        .iter()
        .filter(|n| n.contains("its output goes back to the model"))
        .count();
    assert_eq!(handed_back, 2, "{:?}", notices(&events));
    assert!(said(&events, "no alternative fix passed the check"));
    assert!(calc(&case).contains("(len(values) + 4)"), "{}", calc(&case));
    assert!(copies(&case).is_empty());
    // Switched off, the same run asks for no candidate.
    let off = Case::failing(super::three_wrong_fixes());
    let args = [
        "--profile",
        "small",
        "--mode",
        "auto",
        "--without",
        "candidates",
    ];
    let events = off.run(&args, FIX_MEAN);
    assert_eq!(off.requests(), 7);
    assert!(!said(&events, "alternative fix"));
    let started = events.iter().find(|e| e["type"] == "run_started").unwrap();
    assert_eq!(started["without"], json!(["candidates"]));
}

#[test]
fn a_candidate_writing_out_of_its_copy_touches_neither_the_workspace_nor_the_host() {
    let outside = tempfile::tempdir().unwrap();
    let case = Case::failing(gives_up());
    let ws = case.env.ws.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("escape")).unwrap();
    std::os::unix::fs::symlink("../", ws.join("up")).unwrap();
    let write = |path: String, content: &str| json!({"path": path, "content": content});
    case.server.push(calls(&[
        ("k1", "write_file", write("../../../../victim.txt".into(), "x")),
        ("k2", "write_file", write("up/victim.txt".into(), "x")),
        ("k3", "write_file", write("escape/owned.txt".into(), "x")),
        ("k4", "write_file", write(ws.join("calc.py").display().to_string(), "hacked")),
        ("k5", "edit_file", json!({"path": "calc.py", "old_string": "(len(values) + 1)", "new_string": "len(values)"})),
    ]));
    case.server.push(answer("Fixed."));
    let events = case.small("auto", FIX_MEAN);
    assert_eq!(
        events.last().unwrap()["reason"],
        "completed",
        "{:?}",
        notices(&events)
    );
    assert!(
        said(&events, "alternative fix 1 is applied"),
        "{:?}",
        notices(&events)
    );
    assert_eq!(
        calc(&case),
        FIXED,
        "the write to the real path was not replayed"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let parent = ws.parent().unwrap();
    assert!(!parent.join("victim.txt").exists());
    for dir in case.env.home.path().ancestors() {
        assert!(!dir.join("victim.txt").exists(), "{}", dir.display());
    }
    assert_eq!(entries(&ws), ["calc.py", "escape", "test_calc.py", "up"]);
    assert!(copies(&case).is_empty());
}

/// A test runner that passes with no test files, that leaves a mark
/// where it runs, and that tries to write into the real workspace and
/// into rein's home from a copy.
fn hostile_runner(case: &Case) -> PathBuf {
    let ws = case.env.ws.path().canonicalize().unwrap();
    let escaped = case.env.home.path().join("escaped.txt");
    std::fs::write(
        ws.join("AGENTS.md"),
        "Run the tests with `sh run_tests.sh`.\n",
    )
    .unwrap();
    let runner = format!(
        "touch \"left-by-$(basename \"$PWD\")\"\n\
         [ \"$PWD\" = \"{ws}\" ] || echo planted > {ws}/planted.txt\n\
         echo pwned > {escaped}\n\
         for t in test_*.py; do [ -e \"$t\" ] || continue; python3 \"$t\" || exit 1; done\n",
        ws = ws.display(),
        escaped = escaped.display()
    );
    std::fs::write(ws.join("run_tests.sh"), runner).unwrap();
    escaped
}

#[test]
fn a_candidate_that_passes_by_deleting_or_editing_the_check_does_not_win() {
    let mut script = gives_up();
    script.push(call("k1", "bash", json!({"command": "rm test_calc.py"})));
    script.push(call(
        "k2",
        "edit_file",
        json!({"path": "run_tests.sh", "old_string": "for t in", "new_string": "exit 0\nfor t in"}),
    ));
    script.push(right_candidate("k3"));
    script.push(answer("Fixed."));
    let case = Case::failing(script);
    let escaped = hostile_runner(&case);
    let events = case.small("auto", "Fix the bug in calc.py.");
    assert_eq!(
        events.last().unwrap()["reason"],
        "completed",
        "{:?}",
        notices(&events)
    );
    for needle in [
        "alternative fix 1: it changed the check's own file test_calc.py; not kept",
        "alternative fix 2: it changed the check's own file run_tests.sh; not kept",
        "alternative fix 3 is applied; the check `sh run_tests.sh` passes",
    ] {
        assert!(said(&events, needle), "{needle}: {:?}", notices(&events));
    }
    assert_eq!(calc(&case), FIXED);
    assert!(case.env.path("test_calc.py").exists());
    assert!(
        std::fs::read_to_string(case.env.path("run_tests.sh"))
            .unwrap()
            .contains("for t in")
    );
    // What the check left in its copies went with them; it reached
    // neither the workspace nor rein's home.
    let ws = case.env.ws.path().canonicalize().unwrap();
    let real_mark = format!("left-by-{}", ws.file_name().unwrap().to_string_lossy());
    let mut want = vec![
        "AGENTS.md",
        "calc.py",
        real_mark.as_str(),
        "run_tests.sh",
        "test_calc.py",
    ];
    want.sort();
    assert_eq!(entries(&ws), want);
    assert!(!escaped.exists());
    assert!(copies(&case).is_empty());
}

#[test]
fn headless_modes_that_refuse_commands_try_no_candidates_and_say_why() {
    let case = Case::failing(right_fix());
    let events = case.small("accept-edits", FIX_MEAN);
    assert_eq!(events.last().unwrap()["reason"], "completed");
    assert_eq!(case.requests(), 3);
    assert!(said(&events, "was not run (commands are refused here)"));
    assert!(!said(&events, "alternative fix"));
}

#[test]
fn the_time_cap_stops_a_candidate_whose_answer_is_late() {
    let case = Case::failing(gives_up());
    let config = "[candidates]\nmax = 2\nmax_secs = 1\n";
    std::fs::write(case.env.home.path().join("config.toml"), config).unwrap();
    let late = vec![Part::Pause(std::time::Duration::from_secs(30))];
    case.server.push(MockResponse::sse_parts(late));
    let events = case.small("auto", FIX_MEAN);
    assert_eq!(events.last().unwrap()["reason"], "completed");
    assert!(
        said(&events, "trying up to 2 alternative fixes"),
        "{:?}",
        notices(&events)
    );
    assert!(
        said(
            &events,
            "alternative fixes stopped at fix 1: the time cap came first"
        ),
        "{:?}",
        notices(&events)
    );
    assert_eq!(case.requests(), 5, "no second candidate after the cap");
    assert_eq!(calc(&case), AFTER_WRONG);
    assert!(copies(&case).is_empty());
}

/// Start a run whose first candidate's answer never comes, and wait
/// until its scratch copy is made and the candidate is asked.
fn stuck_in_a_candidate(case: &Case) -> std::process::Child {
    let stuck = MockResponse::sse_parts(vec![Part::Pause(std::time::Duration::from_secs(600))]);
    case.server.push(stuck);
    let mut child = case
        .command(&["--profile", "small", "--mode", "auto"], FIX_MEAN)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Bounded by the run itself: it waits on the candidate's answer.
    while case.requests() < 5 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(copies(case).len(), 1, "the copy is there while it is tried");
    child
}

#[test]
fn a_run_stopped_or_killed_mid_candidate_leaves_no_copy_and_the_workspace_as_it_was() {
    // Stopped (SIGINT, as Ctrl-C): the copy goes with the cancelled run.
    let case = Case::failing(gives_up());
    let mut child = stuck_in_a_candidate(&case);
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait().unwrap();
    assert!(copies(&case).is_empty(), "{:?}", copies(&case));
    assert_eq!(calc(&case), AFTER_WRONG);
    assert_eq!(entries(case.env.ws.path()), ["calc.py", "test_calc.py"]);
    // Killed: nothing runs at the kill; the next run sweeps the copy.
    let case = Case::failing(gives_up());
    let mut child = stuck_in_a_candidate(&case);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(copies(&case).len(), 1);
    assert_eq!(calc(&case), AFTER_WRONG);
    case.server
        .push(call("h1", "read_file", json!({"path": "calc.py"})));
    case.server
        .push(answer("It divides by the count plus one."));
    case.small("auto", "What does calc.py divide by?");
    assert!(copies(&case).is_empty(), "{:?}", copies(&case));
}
