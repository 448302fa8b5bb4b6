//! Tool calls: live while they run, retired to the transcript when they
//! finish, are refused or the run stops.

use rein_core::StopReason;
use rein_tui::cells::{Cell, ToolState};

use crate::support::*;

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
