//! Editing the input: newlines, pastes, and the history of earlier
//! submissions.

use crossterm::event::{KeyCode, KeyModifiers};
use rein_core::StopReason;
use rein_tui::app::Action;

use crate::support::*;

#[test]
fn shift_enter_inserts_a_newline_instead_of_sending() {
    let mut h = Harness::new();
    h.type_str("one");
    assert!(h.press_with(KeyCode::Enter, KeyModifiers::SHIFT).is_empty());
    h.type_str("two");
    assert_eq!(h.input(), "one\ntwo");
    assert_eq!(
        h.press(KeyCode::Enter),
        vec![Action::Submit("one\ntwo".into())]
    );
}

#[test]
fn ctrl_j_inserts_a_newline_instead_of_sending() {
    let mut h = Harness::new();
    h.type_str("one");
    assert!(h.ctrl('j').is_empty());
    h.type_str("two");
    assert_eq!(h.input(), "one\ntwo");
    assert!(!h.app.running());
}

#[test]
fn a_line_ending_in_a_backslash_continues_on_a_new_line() {
    let mut h = Harness::new();
    h.type_str("first line\\");
    assert!(h.press(KeyCode::Enter).is_empty());
    assert_eq!(h.input(), "first line\n", "the backslash is replaced");
    h.type_str("second");
    assert_eq!(
        h.press(KeyCode::Enter),
        vec![Action::Submit("first line\nsecond".into())]
    );
}

#[test]
fn a_binary_paste_is_rejected_with_a_hint() {
    let mut h = Harness::new();
    h.app.on_paste("PK\u{3}\u{4}\0\0\0binary");
    assert_eq!(h.input(), "");
    assert!(
        h.app.hint.as_deref().is_some_and(|t| t.contains("binary")),
        "{:?}",
        h.app.hint
    );
}

#[test]
fn a_big_paste_collapses_to_a_placeholder_and_enter_sends_it_all() {
    let mut h = Harness::new();
    let log: String = (1..=40).map(|i| format!("line {i}\n")).collect();
    h.type_str("why does this fail? ");
    h.app.on_paste(&log);
    let shown = h.input();
    assert!(
        shown.starts_with("why does this fail? [Pasted text #1 +40 lines]"),
        "{shown:?}"
    );
    assert_eq!(shown.lines().count(), 1, "collapsed to one line");
    let actions = h.press(KeyCode::Enter);
    assert_eq!(
        actions,
        vec![Action::Submit(format!("why does this fail? {log}"))]
    );
}

#[test]
fn a_small_paste_is_inserted_as_is() {
    let mut h = Harness::new();
    h.app.on_paste("two\nlines");
    assert_eq!(h.input(), "two\nlines");
}

#[test]
fn up_recalls_earlier_submissions_and_down_comes_back() {
    let mut h = Harness::new();
    h.send("first");
    h.event(stopped(StopReason::Completed, ""));
    h.send("second");
    h.event(stopped(StopReason::Completed, ""));
    h.type_str("draft");
    h.press(KeyCode::Up);
    assert_eq!(h.input(), "second");
    h.press(KeyCode::Up);
    assert_eq!(h.input(), "first");
    h.press(KeyCode::Down);
    assert_eq!(h.input(), "second");
    h.press(KeyCode::Down);
    assert_eq!(h.input(), "draft", "the draft comes back");
}

#[test]
fn up_recalls_a_submission_from_an_earlier_app() {
    let mut h = Harness::new();
    h.send("remember me");
    let mut again = h.restart();
    again.on_key(key(KeyCode::Up));
    assert_eq!(again.editor.text(), "remember me");
}
