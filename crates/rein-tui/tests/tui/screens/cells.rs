//! Transcript cells rendered to lines: tool calls in each state, long
//! outputs, edits with their diff, a conversation.

use insta::assert_snapshot;
use rein_tui::cells::{Cell, ToolState};
use rein_tui::render::transcript_lines;
use rein_tui::theme::Theme;

use crate::support::*;

#[test]
fn a_tool_cell_in_each_state() {
    let bash = |state| Cell::Tool {
        call_id: "t1".into(),
        name: "bash".into(),
        arguments: r#"{"command":"pytest -q"}"#.into(),
        state,
    };
    let states = [
        ("running", ToolState::Running),
        ("waiting for approval", ToolState::Waiting),
        (
            "done ok",
            ToolState::Done {
                duration_ms: 2_400,
                is_error: false,
                output: "...\n3 passed in 0.02s\n[exit code: 0]".into(),
            },
        ),
        (
            "done error",
            ToolState::Done {
                duration_ms: 310,
                is_error: true,
                output:
                    "F..\nFAILED tests/test_calc.py::test_mean\nassert 3.0 == 2.0\n[exit code: 1]"
                        .into(),
            },
        ),
        (
            "refused",
            ToolState::Denied {
                why: "denied by you".into(),
            },
        ),
    ];
    let mut out = String::new();
    for (label, state) in states {
        out.push_str(&format!("[{label}]\n{}\n\n", cell_text(&bash(state), 60)));
    }
    assert!(out.contains("✗ bash pytest -q · 310 ms · exit 1"), "{out}");
    assert!(
        !out.contains("[exit code"),
        "the exit line is in the header"
    );
    assert_snapshot!(out);
}

#[test]
fn a_long_tool_output_shows_five_lines_and_a_count() {
    let output: String = (1..=12).map(|i| format!("match {i}\n")).collect();
    let cell = Cell::Tool {
        call_id: "t1".into(),
        name: "grep".into(),
        arguments: r#"{"pattern":"mean","path":"src"}"#.into(),
        state: ToolState::Done {
            duration_ms: 40,
            is_error: false,
            output,
        },
    };
    assert_snapshot!(cell_text(&cell, 60));
}

#[test]
fn a_finished_edit_shows_its_diff() {
    let cell = Cell::Tool {
        call_id: "e1".into(),
        name: "edit_file".into(),
        arguments: r#"{"path":"calc.py","old_string":"    return sum(v) / (len(v) - 1)","new_string":"    return sum(v) / len(v)"}"#.into(),
        state: ToolState::Done {
            duration_ms: 12,
            is_error: false,
            output: "Edited `calc.py`: 1 replacement.\n--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def mean(v):\n-    return sum(v) / (len(v) - 1)\n+    return sum(v) / len(v)\n".into(),
        },
    };
    let text = cell_text(&cell, 80);
    assert!(text.contains("└ +1 -1"), "{text}");
    assert_snapshot!(text);
}

#[test]
fn a_conversation_in_the_scrollback() {
    let cells = vec![
        Cell::User {
            text: "why is mean([2, 4]) 6?".into(),
        },
        Cell::Assistant {
            text: "It divides by `len(v) - 1`.\n\n".into(),
            continued: false,
        },
        Cell::Assistant {
            text: "I will fix **calc.py**.".into(),
            continued: true,
        },
        Cell::Tool {
            call_id: "r1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"calc.py"}"#.into(),
            state: ToolState::Done {
                duration_ms: 3,
                is_error: false,
                output: "def mean(v):\n    return sum(v) / (len(v) - 1)\n".into(),
            },
        },
        Cell::Notice {
            text: "cancelled; what was produced is kept".into(),
        },
        Cell::Error {
            text: "unknown command /comapct: did you mean /compact? (/help lists them)".into(),
        },
    ];
    assert_snapshot!(lines_text(&transcript_lines(&cells, 60, &Theme::plain())));
}
