//! Sending a message: Enter submits when idle and queues during a run
//! (or a compaction); queued messages go out when the run lets them.

use crossterm::event::KeyCode;
use rein_core::{PermissionMode, StopReason};
use rein_tui::app::Action;
use rein_tui::cells::Cell;

use crate::support::*;

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

/// What the model gets for `use $greeter`: the typed text, then the skill.
const WITH_SKILL: &str = "use $greeter now\n\n[skill `greeter`, attached by the user]\n\
    Skill `greeter` (folder: /s/greeter)\n\nGreet warmly.\nSay the name twice.";

#[test]
fn an_attached_skill_shows_as_one_line_in_the_users_cell() {
    let mut h = Harness::new();
    h.event(user_committed(WITH_SKILL));
    let cells = h.app.drain_inserts();
    assert_eq!(
        cells,
        vec![Cell::User {
            text: "use $greeter now\n⚙ skill greeter attached".into()
        }]
    );
}

#[test]
fn a_resumed_session_shows_an_attached_skill_as_one_line() {
    let mut h = Harness::new();
    h.app.replay(&[rein_core::Message::user(WITH_SKILL)]);
    let cells = h.app.drain_inserts();
    assert_eq!(
        cells,
        vec![Cell::User {
            text: "use $greeter now\n⚙ skill greeter attached".into()
        }]
    );
}

#[test]
fn a_queued_message_with_a_skill_attached_is_no_longer_queued_once_sent() {
    let mut h = Harness::new();
    running(&mut h);
    h.send("use $greeter now");
    h.event(user_committed(WITH_SKILL));
    assert!(h.app.queued.is_empty(), "{:?}", h.app.queued);
}
