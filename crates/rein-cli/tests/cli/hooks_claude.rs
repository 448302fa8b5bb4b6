//! Hooks written for Claude Code, run by the binary as they are: they
//! read Claude's tool names, `tool_input` keys and permission modes, and
//! their exit codes and JSON answers decide the call as Claude documents.

use std::path::Path;

use serde_json::{Value, json};

use super::hooks::{results, settings};
use super::support::*;

/// A hook script in the home folder; the command that runs it.
fn hook_script(env: &Env, name: &str, body: &str) -> String {
    let path = env.home.path().join(name);
    std::fs::write(&path, body).unwrap();
    format!("python3 {}", path.display())
}

/// A model that runs `grep` through the shell, then `ls`, then ends.
fn grep_then_ls(env: &Env) -> String {
    env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "grep -r needle . > found.txt"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls > listed.txt"}}]},
            {"text": "done"}
        ]}),
    )
}

/// Runs the model of [`grep_then_ls`] under `hook` on matcher `Bash` and
/// checks that the `grep` call was refused with `reason` and `ls` ran.
fn grep_is_refused_and_ls_runs(hook: &str, reason: &str) {
    let env = Env::new();
    let command = hook_script(&env, "validate.py", hook);
    settings(
        &env.home.path().join("settings.json"),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}),
    );
    let o = env.replay_json(&grep_then_ls(&env), &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = results(&o);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].1 && r[0].0.contains(reason), "{r:?}");
    assert!(!r[1].1, "{r:?}");
    assert!(!env.path("found.txt").exists());
    assert!(env.path("listed.txt").exists());
}

#[test]
fn a_claude_bash_hook_that_exits_2_blocks_the_command_it_names() {
    // Claude's words: the tool is `Bash`, its input's key `command`.
    let hook = r#"import json, sys
event = json.load(sys.stdin)
if event["tool_name"] == "Bash" and "grep" in event["tool_input"]["command"]:
    print("use rg instead of grep", file=sys.stderr)
    sys.exit(2)
"#;
    grep_is_refused_and_ls_runs(hook, "use rg instead of grep");
}

#[test]
fn a_claude_bash_hook_that_answers_json_deny_blocks_the_command_with_its_reason() {
    let hook = r#"import json, sys
event = json.load(sys.stdin)
if event["hook_event_name"] == "PreToolUse" and "grep" in event["tool_input"]["command"]:
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "grep is not allowed here"}}))
"#;
    grep_is_refused_and_ls_runs(hook, "grep is not allowed here");
}

/// Each event JSON line a logging hook wrote.
fn logged(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_edit_or_write_hook_sees_file_path_accept_edits_and_the_transcript() {
    let env = Env::new();
    let log = env.home.path().join("seen.jsonl");
    let hook = format!(
        "import sys\nopen({:?}, 'a').write(sys.stdin.read().strip() + '\\n')\n",
        log.display().to_string()
    );
    let command = hook_script(&env, "log.py", &hook);
    settings(
        &env.home.path().join("settings.json"),
        json!({"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": command}]}]}),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "old\n"}}]},
            {"tool_calls": [{"name": "edit_file", "arguments": {"path": "notes.txt", "old_string": "old", "new_string": "new"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "accept-edits", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.path("notes.txt")).unwrap(),
        "new\n"
    );
    let seen = logged(&log);
    let names: Vec<&str> = seen
        .iter()
        .map(|e| e["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Write", "Edit"], "reads are not matched: {seen:?}");
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    for event in &seen {
        assert_eq!(event["hook_event_name"], "PreToolUse", "{event}");
        assert_eq!(event["tool_input"]["file_path"], "notes.txt", "{event}");
        assert!(event["tool_input"].get("path").is_none(), "{event}");
        assert_eq!(event["permission_mode"], "acceptEdits", "{event}");
        assert_eq!(Path::new(event["cwd"].as_str().unwrap()), ws, "{event}");
        assert!(!event["session_id"].as_str().unwrap().is_empty(), "{event}");
    }
    assert_eq!(seen[1]["tool_input"]["old_string"], "old");
    assert_eq!(seen[1]["tool_input"]["new_string"], "new");
    // The transcript holds the session so far, the call the hook is
    // asked about included, in Claude's shape.
    let transcript = logged(Path::new(seen[1]["transcript_path"].as_str().unwrap()));
    assert_eq!(transcript[0]["message"]["content"], "go", "{transcript:?}");
    let calls: Vec<&str> = transcript
        .iter()
        .filter_map(|l| l["message"]["content"][0]["name"].as_str())
        .collect();
    assert_eq!(calls, ["Write", "Edit"], "{transcript:?}");
    // Deleting the session deletes it.
    let id = seen[1]["session_id"].as_str().unwrap();
    assert_eq!(env.rein(&["sessions", "delete", id]).status.code(), Some(0));
    assert!(!Path::new(seen[1]["transcript_path"].as_str().unwrap()).exists());
}

/// A hook that allows every Write and sends it to `other.txt`, in
/// Claude's keys.
const REDIRECT_WRITES: &str = r#"import json, sys
event = json.load(sys.stdin)
new = dict(event["tool_input"], file_path="other.txt")
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse",
    "permissionDecision": "allow",
    "updatedInput": new}}))
"#;

#[test]
fn a_hooks_updated_input_in_claudes_keys_runs_allowed_but_not_past_plan_mode_or_a_deny_rule() {
    let env = Env::new();
    let command = hook_script(&env, "redirect.py", REDIRECT_WRITES);
    settings(
        &env.home.path().join("settings.json"),
        json!({"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": command}]}]}),
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "asked.txt", "content": "hi\n"}}]},
            {"text": "done"}
        ]}),
    );
    // Plan mode refuses writes whatever a hook says.
    let o = env.replay_json(&script, &["--mode", "plan", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(results(&o)[0].1, "{:?}", results(&o));
    assert!(!env.path("other.txt").exists() && !env.path("asked.txt").exists());
    // Headless in the default mode a write would be refused unasked; the
    // hook's allow runs it, at the path it gave.
    let o = env.replay_json(&script, &["go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!results(&o)[0].1, "{:?}", results(&o));
    assert_eq!(
        std::fs::read_to_string(env.path("other.txt")).unwrap(),
        "hi\n"
    );
    assert!(!env.path("asked.txt").exists());
    // A deny rule on the path the hook gave refuses it all the same.
    std::fs::remove_file(env.path("other.txt")).unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[permissions]\ndeny = [\"write_file(other.txt)\"]\n",
    )
    .unwrap();
    let o = env.replay_json(&script, &["go"]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    assert!(results(&o)[0].1, "{:?}", results(&o));
    assert!(!env.path("other.txt").exists() && !env.path("asked.txt").exists());
}
