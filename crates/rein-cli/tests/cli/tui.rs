//! The interactive app driven for real in tmux: keys in, screen out.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::*;

/// A private tmux server (its own socket) holding one session.
pub(crate) struct Tmux {
    socket: String,
    session: &'static str,
}

impl Tmux {
    pub(crate) fn start(env: &Env, args: &[&str]) -> Tmux {
        Tmux::start_after(env, "true", args)
    }

    /// Runs the shell command `before`, then the app.
    pub(crate) fn start_after(env: &Env, before: &str, args: &[&str]) -> Tmux {
        let socket = format!("rein-test-{}-{}", std::process::id(), fastrand_id());
        let t = Tmux {
            socket,
            session: "app",
        };
        let bin = env!("CARGO_BIN_EXE_rein");
        let mut line = format!(
            "{before}; env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY REIN_HOME='{}' TERM=xterm-256color '{bin}'",
            env.home.path().display()
        );
        for a in args {
            line.push_str(&format!(" '{a}'"));
        }
        line.push_str("; echo \"rein exited with $?\"; sleep 60");
        let ok = Command::new("tmux")
            .args(["-L", &t.socket, "new-session", "-d", "-s", t.session])
            .args(["-x", "100", "-y", "30", "-c"])
            .arg(env.ws.path())
            .arg(line)
            .status()
            .expect("tmux must be installed for the app's end-to-end test (apt-get install tmux)");
        assert!(ok.success(), "tmux could not start a session");
        t
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", self.session])
            .args(keys)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    pub(crate) fn resize(&self, w: u16, h: u16) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "resize-window", "-t", self.session])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Only what is on the screen now.
    pub(crate) fn visible(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", self.session])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub(crate) fn type_text(&self, text: &str) {
        let ok = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "send-keys",
                "-l",
                "-t",
                self.session,
                text,
            ])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// The screen and the scrollback above it.
    pub(crate) fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-S", "-300", "-t"])
            .arg(self.session)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Wait until the pane shows `text` (10 s at most).
    pub(crate) fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture();
            if screen.contains(text) {
                return screen;
            }
            if start.elapsed() > Duration::from_secs(10) {
                panic!("the screen never showed {text:?}; it shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn fastrand_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn write_project(ws: &Path) {
    std::fs::write(
        ws.join("calc.py"),
        "def mean(v):\n    return sum(v) / (len(v) - 1)\n",
    )
    .unwrap();
}

#[test]
fn the_app_runs_a_task_with_an_approval_shows_the_diff_and_resumes_after_a_restart() {
    let env = Env::new();
    write_project(env.ws.path());
    let script = env.script(
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
    );
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("fix the mean function");
    app.keys(&["Enter"]);

    // The command needs approval in the default mode: the modal shows it.
    let screen = app.wait_for("Allow bash?");
    assert!(screen.contains("echo checking && false"), "{screen}");
    assert!(screen.contains("[y] once"), "{screen}");
    // Keys are held back for a moment after a modal opens.
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["y"]);

    // Then the edit, with its change.
    let screen = app.wait_for("Allow edit_file?");
    assert!(screen.contains("return sum(v) / len(v)"), "{screen}");
    std::thread::sleep(Duration::from_millis(400));
    app.keys(&["y"]);

    app.wait_for("Fixed");
    let screen = app.wait_for("divided by one less");
    // The command's cell: its exit status and output.
    assert!(screen.contains("bash echo checking && false"), "{screen}");
    assert!(screen.contains("exit 1"), "{screen}");
    assert!(screen.contains("└ checking"), "{screen}");
    // The edit's cell: a diff with line numbers.
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
    app.wait_for("ask rein to do something");

    // A narrower terminal: the app redraws the newest cells at the new
    // width, with no leftovers of the wider frame.
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
    app.type_text("/quit");
    app.keys(&["Enter"]);
    app.wait_for("rein exited with 0");
    drop(app);

    // A new app: /resume lists the session and brings its transcript back.
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("/resume");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Resume a session");
    assert!(screen.contains("fix the mean function"), "{screen}");
    app.keys(&["Enter"]);
    app.wait_for("Resumed");
    // The whole transcript comes back: the last answer is in it.
    let screen = app.wait_for("divided by one less");
    assert!(screen.contains("› fix the mean function"), "{screen}");
    assert!(screen.contains("│+    return sum(v) / len(v)"), "{screen}");
    // The session id shows in the status line.
    let sessions = env.rein(&["sessions", "list", "--json"]);
    let id = json_lines(&sessions)[0]["id"].as_str().unwrap()[..12].to_string();
    assert!(!id.is_empty(), "{}", stdout(&sessions));
    app.wait_for(&id);
    // Ctrl+C twice on an empty input quits and gives the terminal back.
    app.keys(&["C-c"]);
    app.wait_for("press Ctrl+C again to quit");
    app.keys(&["C-c"]);
    app.wait_for("rein exited with 0");
}

