//! The user's hooks through the binary: a settings.json `hooks` block in
//! Claude Code's shape; a PreToolUse hook that blocks every write to a
//! file, through `edit_file`, `write_file` and `bash` alike; one that
//! rewrites a command; a project's hooks only in a trusted folder; events
//! rein does not run named; `rein hooks list`.

use serde_json::json;

use super::support::*;

fn settings(path: &std::path::Path, hooks: serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, json!({"hooks": hooks}).to_string()).unwrap();
}

fn results(o: &std::process::Output) -> Vec<(String, bool)> {
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
            "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]
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
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "--mode",
        "auto",
        "go",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("1 hook(s) for Stop are not run"),
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
        text.contains("note:") && text.contains("for Stop are not run"),
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
    let run = |env: &Env| {
        env.rein(&[
            "exec",
            "--json",
            "--provider",
            "replay",
            "--script",
            &script,
            "--mode",
            "auto",
            "go",
        ])
    };
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
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "--mode",
        "auto",
        "go",
    ]);
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
