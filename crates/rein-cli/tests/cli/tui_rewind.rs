//! Rewind in the interactive app, driven in tmux: Esc Esc on an empty
//! input opens the checkpoint picker with a diff preview, Enter takes the
//! files and the conversation back, and the app continues in the new
//! session; files changed outside rein are named and `f` rewinds anyway.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::support::*;
use super::tui::Tmux;

/// The app after one prompt whose calls created `new.txt` and changed
/// `a.txt`.
fn app_after_changes(env: &Env) -> Tmux {
    std::fs::write(env.ws.path().join("a.txt"), "alpha\n").unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "new.txt", "content": "new\n"}},
                {"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}}
            ]},
            {"text": "changed both files"}
        ]}),
    );
    let app = Tmux::start(
        env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "--mode",
            "auto",
        ],
    );
    app.wait_for("ask rein to do something");
    app.type_text("change the files");
    app.keys(&["Enter"]);
    app.wait_for("changed both files");
    assert_eq!(read(env.ws.path(), "a.txt").as_deref(), Some("ALPHA\n"));
    assert_eq!(read(env.ws.path(), "new.txt").as_deref(), Some("new\n"));
    app
}

fn read(ws: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(name)).ok()
}

/// Esc, a pause (two Esc bytes in one read are one key for the
/// terminal), Esc; then the picker.
fn open_picker(app: &Tmux) -> String {
    app.wait_for("ask rein to do something");
    app.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(150));
    app.keys(&["Escape"]);
    let screen = app.wait_for("Rewind to a checkpoint");
    // Keys typed just as a modal opens are not what this test is about.
    std::thread::sleep(Duration::from_millis(400));
    screen
}

/// The screen's text with its wrapping undone.
fn flat(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The session the rewind forked, by its title.
fn forked_session(env: &Env) -> String {
    let o = env.rein(&["sessions", "list", "--json"]);
    json_lines(&o)
        .iter()
        .find(|s| {
            s["title"]
                .as_str()
                .is_some_and(|t| t.ends_with("(rewound to 0)"))
        })
        .and_then(|s| s["id"].as_str())
        .unwrap_or_else(|| panic!("no forked session: {}", stdout(&o)))
        .to_string()
}

#[test]
fn esc_esc_in_the_app_rewinds_the_files_and_the_conversation() {
    let env = Env::new();
    let app = app_after_changes(&env);
    let screen = open_picker(&app);
    assert!(screen.contains("before: change the files"), "{screen}");
    assert!(screen.contains("2 files changed since"), "{screen}");
    assert!(screen.contains("+++ b/new.txt"), "{screen}");
    assert!(screen.contains("+ALPHA"), "{screen}");
    assert!(screen.contains("code + conversation"), "{screen}");
    app.keys(&["Enter"]);
    let screen = flat(&app.wait_for("files restored to checkpoint 0"));
    assert_eq!(read(env.ws.path(), "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(env.ws.path(), "new.txt"), None);
    assert!(
        screen.contains("1 written (a.txt), 1 deleted (new.txt)"),
        "{screen}"
    );
    let new = forked_session(&env);
    assert!(
        screen.contains(&format!("continues from checkpoint 0 in session {new}")),
        "{screen}"
    );
    // The app is in the new session now: it resumed it, and the next
    // prompt goes there.
    assert!(screen.contains(&format!("({new})")), "{screen}");
    let shown = stdout(&env.rein(&["sessions", "show", &new]));
    assert!(shown.contains("· 0 messages"), "{shown}");
}

#[test]
fn files_changed_outside_rein_are_named_in_the_picker_and_f_rewinds_anyway() {
    let env = Env::new();
    let app = app_after_changes(&env);
    std::fs::write(env.ws.path().join("a.txt"), "edited by hand\n").unwrap();
    open_picker(&app);
    // Files only: the conversation stays in this session.
    app.keys(&["Tab"]);
    app.wait_for("goes back: code only");
    app.keys(&["Enter"]);
    let screen = app.wait_for("[f] rewind anyway");
    assert!(
        flat(&screen).contains("changed outside rein since its last checkpoint: a.txt"),
        "{screen}"
    );
    assert_eq!(
        read(env.ws.path(), "a.txt").as_deref(),
        Some("edited by hand\n")
    );
    app.keys(&["f"]);
    let screen = flat(&app.wait_for("files restored to checkpoint 0"));
    assert!(
        screen.contains("the conversation goes on as it was"),
        "{screen}"
    );
    assert_eq!(read(env.ws.path(), "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(env.ws.path(), "new.txt"), None);
}