#[test]
fn the_app_refuses_to_start_without_a_terminal_with_one_clear_line() {
    let env = Env::new();
    let script = env.script("t.json", &json!({"model": "m", "turns": []}));
    let out = env.rein(&["--provider", "replay", "--script", &script]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("needs a terminal"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn with_alt_screen_the_terminal_gets_its_screen_back_on_quit() {
    let env = Env::new();
    let script = env.script("t.json", &json!({"model": "m", "turns": [{"text": "hi"}]}));
    let app = Tmux::start_after(
        &env,
        "echo shell-output-before-the-app",
        &["--alt-screen", "--provider", "replay", "--script", &script],
    );
    let screen = app.wait_for("ask rein to do something");
    assert!(!screen.contains("shell-output-before-the-app"), "{screen}");
    app.type_text("/help");
    app.keys(&["Enter"]);
    app.wait_for("Commands and keys");
    app.type_text("/quit");
    app.keys(&["Enter"]);
    let screen = app.wait_for("rein exited with 0");
    assert!(screen.contains("shell-output-before-the-app"), "{screen}");
    assert!(!screen.contains("Commands and keys"), "{screen}");
}

#[test]
fn an_answer_that_would_clear_the_screen_is_printed_harmless_on_a_terminal() {
    let env = Env::new();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "gone?\u{1b}[2J\u{1b}[H\u{1b}]0;pwned\u{7} answer"}]}),
    );
    // `exec` on a terminal (the tmux pane), after a line of the shell's.
    let t = Tmux::start_after(
        &env,
        "echo shell-line-that-must-stay",
        &["exec", "--provider", "replay", "--script", &script, "hi"],
    );
    let screen = t.wait_for("rein exited with 0");
    assert!(screen.contains("shell-line-that-must-stay"), "{screen}");
    assert!(screen.contains("gone? answer"), "{screen}");
    // Piped, the answer is passed on exactly as the model wrote it.
    let piped = env.rein(&["exec", "--provider", "replay", "--script", &script, "hi"]);
    assert!(stdout(&piped).contains("\u{1b}[2J"), "{}", stdout(&piped));
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

/// The status line (the last line with text) of the visible screen.
fn status_of(app: &Tmux, needle: &str) -> String {
    app.wait_for(needle);
    let screen = app.visible();
    screen
        .lines()
        .rev()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{screen}"))
        .to_string()
}

