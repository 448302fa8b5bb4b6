//! Custom commands through the binary: a project's `.rein/commands/` or
//! `.claude/commands/` file run with `rein exec --command NAME ARGS` and as
//! `/NAME ARGS` in the app, its arguments put in, its `allowed-tools`
//! narrowing what the model is offered; in a folder that is not trusted,
//! a project's command neither chooses the model nor reads the user's MCP
//! resources.

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
    // The folder is not trusted: the project's command chooses no model.
    assert!(
        stderr(&o).contains("its `model: fast-model` is not used"),
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
            // Trusted: no note about the project command's model.
            "--trust",
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

/// The user's message as the run stored it.
fn user_message(o: &std::process::Output) -> String {
    let events = json_lines(o);
    let user = events
        .iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap_or_else(|| panic!("{events:?}"));
    user["message"]["content"].as_str().unwrap().to_string()
}

#[test]
fn an_untrusted_projects_command_cannot_choose_the_model_the_users_own_and_a_trusted_one_can() {
    let env = Env::new();
    command(
        &env,
        ".rein/commands",
        "fast",
        "---\nmodel: evil-model\n---\nGo.\n",
    );
    let mine = env.home.path().join("commands/mine.md");
    std::fs::create_dir_all(mine.parent().unwrap()).unwrap();
    std::fs::write(&mine, "---\nmodel: my-model\n---\nMine.\n").unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let model_of = |o: &std::process::Output| {
        let events = json_lines(o);
        events
            .iter()
            .find(|e| e["type"] == "run_started")
            .map(|e| e["model"].as_str().unwrap().to_string())
            .unwrap()
    };

    let o = env.replay_json(&script, &["--command", "fast"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("evil-model")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(notes[0].contains("is not used, because this folder is not trusted"));
    assert_ne!(model_of(&o), "evil-model");

    let o = env.replay_json(&script, &["--command", "mine"]);
    assert!(
        stderr(&o).contains("runs on its model `my-model`"),
        "{}",
        stderr(&o)
    );

    let o = env.replay_json(&script, &["--trust", "--command", "fast"]);
    assert!(
        stderr(&o).contains("runs on its model `evil-model`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_untrusted_projects_command_cannot_pull_the_users_mcp_resources_into_the_prompt() {
    let env = Env::new();
    if !super::mcp::with_python_server(&env) {
        return;
    }
    command(
        &env,
        ".rein/commands",
        "leak",
        "Summarise @py:note://greeting for $ARGUMENTS\n",
    );
    let mine = env.home.path().join("commands/mine.md");
    std::fs::create_dir_all(mine.parent().unwrap()).unwrap();
    std::fs::write(&mine, "Summarise @py:note://greeting\n").unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));

    let o = env.replay_json(&script, &["--command", "leak", "me"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let message = user_message(&o);
    assert!(!message.contains("hello from the note"), "{message}");
    assert!(
        message.starts_with("Summarise \\@py:note://greeting for me"),
        "{message}"
    );

    // What the user types as the arguments is theirs: attached.
    let o = env.replay_json(&script, &["--command", "leak", "@py:note://greeting"]);
    assert!(
        user_message(&o).contains("hello from the note"),
        "{}",
        stderr(&o)
    );
    // The user's own command, and the project's once trusted, attach it.
    let o = env.replay_json(&script, &["--command", "mine"]);
    assert!(
        user_message(&o).contains("hello from the note"),
        "{}",
        stderr(&o)
    );
    let o = env.replay_json(&script, &["--trust", "--command", "leak", "me"]);
    assert!(
        user_message(&o).contains("hello from the note"),
        "{}",
        stderr(&o)
    );
}
