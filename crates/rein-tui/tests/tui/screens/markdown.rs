//! Streaming markdown: an open code fence, the tail of a partly flushed
//! answer.

use insta::assert_snapshot;
use rein_core::{PermissionMode, StopReason};
use rein_tui::cells::Cell;
use rein_tui::render::{live_lines, transcript_lines};
use rein_tui::theme::Theme;

use crate::support::*;

#[test]
fn streaming_markdown_with_an_unterminated_code_fence() {
    let mut h = sonnet_harness();
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
    let mut h = sonnet_harness();
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
