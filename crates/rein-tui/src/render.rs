//! Drawing the live part of the app: what is still changing (running tools,
//! the streaming answer), the completion popup, the input box, the status
//! line and the modals. Finished cells are not drawn here: they went to the
//! scrollback once, so a frame costs the same however long the transcript.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use rein_core::SessionInfo;
use unicode_width::UnicodeWidthStr;

use crate::app::{App, Modal};
use crate::cells::{Cell, fit, one_line};
use crate::theme::{Role, Theme};

mod approval;
mod form;
mod rewind;
pub use approval::grants_line;
use approval::{approval_summary, draw_approval};
pub use rewind::checkpoint_row;
use rewind::{draw_rewind, rewind_height};

/// Smallest terminal the app draws in.
pub const MIN_WIDTH: u16 = 24;
pub const MIN_HEIGHT: u16 = 6;
const MAX_INPUT_LINES: u16 = 8;
const MAX_POPUP: u16 = 6;
/// Most diff lines an approval shows.
pub(crate) const MODAL_DIFF_LINES: usize = 14;
/// Bytes of a streaming answer the live area renders (its tail).
const LIVE_TEXT_TAIL: usize = 8 * 1024;

/// Lines of the live area: the streaming reasoning and answer, running
/// tools and queued messages.
pub fn live_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let theme = &app.theme;
    let mut out: Vec<Line<'static>> = Vec::new();
    if !app.stream_reasoning.trim().is_empty() {
        let cell = Cell::Reasoning {
            text: app.stream_reasoning.clone(),
            expanded: false,
        };
        out.extend(cell.lines(width, theme, app.tick));
    }
    if !app.stream_text.trim().is_empty() {
        // Only the tail shows in the live area: an answer streaming a huge
        // block without a paragraph break must not cost more per frame.
        let text = &app.stream_text;
        let tail = if text.len() > LIVE_TEXT_TAIL {
            let cut = rein_core::text::ceil_boundary(text, text.len() - LIVE_TEXT_TAIL);
            let from = text[cut..].find('\n').map_or(cut, |i| cut + i + 1);
            &text[from..]
        } else {
            text.as_str()
        };
        let mut shown = String::new();
        if tail.len() < text.len() {
            // Cut inside a code block: open it again so the tail stays code.
            let before = &text[..text.len() - tail.len()];
            let fences = before
                .lines()
                .filter(|l| l.trim_start().starts_with("```") || l.trim_start().starts_with("~~~"))
                .count();
            if fences % 2 == 1 {
                shown.push_str("```\n");
            }
        }
        shown.push_str(tail);
        let cell = Cell::Assistant {
            text: shown,
            continued: app.stream_continued || tail.len() < text.len(),
        };
        out.extend(cell.lines(width, theme, app.tick));
    }
    for cell in &app.live {
        out.extend(cell.lines(width, theme, app.tick));
    }
    for q in &app.queued {
        out.push(Line::styled(
            fit(
                &format!("↳ queued for the next turn: {}", one_line(q)),
                width as usize,
            ),
            theme.style(Role::Dim),
        ));
    }
    out
}

fn input_height(app: &App, width: u16) -> u16 {
    app.editor
        .desired_height(width.saturating_sub(2).max(1), MAX_INPUT_LINES)
        .max(1)
}

fn popup_height(app: &App) -> u16 {
    app.popup
        .as_ref()
        .map(|p| (p.items.len() as u16).min(MAX_POPUP))
        .unwrap_or(0)
}

fn modal_height(app: &App, width: u16) -> u16 {
    match &app.modal {
        None => 0,
        Some(Modal::Approval { feedback }) => {
            let preview = app
                .approvals
                .front()
                .and_then(|p| p.preview.as_ref())
                .map(|d| d.lines().count().min(MODAL_DIFF_LINES) as u16)
                .unwrap_or(0);
            let summary = app
                .approvals
                .front()
                .map(|p| approval_summary(p, width.saturating_sub(4)).len())
                .unwrap_or(1) as u16;
            // The feedback box has two lines under the diff, the keys three
            // (with what `s` and `p` allow).
            let bottom = if feedback.is_some() { 6 } else { 7 };
            bottom + summary + preview
        }
        Some(Modal::Resume { sessions, .. }) => (sessions.len() as u16).min(10) + 3,
        Some(Modal::PlanDone) => 5,
        Some(Modal::Rewind(p)) => rewind_height(p, width),
        Some(Modal::Form(f)) => form::form_height(f, width),
    }
}

