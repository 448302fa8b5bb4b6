//! Moving the cursor: by grapheme, by word, by line, home and end.

use super::*;

impl Editor {
    // ---- moving ----

    pub fn left(&mut self) {
        self.goal = None;
        if self.col > 0 {
            self.col = self
                .placeholder_ending_at(self.row, self.col)
                .unwrap_or(self.col - 1);
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.line_len(self.row);
        }
    }

    pub fn right(&mut self) {
        self.goal = None;
        if self.col < self.line_len(self.row) {
            self.col = self
                .placeholder_starting_at(self.row, self.col)
                .unwrap_or(self.col + 1);
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// Move to the previous logical line; false (and no move) on the first
    /// line, so the caller can step through history instead.
    pub fn up(&mut self) -> bool {
        if self.row == 0 {
            return false;
        }
        let goal = *self.goal.get_or_insert(self.col);
        self.row -= 1;
        self.col = goal.min(self.line_len(self.row));
        self.snap();
        true
    }

    /// Move to the next logical line; false (and no move) on the last line.
    pub fn down(&mut self) -> bool {
        if self.row + 1 >= self.lines.len() {
            return false;
        }
        let goal = *self.goal.get_or_insert(self.col);
        self.row += 1;
        self.col = goal.min(self.line_len(self.row));
        self.snap();
        true
    }

    pub fn home(&mut self) {
        self.goal = None;
        self.col = 0;
    }

    pub fn end(&mut self) {
        self.goal = None;
        self.col = self.line_len(self.row);
    }

    pub(super) fn word_left_target(&self) -> usize {
        let gs: Vec<&str> = self.lines[self.row].graphemes(true).collect();
        let mut i = self.col.min(gs.len());
        while i > 0 && class(gs[i - 1]) == Class::Space {
            i -= 1;
        }
        if let Some(s) = self.placeholder_ending_at(self.row, i) {
            return s;
        }
        if i > 0 {
            let c = class(gs[i - 1]);
            while i > 0 && class(gs[i - 1]) == c {
                i -= 1;
            }
        }
        i
    }

    pub(super) fn word_right_target(&self) -> usize {
        let gs: Vec<&str> = self.lines[self.row].graphemes(true).collect();
        let mut i = self.col.min(gs.len());
        while i < gs.len() && class(gs[i]) == Class::Space {
            i += 1;
        }
        if let Some(e) = self.placeholder_starting_at(self.row, i) {
            return e;
        }
        if i < gs.len() {
            let c = class(gs[i]);
            while i < gs.len() && class(gs[i]) == c {
                i += 1;
            }
        }
        i
    }

    /// To the start of the word before the cursor (or the end of the
    /// previous line when at the start of one).
    pub fn word_left(&mut self) {
        self.goal = None;
        if self.col == 0 {
            self.left();
        } else {
            self.col = self.word_left_target();
        }
    }

    /// To the end of the word after the cursor (or the start of the next
    /// line when at the end of one).
    pub fn word_right(&mut self) {
        self.goal = None;
        if self.col >= self.line_len(self.row) {
            self.right();
        } else {
            self.col = self.word_right_target();
        }
    }

    // ---- rendering ----
}
