//! Drawing the app: finished cells printed above the viewport, the
//! viewport fitted and drawn, or the whole screen again.

use crate::app::App;
use crate::render;
use crate::screen::Screen;

use super::log::RENDERING;

/// The screen from scratch (after a resize or a return from the shell):
/// the newest cells again at the current width, then the app.
pub(super) fn redraw_all(app: &App, screen: &mut Screen) -> anyhow::Result<()> {
    let size = screen.current_size()?;
    let want = render::desired_height(app, size.width, size.height);
    screen.reset(want)?;
    let rows = size.height.saturating_sub(want) as usize;
    screen.insert(app.printed_tail(rows, size.width))?;
    Ok(())
}

/// Print finished cells, fit the viewport, draw.
pub(super) fn paint(app: &mut App, screen: &mut Screen) -> anyhow::Result<()> {
    let size = screen.size();
    let cells = app.drain_inserts();
    if !cells.is_empty() {
        let lines = render::transcript_lines(&cells, size.width, &app.theme);
        screen.insert(lines)?;
    }
    let mut want = render::desired_height(app, size.width, size.height);
    if app.running() && app.modal.is_none() {
        // While a run goes on the viewport only grows: no jumping.
        want = want.max(screen.height());
    }
    if want != screen.height() {
        screen.reshape(want)?;
    }
    let mut failed = None;
    screen.draw(|f| {
        RENDERING.store(true, std::sync::atomic::Ordering::SeqCst);
        let drawn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render::draw(app, f)));
        RENDERING.store(false, std::sync::atomic::Ordering::SeqCst);
        if let Err(p) = drawn {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            failed = Some(why);
        }
    })?;
    if let Some(why) = failed {
        // Show it once, as a cell; the app and the session go on.
        app.error(format!(
            "a screen failed to draw ({why}); details are in the log under REIN_HOME/logs"
        ));
    }
    Ok(())
}
