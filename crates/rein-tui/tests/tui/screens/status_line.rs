//! The status line: the context share in colour, segments dropped when
//! narrow, the cost in exec's words, a local model's progress.

use insta::assert_snapshot;
use ratatui::style::Color;
use rein_core::{Event, PermissionMode};
use rein_tui::app::{App, Status};
use rein_tui::render::status_line;
use rein_tui::theme::{ColorLevel, Theme};

use crate::support::*;

fn app_with_context(theme: Theme, tokens: u64) -> (Harness, App) {
    let h = sonnet_harness();
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
        ..sonnet_status()
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

/// While a local model reads the prompt or writes, the status line says
/// how far it has got (instead of a bare spinner); a tool starting ends it.
#[test]
fn a_local_models_progress_shows_in_the_status_line_until_a_tool_starts() {
    let mut h = sonnet_harness();
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
