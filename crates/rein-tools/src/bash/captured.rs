//! Command output kept in bounded memory: its head and its tail.

use std::collections::VecDeque;

/// Output kept in bounded memory: the first `head_cap` bytes and a rolling
/// window of the last `tail_cap`, counting what falls out between them.
pub(crate) struct Captured {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: u64,
    dropped_lines: u64,
    total: u64,
}

impl Captured {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        Captured {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            dropped: 0,
            dropped_lines: 0,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.len() >= self.tail_cap {
            let keep_from = data.len() - self.tail_cap;
            self.drop_bytes(
                self.tail.len() as u64,
                self.tail.iter().filter(|&&b| b == b'\n').count(),
            );
            self.tail.clear();
            let skipped = &data[..keep_from];
            self.drop_bytes(
                skipped.len() as u64,
                skipped.iter().filter(|&&b| b == b'\n').count(),
            );
            self.tail.extend(&data[keep_from..]);
        } else {
            self.tail.extend(data);
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            if excess > 0 {
                let lines = self.tail.range(..excess).filter(|&&b| b == b'\n').count();
                self.tail.drain(..excess);
                self.drop_bytes(excess as u64, lines);
            }
        }
    }

    fn drop_bytes(&mut self, bytes: u64, lines: usize) {
        self.dropped += bytes;
        self.dropped_lines += lines as u64;
    }

    /// The text kept, with a line saying how much was cut from the middle.
    /// Cuts fall on UTF-8 boundaries; invalid bytes are shown lossily.
    pub(crate) fn render(self) -> String {
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if self.dropped == 0 {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        let head_keep = complete_utf8_len(&head);
        let tail_skip = tail
            .iter()
            .take(3)
            .take_while(|&&b| b & 0xC0 == 0x80)
            .count();
        let cut = self.dropped + (head.len() - head_keep) as u64 + tail_skip as u64;
        head.truncate(head_keep);
        tail.drain(..tail_skip);
        let head = String::from_utf8_lossy(&head);
        let tail = String::from_utf8_lossy(&tail);
        let sep = if head.ends_with('\n') { "" } else { "\n" };
        format!(
            "{head}{sep}[... {cut} bytes ({} lines) cut from the middle of {} bytes of output ...]\n{tail}",
            self.dropped_lines, self.total
        )
    }
}

/// Length of the longest prefix of `b` that does not end inside a UTF-8
/// sequence.
fn complete_utf8_len(b: &[u8]) -> usize {
    let n = b.len();
    for back in 1..=n.min(4) {
        let i = n - back;
        let c = b[i];
        if c & 0xC0 == 0x80 {
            continue;
        }
        let need = match c {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if back < need { i } else { n };
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Captured::new(4, 4);
        c.push(b"abc");
        c.push(b"de");
        assert_eq!(c.render(), "abcde");
    }

    #[test]
    fn big_output_keeps_head_and_tail_and_counts_the_cut() {
        let mut c = Captured::new(4, 4);
        for chunk in [&b"0123"[..], b"4\n6", b"789a", b"bcdef"] {
            c.push(chunk);
        }
        let out = c.render();
        assert_eq!(
            out,
            "0123\n[... 8 bytes (1 lines) cut from the middle of 16 bytes of output ...]\ncdef"
        );
    }

    #[test]
    fn cuts_never_split_a_character() {
        let mut c = Captured::new(5, 5);
        c.push("éééééééééé".as_bytes());
        let out = c.render();
        assert!(out.starts_with("éé\n[..."), "{out}");
        assert!(out.ends_with("\néé"), "{out}");
        assert!(!out.contains('\u{FFFD}'), "{out}");
    }

    #[test]
    fn utf8_prefix_stops_before_an_incomplete_sequence() {
        assert_eq!(complete_utf8_len("aé".as_bytes()), 3);
        assert_eq!(complete_utf8_len(&"aé".as_bytes()[..2]), 1);
        assert_eq!(complete_utf8_len(b"abc"), 3);
        assert_eq!(complete_utf8_len(&"€".as_bytes()[..2]), 0);
    }
}