/// The viewport height the app wants now, for a terminal of this size.
pub fn desired_height(app: &App, width: u16, term_height: u16) -> u16 {
    let fixed = 1 + input_height(app, width) + 1 + popup_height(app);
    let body = if app.modal.is_some() {
        modal_height(app, width)
    } else {
        live_lines(app, width).len() as u16 + u16::from(app.hint.is_some())
    };
    let max = term_height.saturating_sub(1).max(3);
    (fixed + body).clamp(3.min(term_height), max)
}

/// Draw the app into the frame's area.
pub fn draw(app: &App, frame: &mut Frame) {
    let area = frame.area();
    let theme = &app.theme;
    if area.width < MIN_WIDTH || area.height < 3 {
        let msg = too_small_message(area.width, area.height);
        frame.render_widget(
            Paragraph::new(msg)
                .style(theme.style(Role::Warning))
                .wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let w = area.width;
    let status_h = 1;
    let input_h = input_height(app, w).min(area.height.saturating_sub(3).max(1));
    let border_h = 1;
    let popup_h = popup_height(app).min(area.height.saturating_sub(input_h + 2));
    let bottom = status_h + input_h + border_h + popup_h;
    let body_h = area.height.saturating_sub(bottom);
    let body = Rect::new(area.x, area.y, w, body_h);
    let popup_area = Rect::new(area.x, area.y + body_h, w, popup_h);
    let border = Rect::new(area.x, area.y + body_h + popup_h, w, 1);
    let input = Rect::new(area.x, border.y + 1, w, input_h);
    let status = Rect::new(area.x, input.y + input_h, w, 1);

    if app.modal.is_some() {
        draw_modal(app, frame, body);
    } else {
        let mut lines = live_lines(app, w);
        if let Some(h) = &app.hint {
            lines.push(Line::styled(
                fit(&one_line(h), w as usize),
                theme.style(Role::Warning),
            ));
        }
        let skip = lines.len().saturating_sub(body_h as usize);
        let shown: Vec<Line> = lines.into_iter().skip(skip).collect();
        frame.render_widget(Paragraph::new(shown), body);
    }
    if popup_h > 0
        && let Some(p) = &app.popup
    {
        let start = p.selected.saturating_sub(popup_h as usize - 1);
        let lines: Vec<Line> = p
            .items
            .iter()
            .enumerate()
            .skip(start)
            .take(popup_h as usize)
            .map(|(i, item)| {
                // File names can hold anything.
                let text = fit(&format!("  {}", one_line(item)), w as usize);
                if i == p.selected {
                    Line::styled(text, theme.style(Role::Selected))
                } else {
                    Line::styled(text, theme.style(Role::Dim))
                }
            })
            .collect();
        frame.render_widget(Clear, popup_area);
        frame.render_widget(Paragraph::new(lines), popup_area);
    }
    let rule = "─".repeat(w as usize);
    frame.render_widget(
        Paragraph::new(Line::styled(rule, theme.style(Role::Dim))),
        border,
    );
    draw_input(app, frame, input);
    frame.render_widget(Paragraph::new(status_line(app, w)), status);
}

fn draw_input(app: &App, frame: &mut Frame, area: Rect) {
    let theme = &app.theme;
    let inner_w = area.width.saturating_sub(2).max(1);
    let visual = app.editor.visual_lines(inner_w);
    let (crow, ccol) = app.editor.cursor_position(inner_w);
    let skip = (crow + 1).saturating_sub(area.height) as usize;
    let mut lines: Vec<Line> = Vec::new();
    if app.editor.is_empty() {
        let placeholder = if app.running() {
            "type to steer the agent (Enter queues it); Esc cancels"
        } else {
            "ask rein to do something; /help for commands"
        };
        lines.push(Line::from(vec![
            Span::styled("› ", theme.style(Role::Accent)),
            Span::styled(fit(placeholder, inner_w as usize), theme.style(Role::Dim)),
        ]));
    } else {
        for (i, l) in visual.iter().enumerate().skip(skip) {
            let lead = if i == 0 { "› " } else { "  " };
            lines.push(Line::from(vec![
                Span::styled(lead, theme.style(Role::Accent)),
                Span::raw(l.clone()),
            ]));
        }
    }
    frame.render_widget(Paragraph::new(lines), area);
    if app.modal.is_none() {
        let y = area.y
            + crow
                .saturating_sub(skip as u16)
                .min(area.height.saturating_sub(1));
        let x = area.x + 2 + ccol.min(inner_w);
        frame.set_cursor_position((x.min(area.right().saturating_sub(1)), y));
    }
}

/// Tokens in a short form: 950, 12.3k, 1.2M.
pub fn short_tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// The status line: model, mode, todos, context, cost, session.
pub fn status_line(app: &App, width: u16) -> Line<'static> {
    if let Some(line) = &app.custom_status {
        let shown: String = line.chars().take(width as usize).collect();
        return Line::from(Span::raw(shown));
    }
    let theme = &app.theme;
    let s = &app.status;
    let dim = theme.style(Role::Dim);
    let mut parts: Vec<Vec<Span<'static>>> = Vec::new();
    if s.running {
        let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
        parts.push(vec![Span::styled(
            format!("{} {}", frames[app.tick % frames.len()], s.working_text()),
            theme.style(Role::Accent),
        )]);
    }
    let model = if s.model.is_empty() {
        "no model".to_string()
    } else {
        // A model's name can come from a GGUF file's metadata.
        one_line(&s.model)
    };
    parts.push(vec![Span::styled(
        model,
        Style::new().add_modifier(Modifier::BOLD),
    )]);
    let mode_style = match s.mode {
        rein_core::PermissionMode::Plan => theme.style(Role::Accent),
        rein_core::PermissionMode::Auto | rein_core::PermissionMode::Bypass => {
            theme.style(Role::Warning)
        }
        _ => Style::new(),
    };
    parts.push(vec![Span::styled(
        format!(
            "{}{}",
            s.mode.as_str(),
            if s.mode_pending { " (next turn)" } else { "" }
        ),
        mode_style,
    )]);
    if s.todos_total > 0 {
        parts.push(vec![Span::raw(format!(
            "todos {}/{}",
            s.todos_done, s.todos_total
        ))]);
    }
    if let Some(t) = s.context_tokens {
        let text = match s.context_window {
            Some(w) if w > 0 => {
                let pct = (t as f64 / w as f64 * 100.0).min(999.0);
                let role = if pct >= 80.0 {
                    Role::Error
                } else if pct >= 50.0 {
                    Role::Warning
                } else {
                    Role::Ok
                };
                vec![Span::styled(
                    format!("ctx {} ({pct:.0}%)", short_tokens(t)),
                    theme.style(role),
                )]
            }
            _ => vec![Span::raw(format!("ctx {}", short_tokens(t)))],
        };
        parts.push(text);
    }
    parts.push(vec![Span::raw(s.cost_text())]);
    if let Some(id) = &s.session_id {
        parts.push(vec![Span::styled(
            id.chars().take(12).collect::<String>(),
            dim,
        )]);
    }
    // Drop parts from the right until the line fits.
    let sep_w = 3;
    while parts.len() > 1 {
        let total: usize = parts
            .iter()
            .map(|p| p.iter().map(|s| s.content.width()).sum::<usize>())
            .sum::<usize>()
            + sep_w * (parts.len() - 1);
        if total <= width as usize {
            break;
        }
        parts.pop();
    }
    let mut spans = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", dim));
        }
        spans.extend(p);
    }
    Line::from(spans)
}

