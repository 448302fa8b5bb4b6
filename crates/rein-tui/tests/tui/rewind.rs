//! The rewind picker of the app: Esc Esc on an empty idle input (or
//! `/rewind`) asks for the session's checkpoints; the picker lists them
//! newest first with a diff preview, Tab chooses what goes back, Enter
//! asks for the rewind, `f` forces it when files changed outside rein,
//! Esc closes.

use std::path::PathBuf;

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rein_core::{PermissionMode, StopReason};
use rein_tui::app::{Action, Modal, RewindPicker, Status};
use rein_tui::cells::Cell;
use rein_tui::{CheckpointRow, RewindFailure, RewindMode, RewindOutcome, RewindRequest};

use crate::support::*;

const SESSION: &str = "0198c3a1b2c3d4e5";

fn in_session() -> Harness {
    Harness::with_status(Status {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        session_id: Some(SESSION.into()),
        ..Status::default()
    })
}

fn load() -> Vec<Action> {
    vec![Action::LoadCheckpoints {
        session: SESSION.into(),
    }]
}

/// Three checkpoints, oldest first (as the command may send them).
fn rows() -> Vec<CheckpointRow> {
    let at = 1_750_000_000_000;
    vec![
        CheckpointRow {
            k: 0,
            label: "before: add a mean function".into(),
            at,
            changed: 2,
            preview: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n\
                      @@ -1,2 +1,2 @@\n def mean(v):\n-    return sum(v) / len(v)\n\
                      +    return sum(v) / (len(v) - 1)\n\
                      diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n\
                      --- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+todo\n"
                .into(),
        },
        CheckpointRow {
            k: 1,
            label: "before: write the notes\u{1b}[2J".into(),
            at: at + 60_000,
            changed: 1,
            preview: "diff --git a/notes.txt b/notes.txt\n--- /dev/null\n+++ b/notes.txt\n\
                      @@ -0,0 +1 @@\n+todo\n"
                .into(),
        },
        CheckpointRow {
            k: 2,
            label: "before: nothing else".into(),
            at: at + 120_000,
            changed: 0,
            preview: String::new(),
        },
    ]
}

fn open(h: &mut Harness) {
    h.app.open_rewind(SESSION.into(), rows());
    assert!(matches!(h.app.modal, Some(Modal::Rewind(_))));
}

fn picker(h: &Harness) -> &RewindPicker {
    match &h.app.modal {
        Some(Modal::Rewind(p)) => p,
        other => panic!("no rewind picker: {other:?}"),
    }
}

fn request(k: usize, mode: RewindMode, force: bool) -> RewindRequest {
    RewindRequest {
        session: SESSION.into(),
        k,
        mode,
        force,
    }
}

fn notices(h: &mut Harness) -> Vec<String> {
    h.app
        .drain_inserts()
        .into_iter()
        .filter_map(|c| match c {
            Cell::Notice { text } | Cell::Error { text } => Some(text),
            _ => None,
        })
        .collect()
}

// ------------------------------------------------------------ opening it

#[test]
fn esc_esc_on_an_empty_idle_input_asks_for_the_checkpoints() {
    let mut h = in_session();
    assert!(h.press(KeyCode::Esc).is_empty(), "one Esc only arms");
    assert_eq!(
        h.app.hint.as_deref(),
        Some("Esc again to rewind to a checkpoint")
    );
    assert_eq!(h.press(KeyCode::Esc), load());
    assert_eq!(h.app.hint, None);
    assert!(h.press(KeyCode::Esc).is_empty(), "a third press arms again");
}

#[test]
fn esc_esc_with_text_in_the_input_keeps_the_text_and_opens_nothing() {
    let mut h = in_session();
    h.type_str("half typed");
    assert!(h.press(KeyCode::Esc).is_empty());
    assert!(h.press(KeyCode::Esc).is_empty());
    assert_eq!(h.input(), "half typed");
}

