//! The multi-line input box's state: text, cursor and collapsed pastes.
//!
//! Pure data, no I/O: the app feeds it keys and pastes and asks it how to
//! draw itself. The cursor column counts grapheme clusters, so an emoji
//! with a skin tone or a letter with a combining accent moves and deletes
//! as one. Large pastes are collapsed to a placeholder token such as
//! `[Pasted text #1 +42 lines]` that behaves as a single unit when deleted
//! or stepped over; [`Editor::submit`] puts the real text back.
//!
//! Rendering wraps each logical line at grapheme boundaries by display
//! columns (wide characters count two, a tab counts [`TAB_WIDTH`] and is
//! drawn as that many spaces).

use unicode_segmentation::UnicodeSegmentation;

mod graphemes;
mod motion;

use graphemes::*;

/// A paste with more lines than this is collapsed to a placeholder.
pub const PASTE_COLLAPSE_LINES: usize = 5;
/// A paste with more characters than this is collapsed to a placeholder.
pub const PASTE_COLLAPSE_CHARS: usize = 1000;
/// Display columns of a tab in the input box.
pub const TAB_WIDTH: usize = 4;

/// What [`Editor::paste`] did with the pasted text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PasteOutcome {
    /// The (cleaned) text was inserted at the cursor.
    Inserted,
    /// The text was large: a placeholder was inserted and the text kept
    /// aside until [`Editor::submit`].
    Collapsed { placeholder: String },
    /// Nothing was inserted; the reason is meant for the status line.
    Rejected(String),
}

#[derive(Debug, Clone)]
struct Paste {
    token: String,
    content: String,
}

/// The input box's state. `lines` is never empty and the cursor always
/// sits on a grapheme boundary of `lines[row]`, never inside a placeholder.
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    /// In grapheme clusters.
    col: usize,
    /// The column Up/Down try to keep while moving across shorter lines.
    goal: Option<usize>,
    pastes: Vec<Paste>,
    paste_seq: usize,
}

impl Default for Editor {
    fn default() -> Self {
        Self::new()
    }
}

