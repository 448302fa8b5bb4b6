//! Unified diffs drawn with a gutter of old and new line numbers, added
//! and removed lines coloured, long lines wrapped under the gutter.
//!
//! The line numbers come from the hunk headers (`@@ -12,3 +12,4 @@`), and
//! the counts in those headers tell a removed line that happens to start
//! with `--- ` from a file header. Anything that is not a diff comes out as
//! plain lines.

use crate::highlight::clean_line;
use crate::theme::{Role, Theme};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Meta,
    Hunk,
    Context,
    Add,
    Del,
    NoNewline,
    Other,
}

#[derive(Debug, Clone, Copy)]
struct Row<'a> {
    kind: Kind,
    text: &'a str,
    old: Option<usize>,
    new: Option<usize>,
}

const META: &[&str] = &[
    "--- ",
    "+++ ",
    "diff ",
    "index ",
    "new file mode",
    "deleted file mode",
    "old mode",
    "new mode",
    "similarity index",
    "dissimilarity index",
    "rename from",
    "rename to",
    "copy from",
    "copy to",
    "Binary files",
];

/// `12,3` or `12` (a count of 1).
fn parse_range(s: &str) -> Option<(usize, usize)> {
    let (start, count) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let count = match count {
        Some(c) => c.parse().ok()?,
        None => 1,
    };
    Some((start.parse().ok()?, count))
}

type Ranges = ((usize, usize), (usize, usize));

fn parse_hunk(line: &str) -> Option<Ranges> {
    let mut it = line.strip_prefix("@@")?.split_whitespace();
    let old = parse_range(it.next()?.strip_prefix('-')?)?;
    let new = parse_range(it.next()?.strip_prefix('+')?)?;
    Some((old, new))
}

/// What each line of `diff` is, with its old and new line numbers.
fn classify(diff: &str) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    let (mut old, mut new) = (0usize, 0usize);
    let (mut old_left, mut new_left) = (0usize, 0usize);
    let mut seen_hunk = false;
    for text in diff.lines() {
        let row = |kind, o, n| Row {
            kind,
            text,
            old: o,
            new: n,
        };
        if old_left > 0 || new_left > 0 {
            match text.chars().next() {
                None | Some(' ') => {
                    rows.push(row(Kind::Context, Some(old), Some(new)));
                    old += 1;
                    new += 1;
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                    continue;
                }
                Some('-') => {
                    rows.push(row(Kind::Del, Some(old), None));
                    old += 1;
                    old_left = old_left.saturating_sub(1);
                    continue;
                }
                Some('+') => {
                    rows.push(row(Kind::Add, None, Some(new)));
                    new += 1;
                    new_left = new_left.saturating_sub(1);
                    continue;
                }
                Some('\\') => {
                    rows.push(row(Kind::NoNewline, None, None));
                    continue;
                }
                _ => {
                    // The counts were wrong: the hunk is over.
                    old_left = 0;
                    new_left = 0;
                }
            }
        }
        let kind = if text.starts_with("@@") {
            seen_hunk = true;
            match parse_hunk(text) {
                Some(((os, oc), (ns, nc))) => {
                    (old, old_left, new, new_left) = (os, oc, ns, nc);
                }
                None => (old_left, new_left) = (0, 0),
            }
            Kind::Hunk
        } else if text.starts_with("\\ ") {
            Kind::NoNewline
        } else if META.iter().any(|m| text.starts_with(m)) {
            Kind::Meta
        } else if seen_hunk && text.starts_with('+') {
            Kind::Add
        } else if seen_hunk && text.starts_with('-') {
            Kind::Del
        } else {
            Kind::Other
        };
        rows.push(row(kind, None, None));
    }
    rows
}

/// (added, removed) lines, not counting file headers.
pub fn diff_stats(diff: &str) -> (usize, usize) {
    classify(diff)
        .iter()
        .fold((0, 0), |(a, d), r| match r.kind {
            Kind::Add => (a + 1, d),
            Kind::Del => (a, d + 1),
            _ => (a, d),
        })
}

/// The role of each line of a diff (one per `diff.lines()`), for
/// highlighting a fenced `diff` block. Lenient: outside hunks a line that
/// starts with `+` or `-` still counts as added or removed.
pub fn line_roles(diff: &str) -> Vec<Role> {
    classify(diff)
        .iter()
        .map(|r| match r.kind {
            Kind::Meta => Role::DiffMeta,
            Kind::Hunk => Role::DiffHunk,
            Kind::Add => Role::DiffAdd,
            Kind::Del => Role::DiffDel,
            Kind::NoNewline => Role::Dim,
            Kind::Context => Role::Text,
            Kind::Other if r.text.starts_with('+') => Role::DiffAdd,
            Kind::Other if r.text.starts_with('-') => Role::DiffDel,
            Kind::Other => Role::Text,
        })
        .collect()
}

/// Cuts `s` into pieces of at most `w` display columns (at least one char
/// per piece, and at least one piece).
fn split_width(s: &str, w: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if cur_w + cw > w && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
            cur_w = 0;
        }
        cur.push(c);
        cur_w += cw;
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

