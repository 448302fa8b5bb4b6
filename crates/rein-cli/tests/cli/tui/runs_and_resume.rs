//! A task run in the app and the ways out of it: approvals and the diff on
//! screen, resuming after a restart, quitting during a command, a prompt
//! on the command line, an image attached by naming it.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Tmux, quit, write_project};
use crate::cli::support::*;

#[test]
fn the_app_runs_a_task_with_an_approval_shows_the_diff_and_resumes_after_a_restart() {
    let env = Env::new();
    write_project(env.ws.path());
    let script = fix_the_mean_script(&env);
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("fix the mean function");
    app.keys(&["Enter"]);
    approve_the_command_then_the_edit(&app);
    the_transcript_shows_the_command_and_the_edit(&app, &env);
    app.wait_for("ask rein to do something");
    a_narrower_terminal_is_redrawn_at_its_width(&app);
    quit(&app);
    drop(app);
    a_new_app_resumes_the_session(&env, &script);
}

/// Three turns: a failing command, an edit that fixes `mean`, an answer.
fn fix_the_mean_script(env: &Env) -> String {
    env.script(
        "tui.json",
        &json!({
            "model": "replay-tui",
            "context_window": 32000,
            "turns": [
                {"reasoning": "Run the tests first.",
                 "text": "I'll run the tests.",
                 "tool_calls": [{"name": "bash", "arguments": {"command": "echo checking && false"}}],
                 "usage": {"input_tokens": 1200, "output_tokens": 60}},
                {"text": "Fixing `mean`.",
                 "tool_calls": [{"name": "edit_file", "arguments": {
                     "path": "calc.py",
                     "old_string": "    return sum(v) / (len(v) - 1)",
                     "new_string": "    return sum(v) / len(v)"}}],
                 "usage": {"input_tokens": 1500, "output_tokens": 45}},
                {"text": "## Fixed\n\n`mean` divided by one less than the count.",
                 "usage": {"input_tokens": 1800, "output_tokens": 30}}
            ]
        }),
    )
}

/// The command needs approval in the default mode: the modal shows it,
/// then the edit with its change; `y` allows each once.
fn approve_the_command_then_the_edit(app: &Tmux) {
    let screen = app.wait_for("Allow bash?");
    assert!(screen.contains("echo checking && false"), "{screen}");
    assert!(screen.contains("[y] once"), "{screen}");
    // Keys are held back for a moment after a modal opens.
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["y"]);

    let screen = app.wait_for("Allow edit_file?");
    assert!(screen.contains("return sum(v) / len(v)"), "{screen}");
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["y"]);
}

/// The answer, the command's cell (exit status and output) and the
/// edit's cell (a diff with line numbers); the file holds the fix.
fn the_transcript_shows_the_command_and_the_edit(app: &Tmux, env: &Env) {
    app.wait_for("Fixed");
    let screen = app.wait_for("divided by one less");
    assert!(screen.contains("bash echo checking && false"), "{screen}");
    assert!(screen.contains("exit 1"), "{screen}");
    assert!(screen.contains("└ checking"), "{screen}");
    assert!(screen.contains("edit_file calc.py"), "{screen}");
    assert!(
        screen.contains("│-    return sum(v) / (len(v) - 1)"),
        "{screen}"
    );
    assert!(screen.contains("│+    return sum(v) / len(v)"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("calc.py")).unwrap(),
        "def mean(v):\n    return sum(v) / len(v)\n"
    );
}

