//! `rein exec` doing real work with the replay provider.

use serde_json::json;

use super::support::*;

#[test]
fn the_example_task_fixes_the_project_and_json_output_parses_line_by_line() {
    let env = Env::with_example_project();
    let script = repo_root().join("examples/fix-the-test/script.json");
    let o = env.rein(&[
        "exec",
        "--json",
        "--mode",
        "auto",
        "--provider",
        "replay",
        "--script",
        script.to_str().unwrap(),
        "The test suite fails. Find the bug, fix it, and write REPORT.md.",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    assert_eq!(events[0]["type"], "run_started");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "stopped");
    assert_eq!(last["reason"], "completed");
    assert_eq!(last["turns"], 7);
    assert_eq!(last["usage"]["input_tokens"], 15900);
    assert!(last["final_text"].as_str().unwrap().contains("REPORT.md"));

    // The files on disk are right.
    let calc = std::fs::read_to_string(env.path("calc.py")).unwrap();
    assert!(
        calc.contains("return sum(values) / len(values)\n"),
        "{calc}"
    );
    assert!(!calc.contains("- 1"));
    let report = std::fs::read_to_string(env.path("REPORT.md")).unwrap();
    assert!(report.starts_with("# Report"));

    // Three reads ran in one turn, every call succeeded but the failing test
    // run, which is information, not a tool error.
    let finished: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .collect();
    assert_eq!(finished.len(), 11);
    assert!(
        finished.iter().all(|e| e["is_error"] == false),
        "{finished:?}"
    );

    // The stored transcript has the failing and then the passing test run.
    let messages = stored(&env, &session_id(&events));
    let bash_outputs: Vec<String> = messages
        .iter()
        .filter(|m| m["role"] == "tool" && m["name"] == "bash")
        .map(|m| m["output"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(bash_outputs.len(), 2);
    assert!(
        bash_outputs[0].contains("AssertionError"),
        "{}",
        bash_outputs[0]
    );
    assert!(
        bash_outputs[0].contains("exit code: 1"),
        "{}",
        bash_outputs[0]
    );
    assert!(
        bash_outputs[1].contains("all tests passed"),
        "{}",
        bash_outputs[1]
    );
    assert!(
        bash_outputs[1].contains("exit code: 0"),
        "{}",
        bash_outputs[1]
    );
    assert!(messages.iter().all(|m| m["role"] != "system"));
}

#[test]
fn without_json_the_answer_goes_to_stdout_and_progress_to_stderr() {
    let env = Env::with_example_project();
    let script = repo_root().join("examples/fix-the-test/script.json");
    let o = env.rein(&[
        "exec",
        "--mode",
        "auto",
        "--provider",
        "replay",
        "--script",
        script.to_str().unwrap(),
        "fix it",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "Fixed `mean` in calc.py (it divided by `len(values) - 1`); `python3 test_calc.py` now passes. Details are in REPORT.md."
    );
    let err = stderr(&o);
    assert!(err.contains("▸ bash"), "{err}");
    assert!(err.contains("done · 7 turns"), "{err}");
}

/// In default mode headless, the example's edits and commands are refused:
/// the model still answers ("Fixed `mean`…"), but the exit code is 9, the
/// `stopped` event lists each refused call, and stderr gives one line per
/// refusal (no tool_finished line besides) and a done line that says so.
#[test]
fn a_run_whose_calls_were_refused_exits_9_and_says_which() {
    let env = Env::with_example_project();
    let script = repo_root().join("examples/fix-the-test/script.json");
    let script = script.to_str().unwrap();
    let o = env.rein(&["exec", "--provider", "replay", "--script", script, "fix it"]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    assert!(stdout(&o).contains("Fixed `mean`"), "{}", stdout(&o));
    let err = stderr(&o);
    let refusals = err.lines().filter(|l| l.contains("⊘")).count();
    assert!(refusals >= 2, "{err}");
    assert_eq!(
        err.lines()
            .filter(|l| l.trim_start().starts_with("✗"))
            .count(),
        0,
        "a refused call is one line, not two: {err}"
    );
    assert!(
        err.contains(&format!("done, but {refusals} calls were refused (exit 9)")),
        "{err}"
    );
    // The calls are shown the way the app shows them: the command itself.
    assert!(err.contains("▸ bash python3 test_calc.py"), "{err}");
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        script,
        "fix it",
    ]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    let events = json_lines(&o);
    let refused = events.last().unwrap()["refused"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(refused.len(), refusals, "{refused:?}");
    assert_eq!(refused[0]["needed_approval"], true);
    assert!(
        refused.iter().any(|r| r["tool"] == "edit_file"),
        "{refused:?}"
    );
}

/// `--json` runs that fail before they start still end with `stopped`.
#[test]
fn json_runs_that_fail_before_they_start_print_stopped() {
    let env = Env::new();
    for (args, reason, code) in [
        (
            vec!["exec", "--json", "--resume", "nosuchsession", "hi"],
            "usage_error",
            2,
        ),
        (
            vec!["exec", "--json", "--provider", "nosuchprovider", "hi"],
            "usage_error",
            2,
        ),
    ] {
        let o = env.rein(&args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        let events = json_lines(&o);
        assert_eq!(events.len(), 1, "{args:?}: {events:?}");
        assert_eq!(events[0]["type"], "stopped");
        assert_eq!(events[0]["reason"], reason);
        assert!(
            events[0]["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{events:?}"
        );
        assert_eq!(events[0]["refused"], serde_json::json!([]));
    }
}

#[test]
fn max_turns_exits_with_its_own_code_and_keeps_the_session() {
    let env = Env::new();
    let turn = json!({"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]});
    let script = env.script("loop.json", &json!({"turns": [turn, turn, turn]}));
    let o = env.rein(&[
        "exec",
        "--json",
        "--max-turns",
        "2",
        "--provider",
        "replay",
        "--script",
        &script,
        "loop",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let events = json_lines(&o);
    assert_eq!(events.last().unwrap()["reason"], "max_turns");
    assert_eq!(stored(&env, &session_id(&events)).len(), 5);
}

#[test]
fn a_provider_error_exits_with_its_own_code() {
    let env = Env::new();
    let script = env.script(
        "err.json",
        &json!({"turns": [{"error": {"kind": "auth", "message": "invalid x-api-key", "status": 401}}]}),
    );
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "hi"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("invalid x-api-key"));
}

#[test]
fn resume_continues_a_session_with_its_history() {
    let env = Env::new();
    let first = env.script("a.json", &json!({"turns": [{"text": "The answer is 42."}]}));
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &first,
        "what is it?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let id = session_id(&json_lines(&o));

    let second = env.script("b.json", &json!({"turns": [{"text": "Still 42."}]}));
    let o = env.rein(&[
        "exec",
        "--json",
        "--resume",
        &id[..10],
        "--provider",
        "replay",
        "--script",
        &second,
        "sure?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    assert_eq!(events[0]["resumed"], true);
    assert_eq!(session_id(&events), id);
    let texts: Vec<String> = stored(&env, &id)
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(texts.len(), 4, "{texts:?}");

    // --last picks the same, most recent session of this workspace.
    let third = env.script("c.json", &json!({"turns": [{"text": "Yes."}]}));
    let o = env.rein(&[
        "exec",
        "--json",
        "--last",
        "--provider",
        "replay",
        "--script",
        &third,
        "ok",
    ]);
    assert_eq!(session_id(&json_lines(&o)), id);
    assert_eq!(stored(&env, &id).len(), 6);
}

#[test]
fn plan_mode_refuses_writes_end_to_end() {
    let env = Env::new();
    let script = env.script(
        "plan.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "no"}}]},
            {"text": "1. Write x.txt"}
        ]}),
    );
    let o = env.rein(&[
        "exec",
        "--json",
        "--plan",
        "--provider",
        "replay",
        "--script",
        &script,
        "plan",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!env.path("x.txt").exists());
    let events = json_lines(&o);
    assert_eq!(events[0]["plan"], true);
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap();
    assert_eq!(finished["is_error"], true);
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "read it"}]}));
    let mut child = env
        .command()
        .args(["exec", "--provider", "replay", "--script", &script, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\n  prompt from a pipe\n\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let list = env.rein(&["sessions", "list"]);
    assert!(stdout(&list).contains("prompt from a pipe"));
    // Stored without the newlines and spaces the pipe added.
    let id = stdout(&env.rein(&["sessions", "list", "--json"]))
        .lines()
        .next()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .unwrap();
    let messages = stored(&env, &id);
    assert_eq!(messages[0]["content"], "prompt from a pipe", "{messages:?}");
}

/// `--profile small` on any provider: announced in `run_started`, and
/// its hook is in place (`write_file` over a file the run never read is
/// refused, a new file is not); without the flag a replay run is full.
#[test]
fn the_small_profile_is_chosen_by_flag_and_refuses_blind_overwrites() {
    let env = Env::new();
    std::fs::write(env.path("config.py"), "TIMEOUT = 30\n").unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "config.py", "content": "x"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.py", "content": "y"}}]},
            {"text": "done"}
        ]}),
    );
    let run_with = |extra: &[&str]| {
        let mut args = vec![
            "exec",
            "--json",
            "--mode",
            "auto",
            "--provider",
            "replay",
            "--script",
            &script,
        ];
        args.extend(extra);
        args.push("go");
        json_lines(&env.rein(&args))
    };
    let run = |profile: Option<&str>| match profile {
        Some(p) => run_with(&["--profile", p]),
        None => run_with(&[]),
    };
    let events = run(Some("small"));
    assert_eq!(events[0]["profile"], "small");
    let refused = events
        .iter()
        .find(|e| e["type"] == "tool_finished" && e["is_error"] == true)
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(
        refused["output_preview"]
            .as_str()
            .unwrap()
            .contains("which you have not read"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("config.py")).unwrap(),
        "TIMEOUT = 30\n"
    );
    assert_eq!(std::fs::read_to_string(env.path("new.py")).unwrap(), "y");
    let events = run(None);
    assert_eq!(events[0]["profile"], "full");
    assert_eq!(std::fs::read_to_string(env.path("config.py")).unwrap(), "x");
    let o = env.rein(&["exec", "--profile", "tiny", "go"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a profile"), "{}", stderr(&o));

    // The hook is a lever: switched off, the blind overwrite goes through,
    // and the run says what was off.
    std::fs::write(env.path("config.py"), "TIMEOUT = 30\n").unwrap();
    let events = run_with(&["--profile", "small", "--without", "read-first,nudge"]);
    assert_eq!(events[0]["without"], json!(["nudge", "read-first"]));
    assert_eq!(std::fs::read_to_string(env.path("config.py")).unwrap(), "x");
    let o = env.rein(&["exec", "--without", "magic", "go"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not a lever: use one of lean, tools"),
        "{}",
        stderr(&o)
    );
}

/// Mode bits of a path.
#[cfg(unix)]
fn mode_of(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn a_run_leaves_rein_home_and_its_databases_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    // As an older rein left it: readable by everyone.
    std::fs::set_permissions(env.home.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let big: String = (0..4000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(env.path("big.txt"), &big).unwrap();
    let script = env.script(
        "s.json",
        &serde_json::json!({"turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt", "limit": 4000}}]},
            {"text": "ok"}
        ]}),
    );
    let run = |env: &Env| {
        let mut cmd = env.command();
        let bin = cmd.get_program().to_owned();
        cmd = std::process::Command::new("sh");
        cmd.env("REIN_HOME", env.home.path())
            .current_dir(env.ws.path())
            .stdin(std::process::Stdio::null())
            .arg("-c")
            .arg("umask 000; exec \"$0\" \"$@\"")
            .arg(bin)
            .args(["exec", "--provider", "replay", "--script", &script, "go"]);
        cmd.output().unwrap()
    };
    let o = run(&env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let told: Vec<String> = stderr(&o)
        .lines()
        .filter(|l| l.contains("now private"))
        .map(str::to_string)
        .collect();
    assert_eq!(told.len(), 1, "{}", stderr(&o));
    assert!(told[0].contains("755"), "{}", told[0]);
    let home = env.home.path();
    assert_eq!(mode_of(home), 0o700);
    for name in ["sessions.db", "memory.db"] {
        assert!(home.join(name).exists(), "{name} missing");
    }
    for name in [
        "sessions.db",
        "sessions.db-wal",
        "sessions.db-shm",
        "memory.db",
        "memory.db-wal",
        "memory.db-shm",
    ] {
        let p = home.join(name);
        if p.exists() {
            assert_eq!(mode_of(&p), 0o600, "{name}");
        }
    }
    let sessions = home.join("sessions");
    let spilled: Vec<std::path::PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .flat_map(|s| std::fs::read_dir(s.unwrap().path().join("outputs")).unwrap())
        .map(|f| f.unwrap().path())
        .collect();
    assert!(!spilled.is_empty(), "the big output was spilled");
    for f in &spilled {
        assert_eq!(mode_of(f), 0o600, "{}", f.display());
        assert_eq!(mode_of(f.parent().unwrap()), 0o700, "{}", f.display());
    }
    // Said once: the next run finds it private and says nothing.
    let o = run(&env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("now private"), "{}", stderr(&o));
}

/// One accounting: `token_update` carries the provider's count of the
/// request just sent (input tokens, not input plus output) and the next
/// request's size from it, the reply added; never an estimate that
/// contradicts the provider.
#[test]
fn token_update_carries_the_providers_count_and_the_next_request_from_it() {
    let env = Env::new();
    let script = env.script(
        "usage.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
             "usage": {"input_tokens": 12500, "output_tokens": 40}},
            {"text": "done", "usage": {"input_tokens": 12620, "output_tokens": 3}}
        ]}),
    );
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "look",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let updates: Vec<serde_json::Value> = json_lines(&o)
        .into_iter()
        .filter(|e| e["type"] == "token_update")
        .collect();
    assert_eq!(updates.len(), 2, "{updates:?}");
    for (u, reported) in updates.iter().zip([12500u64, 12620]) {
        assert_eq!(u["actual"], reported, "{u}");
        let next = u["next_request"].as_u64().unwrap();
        // The report plus the model's reply (a call or a word): a few
        // tokens more, not the estimate of the whole request.
        assert!(next > reported && next < reported + 100, "{u}");
    }
    // The second request was the first's size plus the reply and the
    // tool's result: the first update's next_request is a lower bound.
    let first_next = updates[0]["next_request"].as_u64().unwrap();
    assert!(first_next <= 12620, "{updates:?}");
}
