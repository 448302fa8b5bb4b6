//! The approval modal: what it shows, the keys that answer it, a queue of
//! requests, and requests answered elsewhere.

use crossterm::event::KeyCode;
use rein_core::{ApprovalDecision, ApprovalScope, Risk};
use rein_tui::app::Modal;
use rein_tui::cells::ToolState;

use crate::support::*;

const EDIT_ARGS: &str = r#"{"path":"calc.py","old_string":"    return sum(v) / (len(v) - 1)","new_string":"    return sum(v) / len(v)"}"#;

fn edit_waiting(h: &mut Harness, id: &str) -> tokio::sync::oneshot::Receiver<ApprovalDecision> {
    h.event(tool_started(id, "edit_file", EDIT_ARGS));
    let (ev, rx) = approval(
        id,
        "edit_file",
        "edit calc.py",
        Risk::Low,
        "edits ask in default mode",
    );
    h.event(ev);
    rx
}

#[test]
fn an_approval_request_opens_the_modal_with_a_diff_preview() {
    let mut h = Harness::new();
    running(&mut h);
    let _rx = edit_waiting(&mut h, "c1");
    assert!(matches!(
        h.app.modal,
        Some(Modal::Approval { feedback: None })
    ));
    assert_eq!(tool_state(&h, "c1"), Some(ToolState::Waiting));
    let preview = h.app.approvals.front().unwrap().preview.clone().unwrap();
    assert_eq!(
        preview,
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-    return sum(v) / (len(v) - 1)\n+    return sum(v) / len(v)\n"
    );
}

#[test]
fn approval_key_s_approves_for_the_session() {
    let mut h = Harness::new();
    running(&mut h);
    let mut rx = edit_waiting(&mut h, "c1");
    assert!(h.press(KeyCode::Char('s')).is_empty());
    assert_eq!(
        rx.try_recv().unwrap(),
        ApprovalDecision::Approve {
            scope: ApprovalScope::Session
        }
    );
    assert!(h.app.modal.is_none());
    assert!(h.app.approvals.is_empty());
}

#[test]
fn approval_key_f_denies_with_typed_feedback() {
    let mut h = Harness::new();
    running(&mut h);
    let mut rx = edit_waiting(&mut h, "c1");
    h.press(KeyCode::Char('f'));
    assert!(matches!(
        h.app.modal,
        Some(Modal::Approval { feedback: Some(_) })
    ));
    // Letters that are approval keys ('y', 's', 'p', 'n') are just text here.
    h.type_str("use the helper");
    assert!(rx.try_recv().is_err(), "nothing decided while typing");
    h.press(KeyCode::Enter);
    assert_eq!(
        rx.try_recv().unwrap(),
        ApprovalDecision::Deny {
            feedback: Some("use the helper".into())
        }
    );
    assert!(h.app.modal.is_none());
}

#[test]
fn approval_esc_denies() {
    let mut h = Harness::new();
    running(&mut h);
    let mut rx = edit_waiting(&mut h, "c1");
    h.press(KeyCode::Esc);
    assert_eq!(
        rx.try_recv().unwrap(),
        ApprovalDecision::Deny { feedback: None }
    );
    assert!(h.app.modal.is_none());
}

#[test]
fn two_approvals_queue_and_are_answered_in_order() {
    let mut h = Harness::new();
    running(&mut h);
    let mut first = edit_waiting(&mut h, "c1");
    h.event(tool_started("c2", "bash", r#"{"command":"pytest -q"}"#));
    let (ev, mut second) = approval("c2", "bash", "pytest -q", Risk::Low, "commands ask");
    h.event(ev);
    assert_eq!(h.app.approvals.len(), 2);
    assert_eq!(h.app.approvals[0].request.call_id, "c1");

    h.press(KeyCode::Char('y'));
    assert_eq!(first.try_recv().unwrap(), ApprovalDecision::once());
    assert!(second.try_recv().is_err(), "the second still waits");
    assert!(
        matches!(h.app.modal, Some(Modal::Approval { feedback: None })),
        "the modal stays open for the second"
    );
    assert_eq!(h.app.approvals[0].request.call_id, "c2");

    h.press(KeyCode::Esc);
    assert_eq!(second.try_recv().unwrap(), ApprovalDecision::deny());
    assert!(h.app.modal.is_none());
}

#[test]
fn esc_in_the_feedback_box_goes_back_to_the_choices() {
    let mut h = Harness::new();
    running(&mut h);
    let mut rx = edit_waiting(&mut h, "c1");
    h.press(KeyCode::Char('f'));
    h.type_str("hm");
    h.press(KeyCode::Esc);
    assert!(matches!(
        h.app.modal,
        Some(Modal::Approval { feedback: None })
    ));
    assert!(rx.try_recv().is_err());
}

#[test]
fn an_approval_resolved_elsewhere_updates_the_tool_and_closes_the_modal() {
    let mut h = Harness::new();
    running(&mut h);
    let _rx = edit_waiting(&mut h, "c1");
    h.event(rein_core::Event::ApprovalResolved {
        call_id: "c1".into(),
        decision: ApprovalDecision::once(),
    });
    assert!(h.app.modal.is_none());
    assert_eq!(tool_state(&h, "c1"), Some(ToolState::Running));
}

#[test]
fn ctrl_c_in_the_approval_modal_denies_like_esc() {
    let mut h = Harness::new();
    running(&mut h);
    let (event, mut rx) = approval("c1", "bash", "ls", Risk::Low, "commands need approval");
    h.event(event);
    assert!(matches!(h.app.modal, Some(Modal::Approval { .. })));
    h.ctrl('c');
    assert_eq!(
        rx.try_recv().unwrap(),
        ApprovalDecision::Deny { feedback: None }
    );
    assert!(h.app.modal.is_none());
    assert!(!h.app.should_quit);
}

#[test]
fn keys_typed_just_as_an_approval_opens_do_not_answer_it() {
    let mut h = Harness::new();
    h.app.approval_guard = std::time::Duration::from_secs(60);
    running(&mut h);
    let (event, mut rx) = approval("c1", "bash", "rm -rf build", Risk::High, "deletes files");
    h.event(event);
    // The user was typing "yes" for the input box.
    h.type_str("yes");
    assert!(rx.try_recv().is_err(), "no decision was sent");
    assert!(matches!(h.app.modal, Some(Modal::Approval { .. })));
    // Once the guard has passed, the same key answers.
    h.app.approval_guard = std::time::Duration::ZERO;
    h.press(KeyCode::Char('n'));
    assert_eq!(
        rx.try_recv().unwrap(),
        ApprovalDecision::Deny { feedback: None }
    );
}
