//! Grapheme and display-width helpers of the input box: word classes,
//! column and byte positions, cleaning pasted text, wrapping a line.

use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

use super::TAB_WIDTH;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    Space,
    Word,
    Punct,
}

pub(super) fn class(g: &str) -> Class {
    match g.chars().next() {
        Some(c) if c.is_whitespace() => Class::Space,
        Some(c) if c.is_alphanumeric() || c == '_' => Class::Word,
        _ => Class::Punct,
    }
}

pub(super) fn g_count(s: &str) -> usize {
    s.graphemes(true).count()
}

/// Byte offset of grapheme `col` (the end of the string past the last one).
pub(super) fn g_byte(s: &str, col: usize) -> usize {
    s.grapheme_indices(true)
        .nth(col)
        .map_or(s.len(), |(i, _)| i)
}

pub(super) fn g_width(g: &str) -> usize {
    if g == "\t" {
        TAB_WIDTH
    } else {
        UnicodeWidthStr::width(g)
    }
}

pub(super) fn to_u16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// Bidirectional overrides and isolates: invisible, and they can make the
/// text on screen read differently from what is sent.
pub(super) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Normalise line ends to `\n`, drop ANSI escape sequences and every
/// control character except `\n` and `\t`.
pub(super) fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\x1b' => match it.peek() {
                Some('[') => {
                    it.next();
                    // CSI: parameters and intermediates up to a final byte.
                    for c in it.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    it.next();
                    // OSC: up to BEL or ST (ESC \).
                    while let Some(c) = it.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            if it.peek() == Some(&'\\') {
                                it.next();
                            }
                            break;
                        }
                    }
                }
                Some(_) => {
                    it.next();
                }
                None => {}
            },
            '\r' => {
                if it.peek() == Some(&'\n') {
                    it.next();
                }
                out.push('\n');
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Pasted bytes that look binary: a NUL, or more than 30% of characters
/// that are control characters (escape, tab and line ends aside) or
/// U+FFFD replacement characters left by a lossy decode.
pub(super) fn looks_binary(text: &str) -> bool {
    if text.contains('\0') {
        return true;
    }
    let mut total = 0usize;
    let mut bad = 0usize;
    for c in text.chars() {
        total += 1;
        if c == '\u{FFFD}' || (c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\x1b')) {
            bad += 1;
        }
    }
    total > 0 && bad * 10 > total * 3
}

/// Grapheme ranges `(start, end, width)` of the rows a line wraps to.
pub(super) fn wrap_line(line: &str, width: usize) -> Vec<(usize, usize, usize)> {
    let mut rows = Vec::new();
    let (mut start, mut w, mut n) = (0usize, 0usize, 0usize);
    for (i, g) in line.graphemes(true).enumerate() {
        let gw = g_width(g);
        if w + gw > width && i > start {
            rows.push((start, i, w));
            start = i;
            w = 0;
        }
        w += gw;
        n = i + 1;
    }
    rows.push((start, n, w));
    rows
}

pub(super) fn render_graphemes(line: &str, start: usize, end: usize) -> String {
    let mut s = String::new();
    for g in line.graphemes(true).skip(start).take(end - start) {
        if g == "\t" {
            s.extend(std::iter::repeat_n(' ', TAB_WIDTH));
        } else {
            s.push_str(g);
        }
    }
    s
}
