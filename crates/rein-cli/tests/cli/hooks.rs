//! The user's hooks through the binary: a settings.json `hooks` block in
//! Claude Code's shape; a PreToolUse hook that blocks every write to a
//! file, through `edit_file`, `write_file` and `bash` alike; one that
//! rewrites a command; a project's hooks only in a trusted folder; events
//! rein does not know named; `rein hooks list`; the session's events
//! (start, prompt, stop, end) and approval questions answered by hooks.

use serde_json::json;

use super::support::*;

pub(super) fn settings(path: &std::path::Path, hooks: serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, json!({"hooks": hooks}).to_string()).unwrap();
}

/// Each call's result preview and whether it failed, in order.
pub(super) fn results(o: &std::process::Output) -> Vec<(String, bool)> {
    json_lines(o)
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .map(|e| {
            (
                e["output_preview"].as_str().unwrap_or("").to_string(),
                e["is_error"] == true,
            )
        })
        .collect()
}

#[test]
fn a_pre_tool_use_hook_blocks_writes_to_a_file_by_every_tool() {
    let env = Env::new();
    std::fs::write(env.ws.path().join("secret.txt"), "keep\n").unwrap();
    std::fs::write(env.ws.path().join("notes.txt"), "old\n").unwrap();
    // Reads the event on stdin; exit 2 with a reason blocks.
    let guard =
        "if grep -q secret.txt; then echo 'secret.txt is protected by policy' >&2; exit 2; fi";
    settings(
        &env.home.path().join("settings.json"),
        json!({
            "PreToolUse": [{"matcher": "Bash|Edit|Write", "hooks": [{"type": "command", "command": guard}]}],
            "TeammateIdle": [{"hooks": [{"type": "command", "command": "true"}]}]
        }),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "secret.txt"}}]},
            {"tool_calls": [{"name": "edit_file", "arguments": {"path": "secret.txt", "old_string": "keep", "new_string": "gone"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo gone > secret.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "secret.txt", "content": "gone\n"}}]},
            {"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.txt", "old_string": "old", "new_string": "new"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 hook(s) for `TeammateIdle` are not run"),
        "{}",
        stderr(&o)
    );
    let r = results(&o);
    assert_eq!(r.len(), 5, "{r:?}");
    assert!(!r[0].1, "reads are not matched: {r:?}");
    for blocked in &r[1..4] {
        assert!(
            blocked.1 && blocked.0.contains("secret.txt is protected by policy"),
            "{r:?}"
        );
    }
    assert!(!r[4].1, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("secret.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("notes.txt")).unwrap(),
        "new\n"
    );

    let o = env.rein(&["hooks", "list"]);
    let text = stdout(&o);
    assert!(
        text.starts_with("PreToolUse [Bash|Edit|Write] if grep"),
        "{text}"
    );
    assert!(
        text.contains("note:") && text.contains("for `TeammateIdle` are not run"),
        "{text}"
    );
}