pub(crate) fn quit(app: &Tmux) {
    app.type_text("/quit");
    app.keys(&["Enter"]);
    app.wait_for("rein exited with 0");
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
fn the_app_started_below_shell_output_keeps_it_and_shows_its_first_cells() {
    let env = Env::new();
    let script = env.script("t.json", &json!({"model": "m", "turns": [{"text": "hi"}]}));
    let app = Tmux::start_after(
        &env,
        "seq 1 40",
        &["--provider", "replay", "--script", &script],
    );
    app.wait_for("ask rein to do something");
    let screen = app.wait_for("rein · ");
    // What the shell printed last is still there, above the app.
    assert!(screen.contains("\n38\n39\n40\n"), "{screen}");
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

/// On a terminal, `rein exec` on the local model shows what the model is
/// doing on one line redrawn in place (prompt tokens read, then tokens
/// written), and erases it before the answer.
#[cfg(feature = "local")]
#[test]
fn exec_on_a_terminal_shows_the_local_models_progress_then_erases_it() {
    let Some(model) = super::model::real_model() else {
        return;
    };
    let env = Env::new();
    // A long prompt: reading it takes several batches.
    let filler = "Remember: the answer is short. ".repeat(120);
    let prompt = format!("{filler}What is 2 + 3? Answer with just the number.");
    let app = Tmux::start(
        &env,
        &[
            "exec",
            "--max-turns",
            "2",
            "--model-path",
            model.to_str().unwrap(),
            &prompt,
        ],
    );
    let start = Instant::now();
    let mut seen = Vec::new();
    let screen = loop {
        let screen = app.visible();
        if let Some(line) = screen.lines().find(|l| l.contains("Ctrl-C to interrupt"))
            && !seen.contains(&line.trim().to_string())
        {
            seen.push(line.trim().to_string());
        }
        if screen.contains("rein exited with") {
            break screen;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "exec did not end; the screen shows:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(screen.contains("rein exited with 0"), "{screen}");
    assert!(
        seen.iter().any(|l| l.contains("reading the prompt")),
        "no prompt progress was shown; lines seen: {seen:#?}"
    );
    assert!(
        !screen.contains("Ctrl-C to interrupt"),
        "the progress line was left on the screen:\n{screen}"
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

/// `/context` gives a number for every part of the next request: the
/// system prompt, the tool definitions, the instructions, the history.
#[test]
fn slash_context_gives_a_number_for_every_part() {
    let env = Env::new();
    std::fs::write(env.path("AGENTS.md"), "Answer in one short sentence.\n").unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "The answer is 42."}]}),
    );
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "what is the answer?",
        ],
    );
    app.wait_for("The answer is 42.");
    app.type_text("/context");
    app.keys(&["Enter"]);
    let screen = app.wait_for("tool definitions");
    let number_after = |label: &str| -> u64 {
        let line = screen
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} line:\n{screen}"));
        line.trim_start()[label.len()..]
            .split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no number on {line:?}"))
    };
    assert!(number_after("system prompt") > 0, "{screen}");
    assert!(number_after("tool definitions") > 0, "{screen}");
    assert!(
        number_after("instructions") > 0,
        "AGENTS.md counts: {screen}"
    );
    assert!(number_after("history") > 0, "{screen}");
    // /cost says the cost in the words exec and the status line use: the
    // replay model has no prices.
    app.type_text("/cost");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Cost of session");
    assert!(
        screen.contains("cost unknown (1 of 1 calls at unknown prices)"),
        "{screen}"
    );
    assert!(status_of(&app, "m ·").contains("cost unknown"), "{screen}");
    quit(&app);
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

/// The app with an MCP server (the reference server): the model's call to
/// one of its tools runs (read-only, so without asking) and `/mcp` shows
/// the server with its tools.
#[test]
fn the_app_calls_an_mcp_tool_and_slash_mcp_shows_the_server() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let server = std::path::PathBuf::from(home)
        .join(".cache/rein/npm/node_modules/.bin/mcp-server-everything");
    if !server.exists() {
        eprintln!("skipped: the MCP reference server is not installed");
        return;
    }
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\nstartup_timeout_sec = 60\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "hi from the app"}}]},
            {"text": "It echoed."}
        ]}),
    );
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "echo something",
        ],
    );
    let screen = app.wait_for("It echoed.");
    assert!(screen.contains("Echo: hi from the app"), "{screen}");
    app.type_text("/mcp");
    app.keys(&["Enter"]);
    let screen = app.wait_for("MCP servers");
    assert!(screen.contains("everything: 13 tools"), "{screen}");
    quit(&app);
}