/// The message for a terminal smaller than the app needs: the longest of
/// a few wordings that fits in `width` × `height` whole (a message cut off
/// is no message).
pub fn too_small_message(width: u16, height: u16) -> String {
    let (w, h) = (width.max(1) as usize, height.max(1) as usize);
    let wordings = [
        format!("terminal too small ({width}×{height}): rein needs {MIN_WIDTH} columns and 3 rows"),
        format!("too small ({width}×{height}): rein needs {MIN_WIDTH}×3"),
        format!("too small: needs {MIN_WIDTH}×3"),
        format!("needs {MIN_WIDTH}×3"),
        "small".to_string(),
    ];
    let fits = |text: &str| {
        // Words wrap whole: count the rows they take.
        let mut rows = 1;
        let mut col = 0;
        for word in text.split(' ') {
            let n = word.chars().count();
            if n > w {
                return false;
            }
            let need = if col == 0 { n } else { col + 1 + n };
            if need > w {
                rows += 1;
                col = n;
            } else {
                col = need;
            }
        }
        rows <= h
    };
    match wordings.iter().find(|m| fits(m)) {
        Some(m) => m.clone(),
        // Smaller than any word: as much of the last one as there is room.
        None => wordings[wordings.len() - 1].chars().take(w * h).collect(),
    }
}