#[test]
fn a_key_between_the_two_esc_breaks_the_double_press() {
    let mut h = in_session();
    h.press(KeyCode::Esc);
    h.type_str("a");
    h.press(KeyCode::Backspace);
    assert!(h.press(KeyCode::Esc).is_empty());
    assert_eq!(h.press(KeyCode::Esc), load());
}

#[test]
fn esc_esc_during_a_run_cancels_and_never_opens_the_picker() {
    let mut h = in_session();
    h.send("start");
    h.event(run_started(PermissionMode::Default));
    assert_eq!(h.press(KeyCode::Esc), vec![Action::Cancel]);
    assert_eq!(h.press(KeyCode::Esc), vec![Action::Cancel]);
    h.event(stopped(StopReason::Cancelled, ""));
    // The cancel presses do not count towards a double press.
    assert!(h.press(KeyCode::Esc).is_empty());
}

#[test]
fn an_esc_that_closes_the_completion_popup_does_not_count() {
    let mut h = in_session();
    h.type_str("/");
    h.press(KeyCode::Tab);
    assert!(h.app.popup.is_some());
    assert!(h.press(KeyCode::Esc).is_empty());
    assert!(h.app.popup.is_none());
    h.press(KeyCode::Backspace);
    assert!(h.press(KeyCode::Esc).is_empty());
    assert_eq!(h.press(KeyCode::Esc), load());
}

#[test]
fn esc_esc_with_no_session_says_there_is_nothing_to_rewind() {
    let mut h = Harness::new();
    h.press(KeyCode::Esc);
    assert_eq!(h.app.hint, None, "no hint without a session");
    assert!(h.press(KeyCode::Esc).is_empty());
    assert_eq!(notices(&mut h), vec!["no session yet: nothing to rewind"]);
}

#[test]
fn slash_rewind_asks_for_the_checkpoints_and_waits_for_the_run() {
    let mut h = in_session();
    assert_eq!(h.send("/rewind"), load());
    h.send("start");
    assert!(h.send("/rewind").is_empty());
    let said = notices(&mut h);
    assert!(
        said.iter()
            .any(|t| t.contains("/rewind needs the run to end")),
        "{said:?}"
    );
}

#[test]
fn no_checkpoints_is_a_notice_not_a_picker() {
    let mut h = in_session();
    h.app.open_rewind(SESSION.into(), Vec::new());
    assert!(h.app.modal.is_none());
    assert_eq!(
        notices(&mut h),
        vec!["no checkpoints in this session yet: nothing to rewind"]
    );
}

#[test]
fn checkpoints_of_a_session_the_app_left_meanwhile_open_nothing() {
    let mut h = in_session();
    h.app.open_rewind("0198ffff".into(), rows());
    assert!(h.app.modal.is_none());
}

// ------------------------------------------------------------- the picker

#[test]
fn the_picker_lists_newest_first_and_tab_cycles_what_goes_back() {
    let mut h = in_session();
    open(&mut h);
    let p = picker(&h);
    assert_eq!(p.rows.iter().map(|r| r.k).collect::<Vec<_>>(), [2, 1, 0]);
    assert_eq!(p.mode, RewindMode::Both);
    h.press(KeyCode::Tab);
    assert_eq!(picker(&h).mode, RewindMode::Code);
    h.press(KeyCode::Tab);
    assert_eq!(picker(&h).mode, RewindMode::Conversation);
    h.press(KeyCode::Tab);
    assert_eq!(picker(&h).mode, RewindMode::Both);
}

#[test]
fn enter_asks_for_the_selected_checkpoint_in_the_chosen_mode() {
    let mut h = in_session();
    open(&mut h);
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    h.press(KeyCode::Up);
    h.press(KeyCode::Down);
    h.press(KeyCode::Tab);
    assert_eq!(
        h.press(KeyCode::Enter),
        vec![Action::Rewind(request(0, RewindMode::Code, false))]
    );
    assert!(picker(&h).busy);
    assert!(h.press(KeyCode::Enter).is_empty(), "one request at a time");
}

