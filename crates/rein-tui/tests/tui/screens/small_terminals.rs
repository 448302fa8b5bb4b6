//! Terminals too small for the app: a message that always fits, and no
//! panic at any size.

use insta::assert_snapshot;
use rein_core::PermissionMode;
use rein_tui::render::{self, live_lines};

use crate::support::*;

#[test]
fn a_too_narrow_terminal_shows_a_message() {
    let h = sonnet_harness();
    let text = screen(&h.app, 20, 4);
    assert!(text.starts_with("terminal too small"), "{text}");
    assert!(text.contains("(20×4)"), "the size is shown: {text}");
    assert_snapshot!(text);
}

#[test]
fn a_too_short_terminal_shows_a_message() {
    let h = sonnet_harness();
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
        let h_ = sonnet_harness();
        let text = screen(&h_.app, w, h);
        let shown: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(shown, msg, "{w}×{h}: the screen shows {text:?}");
    }
}

#[test]
fn drawing_at_tiny_sizes_does_not_panic() {
    let mut h = sonnet_harness();
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
