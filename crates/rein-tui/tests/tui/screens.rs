//! What the screen shows: the app drawn on a test terminal, cells rendered
//! to lines, the status line's colours. Layout snapshots use the plain
//! theme, so they hold text only.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use ratatui::style::Color;
use rein_core::{Event, PermissionMode, Risk, SessionInfo, StopReason};
use rein_tui::app::{App, Status};
use rein_tui::cells::{Cell, ToolState};
use rein_tui::render::{self, live_lines, session_row, status_line, transcript_lines};
use rein_tui::theme::{ColorLevel, Theme};

use crate::support::*;

fn status() -> Status {
    Status {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        context_window: Some(200_000),
        ..Status::default()
    }
}

fn harness() -> Harness {
    Harness::with_status(status())
}

fn line_text(line: &ratatui::text::Line) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

// --------------------------------------------------------------- the app

#[test]
fn idle_app_at_80x24_shows_the_input_placeholder_and_the_status_line() {
    let h = harness();
    let text = screen(&h.app, 80, 24);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 24);
    assert_eq!(
        rows[23], "claude-sonnet-4-5 · default · $0.0000",
        "the status line is the last row"
    );
    assert!(rows[22].contains("ask rein to do something"));
    assert_snapshot!(text);
}

#[test]
fn idle_app_at_200x50() {
    let h = harness();
    let text = screen(&h.app, 200, 50);
    assert!(text.lines().nth(47).unwrap().chars().all(|c| c == '─'));
    assert_snapshot!(text);
}

#[test]
fn idle_app_asks_for_a_small_viewport() {
    let h = harness();
    // The rule, the input and the status line: nothing else to show.
    assert_eq!(render::desired_height(&h.app, 80, 24), 3);
    assert_snapshot!(viewport(&h.app, 80, 24));
}

#[test]
fn a_running_tool_and_streaming_text_in_the_live_area() {
    let mut h = harness();
    h.send("fix the mean in calc.py");
    h.event(run_started(PermissionMode::Default));
    h.event(Event::TokenUpdate {
        estimated: 12_300,
        actual: None,
        window: None,
    });
    h.event(tool_started(
        "t1",
        "bash",
        r#"{"command":"pytest -q tests/"}"#,
    ));
    h.event(text(
        "While the tests run, the cause:\n- `mean` divides by **len - 1**\n- the fix is one line",
    ));
    h.send("also check median");
    h.app.drain_inserts();
    let text = viewport(&h.app, 80, 24);
    assert!(text.contains("⠋ bash pytest -q tests/"), "{text}");
    assert!(text.contains("⠋ working"), "{text}");
    assert_snapshot!(text);
}

