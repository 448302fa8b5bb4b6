//! The app's layout: the idle screen, the live area during a run, the
//! completion popup above the input.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rein_core::{Event, PermissionMode};
use rein_tui::render::{self};

use crate::support::*;

#[test]
fn idle_app_at_80x24_shows_the_input_placeholder_and_the_status_line() {
    let h = sonnet_harness();
    let text = screen(&h.app, 80, 24);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 24);
    assert_eq!(
        rows[23], "claude-sonnet-4-5 · default · $0.0000",
        "the status line is the last row"
    );
    assert!(rows[22].contains("ask rein to do something"));
    assert_snapshot!(text);
}

#[test]
fn idle_app_at_200x50() {
    let h = sonnet_harness();
    let text = screen(&h.app, 200, 50);
    assert!(text.lines().nth(47).unwrap().chars().all(|c| c == '─'));
    assert_snapshot!(text);
}

#[test]
fn idle_app_asks_for_a_small_viewport() {
    let h = sonnet_harness();
    // The rule, the input and the status line: nothing else to show.
    assert_eq!(render::desired_height(&h.app, 80, 24), 3);
    assert_snapshot!(viewport(&h.app, 80, 24));
}

#[test]
fn a_running_tool_and_streaming_text_in_the_live_area() {
    let mut h = sonnet_harness();
    h.send("fix the mean in calc.py");
    h.event(run_started(PermissionMode::Default));
    h.event(Event::TokenUpdate {
        estimated: 12_300,
        actual: None,
        window: None,
        next_request: 12_300,
    });
    h.event(tool_started(
        "t1",
        "bash",
        r#"{"command":"pytest -q tests/"}"#,
    ));
    h.event(text(
        "While the tests run, the cause:\n- `mean` divides by **len - 1**\n- the fix is one line",
    ));
    h.send("also check median");
    h.app.drain_inserts();
    let text = viewport(&h.app, 80, 24);
    assert!(text.contains("⠋ bash pytest -q tests/"), "{text}");
    assert!(text.contains("⠋ working"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn the_completion_popup_sits_above_the_input() {
    let mut h = sonnet_harness();
    h.type_str("/");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Down);
    assert_snapshot!(viewport(&h.app, 60, 24));
}
