//! Tab completion and its popup: command names, `@` paths and `$` skills.

use crossterm::event::KeyCode;
use rein_tui::app::{Action, PopupKind};

use crate::support::*;

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
    assert_eq!(popup.kind, PopupKind::Command);
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

fn with_skills(h: &mut Harness) {
    h.app.skills = ["greeter", "grep-logs", "pdf"]
        .map(|n| (n.to_string(), format!("{n} things")))
        .to_vec();
}

#[test]
fn tab_completes_a_dollar_skill_name_in_the_middle_of_a_message() {
    let mut h = Harness::new();
    with_skills(&mut h);
    h.type_str("fill it with $pd");
    h.press(KeyCode::Tab);
    assert_eq!(h.input(), "fill it with $pdf ");
    assert!(h.app.popup.is_none());
}

#[test]
fn tab_on_a_dollar_lists_the_skills_and_enter_picks_one() {
    let mut h = Harness::new();
    with_skills(&mut h);
    h.type_str("use $gre");
    h.press(KeyCode::Tab);
    let popup = h.app.popup.clone().expect("popup");
    assert_eq!(popup.kind, PopupKind::Skill);
    assert_eq!(popup.items, ["greeter", "grep-logs"]);
    h.press(KeyCode::Down);
    assert!(h.press(KeyCode::Enter).is_empty(), "Enter picks, not sends");
    assert_eq!(h.input(), "use $grep-logs ");
}

#[test]
fn tab_on_a_dollar_with_no_matching_skill_says_so() {
    let mut h = Harness::new();
    with_skills(&mut h);
    h.type_str("costs $zz");
    h.press(KeyCode::Tab);
    assert_eq!(h.input(), "costs $zz");
    assert_eq!(h.app.hint.as_deref(), Some("no skill matches $zz"));
    let mut h = Harness::new();
    h.type_str("use $gre");
    h.press(KeyCode::Tab);
    assert_eq!(
        h.app.hint.as_deref(),
        Some("no skills here (/skills says where they go)")
    );
}
