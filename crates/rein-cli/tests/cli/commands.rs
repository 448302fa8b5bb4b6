//! Custom commands through the binary: a project's `.rein/commands/` or
//! `.claude/commands/` file run with `rein exec --command NAME ARGS` and as
//! `/NAME ARGS` in the app, its arguments put in, its `allowed-tools`
//! narrowing what the model is offered.

use serde_json::json;

use super::support::*;
use super::tui::{Tmux, quit};

fn command(env: &Env, dir: &str, name: &str, text: &str) {
    let path = env.ws.path().join(dir).join(format!("{name}.md"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn exec_runs_a_command_with_its_arguments_and_only_its_tools() {
    let env = Env::new();
    std::fs::write(env.ws.path().join("notes.txt"), "first line\n").unwrap();
    command(
        &env,
        ".claude/commands",
        "first",
        "---\ndescription: Say a file's first line\nallowed-tools: [Read]\nmodel: fast-model\n---\nRead $1 and say its first line. ($ARGUMENTS)\n",
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "cat notes.txt"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "first line"}
        ]}),
    );
    let o = env.replay_json(
        &script,
        &[
            "--mode",
            "auto",
            "--command",
            "first",
            "notes.txt",
            "quickly",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the command `first` runs on its model `fast-model`"),
        "{}",
        stderr(&o)
    );
    let events = json_lines(&o);
    let user = events
        .iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(
        user["message"]["content"],
        "Read notes.txt and say its first line. (notes.txt quickly)"
    );
    let finished: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .collect();
    assert_eq!(finished[0]["name"], "bash");
    assert_eq!(
        finished[0]["is_error"], true,
        "bash is not offered: {}",
        finished[0]
    );
    assert_eq!(finished[1]["is_error"], false, "{}", finished[1]);

    assert_clean_failure(
        &env.rein(&[
            "exec",
            "--provider",
            "replay",
            "--script",
            &script,
            "--command",
            "nope",
        ]),
        2,
        "no command named `nope`: first",
    );
}

#[test]
fn the_app_runs_a_custom_command_lists_it_in_help_and_lists_skills() {
    let env = Env::new();
    let skill = env.ws.path().join(".rein/skills/greeter");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greeter\ndescription: Greets people warmly.\n---\nBe warm.\n",
    )
    .unwrap();
    command(
        &env,
        ".rein/commands",
        "greet",
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1.\n",
    );
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "Hello, Ada."}]}),
    );
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("/help");
    app.type_text("/help");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Greet someone");
    assert!(screen.contains("/greet <name>"), "{screen}");
    app.type_text("/greet Ada");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Hello, Ada.");
    assert!(screen.contains("Say hello to Ada."), "{screen}");
    // The skills are listed by /skills.
    app.type_text("/skills");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Skills ($name");
    assert!(
        screen.contains("$greeter  Greets people warmly."),
        "{screen}"
    );
    quit(&app);
}
