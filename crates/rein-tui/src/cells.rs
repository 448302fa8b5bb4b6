//! Transcript cells: one per user message, answer, reasoning, tool call,
//! error or note. A cell renders itself to lines for a given width; finished
//! cells go to the terminal's scrollback once and are never drawn again.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use unicode_width::UnicodeWidthStr;

use crate::diff::{diff_stats, render_diff};
use crate::markdown::render_markdown;
use crate::theme::{Role, Theme};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Where a tool call is.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolState {
    Running,
    /// Waiting for the user's approval.
    Waiting,
    Done {
        duration_ms: u64,
        is_error: bool,
        /// The whole output when known (from the committed result), else
        /// the event's preview.
        output: String,
    },
    /// Refused by the gate.
    Denied {
        why: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    User {
        text: String,
    },
    Assistant {
        text: String,
        /// Continues the answer of the cell before (no bullet).
        continued: bool,
    },
    Reasoning {
        text: String,
        expanded: bool,
    },
    Tool {
        call_id: String,
        name: String,
        arguments: String,
        state: ToolState,
    },
    Error {
        text: String,
    },
    Notice {
        text: String,
    },
    /// Output of a slash command: pre-formatted lines.
    Info {
        title: String,
        lines: Vec<String>,
    },
}

/// Text from a file, a command or a model made safe for the terminal:
/// escape sequences are removed whole, tabs become spaces, other control
/// characters but the newline are dropped, and bidi controls and invisible
/// formatting characters show as `<U+XXXX>` markers (Trojan Source stays
/// visible). Without this a file's content could clear the screen, move the
/// cursor, retitle the window or read differently from what it is. See
/// [`rein_core::text::terminal_safe`].
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    rein_core::text::terminal_safe(text)
}

/// First line only, made safe for the terminal.
pub fn one_line(text: &str) -> String {
    let clean = sanitize(text);
    let text = clean.as_ref();
    let mut lines = text.lines();
    let mut s = lines.next().unwrap_or("").to_string();
    if lines.next().is_some() {
        s.push_str(" …");
    }
    s
}

/// Cut `text` to `width` display columns, with an ellipsis when cut.
pub fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut w = 0;
    for c in text.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// Wrap plain text to `width` columns at spaces (a word longer than the
/// width is broken); tabs become spaces, control characters go.
pub fn wrap_plain(text: &str, width: usize) -> Vec<String> {
    use unicode_width::UnicodeWidthChar;
    let width = width.max(1);
    let mut out = Vec::new();
    let text = sanitize(text);
    for line in text.split('\n') {
        let mut cur = String::new();
        let mut w = 0;
        for word in line.split_inclusive(' ') {
            let ww = word.trim_end().width();
            if w + ww > width && !cur.is_empty() {
                out.push(cur.trim_end().to_string());
                cur.clear();
                w = 0;
            }
            for c in word.chars() {
                let cw = c.width().unwrap_or(0);
                if w + cw > width && !cur.is_empty() && c != ' ' {
                    out.push(std::mem::take(&mut cur));
                    w = 0;
                }
                cur.push(c);
                w += cw;
            }
        }
        out.push(cur.trim_end().to_string());
    }
    out
}

/// The unified diff inside a tool's output, if any.
pub fn find_diff(output: &str) -> Option<&str> {
    let start = output.find("--- a/").or_else(|| output.find("--- "))?;
    let rest = &output[start..];
    rest.lines().nth(1)?.starts_with("+++ ").then_some(rest)
}

/// How many lines of a tool's output a finished cell previews.
const PREVIEW_LINES: usize = 5;
/// How many diff lines a finished edit shows in the transcript.
const DIFF_LINES: usize = 40;

impl Cell {
    /// True while the cell can still change (it stays in the live area).
    pub fn is_live(&self) -> bool {
        matches!(
            self,
            Cell::Tool {
                state: ToolState::Running | ToolState::Waiting,
                ..
            }
        )
    }

