//! The resume picker: its rows with their ages, the list, an empty filter.

use crossterm::event::KeyCode;
use insta::assert_snapshot;
use rein_core::SessionInfo;
use rein_tui::render::session_row;

use crate::support::*;

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
    let mut h = sonnet_harness();
    let now = rein_core::time::now_millis();
    h.app.open_resume(three_sessions(now));
    h.press(KeyCode::Down);
    assert_snapshot!(viewport(&h.app, 80, 24));
}

#[test]
fn the_resume_picker_filtered_to_nothing() {
    let mut h = sonnet_harness();
    let now = rein_core::time::now_millis();
    h.app.open_resume(three_sessions(now));
    h.type_str("zzz");
    let text = viewport(&h.app, 80, 24);
    assert!(text.contains("filter: zzz"), "{text}");
    assert!(text.contains("no session matches"), "{text}");
}