/// A narrower terminal: the app redraws the newest cells at the new
/// width, with no leftovers of the wider frame.
fn a_narrower_terminal_is_redrawn_at_its_width(app: &Tmux) {
    app.resize(60, 24);
    // Redrawn for the new width: the answer and the input are there, no
    // line is wider than the screen and no piece of the old rule is left
    // (waited for: on a loaded machine the redraw takes a moment).
    let redrawn = |s: &str| {
        s.contains("divided by one less")
            && s.contains("ask rein")
            && s.lines().all(|l| {
                l.chars().count() <= 60
                    && (l.is_empty() || !l.chars().all(|c| c == '─') || l.chars().count() == 60)
            })
    };
    let start = Instant::now();
    let screen = loop {
        let s = app.visible();
        if redrawn(&s) || start.elapsed() > Duration::from_secs(10) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(screen.contains("divided by one less"), "{screen}");
    for line in screen.lines() {
        assert!(
            line.chars().count() <= 60,
            "a line wider than the screen: {line:?}\n{screen}"
        );
        // The rule above the input, rewrapped by the terminal, would leave
        // a shorter piece behind.
        if !line.is_empty() && line.chars().all(|c| c == '─') {
            assert_eq!(line.chars().count(), 60, "a leftover rule: {screen}");
        }
    }
}

/// A new app: /resume lists the session and brings its whole transcript
/// back, the session id shows in the status line, and Ctrl+C twice on an
/// empty input quits and gives the terminal back.
fn a_new_app_resumes_the_session(env: &Env, script: &str) {
    let app = Tmux::start(env, &["--provider", "replay", "--script", script]);
    app.wait_for("ask rein to do something");
    app.type_text("/resume");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Resume a session");
    assert!(screen.contains("fix the mean function"), "{screen}");
    app.keys(&["Enter"]);
    app.wait_for("Resumed");
    let screen = app.wait_for("divided by one less");
    assert!(screen.contains("› fix the mean function"), "{screen}");
    assert!(screen.contains("│+    return sum(v) / len(v)"), "{screen}");
    let sessions = env.rein(&["sessions", "list", "--json"]);
    let id = json_lines(&sessions)[0]["id"].as_str().unwrap()[..12].to_string();
    assert!(!id.is_empty(), "{}", stdout(&sessions));
    app.wait_for(&id);
    app.keys(&["C-c"]);
    app.wait_for("press Ctrl+C again to quit");
    app.keys(&["C-c"]);
    app.wait_for("rein exited with 0");
}

#[test]
fn quitting_during_a_command_stops_it_and_keeps_the_session() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "bash", "arguments": {
                "command": "echo started; sleep 300 & echo $! > child.pid; wait"}}]},
            {"text": "never reached"}
        ]}),
    );
    // Bypass: the test must see the command's pid (no PID namespace).
    let app = Tmux::start(
        &env,
        &[
            "--mode",
            "bypass",
            "--provider",
            "replay",
            "--script",
            &script,
        ],
    );
    app.wait_for("ask rein to do something");
    app.type_text("run the slow thing");
    app.keys(&["Enter"]);
    let pid_file = env.path("child.pid");
    let start = Instant::now();
    let child: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{}",
            app.capture()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(std::path::Path::new(&format!("/proc/{child}")).exists());
    // Hold the session database: the cancelled run cannot store its last
    // result until it is released, so an app that did not wait for its
    // run would exit at once and lose it.
    let db = rusqlite::Connection::open(env.home.path().join("sessions.db")).unwrap();
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    app.type_text("/quit");
    app.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        !app.capture().contains("rein exited"),
        "the app quit before its run had stopped"
    );
    db.execute_batch("ROLLBACK").unwrap();
    app.wait_for("rein exited with 0");
    std::thread::sleep(Duration::from_millis(200));
    let alive = std::fs::read_to_string(format!("/proc/{child}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false);
    assert!(!alive, "the command outlived the app");
    // The cancelled call and its result are in the session.
    let sessions = env.rein(&["sessions", "list", "--json"]);
    let id = json_lines(&sessions)[0]["id"].as_str().unwrap().to_string();
    let shown = env.rein(&["sessions", "show", &id, "--json"]);
    let result = json_lines(&shown)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .expect("the tool result is stored");
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["output"].as_str().unwrap().contains("started"),
        "{result}"
    );
}

