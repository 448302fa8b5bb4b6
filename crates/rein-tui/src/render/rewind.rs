//! The rewind picker: the checkpoints newest first, the diff from the
//! selected one to the workspace now, what goes back (Tab), and the
//! refusal when files changed outside rein.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::key_hint;
use crate::app::{App, RewindPicker};
use crate::cells::{fit, one_line, wrap_plain};
use crate::diff::render_diff;
use crate::rewind::{CheckpointRow, PREVIEW_LINES};
use crate::theme::Role;

/// Most checkpoints listed at once (the list scrolls).
const LIST_ROWS: usize = 6;

/// The rows the picker wants: borders, the list, the preview's heading
/// and lines, the mode line, and the refusal with its keys.
pub(super) fn rewind_height(p: &RewindPicker, width: u16) -> u16 {
    let list = p.rows.len().clamp(1, LIST_ROWS);
    let preview = p
        .rows
        .get(p.selected)
        .map_or(0, |r| r.preview.lines().count().clamp(1, PREVIEW_LINES));
    let refused = p.refused.as_ref().map_or(0, |r| {
        wrap_plain(r, width.saturating_sub(4).max(8) as usize).len() + 1
    });
    (2 + list + 1 + preview + 1 + refused) as u16
}

/// One row of the list: number, time, label, files changed since (in
/// fewer words when the label would not fit).
pub fn checkpoint_row(r: &CheckpointRow, width: usize) -> String {
    const LABEL_MIN: usize = 16;
    let when = rein_core::time::format_datetime(r.at as i64);
    let files = if r.changed == 1 { "file" } else { "files" };
    let long = (
        format!("{:>3}  {when}  ", r.k),
        format!("  ({} {files} changed since)", r.changed),
    );
    let short = (
        format!("{:>3}  {}  ", r.k, when.rsplit(' ').next().unwrap_or(&when)),
        format!("  ({} {files})", r.changed),
    );
    let room = |(head, tail): &(String, String)| {
        width.saturating_sub(head.chars().count() + tail.chars().count())
    };
    let (head, tail) = if room(&long) >= LABEL_MIN {
        long
    } else {
        short
    };
    let label = fit(
        &one_line(&r.label),
        room(&(head.clone(), tail.clone())).max(8),
    );
    fit(&format!("{head}{label}{tail}"), width)
}

pub(super) fn draw_rewind(app: &App, p: &RewindPicker, frame: &mut Frame, area: Rect) {
    let theme = &app.theme;
    let inner_w = area.width.saturating_sub(2).max(8);
    let inner_h = area.height.saturating_sub(2) as usize;
    // What must show: the keys' lines at the bottom.
    let mut bottom: Vec<Line> = Vec::new();
    let mode = if p.busy {
        vec![Span::styled("rewinding…", theme.style(Role::Accent))]
    } else {
        vec![
            Span::styled("goes back: ", theme.style(Role::Dim)),
            Span::styled(p.mode.label(), theme.style(Role::Strong)),
            Span::styled(
                format!(" · Tab for {}", p.mode.next().label()),
                theme.style(Role::Dim),
            ),
        ]
    };
    bottom.push(Line::from(mode));
    if let Some(why) = &p.refused {
        for l in wrap_plain(why, inner_w.saturating_sub(2) as usize) {
            bottom.push(Line::styled(l, theme.style(Role::Error)));
        }
        let mut keys = key_hint(theme, "f", "rewind anyway (their changes are lost)");
        keys.extend(key_hint(theme, "Esc", "close"));
        bottom.push(Line::from(keys));
    }
    let list_rows = p
        .rows
        .len()
        .clamp(1, LIST_ROWS)
        .min(inner_h.saturating_sub(bottom.len()).max(1));
    let start = p.selected.saturating_sub(list_rows.saturating_sub(1));
    let mut lines: Vec<Line> = Vec::new();
    for (i, r) in p.rows.iter().enumerate().skip(start).take(list_rows) {
        let text = checkpoint_row(r, inner_w as usize);
        if i == p.selected {
            lines.push(Line::styled(text, theme.style(Role::Selected)));
        } else {
            lines.push(Line::raw(text));
        }
    }
    let room = inner_h.saturating_sub(lines.len() + bottom.len());
    if room > 0
        && let Some(r) = p.rows.get(p.selected)
    {
        let heading = if r.preview.trim().is_empty() {
            format!("no file changed since checkpoint {}", r.k)
        } else {
            format!("changed since checkpoint {} (a rewind undoes it):", r.k)
        };
        lines.push(Line::styled(heading, theme.style(Role::Dim)));
        let diff: String = r
            .preview
            .lines()
            .take(PREVIEW_LINES)
            .collect::<Vec<_>>()
            .join("\n");
        lines.extend(
            render_diff(&diff, inner_w, theme)
                .into_iter()
                .take(room.saturating_sub(1)),
        );
    }
    lines.extend(bottom);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Accent))
        .title(" Rewind to a checkpoint ")
        .title_bottom(
            Line::styled(
                " ↑↓ choose · Tab what goes back · Enter rewind · Esc close ",
                theme.style(Role::Dim),
            )
            .alignment(Alignment::Right),
        );
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
