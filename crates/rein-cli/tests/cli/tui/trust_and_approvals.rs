//! Trusting a folder's settings and remembering approvals: asked once per
//! folder, "always for this project" kept in the user's home, "this
//! session" covering the next change to the same file.

use std::time::Duration;

use serde_json::json;

use super::{Tmux, quit, status_of, write_project};
use crate::cli::support::*;

/// A workspace whose `.rein/config.toml` picks its own model script and
/// auto mode.
fn repo_with_settings(env: &Env) {
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(
        env.path(".rein/config.toml"),
        "[replay]\nscript = \"project-model.json\"\n[permissions]\nmode = \"auto\"\n",
    )
    .unwrap();
    std::fs::write(
        env.path(".rein/project-model.json"),
        json!({"model": "project-model", "turns": [{"text": "hi"}]}).to_string(),
    )
    .unwrap();
}

#[test]
fn the_app_asks_once_whether_to_trust_a_folder_whose_settings_would_change_something() {
    let env = Env::new();
    repo_with_settings(&env);
    let user = env.script(
        "user.json",
        &json!({"model": "user-model", "turns": [{"text": "hi"}]}),
    );
    let trust_file = env.home.path().join("trusted.json");

    let app = Tmux::start(&env, &["--provider", "replay", "--script", &user]);
    let screen = app.wait_for("Trust this folder?");
    assert!(
        screen.contains(".rein/config.toml: [replay] script, mode \"auto\""),
        "{screen}"
    );
    app.type_text("n");
    app.keys(&["Enter"]);
    app.wait_for("ask rein to do something");
    app.wait_for("this folder is not trusted");
    let status = status_of(&app, "user-model");
    assert!(status.contains("default"), "{status}");
    assert!(
        std::fs::read_to_string(&trust_file)
            .unwrap()
            .contains("\"not-trusted\""),
        "the answer is recorded"
    );
    quit(&app);
    drop(app);

    // Asked once: the next start goes straight to the app.
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &user]);
    app.wait_for("ask rein to do something");
    let screen = app.capture();
    assert!(!screen.contains("Trust this folder?"), "{screen}");
    quit(&app);
    drop(app);

    // Trusted, the project's script and mode apply.
    let env = Env::new();
    repo_with_settings(&env);
    let app = Tmux::start(&env, &["--provider", "replay"]);
    app.wait_for("Trust this folder?");
    app.type_text("y");
    app.keys(&["Enter"]);
    app.wait_for("ask rein to do something");
    let status = status_of(&app, "project-model");
    assert!(status.contains("auto"), "{status}");
    assert!(!app.capture().contains("this folder is not trusted"));
    let recorded = std::fs::read_to_string(env.home.path().join("trusted.json")).unwrap();
    assert!(recorded.contains("\"trusted\""), "{recorded}");
    quit(&app);
}

#[test]
fn always_for_this_project_in_an_untrusted_folder_is_kept_in_the_users_home() {
    let env = Env::new();
    let script = env.script(
        "p.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi > made.txt"}}]},
            {"text": "made it"}
        ]}),
    );
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("make the file");
    app.keys(&["Enter"]);
    app.wait_for("Allow bash?");
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["p"]);
    app.wait_for("made it");
    quit(&app);
    // Not in the repository, where an untrusted folder's allow rules would
    // be ignored, but in the user's own file for this project.
    assert!(!env.path(".rein/settings.json").exists());
    let saved: Vec<_> = std::fs::read_dir(env.home.path().join("projects"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(saved[0].contains("bash(echo hi)"), "{saved:?}");
    // The next run uses it: the command runs headless without asking.
    std::fs::remove_file(env.path("made.txt")).unwrap();
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "again"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(env.path("made.txt").exists(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("not trusted"), "{}", stderr(&o));
}

/// In the app: `s` on an edit of calc.py says what it stores, and a second
/// change to the same file (a rewrite) does not ask again; another file
/// still does.
#[test]
fn this_session_on_an_edit_covers_the_next_change_to_the_same_file() {
    let env = Env::new();
    write_project(env.ws.path());
    let script = env.script(
        "s.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "edit_file", "arguments": {
                "path": "calc.py",
                "old_string": "    return sum(v) / (len(v) - 1)",
                "new_string": "    return sum(v) / len(v)"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": "calc.py", "content": "def mean(v):\n    return sum(v) / len(v)\n\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": "notes.txt", "content": "done\n"}}]},
            {"text": "All done."}
        ]}),
    );
    let app = Tmux::start(
        &env,
        &["--provider", "replay", "--script", &script, "fix calc.py"],
    );
    let screen = app.wait_for("Allow edit_file?");
    assert!(
        screen.contains("s and p allow edit_file(calc.py), write_file(calc.py)"),
        "{screen}"
    );
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["s"]);
    // The rewrite of calc.py runs; the new file asks.
    let screen = app.wait_for("Allow write_file?");
    assert!(screen.contains("notes.txt"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("calc.py")).unwrap(),
        "def mean(v):\n    return sum(v) / len(v)\n\n",
        "the rewrite ran without asking"
    );
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["n"]);
    app.wait_for("All done.");
    quit(&app);
}