#[test]
fn esc_closes_the_picker() {
    let mut h = in_session();
    open(&mut h);
    assert!(h.press(KeyCode::Esc).is_empty());
    assert!(h.app.modal.is_none());
    open(&mut h);
    assert!(h.ctrl('c').is_empty());
    assert!(h.app.modal.is_none());
}

#[test]
fn files_changed_outside_rein_are_named_and_f_rewinds_anyway() {
    let mut h = in_session();
    open(&mut h);
    assert!(
        h.press(KeyCode::Char('f')).is_empty(),
        "f only after a refusal"
    );
    let asked = request(2, RewindMode::Both, false);
    assert_eq!(h.press(KeyCode::Enter), vec![Action::Rewind(asked.clone())]);
    h.app.rewind_done(
        &asked,
        Err(RewindFailure::ChangedOutside(vec!["calc.py".into()])),
    );
    let p = picker(&h);
    assert!(!p.busy);
    let refused = p.refused.clone().unwrap_or_default();
    assert!(refused.contains("calc.py"), "{refused}");
    let screen = viewport(&h.app, 100, 40);
    assert!(
        screen.contains("changed outside rein since its last checkpoint: calc.py"),
        "{screen}"
    );
    assert!(screen.contains("[f] rewind anyway"), "{screen}");
    assert_eq!(
        h.press(KeyCode::Char('f')),
        vec![Action::Rewind(request(2, RewindMode::Both, true))]
    );
}

#[test]
fn a_rewind_done_closes_the_picker_and_says_what_changed() {
    let mut h = in_session();
    open(&mut h);
    let asked = request(2, RewindMode::Both, false);
    h.press(KeyCode::Enter);
    h.app.rewind_done(
        &asked,
        Ok(RewindOutcome {
            written: vec![PathBuf::from("calc.py")],
            deleted: vec![PathBuf::from("notes\u{1b}]0;x\u{7}.txt")],
            left_alone: Vec::new(),
            forked: Some("0198dddd0004".into()),
        }),
    );
    assert!(h.app.modal.is_none());
    let said = notices(&mut h);
    assert_eq!(said.len(), 1, "{said:?}");
    let text = &said[0];
    assert!(
        text.contains("files restored to checkpoint 2: 1 written (calc.py), 1 deleted (notes"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "file names are made safe: {text:?}"
    );
    assert!(
        text.contains("continues from checkpoint 2 in session 0198dddd0004"),
        "{text}"
    );
}

#[test]
fn a_failed_rewind_closes_the_picker_with_the_error() {
    let mut h = in_session();
    open(&mut h);
    let asked = request(2, RewindMode::Conversation, false);
    h.app.rewind_done(
        &asked,
        Err(RewindFailure::Other(anyhow::anyhow!("the store is busy"))),
    );
    assert!(h.app.modal.is_none());
    assert_eq!(notices(&mut h), vec!["rewind: the store is busy"]);
}

// ---------------------------------------------------------------- screens

#[test]
fn the_rewind_picker_with_a_diff_preview() {
    let mut h = in_session();
    h.app.drain_inserts();
    open(&mut h);
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    let screen = viewport(&h.app, 80, 30);
    assert!(!screen.contains('\u{1b}'));
    assert_snapshot!(screen);
}

#[test]
fn the_rewind_picker_fits_a_small_terminal() {
    let mut h = in_session();
    open(&mut h);
    h.press(KeyCode::Down);
    h.press(KeyCode::Down);
    let screen = viewport(&h.app, 40, 12);
    assert!(screen.contains("goes back:"), "{screen}");
    assert!(screen.contains("before: add"), "{screen}");
    assert!(screen.contains("(2 files)"), "{screen}");
}
