//! Esc, Ctrl+C and Ctrl+D: cancelling a run, clearing the input, quitting.

use crossterm::event::KeyCode;
use rein_core::StopReason;
use rein_tui::app::Action;
use rein_tui::cells::Cell;

use crate::support::*;

#[test]
fn esc_cancels_a_running_turn() {
    let mut h = Harness::new();
    running(&mut h);
    assert_eq!(h.press(KeyCode::Esc), vec![Action::Cancel]);
}

#[test]
fn esc_while_idle_does_nothing() {
    let mut h = Harness::new();
    h.type_str("half typed");
    assert!(h.press(KeyCode::Esc).is_empty());
    assert_eq!(h.input(), "half typed");
    assert!(!h.app.should_quit);
}

#[test]
fn the_cancelling_hint_goes_away_when_the_run_stops() {
    let mut h = Harness::new();
    running(&mut h);
    h.press(KeyCode::Esc);
    assert!(h.app.hint.is_some());
    h.event(stopped(StopReason::Cancelled, ""));
    assert_eq!(h.app.hint, None);
    assert!(!h.app.running());
    let cells = h.app.drain_inserts();
    assert!(
        matches!(cells.last(), Some(Cell::Notice { text }) if text.contains("cancelled")),
        "{cells:?}"
    );
}

#[test]
fn ctrl_c_clears_a_non_empty_input() {
    let mut h = Harness::new();
    h.type_str("oops");
    assert!(h.ctrl('c').is_empty());
    assert_eq!(h.input(), "");
    assert!(!h.app.should_quit);
}

#[test]
fn ctrl_c_on_an_empty_idle_input_warns_first_and_quits_the_second_time() {
    let mut h = Harness::new();
    assert!(h.ctrl('c').is_empty());
    assert!(!h.app.should_quit);
    assert!(
        h.app.hint.as_deref().is_some_and(|t| t.contains("Ctrl+C")),
        "{:?}",
        h.app.hint
    );
    assert_eq!(h.ctrl('c'), vec![Action::Quit]);
    assert!(h.app.should_quit);
}

#[test]
fn ctrl_c_during_a_run_cancels_first() {
    let mut h = Harness::new();
    running(&mut h);
    assert_eq!(h.ctrl('c'), vec![Action::Cancel]);
    assert!(!h.app.should_quit);
}

#[test]
fn ctrl_d_on_an_empty_input_quits() {
    let mut h = Harness::new();
    assert_eq!(h.ctrl('d'), vec![Action::Quit]);
}
