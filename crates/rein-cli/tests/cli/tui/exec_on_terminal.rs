//! `rein exec` with stderr on a terminal (tmux): the live line's seconds
//! move while the model sends nothing, and the header fits the terminal
//! without breaking a word.

use std::time::{Duration, Instant};

use serde_json::json;

use super::Tmux;
use crate::cli::support::*;

/// A model that says nothing for seconds (the replay provider pausing
/// before its only chunk): the live line's seconds still count up, with
/// no event to redraw it, and the line is gone once the answer is in.
#[test]
fn execs_live_line_counts_seconds_while_the_model_sends_nothing() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"turns": [{"text": "slow answer", "chunk_chars": 100, "delay_ms": 5000}]}),
    );
    let app = Tmux::start(
        &env,
        &["exec", "--provider", "replay", "--script", &script, "hi"],
    );
    // Only the turn's start came before the pause: "1 s" and "2 s" are
    // the ticker's own redraws.
    app.wait_for("waiting for the model · 1 s · Ctrl-C to interrupt");
    app.wait_for("waiting for the model · 2 s · Ctrl-C to interrupt");
    let start = Instant::now();
    let screen = loop {
        let screen = app.capture();
        if screen.contains("rein exited with") {
            break screen;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "exec did not end:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(screen.contains("rein exited with 0"), "{screen}");
    assert!(screen.contains("slow answer"), "{screen}");
    assert!(
        !screen.contains("Ctrl-C to interrupt"),
        "the live line was left on the screen:\n{screen}"
    );
}

/// The header (session, model, workspace, mode) of a run in a deep
/// workspace, at 120 and at 60 columns: every word of it is whole on the
/// screen, the workspace at most shortened to its last folders.
#[test]
fn execs_header_breaks_between_words_at_120_and_60_columns() {
    let env = Env::new();
    let deep = env
        .ws
        .path()
        .join("a-rather-long-folder-name-for-clients")
        .join("another-long-folder-name-for-projects")
        .join("the-project");
    std::fs::create_dir_all(&deep).unwrap();
    let workspace = deep.canonicalize().unwrap().display().to_string();
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    for width in [120u16, 60] {
        let app = Tmux::start_sized(
            &env,
            (width, 30),
            &format!("cd '{workspace}'"),
            &["exec", "--provider", "replay", "--script", &script, "hi"],
        );
        let screen = app.wait_for("rein exited with");
        let at = screen
            .find("rein · session ")
            .unwrap_or_else(|| panic!("no header at {width}:\n{screen}"));
        let header: Vec<&str> = screen[at..]
            .lines()
            .take_while(|l| l.starts_with("rein · ") || l.starts_with("· "))
            .collect();
        let id = header[0]
            .split_whitespace()
            .nth(3)
            .unwrap_or_else(|| panic!("{header:?}"));
        let words = [
            "rein",
            "·",
            "session",
            id,
            "replay/replay",
            "default",
            "mode",
        ];
        let mut saw_workspace = false;
        for word in header.iter().flat_map(|l| l.split_whitespace()) {
            let of_workspace = word == workspace
                || word
                    .strip_prefix('…')
                    .is_some_and(|tail| tail.starts_with('/') && workspace.ends_with(tail));
            saw_workspace |= of_workspace;
            assert!(
                words.contains(&word) || of_workspace,
                "{word:?} is a broken piece of the header at {width} columns:\n{}",
                header.join("\n")
            );
        }
        assert!(saw_workspace, "no workspace at {width}: {header:?}");
        assert!(
            header.len() > 1,
            "this header is wider than {width} columns: {header:?}"
        );
    }
}
