//! Lines of styled spans: trimming, merging, cutting to a width, and
//! word-wrapping at display columns.

use ratatui::style::Style;
use ratatui::text::Span;
use unicode_width::UnicodeWidthChar;

use super::{Seg, width_of};

/// Drops trailing whitespace from the last spans.
pub(super) fn trim_end(spans: &mut Vec<Span<'static>>) {
    while let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end().len();
        if trimmed == 0 {
            spans.pop();
        } else {
            last.content.to_mut().truncate(trimmed);
            break;
        }
    }
}

/// Joins neighbouring spans of the same style; drops empty ones.
pub(super) fn merge(spans: Vec<Span<'static>>) -> Vec<Span<'static>> {
    let mut out: Vec<Span<'static>> = Vec::with_capacity(spans.len());
    for s in spans {
        if s.content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.style == s.style => last.content.to_mut().push_str(&s.content),
            _ => out.push(s),
        }
    }
    out
}

/// Cuts a line to `avail` columns, ending it with `…` when it was longer.
pub(super) fn cut(spans: Vec<Span<'static>>, avail: usize, ellipsis: Style) -> Vec<Span<'static>> {
    if width_of(&spans) <= avail {
        return spans;
    }
    let limit = avail.saturating_sub(1);
    let mut used = 0;
    let mut out = Vec::new();
    'outer: for s in spans {
        let mut text = String::new();
        for c in s.content.chars() {
            let cw = c.width().unwrap_or(0);
            if used + cw > limit {
                out.push(Span::styled(text, s.style));
                break 'outer;
            }
            used += cw;
            text.push(c);
        }
        out.push(Span::styled(text, s.style));
    }
    out.push(Span::styled("…", ellipsis));
    out
}

/// Greedy word wrap of styled text into lines of at most `avail` columns;
/// `\n` forces a break, a word longer than a line is broken.
pub(super) fn wrap(segs: &[Seg], avail: usize) -> Vec<Vec<Span<'static>>> {
    let mut w = Wrapper {
        avail: avail.max(1),
        lines: Vec::new(),
        cur: Vec::new(),
        cur_w: 0,
    };
    let mut word: Vec<(char, Style)> = Vec::new();
    let mut space: Option<Style> = None;
    for (text, style) in segs {
        for c in text.chars() {
            match c {
                '\n' => {
                    w.place(&mut word, space.take());
                    w.newline();
                }
                ' ' => {
                    w.place(&mut word, space.take());
                    space = Some(*style);
                }
                _ => word.push((c, *style)),
            }
        }
    }
    w.place(&mut word, space);
    if !w.cur.is_empty() {
        w.newline();
    }
    w.lines
}

pub(super) struct Wrapper {
    avail: usize,
    lines: Vec<Vec<Span<'static>>>,
    cur: Vec<Span<'static>>,
    cur_w: usize,
}

impl Wrapper {
    fn newline(&mut self) {
        self.lines.push(merge(std::mem::take(&mut self.cur)));
        self.cur_w = 0;
    }

    fn push(&mut self, c: char, style: Style) {
        self.cur_w += c.width().unwrap_or(0);
        match self.cur.last_mut() {
            Some(last) if last.style == style => last.content.to_mut().push(c),
            _ => self.cur.push(Span::styled(c.to_string(), style)),
        }
    }

    /// Places a word, preceded by a space in `space`'s style when it is not
    /// at the start of a line.
    fn place(&mut self, word: &mut Vec<(char, Style)>, space: Option<Style>) {
        if word.is_empty() {
            return;
        }
        let ww: usize = word.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
        let sp = usize::from(space.is_some() && self.cur_w > 0);
        if self.cur_w + sp + ww > self.avail {
            if ww <= self.avail || self.cur_w + sp >= self.avail {
                if self.cur_w > 0 {
                    self.newline();
                }
            } else if let Some(s) = space.filter(|_| sp == 1) {
                self.push(' ', s);
            }
        } else if let Some(s) = space.filter(|_| sp == 1) {
            self.push(' ', s);
        }
        for (c, style) in word.drain(..) {
            if self.cur_w + c.width().unwrap_or(0) > self.avail && self.cur_w > 0 {
                self.newline();
            }
            self.push(c, style);
        }
    }
}
