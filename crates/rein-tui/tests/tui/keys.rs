//! The state machine: keys and engine events in, actions out.

use crossterm::event::{KeyCode, KeyModifiers};
use rein_core::{
    ApprovalDecision, ApprovalScope, Event, PermissionMode, Risk, SessionInfo, StopReason,
};
use rein_tui::app::{Action, Modal, Status};
use rein_tui::cells::{Cell, ToolState};

use crate::support::*;

fn running(h: &mut Harness) {
    let actions = h.send("start");
    assert_eq!(actions, vec![Action::Submit("start".into())]);
    h.event(run_started(PermissionMode::Default));
    h.app.drain_inserts();
}

// ----------------------------------------------------------- send and queue

#[test]
fn typing_then_enter_while_idle_submits_and_marks_running() {
    let mut h = Harness::new();
    assert!(h.type_str("fix the tests").is_empty());
    assert_eq!(h.input(), "fix the tests");
    let actions = h.press(KeyCode::Enter);
    assert_eq!(actions, vec![Action::Submit("fix the tests".into())]);
    assert!(h.app.running());
    assert!(h.app.status.running);
    assert_eq!(h.input(), "", "the input is cleared after sending");
}

#[test]
fn enter_on_an_empty_input_sends_nothing() {
    let mut h = Harness::new();
    assert!(h.press(KeyCode::Enter).is_empty());
    h.type_str("   ");
    assert!(h.press(KeyCode::Enter).is_empty());
    assert!(!h.app.running());
}

#[test]
fn enter_while_running_queues_until_the_message_is_committed() {
    let mut h = Harness::new();
    running(&mut h);
    let actions = h.send("also check median");
    assert_eq!(actions, vec![Action::Queue("also check median".into())]);
    assert_eq!(h.app.queued, vec!["also check median".to_string()]);

    h.event(user_committed("also check median"));
    assert!(h.app.queued.is_empty(), "delivered: no longer queued");
    let cells = h.app.drain_inserts();
    assert!(
        cells.contains(&Cell::User {
            text: "also check median".into()
        }),
        "{cells:?}"
    );
}

#[test]
fn a_message_still_queued_when_the_run_stops_is_sent_as_the_next_run() {
    let mut h = Harness::new();
    running(&mut h);
    h.send("and update the README");
    let actions = h.event(stopped(StopReason::Completed, "done"));
    assert_eq!(
        actions,
        vec![Action::Submit("and update the README".into())]
    );
    assert!(h.app.queued.is_empty());
    assert!(h.app.running(), "the next run has started");
}

#[test]
fn a_cancelled_run_gives_its_queued_messages_back_to_the_input_unsent() {
    let mut h = Harness::new();
    running(&mut h);
    h.send("and update the README");
    assert_eq!(h.press(KeyCode::Esc), vec![Action::Cancel]);
    let actions = h.event(stopped(StopReason::Cancelled, ""));
    assert!(actions.is_empty(), "{actions:?}");
    assert!(!h.app.running());
    assert!(h.app.queued.is_empty());
    assert_eq!(h.input(), "and update the README");
}

// ----------------------------------------------------------------- cancel

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

// ------------------------------------------------------------------ modes

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

// ----------------------------------------------------------------- Ctrl+C

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

// ---------------------------------------------------------------- newlines

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

// -------------------------------------------------------------- completion

#[test]
fn tab_completes_a_unique_command_prefix() {
    let mut h = Harness::new();
    h.type_str("/comp");
    h.press(KeyCode::Tab);
    assert_eq!(h.input(), "/compact ");
    assert!(h.app.popup.is_none());
}