/// While a local model reads the prompt or writes, the status line says
/// how far it has got (instead of a bare spinner); a tool starting ends it.
#[test]
fn a_local_models_progress_shows_in_the_status_line_until_a_tool_starts() {
    let mut h = harness();
    h.send("fix the mean in calc.py");
    h.event(run_started(PermissionMode::Default));
    h.event(Event::ModelProgress {
        progress: rein_core::ModelProgress::Prompt {
            done: 512,
            total: 1203,
            elapsed_ms: 4200,
        },
    });
    let text = viewport(&h.app, 100, 24);
    assert!(
        text.contains("⠋ reading the prompt 512/1203 tokens · Esc to interrupt"),
        "{text}"
    );
    h.event(Event::ModelProgress {
        progress: rein_core::ModelProgress::Generating {
            tokens: 45,
            elapsed_ms: 9000,
            generating_ms: 5000,
        },
    });
    let text = viewport(&h.app, 100, 24);
    assert!(text.contains("⠋ writing 45 tokens, 9.0 tok/s"), "{text}");
    h.event(tool_started("t1", "read_file", r#"{"path":"calc.py"}"#));
    let text = viewport(&h.app, 100, 24);
    assert!(!text.contains("writing 45"), "{text}");
    assert!(text.contains("⠋ working · Esc to interrupt"), "{text}");
}

#[test]
fn the_completion_popup_sits_above_the_input() {
    let mut h = harness();
    h.type_str("/");
    h.press(KeyCode::Tab);
    h.press(KeyCode::Down);
    assert_snapshot!(viewport(&h.app, 60, 24));
}

// ---------------------------------------------------------------- cells

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

// --------------------------------------------------------------- modals

#[test]
fn the_approval_modal_for_a_high_risk_command_at_80x24() {
    let mut h = harness();
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
    let mut h = harness();
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
    let mut h = harness();
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
    let mut h = harness();
    h.send("/mode plan");
    h.send("plan the refactor");
    h.event(run_started(PermissionMode::Plan));
    h.event(stopped(StopReason::Completed, "1. do x"));
    assert_snapshot!(viewport(&h.app, 80, 24));
}

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;

/// Three sessions, the newest first, updated well inside their minute,
/// hour and day so a slow test cannot change their ages.
fn three_sessions(now: i64) -> Vec<SessionInfo> {
    vec![
        session(
            "0198aaaa00010000",
            "Fix the mean in calc.py",
            now - 5 * MIN - 20_000,
            12,
        ),
        session(
            "0198bbbb00020000",
            "Add a median function and its tests, with edge cases for empty input",
            now - 3 * HOUR - 20 * MIN,
            30,
        ),
        session("0198cccc00030000", "", now - 2 * DAY - 5 * HOUR, 4),
    ]
}

#[test]
fn resume_picker_rows() {
    let now = 1_750_000_000_000;
    let rows: Vec<String> = three_sessions(now)
        .iter()
        .map(|s| session_row(s, now, 76).trim_end().to_string())
        .collect();
    for r in &rows {
        assert!(
            unicode_width::UnicodeWidthStr::width(r.as_str()) <= 76,
            "{r}"
        );
    }
    assert_snapshot!(rows.join("\n"));
}

#[test]
fn the_resume_picker_with_three_sessions() {
    let mut h = harness();
    let now = rein_core::time::now_millis();
    h.app.open_resume(three_sessions(now));
    h.press(KeyCode::Down);
    assert_snapshot!(viewport(&h.app, 80, 24));
}

#[test]
fn the_resume_picker_filtered_to_nothing() {
    let mut h = harness();
    let now = rein_core::time::now_millis();
    h.app.open_resume(three_sessions(now));
    h.type_str("zzz");
    let text = viewport(&h.app, 80, 24);
    assert!(text.contains("filter: zzz"), "{text}");
    assert!(text.contains("no session matches"), "{text}");
}

// ----------------------------------------------------------- status line

fn app_with_context(theme: Theme, tokens: u64) -> (Harness, App) {
    let h = harness();
    let mut app = h.restart();
    app.theme = theme;
    app.status = Status {
        session_id: Some("0198c3a1b2c3d4e5".into()),
        context_tokens: Some(tokens),
        totals: rein_core::LedgerTotals {
            calls: 2,
            known_cost_usd: 0.0123,
            cost_usd: Some(0.0123),
            ..Default::default()
        },
        ..status()
    };
    (h, app)
}

#[test]
fn the_context_share_turns_green_yellow_red() {
    let mut text = Vec::new();
    for (tokens, colour) in [
        (60_000, Color::Green),
        (120_000, Color::Yellow),
        (180_000, Color::Red),
    ] {
        let (_h, app) = app_with_context(Theme::with_level(ColorLevel::Ansi16), tokens);
        let line = status_line(&app, 120);
        let ctx = line
            .spans
            .iter()
            .find(|s| s.content.starts_with("ctx "))
            .expect("a ctx span");
        assert_eq!(ctx.style.fg, Some(colour), "{}", ctx.content);
        text.push(line_text(&line));
    }
    assert_snapshot!(text.join("\n"));
}

#[test]
fn the_status_line_without_colour_has_no_colour() {
    let (_h, app) = app_with_context(Theme::plain(), 180_000);
    let line = status_line(&app, 120);
    assert!(line.spans.iter().all(|s| s.style.fg.is_none()));
}

#[test]
fn the_status_line_drops_segments_instead_of_overflowing() {
    let (_h, mut app) = app_with_context(Theme::plain(), 60_000);
    app.status.mode = PermissionMode::AcceptEdits;
    app.status.mode_pending = true;
    let wide = line_text(&status_line(&app, 200));
    assert_eq!(
        wide,
        "claude-sonnet-4-5 · accept-edits (next turn) · ctx 60.0k (30%) · $0.0123 · 0198c3a1b2c3"
    );
    for width in [30u16, 50, 70] {
        let text = line_text(&status_line(&app, width));
        assert!(
            unicode_width::UnicodeWidthStr::width(text.as_str()) <= width as usize,
            "{width}: {text}"
        );
        assert!(
            wide.starts_with(&text),
            "segments drop from the right: {text}"
        );
        assert!(!text.ends_with(" · "));
    }
    assert_eq!(line_text(&status_line(&app, 30)), "claude-sonnet-4-5");
    // Drawn in a narrow terminal, the last row is exactly that.
    let screen = screen(&app, 30, 8);
    assert_eq!(screen.lines().last(), Some("claude-sonnet-4-5"));
}

/// The status line says the cost in the words exec and /cost use:
/// a lower bound when some calls' prices are unknown, "cost unknown" when
/// none is known.
#[test]
fn unknown_cost_is_marked() {
    let (_h, mut app) = app_with_context(Theme::plain(), 1_000);
    assert!(line_text(&status_line(&app, 200)).contains(" · $0.0123 · "));
    app.status.totals.unpriced_calls = 1;
    app.status.totals.cost_usd = None;
    assert!(line_text(&status_line(&app, 200)).contains("≥ $0.0123"));
    app.status.totals.unpriced_calls = 2;
    assert!(line_text(&status_line(&app, 200)).contains("cost unknown"));
}

// ---------------------------------------------------------- small sizes

#[test]
fn a_too_narrow_terminal_shows_a_message() {
    let h = harness();
    let text = screen(&h.app, 20, 4);
    assert!(text.starts_with("terminal too small"), "{text}");
    assert!(text.contains("(20×4)"), "the size is shown: {text}");
    assert_snapshot!(text);
}

#[test]
fn a_too_short_terminal_shows_a_message() {
    let h = harness();
    let text = screen(&h.app, 40, 2);
    assert!(text.starts_with("terminal too small (40×2)"), "{text}");
}

/// The message for a terminal too small is never itself cut off: at any
/// size it is a whole wording that fits (down to a single word).
#[test]
fn the_too_small_message_always_fits_whole() {
    for (w, h) in [
        (23u16, 2u16),
        (20, 4),
        (20, 1),
        (12, 1),
        (8, 2),
        (5, 1),
        (40, 2),
        (1, 1),
    ] {
        let msg = rein_tui::render::too_small_message(w, h);
        assert!(!msg.is_empty(), "{w}×{h}");
        let h_ = harness();
        let text = screen(&h_.app, w, h);
        let shown: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(shown, msg, "{w}×{h}: the screen shows {text:?}");
    }
}

#[test]
fn drawing_at_tiny_sizes_does_not_panic() {
    let mut h = harness();
    h.send("go");
    h.event(run_started(PermissionMode::Default));
    h.event(tool_started("t1", "bash", r#"{"command":"ls"}"#));
    h.event(text("# Title\n- a\n```rust\nfn main() {"));
    h.send("queued");
    for (w, ht) in [
        (1, 1),
        (1, 10),
        (10, 1),
        (2, 2),
        (23, 3),
        (24, 2),
        (24, 3),
        (24, 6),
        (25, 7),
    ] {
        let text = screen(&h.app, w, ht);
        assert!(!text.trim().is_empty(), "{w}×{ht} draws something");
        let _ = live_lines(&h.app, w);
        let _ = render::desired_height(&h.app, w, ht);
    }
}

// ------------------------------------------------------------- markdown

#[test]
fn streaming_markdown_with_an_unterminated_code_fence() {
    let mut h = harness();
    h.send("how do I call it?");
    h.event(run_started(PermissionMode::Default));
    h.event(text(
        "## Usage\nCall it with a list:\n1. import `mean`\n2. pass **numbers**\n```python\nfrom calc import mean\nprint(mean([2, 4]))",
    ));
    assert!(
        h.app
            .drain_inserts()
            .iter()
            .all(|c| matches!(c, Cell::User { .. })),
        "nothing of the answer is final yet"
    );
    let live = lines_text(&live_lines(&h.app, 60));
    assert!(live.contains("print(mean([2, 4]))"), "{live}");
    assert!(
        !live.contains("```"),
        "the open fence is drawn as code: {live}"
    );
    assert_snapshot!(live);
}

#[test]
fn the_rest_of_a_partly_flushed_answer_streams_without_a_new_bullet() {
    let mut h = harness();
    h.send("explain");
    h.event(run_started(PermissionMode::Default));
    h.event(text("First paragraph.\n\nSecond"));
    let flushed = h.app.drain_inserts();
    let live = lines_text(&live_lines(&h.app, 60));
    // The live text continues the answer whose start is in the scrollback,
    // and must look as it will once it is final.
    assert_eq!(live, "  Second");
    h.event(stopped(StopReason::Completed, ""));
    let done = h.app.drain_inserts();
    let scrollback = lines_text(&transcript_lines(
        &[flushed, done].concat(),
        60,
        &Theme::plain(),
    ));
    assert!(scrollback.ends_with(&live), "{scrollback}");
}

// ------------------------------------------------------------ hostile text

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
