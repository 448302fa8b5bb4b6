//! Permission modes: Shift+Tab and `/mode` change them, a change during a
//! run waits for the engine, and a finished plan offers to execute it.

use crossterm::event::{KeyCode, KeyModifiers};
use rein_core::{PermissionMode, StopReason};
use rein_tui::app::{Action, Modal, Status};
use rein_tui::cells::Cell;

use crate::support::*;

#[test]
fn shift_tab_cycles_default_accept_edits_plan_auto_default() {
    let mut h = Harness::new();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let actions = h.press_with(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(actions, vec![Action::SetMode(h.app.status.mode)]);
        assert!(!h.app.status.mode_pending, "idle: applies at once");
        seen.push(h.app.status.mode);
    }
    assert_eq!(
        seen,
        vec![
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::Auto,
            PermissionMode::Default
        ]
    );
}

#[test]
fn a_mode_change_during_a_run_is_pending_until_the_engine_confirms_it() {
    let mut h = Harness::new();
    running(&mut h);
    let actions = h.press(KeyCode::BackTab);
    assert_eq!(actions, vec![Action::SetMode(PermissionMode::AcceptEdits)]);
    assert!(h.app.status.mode_pending);
    assert_eq!(h.app.status.mode, PermissionMode::AcceptEdits);
    h.event(rein_core::Event::ModeChanged {
        mode: PermissionMode::AcceptEdits,
    });
    assert!(!h.app.status.mode_pending);
    assert_eq!(h.app.status.mode, PermissionMode::AcceptEdits);
}

#[test]
fn slash_mode_plan_switches_to_plan() {
    let mut h = Harness::new();
    let actions = h.send("/mode plan");
    assert_eq!(actions, vec![Action::SetMode(PermissionMode::Plan)]);
    assert_eq!(h.app.status.mode, PermissionMode::Plan);
}

/// Every /mode answers on screen: the mode now and the choices, the new
/// mode and what it lets run, or that nothing changed.
#[test]
fn slash_mode_always_says_what_the_mode_is() {
    let mut h = Harness::new();
    assert!(h.send("/mode").is_empty());
    let text = format!("{:?}", h.app.drain_inserts());
    assert!(
        text.contains("mode: default (reads run; edits and commands ask)"),
        "{text}"
    );
    assert!(text.contains("accept-edits | plan | auto"), "{text}");
    h.send("/mode auto");
    let text = format!("{:?}", h.app.drain_inserts());
    assert!(
        text.contains("mode: auto (everything runs, inside the sandbox)"),
        "{text}"
    );
    assert!(h.send("/mode auto").is_empty());
    let text = format!("{:?}", h.app.drain_inserts());
    assert!(text.contains("already in auto mode"), "{text}");
}

#[test]
fn slash_mode_bypass_is_refused_with_an_error() {
    let mut h = Harness::new();
    assert!(h.send("/mode bypass").is_empty());
    assert_eq!(h.app.status.mode, PermissionMode::Default);
    let cells = h.app.drain_inserts();
    assert!(
        matches!(cells.as_slice(), [Cell::Error { text }] if text.contains("bypass")),
        "{cells:?}"
    );
}

#[test]
fn slash_mode_with_an_unknown_name_is_an_error() {
    let mut h = Harness::new();
    assert!(h.send("/mode yolo").is_empty());
    let cells = h.app.drain_inserts();
    assert!(
        matches!(cells.as_slice(), [Cell::Error { text }] if text.contains("yolo")),
        "{cells:?}"
    );
}

#[test]
fn a_finished_plan_offers_to_execute_it_in_the_mode_from_before() {
    let mut h = Harness::with_status(Status {
        mode: PermissionMode::Auto,
        ..Status::default()
    });
    assert_eq!(
        h.send("/mode plan"),
        vec![Action::SetMode(PermissionMode::Plan)]
    );
    h.send("refactor calc.py");
    h.event(run_started(PermissionMode::Plan));
    h.event(text("1. do x"));
    h.event(stopped(StopReason::Completed, "1. do x"));
    assert!(matches!(h.app.modal, Some(Modal::PlanDone)));

    let actions = h.press(KeyCode::Char('e'));
    assert_eq!(
        actions,
        vec![
            Action::SetMode(PermissionMode::Auto),
            Action::Submit("Execute the plan.".into())
        ]
    );
    assert!(h.app.modal.is_none());
    assert_eq!(h.app.status.mode, PermissionMode::Auto);
    assert!(h.app.running());
}

#[test]
fn a_plan_mode_run_that_fails_does_not_offer_to_execute() {
    let mut h = Harness::new();
    h.send("/mode plan");
    h.send("plan it");
    h.event(stopped(StopReason::ProviderError, ""));
    assert!(h.app.modal.is_none());
}