#[test]
fn tab_on_a_slash_lists_the_commands_and_down_enter_picks_one() {
    let mut h = Harness::new();
    h.type_str("/");
    h.press(KeyCode::Tab);
    let popup = h.app.popup.clone().expect("popup");
    assert!(popup.slash);
    assert_eq!(popup.items.len(), rein_tui::complete::SLASH_COMMANDS.len());
    assert_eq!(popup.items[0], "/new");
    assert_eq!(popup.items[1], "/resume");

    h.press(KeyCode::Down);
    assert_eq!(h.app.popup.as_ref().map(|p| p.selected), Some(1));
    assert!(h.press(KeyCode::Enter).is_empty(), "Enter picks, not sends");
    assert_eq!(h.input(), "/resume ");
    assert!(h.app.popup.is_none());
    assert_eq!(h.press(KeyCode::Enter), vec![Action::LoadSessions]);
}

#[test]
fn esc_closes_the_popup_without_cancelling() {
    let mut h = Harness::new();
    running(&mut h);
    h.type_str("/");
    h.press(KeyCode::Tab);
    assert!(h.app.popup.is_some());
    assert!(h.press(KeyCode::Esc).is_empty());
    assert!(h.app.popup.is_none());
    assert_eq!(h.input(), "/");
}

#[test]
fn typing_while_the_popup_is_open_narrows_it_without_completing() {
    let mut h = Harness::new();
    h.type_str("/");
    h.press(KeyCode::Tab);
    h.type_str("com");
    // The typed text stays as typed; only Tab or Enter accepts.
    assert_eq!(h.input(), "/com");
    h.type_str("pact");
    assert_eq!(h.input(), "/compact");
}

#[test]
fn typing_while_the_path_popup_is_open_does_not_replace_the_word() {
    let mut h = Harness::new();
    let ws = h.workspace();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "").unwrap();
    std::fs::write(ws.join("src/math.rs"), "").unwrap();
    h.type_str("see @m");
    h.press(KeyCode::Tab);
    assert!(h.app.popup.is_some());
    h.type_str("ai");
    assert_eq!(h.input(), "see @mai");
}

#[test]
fn tab_completes_an_at_path_from_the_workspace() {
    let mut h = Harness::new();
    let ws = h.workspace();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(ws.join("README.md"), "# calc\n").unwrap();
    h.type_str("look at @mai");
    h.press(KeyCode::Tab);
    assert_eq!(h.input(), "look at @src/main.rs ");
}

#[test]
fn tab_on_an_at_path_with_no_match_says_so() {
    let mut h = Harness::new();
    std::fs::write(h.workspace().join("README.md"), "# calc\n").unwrap();
    h.type_str("see @zzz");
    h.press(KeyCode::Tab);
    assert_eq!(h.input(), "see @zzz");
    assert_eq!(h.app.hint.as_deref(), Some("no file matches @zzz"));
}

// ---------------------------------------------------------------- commands

#[test]
fn an_unknown_command_suggests_the_closest_one() {
    let mut h = Harness::new();
    assert!(h.send("/comapct").is_empty());
    assert!(
        !h.app.running(),
        "a mistyped command is not sent to the model"
    );
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Error { text }] => {
            assert!(text.contains("/comapct"), "{text}");
            assert!(text.contains("did you mean /compact?"), "{text}");
        }
        other => panic!("expected one error cell, got {other:?}"),
    }
}

#[test]
fn slash_help_shows_commands_and_keys() {
    let mut h = Harness::new();
    assert!(h.send("/help").is_empty());
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Info { title, lines }] => {
            assert!(title.contains("Commands"), "{title}");
            assert!(lines.iter().any(|l| l.starts_with("/compact")));
            assert!(lines.iter().any(|l| l.contains("Shift+Tab")));
        }
        other => panic!("expected one info cell, got {other:?}"),
    }
}

#[test]
fn a_double_slash_is_sent_as_text() {
    let mut h = Harness::new();
    assert_eq!(
        h.send("//not a command"),
        vec![Action::Submit("//not a command".into())]
    );
}