/// Draws a unified diff `width` columns wide: a gutter of old and new line
/// numbers, then the line with its `+`/`-`/` ` marker.
pub fn render_diff(diff: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let rows = classify(diff);
    let width = usize::from(width).max(1);
    let max_no = rows
        .iter()
        .flat_map(|r| [r.old, r.new])
        .flatten()
        .max()
        .unwrap_or(0);
    let digits = max_no.to_string().len().max(4);
    // "  12   13 │"
    let gutter_w = 2 * digits + 3;
    let gutter = width >= gutter_w + 10;
    let avail = if gutter { width - gutter_w } else { width };
    let blank = format!("{:w$} │", "", w = 2 * digits + 1);
    let dim = theme.style(Role::Dim);
    let num = |n: Option<usize>| n.map(|n| n.to_string()).unwrap_or_default();
    let mut out = Vec::new();
    for r in rows {
        let text = clean_line(r.text);
        let role = match r.kind {
            Kind::Meta => Role::DiffMeta,
            Kind::Hunk => Role::DiffHunk,
            Kind::Other => Role::Text,
            Kind::Context => Role::Text,
            Kind::Add => Role::DiffAdd,
            Kind::Del => Role::DiffDel,
            Kind::NoNewline => Role::Dim,
        };
        let style = theme.style(role);
        if matches!(r.kind, Kind::Meta | Kind::Hunk | Kind::Other) {
            for piece in split_width(&text, width) {
                out.push(Line::from(Span::styled(piece, style)));
            }
            continue;
        }
        let mut chars = text.chars();
        let marker = chars.next().unwrap_or(' ');
        let body = chars.as_str();
        let numbers = format!("{:>d$} {:>d$} │", num(r.old), num(r.new), d = digits);
        for (k, piece) in split_width(body, avail.saturating_sub(1))
            .into_iter()
            .enumerate()
        {
            let mut spans = Vec::with_capacity(2);
            if gutter {
                let g = if k == 0 {
                    numbers.clone()
                } else {
                    blank.clone()
                };
                spans.push(Span::styled(g, dim));
            }
            let m = if k == 0 { marker } else { ' ' };
            spans.push(Span::styled(format!("{m}{piece}"), style));
            out.push(Line::from(spans));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::plain_text;
    use crate::theme::ColorLevel;

    const SAMPLE: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -12,4 +12,4 @@ fn main() {
 context
-removed
--- looks like a header but is a removed line
+added
+\tanother
 tail
\\ No newline at end of file
";

    #[test]
    fn gutter_numbers_follow_the_hunk_header() {
        let lines = render_diff(SAMPLE, 60, &Theme::plain());
        insta::assert_snapshot!(plain_text(&lines));
    }

    #[test]
    fn stats_count_added_and_removed_lines_not_headers() {
        assert_eq!(diff_stats(SAMPLE), (2, 2));
        assert_eq!(diff_stats("not a diff\n- bullet\n"), (0, 0));
        assert_eq!(diff_stats(""), (0, 0));
    }

    #[test]
    fn lines_get_the_roles_of_their_kind() {
        let t = Theme::with_level(ColorLevel::Ansi16);
        let lines = render_diff(SAMPLE, 60, &t);
        let style_of = |i: usize| lines[i].spans.last().map(|s| s.style);
        assert_eq!(style_of(0), Some(t.style(Role::DiffMeta)));
        assert_eq!(style_of(2), Some(t.style(Role::DiffHunk)));
        assert_eq!(style_of(3), Some(t.style(Role::Text)));
        assert_eq!(style_of(4), Some(t.style(Role::DiffDel)));
        assert_eq!(style_of(5), Some(t.style(Role::DiffDel)));
        assert_eq!(style_of(6), Some(t.style(Role::DiffAdd)));
        assert_eq!(lines[3].spans[0].style, t.style(Role::Dim));
    }

    #[test]
    fn long_lines_wrap_with_a_blank_gutter_and_the_same_style() {
        let diff = "@@ -1 +1 @@\n+0123456789abcdefghijklmnopqrstuvwxyz中文中文\n";
        let t = Theme::with_level(ColorLevel::Ansi16);
        let lines = render_diff(diff, 30, &t);
        insta::assert_snapshot!(plain_text(&lines));
        for l in &lines {
            assert!(l.width() <= 30, "{l:?}");
        }
        assert!(lines.len() >= 3);
        for l in &lines[1..] {
            assert_eq!(l.spans[1].style, t.style(Role::DiffAdd));
        }
    }

    #[test]
    fn garbage_renders_as_plain_lines() {
        let t = Theme::plain();
        let junk = "hello\n@@ nonsense @@\n+++\n---\n\\\n\
            @@ -x,y +1 @@\n@@ -5,0 +5,0 @@\n\u{1b}[31mred\r\n";
        let lines = render_diff(junk, 20, &t);
        assert_eq!(plain_text(&lines[..1]), "hello");
        for w in [0, 1, 2, 5, 13, 200] {
            for (i, _) in junk.char_indices() {
                render_diff(&junk[..i], w, &t);
                render_diff(&SAMPLE[..i.min(SAMPLE.len())], w, &t);
            }
        }
        assert!(render_diff("", 40, &t).is_empty());
    }

    #[test]
    fn line_numbers_widen_the_gutter_past_9999() {
        let lines = render_diff("@@ -99999,1 +100000,1 @@\n-a\n+b\n", 40, &Theme::plain());
        assert_eq!(
            plain_text(&lines[1..]),
            " 99999        │-a\n       100000 │+b"
        );
    }
}
