//! The terminal the app runs on: refused without one, given back after
//! the alternate screen, shell output above kept, hostile answers printed
//! harmless, a local model's progress erased.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Tmux, quit};
use crate::cli::support::*;

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
    // The help's last lines (its title may have scrolled away).
    app.wait_for("input history");
    app.type_text("/quit");
    app.keys(&["Enter"]);
    let screen = app.wait_for("rein exited with 0");
    assert!(screen.contains("shell-output-before-the-app"), "{screen}");
    assert!(!screen.contains("input history"), "{screen}");
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

/// On a terminal, `rein exec` on the local model shows what the model is
/// doing on one line redrawn in place (prompt tokens read, then tokens
/// written), and erases it before the answer.
#[cfg(feature = "local")]
#[test]
fn exec_on_a_terminal_shows_the_local_models_progress_then_erases_it() {
    let Some((model, _cores)) = crate::cli::model::real_model() else {
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

/// The first Ctrl+C on an empty input says what the second does; the
/// second quits.
#[test]
fn a_first_ctrl_c_on_an_empty_input_says_a_second_quits() {
    let env = Env::new();
    let script = env.script("t.json", &json!({"turns": [{"text": "ok"}]}));
    let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("/help");
    app.keys(&["C-c"]);
    app.wait_for("Ctrl+C again to quit");
    app.keys(&["C-c"]);
    app.wait_for("rein exited with");
}

#[test]
fn a_status_command_writes_the_status_line_and_a_slow_or_failing_one_leaves_the_built_in() {
    let env = Env::new();
    std::fs::create_dir_all(env.ws.path().join(".git")).unwrap();
    std::fs::write(
        env.ws.path().join(".git/HEAD"),
        "ref: refs/heads/feature-x\n",
    )
    .unwrap();
    let script = env.script("t.json", &json!({"model": "m", "turns": [{"text": "hi"}]}));
    let cases = [
        // It reads the state on stdin.
        (
            "python3 -c \"import json,sys; d=json.load(sys.stdin); print('ST', d['mode'], d['branch'], d['model'])\"",
            "ST default feature-x m",
        ),
        // Too slow (killed at its timeout) and failing: the built-in line.
        ("sleep 5; echo TOO-LATE", "default"),
        ("echo FAILED-LINE; exit 1", "default"),
    ];
    for (command, shown) in cases {
        std::fs::write(
            env.home.path().join("config.toml"),
            format!("[tui]\nstatus_command = {command:?}\nstatus_timeout_ms = 500\n"),
        )
        .unwrap();
        let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
        app.wait_for("ask rein to do something");
        let screen = app.wait_for(shown);
        std::thread::sleep(Duration::from_millis(1500));
        let screen_later = app.capture();
        for bad in ["TOO-LATE", "FAILED-LINE"] {
            assert!(!screen_later.contains(bad), "{command}: {screen_later}");
        }
        assert!(screen.contains(shown), "{command}: {screen}");
        quit(&app);
    }
}