#[test]
fn commands_that_need_an_idle_session_refuse_during_a_run() {
    let mut h = Harness::new();
    running(&mut h);
    assert!(h.send("/new").is_empty());
    assert!(h.send("/compact").is_empty());
    let cells = h.app.drain_inserts();
    assert_eq!(cells.len(), 2);
    assert!(
        cells
            .iter()
            .all(|c| matches!(c, Cell::Error { text } if text.contains("needs the run to end"))),
        "{cells:?}"
    );
}

// --------------------------------------------------------------- approvals

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

fn tool_state(h: &Harness, id: &str) -> Option<ToolState> {
    h.app.live.iter().find_map(|c| match c {
        Cell::Tool { call_id, state, .. } if call_id == id => Some(state.clone()),
        _ => None,
    })
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

// -------------------------------------------------------------- plan mode

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

// --------------------------------------------------------------- streaming

#[test]
fn a_finished_paragraph_goes_to_the_transcript_while_the_rest_streams() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(text("First paragraph.\n\nSecond"));
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Assistant { text, continued }] => {
            assert_eq!(text.trim(), "First paragraph.");
            assert!(!continued);
        }
        other => panic!("expected the first paragraph, got {other:?}"),
    }
    assert_eq!(h.app.stream_text, "Second");

    h.event(text(" paragraph."));
    h.event(stopped(StopReason::Completed, ""));
    let cells = h.app.drain_inserts();
    assert_eq!(
        cells,
        vec![Cell::Assistant {
            text: "Second paragraph.".into(),
            continued: true
        }]
    );
}

fn retry(discarded: bool) -> Event {
    Event::Retry {
        attempt: 1,
        max_retries: 4,
        delay_ms: 1000,
        error: "the stream ended before the answer was complete".into(),
        discarded,
    }
}

#[test]
fn a_broken_off_answer_is_taken_off_the_screen_when_the_engine_retries() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(Event::TurnStarted { turn: 1 });
    h.event(Event::ReasoningDelta {
        text: "thinking".into(),
    });
    h.event(text("Half a paragraph.\n\nand the start of"));
    h.event(retry(true));
    assert!(h.app.stream_text.is_empty(), "the live text is gone");
    assert!(h.app.stream_reasoning.is_empty());
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Notice { text }] => {
            assert!(
                text.starts_with("the answer broke off and was discarded; retrying"),
                "{text}"
            );
        }
        other => panic!("expected only the notice, got {other:?}"),
    }
    // The second attempt's answer is shown as a fresh answer.
    h.event(text("Whole answer."));
    h.event(stopped(StopReason::Completed, "Whole answer."));
    let cells = h.app.drain_inserts();
    assert!(
        cells.contains(&Cell::Assistant {
            text: "Whole answer.".into(),
            continued: false
        }),
        "{cells:?}"
    );
}

#[test]
fn a_broken_off_answer_already_printed_is_named_by_the_notice() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(Event::TurnStarted { turn: 1 });
    h.event(text("Printed paragraph.\n\nmore"));
    assert_eq!(
        h.app.drain_inserts().len(),
        1,
        "the paragraph went to the scrollback"
    );
    h.event(retry(true));
    match h.app.drain_inserts().as_slice() {
        [Cell::Notice { text }] => {
            assert!(
                text.starts_with("the answer above broke off and was discarded"),
                "{text}"
            )
        }
        other => panic!("expected the notice, got {other:?}"),
    }
    assert!(h.app.stream_text.is_empty());
}

#[test]
fn a_retry_before_any_output_keeps_the_transcript_and_says_it_retries() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(Event::TurnStarted { turn: 2 });
    h.event(retry(false));
    match h.app.drain_inserts().as_slice() {
        [Cell::Notice { text }] => assert!(text.starts_with("retrying in 1.0 s"), "{text}"),
        other => panic!("expected the notice, got {other:?}"),
    }
}