    /// The cell's lines at `width`. Nothing in them can drive the terminal:
    /// every text is sanitized, and a last pass drops any control character
    /// a renderer let through.
    pub fn lines(&self, width: u16, theme: &Theme, tick: usize) -> Vec<Line<'static>> {
        let mut lines = self.draw(width, theme, tick);
        for line in &mut lines {
            for span in &mut line.spans {
                if span.content.chars().any(char::is_control) {
                    span.content = span
                        .content
                        .chars()
                        .filter(|c| !c.is_control())
                        .collect::<String>()
                        .into();
                }
            }
        }
        lines
    }

    fn draw(&self, width: u16, theme: &Theme, tick: usize) -> Vec<Line<'static>> {
        let w = width.max(8) as usize;
        match self {
            Cell::User { text } => {
                let mut out = Vec::new();
                for (i, l) in wrap_plain(text, w.saturating_sub(2))
                    .into_iter()
                    .enumerate()
                {
                    let mark = if i == 0 { "› " } else { "  " };
                    out.push(Line::from(vec![
                        Span::styled(mark, theme.style(Role::Accent)),
                        Span::styled(l, theme.style(Role::User)),
                    ]));
                }
                out
            }
            Cell::Assistant { text, continued } => {
                let body = render_markdown(&sanitize(text), width.saturating_sub(2).max(8), theme);
                body.into_iter()
                    .enumerate()
                    .map(|(i, l)| {
                        let mut spans =
                            vec![Span::raw(if i == 0 && !continued { "• " } else { "  " })];
                        spans.extend(l.spans);
                        Line::from(spans)
                    })
                    .collect()
            }
            Cell::Reasoning { text, expanded } => {
                let text = sanitize(text);
                let dim = theme.style(Role::Dim).add_modifier(Modifier::ITALIC);
                if *expanded {
                    let mut out = vec![Line::styled("∴ reasoning", dim)];
                    for l in wrap_plain(text.trim(), w.saturating_sub(2)) {
                        out.push(Line::styled(format!("  {l}"), dim));
                    }
                    out
                } else {
                    let n = text.trim().lines().count();
                    let first = one_line(text.trim());
                    let label = format!(
                        "∴ {} ({n} line{}; Ctrl+O shows it)",
                        if first.is_empty() { "thinking" } else { &first },
                        if n == 1 { "" } else { "s" }
                    );
                    vec![Line::styled(fit(&label, w), dim)]
                }
            }
            Cell::Tool {
                name,
                arguments,
                state,
                ..
            } => tool_lines(name, arguments, state, w, theme, tick),
            Cell::Error { text } => wrap_plain(text, w.saturating_sub(2))
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    Line::styled(
                        format!("{}{l}", if i == 0 { "✗ " } else { "  " }),
                        theme.style(Role::Error),
                    )
                })
                .collect(),
            Cell::Notice { text } => wrap_plain(text, w.saturating_sub(2))
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    Line::styled(
                        format!("{}{l}", if i == 0 { "ℹ " } else { "  " }),
                        theme.style(Role::Dim),
                    )
                })
                .collect(),
            Cell::Info { title, lines } => {
                let mut out = vec![Line::styled(one_line(title), theme.style(Role::Accent))];
                for l in lines {
                    for piece in wrap_plain(l, w.saturating_sub(2)) {
                        out.push(Line::from(format!("  {piece}")));
                    }
                }
                out
            }
        }
    }
}

