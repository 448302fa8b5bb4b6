//! The modals: an approval (a command, an edit with its diff, the feedback
//! box) and the plan that is ready.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rein_core::{PermissionMode, Risk, StopReason};

use crate::support::*;

#[test]
fn the_approval_modal_for_a_high_risk_command_at_80x24() {
    let mut h = sonnet_harness();
    h.send("clean the build");
    h.event(run_started(PermissionMode::Default));
    h.event(tool_started(
        "b1",
        "bash",
        r#"{"command":"rm -rf build/ && git clean -fdx"}"#,
    ));
    let (ev, _rx) = approval(
        "b1",
        "bash",
        "rm -rf build/ && git clean -fdx",
        Risk::High,
        "deletes files recursively",
    );
    h.event(ev);
    h.app.drain_inserts();
    let text = viewport(&h.app, 80, 24);
    assert!(text.contains("Allow bash?"), "{text}");
    assert!(text.contains("risk: high"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn the_approval_modal_for_an_edit_shows_the_diff_and_the_queue() {
    let mut h = sonnet_harness();
    h.send("fix it");
    h.event(run_started(PermissionMode::Default));
    h.event(tool_started(
        "e1",
        "edit_file",
        r#"{"path":"calc.py","old_string":"    return sum(v) / (len(v) - 1)","new_string":"    return sum(v) / len(v)"}"#,
    ));
    let (ev, _rx1) = approval(
        "e1",
        "edit_file",
        "edit calc.py",
        Risk::Low,
        "edits ask in default mode",
    );
    h.event(ev);
    h.event(tool_started("b2", "bash", r#"{"command":"pytest -q"}"#));
    let (ev, _rx2) = approval("b2", "bash", "pytest -q", Risk::Low, "commands ask");
    h.event(ev);
    assert_snapshot!(viewport(&h.app, 80, 24));
}

#[test]
fn the_approval_feedback_box() {
    let mut h = sonnet_harness();
    h.send("go");
    h.event(run_started(PermissionMode::Default));
    h.event(tool_started(
        "b1",
        "bash",
        r#"{"command":"pip install numpy"}"#,
    ));
    let (ev, _rx) = approval("b1", "bash", "pip install numpy", Risk::Low, "commands ask");
    h.event(ev);
    h.press(KeyCode::Char('f'));
    h.type_str("use the stdlib");
    assert_snapshot!(viewport(&h.app, 80, 24));
}

#[test]
fn the_plan_ready_modal() {
    let mut h = sonnet_harness();
    h.send("/mode plan");
    h.send("plan the refactor");
    h.event(run_started(PermissionMode::Plan));
    h.event(stopped(StopReason::Completed, "1. do x"));
    assert_snapshot!(viewport(&h.app, 80, 24));
}