#[test]
fn a_code_fence_with_a_blank_line_inside_is_not_split() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(text("```python\nx = 1\n\ny = 2\n"));
    assert!(h.app.drain_inserts().is_empty(), "the fence is still open");
    assert_eq!(h.app.stream_text, "```python\nx = 1\n\ny = 2\n");

    h.event(text("```\n\nThat is all."));
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Assistant { text, .. }] => {
            assert_eq!(text, "```python\nx = 1\n\ny = 2\n```\n\n");
        }
        other => panic!("expected the whole code block, got {other:?}"),
    }
    assert_eq!(h.app.stream_text, "That is all.");
}

#[test]
fn reasoning_is_folded_into_one_cell_when_the_answer_starts() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(rein_core::Event::ReasoningDelta {
        text: "The divisor is off by one.\nCheck len.".into(),
    });
    assert!(h.app.drain_inserts().is_empty());
    h.event(text("The mean is wrong."));
    let cells = h.app.drain_inserts();
    assert!(
        matches!(
            cells.as_slice(),
            [Cell::Reasoning {
                expanded: false,
                ..
            }]
        ),
        "{cells:?}"
    );
    assert!(h.app.stream_reasoning.is_empty());
    // Ctrl+O shows it in full.
    h.ctrl('o');
    assert!(matches!(
        h.app.drain_inserts().as_slice(),
        [Cell::Reasoning { expanded: true, .. }]
    ));
}

// ----------------------------------------------------------------- tools

#[test]
fn a_tool_runs_live_then_moves_to_the_transcript_with_its_full_output() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(tool_started("t1", "bash", r#"{"command":"pytest -q"}"#));
    assert_eq!(tool_state(&h, "t1"), Some(ToolState::Running));
    assert!(h.app.animating());

    h.event(tool_finished("t1", "bash", false, "3 passed…"));
    assert!(
        h.app.drain_inserts().is_empty(),
        "stays live until the result is committed"
    );
    h.event(tool_committed(
        "t1",
        "bash",
        false,
        "...\n3 passed in 0.02s\n[exit code: 0]",
    ));
    assert!(h.app.live.is_empty());
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Tool { name, state, .. }] => {
            assert_eq!(name, "bash");
            assert_eq!(
                *state,
                ToolState::Done {
                    duration_ms: 1250,
                    is_error: false,
                    output: "...\n3 passed in 0.02s\n[exit code: 0]".into()
                }
            );
        }
        other => panic!("expected the tool cell, got {other:?}"),
    }
}

