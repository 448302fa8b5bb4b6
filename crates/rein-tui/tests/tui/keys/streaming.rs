//! Streamed answers: finished paragraphs go to the transcript, a retry
//! takes a broken-off answer back, reasoning folds into one cell.

use rein_core::{Event, StopReason};
use rein_tui::cells::Cell;

use crate::support::*;

#[test]
fn a_finished_paragraph_goes_to_the_transcript_while_the_rest_streams() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(text("First paragraph.\n\nSecond"));
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Assistant { text, continued }] => {
            assert_eq!(text.trim(), "First paragraph.");
            assert!(!continued);
        }
        other => panic!("expected the first paragraph, got {other:?}"),
    }
    assert_eq!(h.app.stream_text, "Second");

    h.event(text(" paragraph."));
    h.event(stopped(StopReason::Completed, ""));
    let cells = h.app.drain_inserts();
    assert_eq!(
        cells,
        vec![Cell::Assistant {
            text: "Second paragraph.".into(),
            continued: true
        }]
    );
}

fn retry(discarded: bool) -> Event {
    Event::Retry {
        attempt: 1,
        max_retries: 4,
        delay_ms: 1000,
        error: "the stream ended before the answer was complete".into(),
        discarded,
    }
}

#[test]
fn a_broken_off_answer_is_taken_off_the_screen_when_the_engine_retries() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(Event::TurnStarted { turn: 1 });
    h.event(Event::ReasoningDelta {
        text: "thinking".into(),
    });
    h.event(text("Half a paragraph.\n\nand the start of"));
    h.event(retry(true));
    assert!(h.app.stream_text.is_empty(), "the live text is gone");
    assert!(h.app.stream_reasoning.is_empty());
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Notice { text }] => {
            assert!(
                text.starts_with("the answer broke off and was discarded; retrying"),
                "{text}"
            );
        }
        other => panic!("expected only the notice, got {other:?}"),
    }
    // The second attempt's answer is shown as a fresh answer.
    h.event(text("Whole answer."));
    h.event(stopped(StopReason::Completed, "Whole answer."));
    let cells = h.app.drain_inserts();
    assert!(
        cells.contains(&Cell::Assistant {
            text: "Whole answer.".into(),
            continued: false
        }),
        "{cells:?}"
    );
}

#[test]
fn a_broken_off_answer_already_printed_is_named_by_the_notice() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(Event::TurnStarted { turn: 1 });
    h.event(text("Printed paragraph.\n\nmore"));
    assert_eq!(
        h.app.drain_inserts().len(),
        1,
        "the paragraph went to the scrollback"
    );
    h.event(retry(true));
    match h.app.drain_inserts().as_slice() {
        [Cell::Notice { text }] => {
            assert!(
                text.starts_with("the answer above broke off and was discarded"),
                "{text}"
            )
        }
        other => panic!("expected the notice, got {other:?}"),
    }
    assert!(h.app.stream_text.is_empty());
}

#[test]
fn a_retry_before_any_output_keeps_the_transcript_and_says_it_retries() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(Event::TurnStarted { turn: 2 });
    h.event(retry(false));
    match h.app.drain_inserts().as_slice() {
        [Cell::Notice { text }] => assert!(text.starts_with("retrying in 1.0 s"), "{text}"),
        other => panic!("expected the notice, got {other:?}"),
    }
}

#[test]
fn a_code_fence_with_a_blank_line_inside_is_not_split() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(text("```python\nx = 1\n\ny = 2\n"));
    assert!(h.app.drain_inserts().is_empty(), "the fence is still open");
    assert_eq!(h.app.stream_text, "```python\nx = 1\n\ny = 2\n");

    h.event(text("```\n\nThat is all."));
    let cells = h.app.drain_inserts();
    match cells.as_slice() {
        [Cell::Assistant { text, .. }] => {
            assert_eq!(text, "```python\nx = 1\n\ny = 2\n```\n\n");
        }
        other => panic!("expected the whole code block, got {other:?}"),
    }
    assert_eq!(h.app.stream_text, "That is all.");
}

#[test]
fn reasoning_is_folded_into_one_cell_when_the_answer_starts() {
    let mut h = Harness::new();
    running(&mut h);
    h.event(rein_core::Event::ReasoningDelta {
        text: "The divisor is off by one.\nCheck len.".into(),
    });
    assert!(h.app.drain_inserts().is_empty());
    h.event(text("The mean is wrong."));
    let cells = h.app.drain_inserts();
    assert!(
        matches!(
            cells.as_slice(),
            [Cell::Reasoning {
                expanded: false,
                ..
            }]
        ),
        "{cells:?}"
    );
    assert!(h.app.stream_reasoning.is_empty());
    // Ctrl+O shows it in full.
    h.ctrl('o');
    assert!(matches!(
        h.app.drain_inserts().as_slice(),
        [Cell::Reasoning { expanded: true, .. }]
    ));
}
