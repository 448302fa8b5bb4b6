//! The resume picker: filtering, moving, resuming, closing.

use crossterm::event::KeyCode;
use rein_core::SessionInfo;
use rein_tui::app::{Action, Modal};
use rein_tui::cells::Cell;

use crate::support::*;

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
