//! An MCP server's form: who asks and what, a line per field (the
//! selected one marked, booleans and choices with their value, required
//! ones starred), the keys, and why Enter did not accept.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::key_hint;
use crate::app::App;
use crate::cells::{one_line, wrap_plain};
use crate::form::{FieldKind, Form};
use crate::theme::Role;

/// The rows the form wants: borders, the message, the fields, the keys
/// and the problem line.
pub(super) fn form_height(form: &Form, width: u16) -> u16 {
    let message = message_lines(form, width).len();
    (2 + message + form.fields.len().max(1) + 1 + usize::from(form.problem.is_some())) as u16
}

fn message_lines(form: &Form, width: u16) -> Vec<String> {
    let text = format!("`{}` asks: {}", form.server, one_line(&form.message));
    let mut lines = wrap_plain(&text, width.saturating_sub(4).max(8) as usize);
    lines.truncate(3);
    lines
}

pub(super) fn draw_form(app: &App, form: &Form, frame: &mut Frame, area: Rect) {
    let theme = &app.theme;
    let mut lines: Vec<Line> = message_lines(form, area.width)
        .into_iter()
        .map(Line::raw)
        .collect();
    if form.fields.is_empty() {
        lines.push(Line::raw("(no fields)"));
    }
    for (i, f) in form.fields.iter().enumerate() {
        let mark = if i == form.selected { "› " } else { "  " };
        let star = if f.required { "*" } else { "" };
        let value = match &f.kind {
            FieldKind::Boolean => format!("[{}]", if f.value == "true" { "x" } else { " " }),
            FieldKind::Choice(choices) => format!("‹ {} › of {}", f.value, choices.join(", ")),
            _ => f.value.clone(),
        };
        let style = if i == form.selected {
            theme.style(Role::Accent)
        } else {
            ratatui::style::Style::default()
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark}{}{star}: ", one_line(&f.title)), style),
            Span::raw(one_line(&value)),
        ]));
    }
    let mut keys = Vec::new();
    keys.extend(key_hint(theme, "Enter", "accept"));
    keys.extend(key_hint(theme, "Ctrl+D", "decline"));
    keys.extend(key_hint(theme, "Esc", "cancel"));
    keys.extend(key_hint(theme, "↑↓", "field"));
    keys.extend(key_hint(theme, "Space", "toggle/choose"));
    lines.push(Line::from(keys));
    if let Some(problem) = &form.problem {
        lines.push(Line::styled(problem.clone(), theme.style(Role::Error)));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Accent))
        .title(" MCP form ");
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
