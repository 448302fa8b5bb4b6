//! A custom command's live parts through the binary, as Claude Code runs
//! them: a `` !`cmd` `` context line runs through the gate before the
//! message is sent and its output replaces the markup; an `@path` attaches
//! the file; a project's command in a folder that is not trusted runs no
//! context line; a line the headless mode would refuse fails the message.

use serde_json::json;

use super::support::*;

fn command(env: &Env, name: &str, text: &str) {
    let path = env
        .ws
        .path()
        .join(".claude/commands")
        .join(format!("{name}.md"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The text of the user's message the model was sent.
fn sent(o: &std::process::Output) -> String {
    let events = json_lines(o);
    let user = events
        .iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap_or_else(|| panic!("{events:?}\n{}", stderr(o)));
    user["message"]["content"].as_str().unwrap().to_string()
}

fn answer(env: &Env) -> String {
    env.script("s.json", &json!({"turns": [{"text": "done"}]}))
}

#[test]
fn a_trusted_commands_context_line_output_and_file_reach_the_model_and_the_markup_does_not() {
    let env = Env::new();
    std::fs::write(env.ws.path().join("notes.txt"), "the notes' own text\n").unwrap();
    command(
        &env,
        "status",
        "---\ndescription: Status\n---\nState: !`echo live-$((6*7)) > out.txt; cat out.txt`\nSee @notes.txt and @missing.txt.\n",
    );
    let script = answer(&env);
    let o = env.replay_json(
        &script,
        &["--trust", "--mode", "auto", "--command", "status"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = sent(&o);
    assert!(text.starts_with("State: live-42\nSee @notes.txt"), "{text}");
    assert!(!text.contains("!`"), "{text}");
    assert!(text.contains("[file notes.txt]\n"), "{text}");
    assert!(text.contains("the notes' own text"), "{text}");
    assert!(
        stderr(&o).contains("note: @missing.txt was not attached"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_untrusted_projects_context_line_does_not_run_and_is_sent_as_written() {
    let env = Env::new();
    command(&env, "sneak", "Look: !`touch ran.txt`\n");
    let script = answer(&env);
    let o = env.replay_json(&script, &["--mode", "auto", "--command", "sneak"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!env.ws.path().join("ran.txt").exists());
    assert_eq!(sent(&o), "Look: !`touch ran.txt`");
    assert!(
        stderr(&o).contains("its `!` context lines were not run"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_context_line_the_headless_mode_refuses_fails_the_message_with_one_line() {
    let env = Env::new();
    command(&env, "peek", "Look: !`touch ran.txt`\n");
    let script = answer(&env);
    let o = env.replay_json(&script, &["--trust", "--command", "peek"]);
    assert!(!env.ws.path().join("ran.txt").exists());
    assert_clean_failure(
        &o,
        2,
        "the command `peek` was not sent: its context line `touch ran.txt` was refused: not run: \
         this call needs the user's approval",
    );
}

#[test]
fn a_trusted_commands_allowed_tools_pre_approve_its_context_line_and_an_untrusted_ones_do_not() {
    let env = Env::new();
    command(
        &env,
        "mark",
        "---\nallowed-tools: [\"Bash(touch:*)\", \"Bash(echo:*)\", Read]\n---\nMarked: !`touch made.txt && echo yes`\n",
    );
    let script = answer(&env);
    // Default mode, headless: without the pre-approval this is refused.
    let o = env.replay_json(&script, &["--trust", "--command", "mark"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(env.ws.path().join("made.txt").exists());
    assert_eq!(sent(&o), "Marked: yes");

    std::fs::remove_file(env.ws.path().join("made.txt")).unwrap();
    let o = env.replay_json(&script, &["--command", "mark"]);
    assert!(!env.ws.path().join("made.txt").exists());
    assert!(
        stderr(&o).contains("its `allowed-tools` pre-approves nothing"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn allowed_tools_never_get_past_a_deny_rule() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[permissions]\ndeny = [\"bash(touch*)\"]\n",
    )
    .unwrap();
    let home_commands = env.home.path().join("commands");
    std::fs::create_dir_all(&home_commands).unwrap();
    // The user's own command: trusted wherever it runs.
    std::fs::write(
        home_commands.join("mark.md"),
        "---\nallowed-tools: [\"Bash(touch:*)\"]\n---\nMarked: !`touch made.txt`\n",
    )
    .unwrap();
    let script = answer(&env);
    let o = env.replay_json(&script, &["--mode", "auto", "--command", "mark"]);
    assert!(!env.ws.path().join("made.txt").exists());
    assert_clean_failure(
        &o,
        2,
        "the command `mark` was not sent: its context line `touch made.txt` was refused",
    );
}

/// The app runs a command as every front end does: the user's own
/// command's `!` line asks in the approval modal (default mode), runs once
/// approved, and its output and `@path` file are in the message sent,
/// with no markup left.
#[test]
fn the_app_runs_a_commands_context_line_after_approval_and_attaches_its_file() {
    use std::time::Duration;

    use super::tui::{Tmux, quit};
    let env = Env::new();
    std::fs::write(env.ws.path().join("notes.txt"), "the notes' own text\n").unwrap();
    let own = env.home.path().join("commands");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("live.md"),
        "State: !`echo live-$((6*7))`\nSee @notes.txt\n",
    )
    .unwrap();
    let script = env.script(
        "app.json",
        &json!({"turns": [{"text": "answered the live command"}]}),
    );
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("/help");
    app.type_text("/live");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Allow bash?");
    assert!(screen.contains("echo live-$((6*7))"), "{screen}");
    // Keys are held back for a moment after a modal opens.
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["y"]);
    let screen = app.wait_for("answered the live command");
    assert!(screen.contains("State: live-42"), "{screen}");
    assert!(screen.contains("[file notes.txt]"), "{screen}");
    assert!(screen.contains("the notes' own text"), "{screen}");
    assert!(!screen.contains("!`"), "{screen}");
    quit(&app);
}

/// A command's `!` line in a brand-new headless session runs as a call
/// of that session: the user's Bash hook sees the session's id (the one
/// the run then continues), never an empty one, and the run counts as a
/// new session's.
#[test]
fn a_context_line_in_a_new_session_is_seen_by_hooks_with_the_sessions_id() {
    let env = Env::new();
    let log = env.home.path().join("seen.jsonl");
    let hook = env.home.path().join("log.py");
    std::fs::write(
        &hook,
        format!(
            "import sys\nopen({:?}, 'a').write(sys.stdin.read().strip() + '\\n')\n",
            log.display().to_string()
        ),
    )
    .unwrap();
    super::hooks::settings(
        &env.home.path().join("settings.json"),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("python3 {}", hook.display())}
        ]}]}),
    );
    command(&env, "status", "State: !`echo here`\n");
    let o = env.replay_json(
        &answer(&env),
        &["--trust", "--mode", "auto", "--command", "status"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(sent(&o), "State: here");
    let started = json_lines(&o)
        .into_iter()
        .find(|e| e["type"] == "run_started")
        .unwrap();
    assert_eq!(started["resumed"], false, "{started}");
    let seen: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(seen["tool_input"]["command"], "echo here", "{seen}");
    assert_eq!(seen["session_id"], started["session_id"], "{seen}");
    assert_eq!(
        stdout(&env.rein(&["sessions", "list"]))
            .lines()
            .filter(|l| l.contains("State"))
            .count(),
        1,
        "one session, not two"
    );
}

/// `allowed-tools` on one line, as Claude Code's own commit command writes
/// it (`Bash(git add:*), Bash(git status:*)`), pre-approves exactly those
/// commands: its `git status` line runs headless in the default mode; a
/// line it does not cover is refused; an entry broken in the middle
/// (`Bash(git`) grants nothing, least of all every command.
#[test]
fn a_one_line_allowed_tools_pre_approves_its_commands_and_a_broken_entry_nothing() {
    let env = Env::new();
    let run = |env: &Env| {
        std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(env.ws.path())
            .status()
            .unwrap();
    };
    run(&env);
    command(
        &env,
        "commit",
        "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)\n---\nStatus: !`git status --short`\n",
    );
    command(
        &env,
        "wider",
        "---\nallowed-tools: Bash(git add:*), Bash(touch:*)\n---\nMark: !`git status --short` !`touch made.txt`\n",
    );
    command(
        &env,
        "broken",
        "---\nallowed-tools: [\"Bash(git\", \"status:*)\"]\n---\nMark: !`touch made.txt`\n",
    );
    let script = answer(&env);
    let o = env.replay_json(&script, &["--trust", "--command", "commit"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(sent(&o).starts_with("Status: "), "{}", sent(&o));
    let o = env.replay_json(&script, &["--trust", "--command", "wider"]);
    assert_clean_failure(
        &o,
        2,
        "the command `wider` was not sent: its context line `git status --short` was refused",
    );
    let o = env.replay_json(&script, &["--trust", "--command", "broken"]);
    assert!(!env.ws.path().join("made.txt").exists());
    assert!(
        stderr(&o).contains("`Bash(git` is not a permission rule"),
        "{}",
        stderr(&o)
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("its context line `touch made.txt` was refused"),
        "{}",
        stderr(&o)
    );
}
