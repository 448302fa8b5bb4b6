//! The approval modal: the call, its risk and why, the diff of an edit,
//! the keys, and what `s` and `p` would remember.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use rein_core::{Risk, Rule};

use super::{MODAL_DIFF_LINES, key_hint};
use crate::app::App;
use crate::cells::{one_line, wrap_plain};
use crate::diff::render_diff;
use crate::theme::Role;

/// What `s` and `p` would remember, in the words of the rules they store.
pub fn grants_line(rules: &[Rule]) -> String {
    if rules.is_empty() {
        "s and p: nothing narrower than this call can be remembered; it runs once".to_string()
    } else {
        let rules: Vec<String> = rules.iter().map(ToString::to_string).collect();
        format!("s and p allow {}", rules.join(", "))
    }
}

/// The approval dialog: what the call does, its risk and diff, the keys
/// (or the feedback being typed).
pub(super) fn draw_approval(
    app: &App,
    feedback: Option<&crate::editor::Editor>,
    frame: &mut Frame,
    area: Rect,
) {
    let theme = &app.theme;
    let Some(p) = app.approvals.front() else {
        return;
    };
    let r = &p.request;
    let risk_role = if r.risk == Risk::High {
        Role::Error
    } else {
        Role::Warning
    };
    let inner_w = area.width.saturating_sub(4).max(8);
    let mut lines: Vec<Line> = Vec::new();
    for l in approval_summary(p, inner_w) {
        lines.push(Line::styled(l, theme.style(Role::Strong)));
    }
    lines.push(Line::from(vec![
        Span::styled(
            format!(
                "risk: {}",
                if r.risk == Risk::High { "high" } else { "low" }
            ),
            theme.style(risk_role),
        ),
        Span::styled(format!(" · {}", one_line(&r.why)), theme.style(Role::Dim)),
    ]));
    if let Some(diff) = &p.preview {
        for l in render_diff(diff, inner_w, theme)
            .into_iter()
            .take(MODAL_DIFF_LINES)
        {
            lines.push(l);
        }
    }
    lines.push(Line::raw(""));
    match feedback {
        Some(ed) => {
            lines.push(Line::from(vec![
                Span::styled("why not? ", theme.style(Role::Accent)),
                Span::raw(ed.text()),
                Span::styled("▏", theme.style(Role::Accent)),
            ]));
            lines.push(Line::styled(
                "Enter denies with this feedback · Esc goes back",
                theme.style(Role::Dim),
            ));
        }
        None => {
            let mut spans = Vec::new();
            spans.extend(key_hint(theme, "y", "once"));
            spans.extend(key_hint(theme, "s", "this session"));
            spans.extend(key_hint(theme, "p", "always in this project"));
            lines.push(Line::from(spans));
            // Rules quote the call (a command, a path): one safe line.
            let grants: String = one_line(&grants_line(&r.suggested_rules))
                .chars()
                .take(inner_w as usize)
                .collect();
            lines.push(Line::styled(grants, theme.style(Role::Dim)));
            let mut spans = Vec::new();
            spans.extend(key_hint(theme, "n", "deny"));
            spans.extend(key_hint(theme, "f", "deny with feedback"));
            if app.approvals.len() > 1 {
                spans.push(Span::styled(
                    format!("(+{} more waiting)", app.approvals.len() - 1),
                    theme.style(Role::Dim),
                ));
            }
            lines.push(Line::from(spans));
        }
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(risk_role))
        .title(Line::styled(
            format!(" Allow {}? ", one_line(&r.tool)),
            theme.style(Role::Strong),
        ));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The session picker of `/resume`.
/// The summary lines of an approval: with a diff to show, only the first
/// line (the gate's summary of an edit repeats the change); otherwise the
/// parsed command, up to six lines.
pub(super) fn approval_summary(p: &crate::app::PendingApproval, width: u16) -> Vec<String> {
    let lines = wrap_plain(&p.request.summary, width as usize);
    let keep = if p.preview.is_some() { 1 } else { 6 };
    lines.into_iter().take(keep).collect()
}