fn draw_modal(app: &App, frame: &mut Frame, area: Rect) {
    frame.render_widget(Clear, area);
    match &app.modal {
        Some(Modal::Approval { feedback }) => draw_approval(app, feedback.as_ref(), frame, area),
        Some(Modal::Resume {
            sessions,
            filter,
            selected,
        }) => draw_resume(app, sessions, filter, *selected, frame, area),
        Some(Modal::PlanDone) => {
            let theme = &app.theme;
            let mut spans = Vec::new();
            spans.extend(key_hint(theme, "e", "execute now"));
            spans.extend(key_hint(theme, "k", "keep planning"));
            spans.extend(key_hint(theme, "c", "cancel"));
            let lines = vec![
                Line::raw("The plan is ready. Execute it now (leaves plan mode)?"),
                Line::from(spans),
            ];
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(theme.style(Role::Accent))
                .title(" Plan ready ");
            frame.render_widget(Paragraph::new(lines).block(block), area);
        }
        Some(Modal::Rewind(p)) => draw_rewind(app, p, frame, area),
        Some(Modal::Form(f)) => form::draw_form(app, f, frame, area),
        None => {}
    }
}

/// `[k] what` in a modal's key line.
pub(crate) fn key_hint(theme: &Theme, k: &str, what: &str) -> Vec<Span<'static>> {
    vec![
        Span::styled(format!("[{k}]"), theme.style(Role::Accent)),
        Span::raw(format!(" {what}  ")),
    ]
}

fn draw_resume(
    app: &App,
    sessions: &[rein_core::SessionInfo],
    filter: &str,
    selected: usize,
    frame: &mut Frame,
    area: Rect,
) {
    let theme = &app.theme;
    let matches = App::resume_matches(sessions, filter);
    let rows = area.height.saturating_sub(3) as usize;
    let start = selected.saturating_sub(rows.saturating_sub(1));
    let now = rein_core::time::now_millis() as i64;
    let mut lines: Vec<Line> = vec![Line::from(vec![
        Span::styled("filter: ", theme.style(Role::Dim)),
        Span::raw(filter.to_string()),
        Span::styled("▏", theme.style(Role::Accent)),
    ])];
    if matches.is_empty() {
        lines.push(Line::styled("no session matches", theme.style(Role::Dim)));
    }
    for (row, &i) in matches.iter().enumerate().skip(start).take(rows) {
        let line = session_row(&sessions[i], now, area.width.saturating_sub(4));
        if row == selected {
            lines.push(Line::styled(line, theme.style(Role::Selected)));
        } else {
            lines.push(Line::raw(line));
        }
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Accent))
        .title(" Resume a session ")
        .title_bottom(
            Line::styled(
                " ↑↓ choose · Enter resume · Esc close ",
                theme.style(Role::Dim),
            )
            .alignment(Alignment::Right),
        );
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// One row of the resume picker: title, age, messages, id.
pub fn session_row(s: &SessionInfo, now_ms: i64, width: u16) -> String {
    let age = ago(now_ms.saturating_sub(s.updated_at));
    let tail = format!(
        "  {age} · {} msg · {}",
        s.message_count,
        s.id.chars().take(12).collect::<String>()
    );
    let title_w = (width as usize).saturating_sub(tail.width()).max(8);
    let title = if s.title.trim().is_empty() {
        "(untitled)".to_string()
    } else {
        one_line(&s.title)
    };
    let t = fit(&title, title_w);
    format!("{t:<title_w$}{tail}")
}

/// "just now", "5 min ago", "3 h ago", "2 d ago".
pub fn ago(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    if s < 60 {
        "just now".into()
    } else if s < 3600 {
        format!("{} min ago", s / 60)
    } else if s < 86_400 {
        format!("{} h ago", s / 3600)
    } else {
        format!("{} d ago", s / 86_400)
    }
}

/// Lines of finished cells for the scrollback, at this width.
pub fn transcript_lines(cells: &[Cell], width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for c in cells {
        out.push(Line::raw(""));
        out.extend(c.lines(width, theme, 0));
    }
    out
}