impl Editor {
    pub fn new() -> Editor {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            goal: None,
            pastes: Vec::new(),
            paste_seq: 0,
        }
    }

    /// The text as shown: lines joined by `\n`, placeholders not expanded.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The text with every paste placeholder replaced by its content.
    pub fn expanded_text(&self) -> String {
        let text = self.text();
        if self.pastes.is_empty() {
            return text;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        loop {
            let next = self
                .pastes
                .iter()
                .filter_map(|p| rest.find(&p.token).map(|i| (i, p)))
                .min_by_key(|(i, _)| *i);
            match next {
                Some((i, p)) => {
                    out.push_str(&rest[..i]);
                    out.push_str(&p.content);
                    rest = &rest[i + p.token.len()..];
                }
                None => {
                    out.push_str(rest);
                    return out;
                }
            }
        }
    }

    /// The expanded text; the editor and its stored pastes are cleared.
    pub fn submit(&mut self) -> String {
        let text = self.expanded_text();
        self.clear();
        text
    }

    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    pub fn clear(&mut self) {
        *self = Editor::new();
    }

    /// Replace everything (stored pastes too); the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.clear();
        self.insert_str(text);
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// `(row, column)`, the column in grapheme clusters.
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// The line the cursor is on.
    pub fn current_line(&self) -> &str {
        &self.lines[self.row]
    }

    /// The cursor column in `char`s (what [`crate::complete::at_token`]
    /// takes).
    pub fn cursor_char_col(&self) -> usize {
        let line = &self.lines[self.row];
        line[..g_byte(line, self.col)].chars().count()
    }

    fn line_len(&self, row: usize) -> usize {
        g_count(&self.lines[row])
    }

    // ---- placeholders ----

    /// Grapheme ranges of the placeholders on a line.
    fn placeholder_spans(&self, row: usize) -> Vec<(usize, usize)> {
        if self.pastes.is_empty() {
            return Vec::new();
        }
        let line = &self.lines[row];
        let mut spans = Vec::new();
        for p in &self.pastes {
            for (b, _) in line.match_indices(p.token.as_str()) {
                spans.push((g_count(&line[..b]), g_count(&line[..b + p.token.len()])));
            }
        }
        spans
    }

    fn placeholder_ending_at(&self, row: usize, col: usize) -> Option<usize> {
        self.placeholder_spans(row)
            .into_iter()
            .find(|&(s, e)| e == col && s < col)
            .map(|(s, _)| s)
    }

    fn placeholder_starting_at(&self, row: usize, col: usize) -> Option<usize> {
        self.placeholder_spans(row)
            .into_iter()
            .find(|&(s, e)| s == col && e > col)
            .map(|(_, e)| e)
    }

    /// Move the cursor out of a placeholder it landed inside (to its end).
    fn snap(&mut self) {
        if let Some((_, e)) = self
            .placeholder_spans(self.row)
            .into_iter()
            .find(|&(s, e)| s < self.col && self.col < e)
        {
            self.col = e;
        }
    }

    /// Forget pastes whose placeholder is no longer in the text.
    fn prune_pastes(&mut self) {
        if self.pastes.is_empty() {
            return;
        }
        let text = self.text();
        self.pastes.retain(|p| text.contains(&p.token));
    }

    // ---- editing primitives ----

    /// Remove graphemes `[start, end)` of `row`; the cursor goes to `start`.
    fn remove_cols(&mut self, row: usize, start: usize, end: usize) {
        let line = &mut self.lines[row];
        let bs = g_byte(line, start);
        let be = g_byte(line, end);
        line.replace_range(bs..be, "");
        self.row = row;
        self.col = g_count(&line[..bs]);
    }

    /// Join line `row + 1` onto `row`; the cursor goes to the seam.
    fn join_next(&mut self, row: usize) {
        if row + 1 >= self.lines.len() {
            return;
        }
        let next = self.lines.remove(row + 1);
        let line = &mut self.lines[row];
        let seam = line.len();
        line.push_str(&next);
        self.row = row;
        self.col = g_count(&line[..seam]);
    }

    /// Insert text without newlines at the cursor.
    fn insert_inline(&mut self, s: &str) {
        let line = &mut self.lines[self.row];
        let b = g_byte(line, self.col);
        line.insert_str(b, s);
        self.col = g_count(&line[..b + s.len()]);
    }

    /// Insert already-cleaned text (may hold `\n`) at the cursor.
    fn insert_clean(&mut self, s: &str) {
        self.goal = None;
        let mut parts = s.split('\n');
        let first = parts.next().unwrap_or("");
        let mut rest: Vec<String> = parts.map(str::to_string).collect();
        let Some(last) = rest.last_mut() else {
            self.insert_inline(first);
            return;
        };
        let line = &mut self.lines[self.row];
        let b = g_byte(line, self.col);
        let tail = line.split_off(b);
        line.push_str(first);
        let seam = last.len();
        last.push_str(&tail);
        let col = g_count(&last[..seam]);
        let n = rest.len();
        let at = self.row + 1;
        self.lines.splice(at..at, rest);
        self.row += n;
        self.col = col;
    }

    // ---- typing ----

    /// Type one character. `\n`/`\r` start a new line; other control
    /// characters except `\t` are ignored.
    pub fn insert_char(&mut self, c: char) {
        if c == '\n' || c == '\r' {
            self.newline();
            return;
        }
        if (c.is_control() && c != '\t') || is_bidi_control(c) {
            return;
        }
        self.goal = None;
        let mut buf = [0u8; 4];
        self.insert_inline(c.encode_utf8(&mut buf));
    }

    /// Insert text at the cursor; line ends are normalised and control
    /// characters other than `\n` and `\t` dropped.
    pub fn insert_str(&mut self, s: &str) {
        let clean = clean_text(s);
        self.insert_clean(&clean);
    }

    pub fn newline(&mut self) {
        self.goal = None;
        let line = &mut self.lines[self.row];
        let b = g_byte(line, self.col);
        let tail = line.split_off(b);
        self.lines.insert(self.row + 1, tail);
        self.row += 1;
        self.col = 0;
    }

    /// Replace the chars from `start_char` up to the cursor on the current
    /// line with `replacement` (for accepting a completion).
    pub fn replace_before_cursor(&mut self, start_char: usize, replacement: &str) {
        self.goal = None;
        let line = &self.lines[self.row];
        let end = g_byte(line, self.col);
        let start = line
            .char_indices()
            .nth(start_char)
            .map_or(line.len(), |(i, _)| i);
        if start > end {
            return;
        }
        let line = &mut self.lines[self.row];
        line.replace_range(start..end, "");
        self.col = g_count(&line[..start]);
        self.prune_pastes();
        self.insert_str(replacement);
    }

    /// Paste text at the cursor. Line ends are normalised, escape
    /// sequences and control characters (but `\n`, `\t`) dropped. Binary
    /// data is refused; large text is collapsed to a placeholder.
    pub fn paste(&mut self, text: &str) -> PasteOutcome {
        if looks_binary(text) {
            return PasteOutcome::Rejected("binary paste ignored".to_string());
        }
        let clean = clean_text(text);
        if clean.is_empty() {
            return PasteOutcome::Inserted;
        }
        let lines = clean.trim_end_matches('\n').split('\n').count();
        let chars = clean.chars().count();
        if lines <= PASTE_COLLAPSE_LINES && chars <= PASTE_COLLAPSE_CHARS {
            self.insert_clean(&clean);
            return PasteOutcome::Inserted;
        }
        self.goal = None;
        self.paste_seq += 1;
        let token = if lines > 1 {
            format!("[Pasted text #{} +{} lines]", self.paste_seq, lines)
        } else {
            format!("[Pasted text #{} {} chars]", self.paste_seq, chars)
        };
        self.insert_inline(&token);
        self.pastes.push(Paste {
            token: token.clone(),
            content: clean,
        });
        PasteOutcome::Collapsed { placeholder: token }
    }

    // ---- deleting ----

    /// Delete the grapheme (or whole placeholder) before the cursor; at the
    /// start of a line, join it onto the previous one.
    pub fn backspace(&mut self) {
        self.goal = None;
        if self.col > 0 {
            let start = self
                .placeholder_ending_at(self.row, self.col)
                .unwrap_or(self.col - 1);
            self.remove_cols(self.row, start, self.col);
            self.prune_pastes();
        } else if self.row > 0 {
            self.join_next(self.row - 1);
        }
    }

    /// Delete the grapheme (or whole placeholder) under the cursor; at the
    /// end of a line, join the next one onto it.
    pub fn delete(&mut self) {
        self.goal = None;
        if self.col < self.line_len(self.row) {
            let end = self
                .placeholder_starting_at(self.row, self.col)
                .unwrap_or(self.col + 1);
            self.remove_cols(self.row, self.col, end);
            self.prune_pastes();
        } else {
            self.join_next(self.row);
        }
    }

    /// Ctrl+W: delete the word before the cursor (and the blanks after it).
    pub fn delete_word_left(&mut self) {
        if self.col == 0 {
            self.backspace();
            return;
        }
        self.goal = None;
        let start = self.word_left_target();
        self.remove_cols(self.row, start, self.col);
        self.prune_pastes();
    }

    /// Alt+D: delete up to the end of the next word.
    pub fn delete_word_right(&mut self) {
        if self.col >= self.line_len(self.row) {
            self.delete();
            return;
        }
        self.goal = None;
        let end = self.word_right_target();
        self.remove_cols(self.row, self.col, end);
        self.prune_pastes();
    }

    /// Ctrl+K: delete to the end of the line; at the end, join the next.
    pub fn kill_to_end(&mut self) {
        self.goal = None;
        let len = self.line_len(self.row);
        if self.col < len {
            self.remove_cols(self.row, self.col, len);
            self.prune_pastes();
        } else {
            self.join_next(self.row);
        }
    }

    /// Ctrl+U: delete to the start of the line; at the start, join onto
    /// the previous line.
    pub fn kill_to_start(&mut self) {
        self.goal = None;
        if self.col > 0 {
            self.remove_cols(self.row, 0, self.col);
            self.prune_pastes();
        } else if self.row > 0 {
            self.join_next(self.row - 1);
        }
    }

    /// The wrapped rows and the cursor's `(row, col)` among them. When the
    /// cursor sits at the end of a row that fills the width, it goes to an
    /// extra empty row below so it stays inside the box.
    fn layout(&self, width: u16) -> (Vec<String>, (u16, u16)) {
        let width = usize::from(width.max(1));
        let mut rows = Vec::new();
        let mut cursor = (0usize, 0usize);
        for (li, line) in self.lines.iter().enumerate() {
            let wrapped = wrap_line(line, width);
            let last = wrapped.len() - 1;
            for (k, &(start, end, w)) in wrapped.iter().enumerate() {
                let here = li == self.row
                    && start <= self.col
                    && (self.col < end || (k == last && self.col == end));
                if here {
                    let x: usize = line
                        .graphemes(true)
                        .skip(start)
                        .take(self.col - start)
                        .map(g_width)
                        .sum();
                    cursor = (rows.len(), x);
                }
                rows.push(render_graphemes(line, start, end));
                if here && k == last && self.col == end && w >= width {
                    cursor = (rows.len(), 0);
                    rows.push(String::new());
                }
            }
        }
        (rows, (to_u16(cursor.0), to_u16(cursor.1)))
    }

    /// The logical lines wrapped to `width` display columns (tabs drawn as
    /// spaces). Includes an empty last row when the cursor needs one.
    pub fn visual_lines(&self, width: u16) -> Vec<String> {
        self.layout(width).0
    }

    /// The cursor's `(row, col)` within [`Editor::visual_lines`].
    pub fn cursor_position(&self, width: u16) -> (u16, u16) {
        self.layout(width).1
    }

    /// Rows the text needs at `width`, between 1 and `max`.
    pub fn desired_height(&self, width: u16, max: u16) -> u16 {
        to_u16(self.layout(width).0.len()).clamp(1, max.max(1))
    }

    /// The first visual row to draw in a box `height` rows tall so the
    /// cursor stays visible (the view follows the cursor's row).
    pub fn scroll_offset(&self, width: u16, height: u16) -> u16 {
        let (row, _) = self.cursor_position(width);
        row.saturating_sub(height.max(1) - 1)
    }
}

#[cfg(test)]
mod tests;
