//! Text that would take over or flood the terminal: control sequences in
//! any text never reach it, a huge answer shows only its tail live.

use rein_core::{Event, PermissionMode, Risk};
use rein_tui::cells::{Cell, ToolState};
use rein_tui::render::{live_lines, session_row};
use rein_tui::theme::{ColorLevel, Theme};

use crate::support::*;

/// Text a file, a command or a model could carry to take over the terminal:
/// clear screen, cursor moves, a title change, a hyperlink, a bell, a
/// carriage return that would overwrite the line, a backspace.
const HOSTILE: &str = "ok \x1b[2J\x1b[H\x1b]0;pwned\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \r\x08\x07 \u{9b}31m done";

fn assert_no_control(lines: &[ratatui::text::Line], what: &str) {
    for l in lines {
        for s in &l.spans {
            assert!(
                !s.content.chars().any(|c| c.is_control()),
                "{what}: a control character reached the screen: {:?}",
                s.content
            );
            // Whole sequences go, not just their escape byte.
            for remnant in ["[2J", "pwned", "]8;;", "31m"] {
                assert!(
                    !s.content.contains(remnant),
                    "{what}: the rest of an escape sequence shows: {:?}",
                    s.content
                );
            }
        }
    }
}

#[test]
fn control_sequences_in_any_text_never_reach_the_terminal() {
    let theme = Theme::with_level(rein_tui::theme::ColorLevel::TrueColor);
    let cells = vec![
        Cell::User {
            text: HOSTILE.into(),
        },
        Cell::Assistant {
            text: format!(
                "# {HOSTILE}\n\n- {HOSTILE}\n\n```sh\n{HOSTILE}\n```\n\n> {HOSTILE}\n\n| a | b |\n|---|---|\n| {HOSTILE} | x |"
            ),
            continued: false,
        },
        Cell::Reasoning {
            text: HOSTILE.into(),
            expanded: false,
        },
        Cell::Reasoning {
            text: HOSTILE.into(),
            expanded: true,
        },
        Cell::Tool {
            call_id: "c1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": HOSTILE}).to_string(),
            state: ToolState::Done {
                duration_ms: 5,
                is_error: false,
                output: format!("{HOSTILE}\n{HOSTILE}\n[exit code: 0]"),
            },
        },
        Cell::Tool {
            call_id: "c2".into(),
            name: "edit_file".into(),
            arguments: "{}".into(),
            state: ToolState::Done {
                duration_ms: 5,
                is_error: false,
                output: format!(
                    "Edited.\n--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-{HOSTILE}\n+{HOSTILE}\n"
                ),
            },
        },
        Cell::Tool {
            call_id: "c3".into(),
            name: "bash".into(),
            arguments: "{}".into(),
            state: ToolState::Denied {
                why: HOSTILE.into(),
            },
        },
        Cell::Error {
            text: HOSTILE.into(),
        },
        Cell::Notice {
            text: HOSTILE.into(),
        },
        Cell::Info {
            title: HOSTILE.into(),
            lines: vec![HOSTILE.into()],
        },
    ];
    for width in [20u16, 80] {
        for cell in &cells {
            assert_no_control(&cell.lines(width, &theme, 0), &format!("{cell:?}"));
        }
    }
}

#[test]
fn control_sequences_in_an_approval_or_a_session_title_never_reach_the_terminal() {
    let mut h = Harness::new();
    h.app.theme = Theme::with_level(ColorLevel::TrueColor);
    h.event(run_started(PermissionMode::Default));
    let (event, _rx) = approval("c1", "bash", HOSTILE, Risk::High, HOSTILE);
    h.event(event);
    let buf = draw(&h.app, 80, 24);
    let text = buffer_text(&buf);
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(!text.contains("pwned") && !text.contains("[2J"), "{text}");
    let row = session_row(&session("0198aaaa0001", HOSTILE, 0, 1), 0, 80);
    assert!(!row.chars().any(|c| c.is_control()), "{row:?}");
    assert!(!row.contains("pwned"), "{row}");
}

#[test]
fn a_huge_answer_without_paragraph_breaks_shows_only_its_tail_live() {
    let mut h = Harness::new();
    h.event(run_started(PermissionMode::Default));
    let mut text = String::from("```\n");
    for i in 0..20_000 {
        text.push_str(&format!("line {i}\n"));
    }
    h.event(Event::TextDelta { text });
    // Still streaming inside one code block: nothing was flushed.
    assert!(h.app.stream_text.len() > 100_000);
    let lines = live_lines(&h.app, 80);
    assert!(lines.len() < 2_000, "{} lines rendered live", lines.len());
    let last = rein_tui::markdown::plain_text(&lines[lines.len() - 1..]);
    assert!(last.contains("line 19999"), "{last}");
    // Still drawn as code (indented under the answer), not as a paragraph.
    assert!(last.starts_with("    line 19999"), "{last:?}");
}
