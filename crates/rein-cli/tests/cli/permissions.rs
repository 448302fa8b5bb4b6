//! Permission modes, rules files and headless refusals through the binary.

use serde_json::{Value, json};

use super::support::*;

fn write_then_answer(env: &Env) -> String {
    env.script(
        "write.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > made.txt"}}]},
            {"text": "I could not run the command."}
        ]}),
    )
}

fn denied(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "permission_denied")
        .collect()
}

#[test]
fn headless_default_mode_refuses_a_command_the_model_sees_why_and_the_user_sees_the_fix() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "make a file",
    ]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    assert!(!env.path("made.txt").exists(), "the command must not run");
    let events = json_lines(&o);
    assert_eq!(events[0]["mode"], "default");
    let d = denied(&events);
    assert_eq!(d.len(), 1, "{events:?}");
    assert_eq!(d[0]["needed_approval"], true);
    assert_eq!(d[0]["suggested_mode"], "auto");
    assert_eq!(d[0]["suggested_rules"], json!(["bash(echo hi)"]));
    // The model saw the refusal as an observation, and the run completed.
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap();
    assert_eq!(finished["is_error"], true);
    assert!(
        finished["output_preview"]
            .as_str()
            .unwrap()
            .contains("needs the user's approval"),
        "{finished}"
    );
    assert_eq!(events.last().unwrap()["reason"], "completed");
    let err = stderr(&o);
    assert!(err.contains("1 call needed approval"), "{err}");
    assert!(err.contains("--mode auto"), "{err}");
    assert!(err.contains("\"bash(echo hi)\""), "{err}");
}

#[test]
fn an_allow_rule_in_a_trusted_project_rules_file_lets_the_command_run() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(
        env.path(".rein/settings.json"),
        r#"{"permissions": {"allow": ["bash(echo *)"]}}"#,
    )
    .unwrap();
    let script = write_then_answer(&env);
    // Allow rules of a project count only in a trusted folder.
    let o = env.rein(&[
        "exec",
        "--json",
        "--trust",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.path("made.txt")).unwrap(),
        "hi\n"
    );
    assert!(denied(&json_lines(&o)).is_empty());
}

#[test]
fn a_deny_rule_in_config_beats_auto_mode() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[permissions]\ndeny = [\"bash(echo*)\"]\n",
    )
    .unwrap();
    let script = write_then_answer(&env);
    let o = env.rein(&[
        "exec",
        "--json",
        "--mode",
        "auto",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    assert!(!env.path("made.txt").exists());
    let events = json_lines(&o);
    let d = denied(&events);
    assert_eq!(d[0]["needed_approval"], false);
    assert!(
        d[0]["why"].as_str().unwrap().contains("bash(echo*)"),
        "{}",
        d[0]
    );
}

#[test]
fn accept_edits_mode_runs_file_edits_but_not_commands() {
    let env = Env::new();
    let script = env.script(
        "edits.json",
        &json!({"turns": [
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "notes.md", "content": "ok\n"}},
                {"name": "bash", "arguments": {"command": "touch ran"}}
            ]},
            {"text": "done"}
        ]}),
    );
    let o = env.rein(&[
        "exec",
        "--json",
        "--mode",
        "accept-edits",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(env.path("notes.md")).unwrap(),
        "ok\n"
    );
    assert!(!env.path("ran").exists());
}

#[test]
fn protected_files_are_refused_even_in_auto_mode() {
    let env = Env::new();
    let script = env.script(
        "env.json",
        &json!({"turns": [
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": ".env", "content": "KEY=x\n"}},
                {"name": "write_file", "arguments": {"path": ".rein/settings.json", "content": "{}"}}
            ]},
            {"text": "done"}
        ]}),
    );
    let o = env.rein(&[
        "exec",
        "--json",
        "--mode",
        "auto",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    assert!(!env.path(".env").exists());
    assert!(!env.path(".rein/settings.json").exists());
    assert_eq!(denied(&json_lines(&o)).len(), 2);
}

#[test]
fn an_unknown_mode_is_a_usage_error() {
    let env = Env::new();
    let o = env.rein(&["exec", "--mode", "yolo", "--provider", "replay", "hi"]);
    assert_clean_failure(&o, 2, "unknown permission mode `yolo`");
}

#[test]
fn a_malformed_rules_file_is_one_line_naming_file_and_line() {
    let env = Env::new();
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(
        env.path(".rein/settings.json"),
        "{\n  \"permissions\": {\n    \"deny\": [\"bash(rm \"]\n  }\n}\n",
    )
    .unwrap();
    let o = env.rein(&["exec", "--provider", "replay", "hi"]);
    assert_clean_failure(&o, 2, "settings.json (line 3)");
    let o2 = {
        std::fs::write(env.path(".rein/settings.json"), "{\"permissions\": [1,").unwrap();
        env.rein(&["exec", "--provider", "replay", "hi"])
    };
    assert_clean_failure(&o2, 2, "invalid rules file");
}

#[test]
fn bypass_is_refused_in_config_and_warns_on_the_command_line() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[permissions]\nmode = \"bypass\"\n",
    )
    .unwrap();
    let o = env.rein(&["exec", "--provider", "replay", "hi"]);
    assert_clean_failure(&o, 2, "only accepted as a command-line flag");
    std::fs::remove_file(env.home.path().join("config.toml")).unwrap();
    let script = env.script("t.json", &json!({"turns": [{"text": "hello"}]}));
    let o = env.rein(&[
        "exec",
        "--mode",
        "bypass",
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: --mode bypass"),
        "{}",
        stderr(&o)
    );
}