#[test]
fn a_hook_rewrites_a_command_and_a_projects_hooks_need_trust() {
    let env = Env::new();
    let rewrite = r#"cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"command":"echo rewritten"}}}'"#;
    settings(
        &env.ws.path().join(".rein/settings.json"),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": rewrite}]}]}),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo original"}}]},
            {"text": "done"}
        ]}),
    );
    let run = |env: &Env| env.replay_json(&script, &["--mode", "auto", "go"]);
    let o = run(&env);
    assert!(
        stderr(&o).contains("its hooks are not run, because this folder is not trusted"),
        "{}",
        stderr(&o)
    );
    assert!(results(&o)[0].0.contains("original"), "{:?}", results(&o));
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    assert_eq!(
        env.rein(&["trust", ws.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let o = run(&env);
    assert!(results(&o)[0].0.contains("rewritten"), "{:?}", results(&o));
}

/// PostToolUse hooks see the call and its result and may add to what the
/// model reads; PostToolUseFailure runs for a call that failed.
#[test]
fn post_tool_use_hooks_add_to_the_result_the_model_reads() {
    let env = Env::new();
    std::fs::write(env.ws.path().join("notes.txt"), "old\n").unwrap();
    let after = r#"grep -q '"tool_response"' && echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"the team formatter ran on it"}}'"#;
    let failed = "cat >/dev/null; echo 'the failure was logged' >&2; exit 2";
    settings(
        &env.home.path().join("settings.json"),
        json!({
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": after}]}],
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": failed}]}]
        }),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.txt", "old_string": "old", "new_string": "new"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let outputs = tool_outputs(&o);
    assert!(
        outputs[0].contains("[hook] the team formatter ran on it"),
        "{outputs:?}"
    );
    assert!(
        outputs[1].contains("[hook] the failure was logged"),
        "{outputs:?}"
    );
    assert!(!outputs[0].contains("failure was logged"), "{outputs:?}");
}

/// Every message a run stored, as (role, text).
fn committed(o: &std::process::Output) -> Vec<(String, String)> {
    json_lines(o)
        .iter()
        .filter(|e| e["type"] == "message_committed")
        .map(|e| {
            let m = &e["message"];
            let text = match m["content"].as_array() {
                Some(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
                None => m["content"].as_str().unwrap_or_default().to_string(),
            };
            (m["role"].as_str().unwrap_or("").to_string(), text)
        })
        .collect()
}

#[test]
fn session_hooks_add_context_keep_the_model_working_refuse_prompts_and_see_the_end() {
    let env = Env::new();
    let prompt_guard = r#"input=$(cat); if echo "$input" | grep -q password; then echo 'prompts must not carry passwords' >&2; exit 2; fi; echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"Ticket: ABC-1"}}'"#;
    // The documented way to avoid a loop: let the stop through once the
    // model went on because of this hook.
    let stop_guard =
        r#"grep -q '"stop_hook_active":true' && exit 0; echo 'run the tests first' >&2; exit 2"#;
    settings(
        &env.home.path().join("settings.json"),
        json!({
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "cat > \"$REIN_PROJECT_DIR/start.json\"; echo 'Project codename: BLUEBIRD'"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt_guard}]}],
            "Stop": [{"hooks": [{"type": "command", "command": stop_guard}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > \"$REIN_PROJECT_DIR/end.json\""}]}]
        }),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [{"text": "done"}, {"text": "tests pass"}]}),
    );
    let run = |prompt: &str| env.replay_json(&script, &[prompt]);
    let o = run("fix the bug");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let texts: Vec<String> = committed(&o).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        texts,
        [
            "fix the bug",
            "[rein] Context from the user's hooks:\nProject codename: BLUEBIRD\n\nTicket: ABC-1",
            "done",
            "[rein] A Stop hook did not let you finish yet: run the tests first",
            "tests pass"
        ],
        "{}",
        stdout(&o)
    );
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(env.ws.path().join(name)).unwrap()).unwrap()
    };
    let start = read("start.json");
    assert_eq!(start["hook_event_name"], "SessionStart");
    assert_eq!(start["source"], "startup");
    let end = read("end.json");
    assert_eq!(end["hook_event_name"], "SessionEnd");
    assert_eq!(end["reason"], "other");
    assert_eq!(end["session_id"], start["session_id"]);

    // A refused prompt: exit 10, the reason on stderr, nothing stored.
    let o = run("my password is hunter2");
    assert_eq!(o.status.code(), Some(10), "{}", stderr(&o));
    assert!(committed(&o).is_empty(), "{}", stdout(&o));
    let stopped = json_lines(&o)
        .into_iter()
        .find(|e| e["type"] == "stopped")
        .unwrap();
    assert_eq!(stopped["reason"], "hook_stopped");
    let error = stopped["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("prompts must not carry passwords"),
        "{stopped}"
    );
    // Without --json, the same reason on stderr.
    let o = env.rein(&[
        "exec",
        "--provider",
        "replay",
        "--script",
        &script,
        "password: x",
    ]);
    assert_eq!(o.status.code(), Some(10));
    assert!(
        stderr(&o).contains("prompts must not carry passwords"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn permission_request_hooks_answer_approval_questions_headless() {
    let env = Env::new();
    let answer = r#"input=$(cat); if echo "$input" | grep -q 'touch made.txt'; then echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'; else echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"only made.txt may be created","interrupt":true}}}'; fi"#;
    settings(
        &env.home.path().join("settings.json"),
        json!({"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": answer}]}]}),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch made.txt"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "touch other.txt"}}]},
            {"text": "never reached"}
        ]}),
    );
    // Default mode, headless: nobody can approve, the hook answers.
    let o = env.replay_json(&script, &["go"]);
    assert_eq!(o.status.code(), Some(10), "{}", stderr(&o));
    assert!(env.ws.path().join("made.txt").exists());
    assert!(!env.ws.path().join("other.txt").exists());
    let r = results(&o);
    assert!(!r[0].1, "{r:?}");
    assert!(
        r[1].1 && r[1].0.contains("only made.txt may be created"),
        "{r:?}"
    );
}