/// The shell pid of the pane (rein runs as its child).
fn pane_shell_pid(app: &Tmux) -> String {
    let out = Command::new("tmux")
        .args(["-L", &app.socket, "list-panes", "-t", app.session])
        .args(["-F", "#{pane_pid}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `rein "prompt"` opens the app with that message already sent (options
/// may come before it), and every way out of the app — /quit, Ctrl+C
/// twice, SIGTERM — ends by saying how to resume the session, with an id
/// that resumes it.
#[test]
fn a_prompt_on_the_command_line_is_sent_and_every_way_out_says_how_to_resume() {
    let env = Env::new();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "The answer is 42."}]}),
    );
    for way in ["/quit", "Ctrl+C twice", "SIGTERM"] {
        let app = Tmux::start(
            &env,
            &[
                "--mode",
                "accept-edits",
                "--provider",
                "replay",
                "--script",
                &script,
                "what is the answer?",
            ],
        );
        app.wait_for("The answer is 42.");
        let screen = app.capture();
        assert!(screen.contains("what is the answer?"), "{screen}");
        match way {
            "/quit" => {
                app.type_text("/quit");
                app.keys(&["Enter"]);
            }
            "Ctrl+C twice" => app.keys(&["C-c", "C-c"]),
            _ => {
                let shell = pane_shell_pid(&app);
                let ok = Command::new("pkill")
                    .args(["-TERM", "-P", &shell, "-x", "rein"])
                    .status()
                    .unwrap();
                assert!(ok.success(), "{way}: no rein process under the pane");
            }
        }
        let screen = app.wait_for("rein exited with");
        let line = screen
            .lines()
            .find(|l| l.contains("continue with: rein --resume "))
            .unwrap_or_else(|| panic!("{way}: no resume hint:\n{screen}"));
        let id = line.rsplit(' ').next().unwrap().trim();
        let shown = env.rein(&["sessions", "show", id]);
        assert_eq!(shown.status.code(), Some(0), "{way}: {}", stderr(&shown));
        assert!(
            String::from_utf8_lossy(&shown.stdout).contains("The answer is 42."),
            "{way}"
        );
    }
}

/// A nudge shows once: as the notice saying rein nudged the model, not
/// again as if the user had typed it; resumed, it is one notice line.
#[test]
fn a_nudge_shows_once_in_the_app_and_once_when_resumed() {
    let env = Env::new();
    std::fs::write(env.path("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    let script = env.script(
        "nudge.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
            {"text": "The bug is fixed."},
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}}]},
            {"text": "Now it really is fixed."}
        ]}),
    );
    let replay = [
        "--provider",
        "replay",
        "--script",
        &script,
        "--mode",
        "auto",
    ];
    let mut args = vec!["--profile", "small"];
    args.extend(replay);
    args.push("fix the bug in calc.py");
    let app = Tmux::start(&env, &args);
    let screen = app.wait_for("Now it really is fixed.");
    assert_eq!(screen.matches("asks for a change").count(), 1, "{screen}");
    assert!(screen.contains("nudged the model"), "{screen}");
    assert!(!screen.contains("[rein]"), "{screen}");
    quit(&app);
    let app = Tmux::start(&env, &replay);
    app.wait_for("ask rein to do something");
    app.type_text("/resume");
    app.keys(&["Enter"]);
    app.wait_for("Resume a session");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Now it really is fixed.");
    assert_eq!(screen.matches("asks for a change").count(), 1, "{screen}");
    assert!(screen.contains("rein told the model"), "{screen}");
    quit(&app);
}

/// In the app, a message naming an image file (`@shot.png`, or a pasted
/// absolute path) attaches it: the image is stored with the message and
/// sent; a named file that is no image is refused in one line and nothing
/// is sent.
#[test]
fn an_image_named_in_an_app_message_is_attached_and_a_fake_one_refused() {
    let env = Env::new();
    std::fs::write(env.path("shot.png"), b"\x89PNG\r\n\x1a\n-image-bytes-").unwrap();
    std::fs::write(env.path("fake.png"), "just text").unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "A red square."}]}),
    );
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("what is on @fake.png");
    app.keys(&["Enter"]);
    app.wait_for("is not a PNG, JPEG, GIF or WebP image");
    app.type_text("what is on @shot.png");
    app.keys(&["Enter"]);
    app.wait_for("A red square.");
    let screen = app.visible();
    assert!(screen.contains("attached image/png"), "{screen}");
    quit(&app);
    let sessions = env.rein(&["sessions", "list", "--json"]);
    let id = json_lines(&sessions)[0]["id"].as_str().unwrap().to_string();
    let shown = stdout(&env.rein(&["sessions", "show", &id]));
    assert!(shown.contains("[image: image/png"), "{shown}");
    // The refused message was never sent nor stored.
    assert!(!shown.contains("fake.png"), "{shown}");
}