#[test]
fn a_tool_still_running_when_the_run_stops_is_retired() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(tool_started("t1", "bash", r#"{"command":"sleep 100"}"#));
    h.event(stopped(StopReason::Cancelled, ""));
    assert!(h.app.live.is_empty());
    assert!(!h.app.animating());
    let cells = h.app.drain_inserts();
    assert!(
        cells.iter().any(|c| matches!(
            c,
            Cell::Tool { state: ToolState::Denied { why }, .. } if why.contains("stopped")
        )),
        "{cells:?}"
    );
}

#[test]
fn a_tool_the_gate_refuses_is_retired_as_refused() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(tool_started("t1", "bash", r#"{"command":"rm -rf /"}"#));
    h.event(rein_core::Event::PermissionDenied {
        call_id: "t1".into(),
        tool: "bash".into(),
        summary: "rm -rf /".into(),
        why: "a deny rule forbids it".into(),
        needed_approval: false,
        suggested_rules: vec![],
        suggested_mode: None,
    });
    assert!(h.app.live.is_empty());
    assert!(matches!(
        h.app.drain_inserts().as_slice(),
        [Cell::Tool {
            state: ToolState::Denied { .. },
            ..
        }]
    ));
}

#[test]
fn a_text_delta_after_a_tool_started_keeps_the_earlier_text_before_it() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(text("Let me run the tests."));
    h.event(tool_started("t1", "bash", r#"{"command":"pytest"}"#));
    let cells = h.app.drain_inserts();
    assert!(
        matches!(cells.as_slice(), [Cell::Assistant { text, .. }] if text == "Let me run the tests."),
        "{cells:?}"
    );
    assert!(h.app.stream_text.is_empty());
}

// ----------------------------------------------------------------- pastes

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

// ----------------------------------------------------------------- history

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

// ---------------------------------------------------------- resume picker

fn three_sessions() -> Vec<SessionInfo> {
    vec![
        session("0198aaaa0001", "Fix the mean in calc.py", 3_000_000, 12),
        session("0198bbbb0002", "Add a median function", 2_000_000, 30),
        session("0198cccc0003", "Write the README", 1_000_000, 4),
    ]
}

#[test]
fn the_resume_picker_filters_by_title_and_enter_resumes() {
    let mut h = Harness::new();
    h.app.open_resume(three_sessions());
    assert!(matches!(h.app.modal, Some(Modal::Resume { .. })));
    assert!(h.type_str("medn").is_empty());
    match &h.app.modal {
        Some(Modal::Resume {
            sessions, filter, ..
        }) => {
            assert_eq!(filter, "medn");
            let shown = rein_tui::app::App::resume_matches(sessions, filter);
            assert_eq!(shown, vec![1], "only the median session matches");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.press(KeyCode::Enter),
        vec![Action::Resume("0198bbbb0002".into())]
    );
    assert!(h.app.modal.is_none());
}

#[test]
fn the_resume_picker_moves_with_the_arrows() {
    let mut h = Harness::new();
    h.app.open_resume(three_sessions());
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    assert_eq!(
        h.press(KeyCode::Enter),
        vec![Action::Resume("0198cccc0003".into())]
    );
}

#[test]
fn esc_closes_the_resume_picker() {
    let mut h = Harness::new();
    h.app.open_resume(three_sessions());
    assert!(h.press(KeyCode::Esc).is_empty());
    assert!(h.app.modal.is_none());
    h.type_str("hi");
    assert_eq!(h.input(), "hi", "keys go to the input again");
}

#[test]
fn resume_with_no_sessions_says_so() {
    let mut h = Harness::new();
    h.app.open_resume(Vec::new());
    assert!(h.app.modal.is_none());
    assert!(matches!(
        h.app.drain_inserts().as_slice(),
        [Cell::Notice { .. }]
    ));
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

#[test]
fn a_message_typed_during_a_compaction_is_sent_when_it_ends() {
    let mut h = Harness::new();
    h.event(run_started(PermissionMode::Default));
    h.event(stopped(StopReason::Completed, "done"));
    assert_eq!(h.send("/compact"), vec![Action::Compact]);
    // Busy while the summary is written.
    assert!(h.app.running());
    assert_eq!(h.send("next task"), vec![Action::Queue("next task".into())]);
    assert_eq!(h.app.busy_done(), vec![Action::Submit("next task".into())]);
    assert!(h.app.queued.is_empty());
}

/// `/mcp` asks the runtime for the servers' status, idle or running.
#[test]
fn slash_mcp_asks_for_the_servers_status() {
    let mut h = Harness::new();
    assert_eq!(h.send("/mcp"), vec![Action::ShowMcp]);
    running(&mut h);
    assert_eq!(h.send("/mcp"), vec![Action::ShowMcp]);
}

/// `/mcp__server__prompt args` asks for a server's prompt; the prompt's
/// text is then sent as a message, never read as a command (a hostile
/// server's prompt saying `/mode bypass` changes nothing).
#[test]
fn a_server_prompt_command_is_asked_for_and_its_text_sent_as_a_message() {
    let mut h = Harness::new();
    assert_eq!(
        h.send("/mcp__py__review src/x.py focus=speed"),
        vec![Action::McpPrompt {
            command: "/mcp__py__review".into(),
            args: "src/x.py focus=speed".into()
        }]
    );
    let mode = h.app.status.mode;
    assert_eq!(
        h.app.send_message("/mode bypass".into()),
        vec![Action::Submit("/mode bypass".into())]
    );
    assert_eq!(h.app.status.mode, mode);
}
