//! Bad input: one clear line on stderr, a non-zero exit, never a panic.

use serde_json::json;

use super::support::*;

#[test]
fn a_missing_workspace_is_a_usage_error() {
    let env = Env::new();
    let o = env.rein(&["exec", "-C", "/no/such/dir", "--provider", "replay", "hi"]);
    assert_clean_failure(&o, 2, "workspace /no/such/dir does not exist");
}

#[test]
fn an_unknown_provider_is_a_usage_error_naming_the_known_ones() {
    let env = Env::new();
    let o = env.rein(&["exec", "--provider", "gpt-17", "hi"]);
    assert_clean_failure(
        &o,
        2,
        "unknown provider `gpt-17`; known providers: anthropic, local, openai, openai-responses, replay",
    );
}

#[test]
fn no_key_and_no_local_model_says_how_to_get_one() {
    // A fresh REIN_HOME has no models folder, and no key is set.
    let env = Env::new();
    let o = env.rein(&["exec", "hi"]);
    let line = "no model available: run rein model fetch to fetch the default local model, or set ANTHROPIC_API_KEY or OPENAI_API_KEY";
    assert_clean_failure(&o, 2, line);
    assert_eq!(stderr(&o).trim_end(), format!("rein: {line}"));
}

#[test]
fn replay_without_a_script_or_with_a_missing_one_is_a_usage_error() {
    let env = Env::new();
    let o = env.rein(&["exec", "--provider", "replay", "hi"]);
    assert_clean_failure(&o, 2, "needs a script");
    let o = env.rein(&[
        "exec",
        "--provider",
        "replay",
        "--script",
        "/no/script.json",
        "hi",
    ]);
    assert_clean_failure(&o, 2, "/no/script.json");
}

#[test]
fn a_malformed_script_is_reported_with_its_position() {
    let env = Env::new();
    let path = env.home.path().join("bad.json");
    std::fs::write(&path, "{\"turns\": [ {\"text\": \"hi\"} ").unwrap();
    let o = env.rein(&[
        "exec",
        "--provider",
        "replay",
        "--script",
        path.to_str().unwrap(),
        "hi",
    ]);
    assert_clean_failure(&o, 2, "line 1");
    let typo = env.script("typo.json", &json!({"turns": [{"txt": "hi"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &typo, "hi"]);
    assert_clean_failure(&o, 2, "txt");
}

#[test]
fn an_invalid_config_file_names_the_file_and_line() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "provider = \"replay\"\nmax_turns = \"many\"\n",
    )
    .unwrap();
    let o = env.rein(&["exec", "hi"]);
    assert_clean_failure(&o, 2, "config.toml (line 2)");
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(env.home.path().join("config.toml"), "").unwrap();
    std::fs::write(env.path(".rein/config.toml"), "[[[").unwrap();
    let o = env.rein(&["exec", "hi"]);
    assert_clean_failure(&o, 2, ".rein/config.toml");
}

#[test]
fn a_trusted_project_config_file_selects_the_provider_and_script() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "configured"}]}));
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(
        env.path(".rein/config.toml"),
        format!("provider = \"replay\"\nmax_turns = 4\n[replay]\nscript = {script:?}\n"),
    )
    .unwrap();
    // A project's provider counts only in a trusted folder.
    let o = env.rein(&["exec", "--trust", "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "configured");
}

#[test]
fn a_corrupt_database_is_reported_without_touching_it() {
    let env = Env::new();
    let db = env.home.path().join("sessions.db");
    std::fs::write(
        &db,
        "this is not a database, it is a text file\n".repeat(100),
    )
    .unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "x"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "hi"]);
    assert_clean_failure(&o, 1, "corrupt");
    let after = std::fs::read_to_string(&db).unwrap();
    assert!(after.starts_with("this is not a database"));
    let o = env.rein(&["sessions", "list"]);
    assert_clean_failure(&o, 1, "corrupt");
}

#[test]
fn unknown_sessions_and_empty_prompts_are_usage_errors() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "x"}]}));
    let o = env.rein(&[
        "exec",
        "--resume",
        "nope",
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    assert_clean_failure(&o, 2, "session nope not found");
    let o = env.rein(&[
        "exec",
        "--last",
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    assert_clean_failure(&o, 2, "no session to resume");
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "   "]);
    assert_clean_failure(&o, 2, "the prompt is empty");
    let o = env.rein(&[
        "exec",
        "--max-turns",
        "0",
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    // The flag is named as the user typed it.
    assert_clean_failure(&o, 2, "--max-turns must be at least 1");
    // A script means the replay provider; another provider is a conflict.
    let o = env.rein(&["exec", "--json", "--script", &script, "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_lines(&o)[0]["provider"], "replay");
    let o = env.rein(&["exec", "--provider", "openai", "--script", &script, "hi"]);
    assert_clean_failure(
        &o,
        2,
        "--script is played by the replay provider, not `openai`",
    );
    let o = env.rein(&["sessions", "show", "nope"]);
    assert_clean_failure(&o, 2, "session nope not found");
    let o = env.rein(&["sessions", "delete", "nope"]);
    assert_clean_failure(&o, 2, "session nope not found");
}

#[test]
fn unknown_flags_are_usage_errors() {
    let env = Env::new();
    let o = env.rein(&["exec", "--frobnicate", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--frobnicate"));
}

#[test]
fn a_refused_json_command_line_still_ends_with_one_stopped_line() {
    let env = Env::new();
    let o = env.rein(&["exec", "--json", "--mode", "bogus", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    let out = stdout(&o);
    let last = out.lines().last().expect("a stopped line on stdout");
    let event: serde_json::Value = serde_json::from_str(last).expect("JSON");
    assert_eq!(event["type"], "stopped");
    assert_eq!(event["reason"], "usage_error");
    let error = event["error"].as_str().unwrap();
    assert!(error.contains("bogus") && !error.contains('\n'), "{error}");
    // Without --json, and for --help, stdout stays free of events.
    let o = env.rein(&["exec", "--mode", "bogus", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!stdout(&o).contains("stopped"));
    let o = env.rein(&["exec", "--json", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!stdout(&o).contains("\"stopped\""));
}

#[test]
fn a_script_that_runs_out_stops_with_a_provider_error_and_keeps_the_session() {
    let env = Env::new();
    let script = env.script(
        "short.json",
        &json!({"turns": [{"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}]}),
    );
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let events = json_lines(&o);
    assert!(
        events.last().unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("exhausted")
    );
    assert_eq!(stored(&env, &session_id(&events)).len(), 3);
}

#[test]
fn a_database_locked_by_another_process_fails_cleanly_and_loses_nothing() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "first"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "hi"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let db = env.home.path().join("sessions.db");
    // Another process holds the write lock for a while.
    let mut holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3,sys,time\nc=sqlite3.connect(sys.argv[1],isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\nprint('locked',flush=True)\ntime.sleep(20)",
            db.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    let script2 = env.script("s2.json", &json!({"turns": [{"text": "second"}]}));
    let o = env.rein(&[
        "exec",
        "--provider",
        "replay",
        "--script",
        &script2,
        "again",
    ]);
    holder.kill().unwrap();
    holder.wait().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("locked"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The earlier session is intact.
    let list = env.rein(&["sessions", "list", "--json"]);
    assert_eq!(json_lines(&list).len(), 1, "{}", stderr(&list));
}
