//! Text helpers for bounded output, and text made safe for a terminal
//! ([`terminal_safe`]).

mod terminal;

pub use terminal::{is_hidden_format, terminal_safe};

/// Largest index <= `i` on a char boundary of `s`.
pub fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest index >= `i` on a char boundary of `s`.
pub fn ceil_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Keep at most `max_bytes` of `text`: its head and tail, cut on character
/// boundaries, with a line in between saying how much was left out.
pub fn truncate_middle(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let head_end = floor_boundary(text, max_bytes / 2);
    let tail_start = ceil_boundary(text, text.len() - (max_bytes - head_end));
    let cut = tail_start - head_end;
    let omitted_lines = text[head_end..tail_start].matches('\n').count();
    format!(
        "{}\n[... {cut} bytes ({omitted_lines} lines) cut from the middle of {} bytes of output ...]\n{}",
        &text[..head_end],
        text.len(),
        &text[tail_start..]
    )
}

/// `text` on one line: whitespace runs (newlines included) become one
/// space, control characters go, and at most `max_chars` characters stay.
pub fn one_line(text: &str, max_chars: usize) -> String {
    text.split_whitespace()
        .flat_map(|word| std::iter::once(' ').chain(word.chars()))
        .skip(1)
        .filter(|c| !c.is_control())
        .take(max_chars)
        .collect()
}

/// A short one-glance preview: the first lines, at most `max_bytes`.
pub fn preview(text: &str, max_lines: usize, max_bytes: usize) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i == max_lines {
            out.push_str("\n…");
            break;
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
        if out.len() > max_bytes {
            let cut = floor_boundary(&out, max_bytes);
            out.truncate(cut);
            out.push('…');
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(truncate_middle("abc", 10), "abc");
    }

    #[test]
    fn long_text_keeps_head_and_tail_on_char_boundaries() {
        let text = format!("{}{}", "é".repeat(1000), "z".repeat(1000));
        let out = truncate_middle(&text, 101);
        assert!(out.starts_with("éé"));
        assert!(out.ends_with("zz"));
        assert!(out.contains("bytes (0 lines) cut from the middle of 3000 bytes"));
        let kept = out.len() - out.lines().nth(1).unwrap().len() - 2;
        assert!(kept <= 101, "{kept}");
    }

    #[test]
    fn preview_caps_lines_and_bytes() {
        assert_eq!(preview("a\nb\nc\nd", 2, 100), "a\nb\n…");
        assert_eq!(
            preview(&"x".repeat(50), 3, 10),
            format!("{}…", "x".repeat(10))
        );
    }
}