/// The same hooks in the app: context and a Stop hook's reason reach the
/// model, a refused prompt is said on screen and not sent, and quitting
/// runs the SessionEnd hooks.
#[test]
fn the_app_runs_the_session_hooks_and_says_what_they_did() {
    let env = Env::new();
    let prompt_guard = r#"input=$(cat); if echo "$input" | grep -q password; then echo 'prompts must not carry passwords' >&2; exit 2; fi; echo 'Ticket: ABC-1'"#;
    let stop_guard =
        r#"grep -q '"stop_hook_active":true' && exit 0; echo 'run the tests first' >&2; exit 2"#;
    settings(
        &env.home.path().join("settings.json"),
        json!({
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt_guard}]}],
            "Stop": [{"hooks": [{"type": "command", "command": stop_guard}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > \"$REIN_PROJECT_DIR/end.json\""}]}]
        }),
    );
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "first answer"}, {"text": "tests pass"}]}),
    );
    let app = super::tui::Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("fix the bug");
    app.keys(&["Enter"]);
    let screen = app.wait_for("tests pass");
    assert!(
        screen.contains("a Stop hook did not let the run end: run the tests first"),
        "{screen}"
    );
    app.type_text("my password is hunter2");
    app.keys(&["Enter"]);
    app.wait_for("a UserPromptSubmit hook refused the prompt: prompts must not carry");
    app.type_text("/quit");
    app.keys(&["Enter"]);
    let screen = app.wait_for("rein exited with");
    let id = screen
        .lines()
        .find_map(|l| l.split("rein --resume ").nth(1))
        .unwrap_or_else(|| panic!("no resume hint:\n{screen}"))
        .trim()
        .to_string();
    let end: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(env.ws.path().join("end.json")).unwrap())
            .unwrap();
    assert_eq!(end["reason"], "prompt_input_exit");
    assert_eq!(end["session_id"], id.as_str());
    // What the model was given, in order; the refused prompt is not there.
    let shown = env.rein(&["sessions", "show", &id, "--json"]);
    let text = stdout(&shown);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in the session:\n{text}"))
    };
    assert!(at("fix the bug") < at("Ticket: ABC-1"));
    assert!(at("Ticket: ABC-1") < at("first answer"));
    assert!(at("first answer") < at("A Stop hook did not let you finish yet"));
    assert!(!text.contains("hunter2"), "{text}");
}

/// When the app has waited for the user after a run, the Notification
/// hooks hear it (`idle_prompt`), once.
#[test]
fn the_app_tells_notification_hooks_when_it_waits_for_the_user() {
    let env = Env::new();
    settings(
        &env.home.path().join("settings.json"),
        json!({"Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "command",
            "command": "cat >> \"$REIN_PROJECT_DIR/idle.jsonl\"; echo >> \"$REIN_PROJECT_DIR/idle.jsonl\""}]}]}),
    );
    std::fs::write(
        env.home.path().join("config.toml"),
        "[tui]\nidle_notify_secs = 1\n",
    )
    .unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "answered"}]}),
    );
    let app = super::tui::Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("hello");
    app.keys(&["Enter"]);
    app.wait_for("answered");
    let file = env.ws.path().join("idle.jsonl");
    let started = std::time::Instant::now();
    while !file.exists() && started.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Another second: it is told once per wait, not every second.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let events: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["hook_event_name"], "Notification");
    assert_eq!(events[0]["notification_type"], "idle_prompt");
    assert_eq!(events[0]["message"], "rein is waiting for your input");
}

/// `continue: false` stops the run from a tool hook too: before a call
/// (which then does not run) and after one (which ran).
#[test]
fn continue_false_from_a_tool_hook_stops_the_run() {
    for (event, ran) in [("PreToolUse", false), ("PostToolUse", true)] {
        let env = Env::new();
        settings(
            &env.home.path().join("settings.json"),
            json!({event: [{"matcher": "Bash", "hooks": [{"type": "command",
                "command": "echo '{\"continue\": false, \"stopReason\": \"the build is broken upstream\"}'"}]}]}),
        );
        let script = env.script(
            "s.json",
            &json!({"turns": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "touch made.txt"}}]},
                {"text": "never reached"}
            ]}),
        );
        let o = env.replay_json(&script, &["--mode", "auto", "go"]);
        assert_eq!(o.status.code(), Some(10), "{event}: {}", stderr(&o));
        assert_eq!(env.ws.path().join("made.txt").exists(), ran, "{event}");
        let stopped = json_lines(&o)
            .into_iter()
            .find(|e| e["type"] == "stopped")
            .unwrap();
        assert_eq!(stopped["reason"], "hook_stopped", "{event}");
        assert!(
            stopped["error"]
                .as_str()
                .unwrap_or_default()
                .contains("the build is broken upstream"),
            "{event}: {stopped}"
        );
    }
}