fn tool_lines(
    name: &str,
    arguments: &str,
    state: &ToolState,
    w: usize,
    theme: &Theme,
    tick: usize,
) -> Vec<Line<'static>> {
    let summary = crate::summary::call_summary(name, arguments);
    let (mark, mark_style, suffix) = match state {
        ToolState::Running => (
            SPINNER[tick % SPINNER.len()].to_string(),
            theme.style(Role::Accent),
            String::new(),
        ),
        ToolState::Waiting => (
            "?".to_string(),
            theme.style(Role::Warning),
            " · waiting for approval".to_string(),
        ),
        ToolState::Done {
            duration_ms,
            is_error,
            output,
        } => {
            let exit = if name == "bash" {
                exit_code(output).map(|c| format!(" · exit {c}"))
            } else {
                None
            };
            let took = format_duration(*duration_ms);
            let failed = exit.is_some() && exit_code(output) != Some(0);
            if *is_error || failed {
                (
                    "✗".to_string(),
                    theme.style(Role::Error),
                    format!(" · {took}{}", exit.unwrap_or_else(|| " · error".into())),
                )
            } else {
                (
                    "✓".to_string(),
                    theme.style(Role::Ok),
                    format!(" · {took}{}", exit.unwrap_or_default()),
                )
            }
        }
        ToolState::Denied { .. } => (
            "⊘".to_string(),
            theme.style(Role::Error),
            " · refused".to_string(),
        ),
    };
    let head_room = w.saturating_sub(name.width() + suffix.width() + 4);
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(name.to_string(), Style::new().add_modifier(Modifier::BOLD)),
        Span::raw(" "),
        Span::raw(fit(&summary, head_room.max(1))),
        Span::styled(suffix, theme.style(Role::Dim)),
    ])];
    let body_w = w.saturating_sub(4).max(4);
    match state {
        ToolState::Done {
            output, is_error, ..
        } => {
            let output = sanitize(output);
            let output = output.as_ref();
            if let Some(diff) = find_diff(output).filter(|_| !is_error) {
                let (added, removed) = diff_stats(diff);
                out.push(Line::styled(
                    format!("  └ +{added} -{removed}"),
                    theme.style(Role::Dim),
                ));
                let lines = render_diff(diff, body_w as u16, theme);
                let total = lines.len();
                for l in lines.into_iter().take(DIFF_LINES) {
                    let mut spans = vec![Span::raw("    ")];
                    spans.extend(l.spans);
                    out.push(Line::from(spans));
                }
                if total > DIFF_LINES {
                    out.push(Line::styled(
                        format!("    … {} more diff lines", total - DIFF_LINES),
                        theme.style(Role::Dim),
                    ));
                }
            } else {
                let style = if *is_error {
                    theme.style(Role::Error)
                } else {
                    theme.style(Role::Dim)
                };
                let body: Vec<&str> = output
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with("[exit code:"))
                    .collect();
                let shown = body.len().min(PREVIEW_LINES);
                for (i, l) in body.iter().take(shown).enumerate() {
                    let lead = if i == 0 { "  └ " } else { "    " };
                    out.push(Line::styled(format!("{lead}{}", fit(l, body_w)), style));
                }
                if body.len() > shown {
                    out.push(Line::styled(
                        format!("    … {} more lines", body.len() - shown),
                        theme.style(Role::Dim),
                    ));
                }
            }
        }
        ToolState::Denied { why } => {
            out.push(Line::styled(
                format!("  └ {}", fit(&one_line(why), body_w)),
                theme.style(Role::Error),
            ));
        }
        _ => {}
    }
    out
}

/// The exit status bash reports in its output ("exit code: N"), if any.
fn exit_code(output: &str) -> Option<i64> {
    output.lines().find_map(|l| {
        let l = l.trim();
        l.strip_prefix("[exit code:")
            .and_then(|r| r.trim().trim_end_matches(']').trim().parse().ok())
    })
}

pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

#[cfg(test)]
mod sanitize_tests {
    use super::*;

    #[test]
    fn escape_sequences_go_whole_and_plain_text_stays() {
        assert_eq!(sanitize("plain text\nline two"), "plain text\nline two");
        assert_eq!(sanitize("a\x1b[31mred\x1b[0m b"), "ared b");
        assert_eq!(sanitize("x\x1b]0;title\x07y"), "xy");
        assert_eq!(
            sanitize("x\x1b]8;;http://h\x1b\\link\x1b]8;;\x1b\\y"),
            "xlinky"
        );
        assert_eq!(sanitize("\u{9b}2Jz"), "z");
        assert_eq!(sanitize("tab\there\r\x08\x07!"), "tab    here!");
        // An unterminated sequence at the end cannot swallow more than it.
        assert_eq!(sanitize("ok\x1b]0;never ends"), "ok");
        assert_eq!(sanitize("ok\x1b"), "ok");
    }

    #[test]
    fn bidi_overrides_in_shown_text_are_visible_markers() {
        assert_eq!(
            sanitize("access\u{202E}nimda\u{2066}"),
            "access<U+202E>nimda<U+2066>"
        );
        assert_eq!(one_line("a\u{200B}b\nsecond"), "a<U+200B>b …");
    }
}
