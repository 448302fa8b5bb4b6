//! Splitting streamed model text into text that can be shown at once and
//! stretches that may be tool calls.
//!
//! Text is released as soon as it cannot be part of a call. From the moment
//! it could start one (`<tool_call>`, a ```` ``` ```` fence, or `{` opening a
//! line) it is held until the stretch is complete (closing tag, closing
//! fence, balanced braces) and then handed over whole as a candidate, for
//! [`super::toolcall::parse_tool_calls`] to decide. A fence in another
//! language is released at once, its body included.

use super::toolcall::is_json_fence;

const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
const FENCE: &str = "```";

/// One piece of the output, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// Plain text, safe to show.
    Text(String),
    /// A complete stretch that may hold tool calls.
    Candidate(String),
}

/// The streaming splitter.
#[derive(Debug)]
pub(crate) struct Holdback {
    /// Text not released yet.
    pending: String,
    /// Only blanks since the last newline before `pending` (or nothing at
    /// all was written yet).
    line_start: bool,
    /// Inside a fenced block in another language: only its closing fence
    /// matters.
    in_code: bool,
}

impl Default for Holdback {
    fn default() -> Self {
        Holdback {
            pending: String::new(),
            line_start: true,
            in_code: false,
        }
    }
}

/// What to do with the candidate starting a stretch.
enum Decision {
    /// Not a candidate after all: release this many bytes as text.
    Release(usize),
    /// A complete candidate of this many bytes.
    Candidate(usize),
    /// A fence in another language whose opening line has this many bytes.
    Code(usize),
    /// Cannot tell yet.
    Wait,
}

impl Holdback {
    /// Add newly generated text; returns what can be released now.
    pub(crate) fn push(&mut self, text: &str) -> Vec<Segment> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        self.drain(false, &mut out);
        out
    }

    /// The generation ended: release everything left.
    pub(crate) fn finish(mut self) -> Vec<Segment> {
        let mut out = Vec::new();
        self.drain(true, &mut out);
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            out.push(Segment::Candidate(rest));
        }
        out
    }

    fn release(&mut self, len: usize, out: &mut Vec<Segment>, candidate: bool) {
        let piece: String = self.pending.drain(..len).collect();
        if piece.is_empty() {
            return;
        }
        match piece
            .chars()
            .rev()
            .find(|c| !matches!(c, ' ' | '\t' | '\r'))
        {
            Some('\n') => self.line_start = true,
            Some(_) => self.line_start = false,
            None => {}
        }
        if candidate {
            out.push(Segment::Candidate(piece));
        } else if let Some(Segment::Text(prev)) = out.last_mut() {
            prev.push_str(&piece);
        } else {
            out.push(Segment::Text(piece));
        }
    }

    fn drain(&mut self, at_end: bool, out: &mut Vec<Segment>) {
        loop {
            if self.pending.is_empty() {
                return;
            }
            if self.in_code {
                if let Some(i) = self.pending.find(FENCE) {
                    self.in_code = false;
                    self.release(i + FENCE.len(), out, false);
                    continue;
                }
                // Keep a trailing "`" or "``" that may grow into the fence.
                let keep = if at_end {
                    0
                } else if self.pending.ends_with("``") {
                    2
                } else if self.pending.ends_with('`') {
                    1
                } else {
                    0
                };
                let len = self.pending.len() - keep;
                self.release(len, out, false);
                return;
            }
            let Some((start, decision)) = self.next_candidate(at_end) else {
                let len = self.pending.len();
                self.release(len, out, false);
                return;
            };
            self.release(start, out, false);
            match decision {
                Decision::Release(len) => self.release(len, out, false),
                Decision::Candidate(len) => self.release(len, out, true),
                Decision::Code(len) => {
                    self.release(len, out, false);
                    self.in_code = true;
                }
                Decision::Wait => return,
            }
        }
    }

    /// The first place in `pending` that may start a call, with what to do
    /// about it; None when nothing in it can.
    fn next_candidate(&self, at_end: bool) -> Option<(usize, Decision)> {
        let text = self.pending.as_str();
        let mut line_start = self.line_start;
        for (i, c) in text.char_indices() {
            let tail = &text[i..];
            let decision = match c {
                '<' => Some(decide_tag(tail, at_end)),
                '`' => Some(decide_fence(tail, at_end)),
                '{' if line_start => Some(decide_object(tail, at_end)),
                _ => None,
            };
            match decision {
                // Not a candidate: keep scanning past it.
                Some(Decision::Release(_)) | None => {}
                Some(d) => return Some((i, d)),
            }
            if c == '\n' {
                line_start = true;
            } else if !matches!(c, ' ' | '\t' | '\r') {
                line_start = false;
            }
        }
        None
    }
}

fn decide_tag(tail: &str, at_end: bool) -> Decision {
    if let Some(body) = tail.strip_prefix(OPEN_TAG) {
        return match body.find(CLOSE_TAG) {
            Some(end) => Decision::Candidate(OPEN_TAG.len() + end + CLOSE_TAG.len()),
            None if at_end => Decision::Candidate(tail.len()),
            None => Decision::Wait,
        };
    }
    if OPEN_TAG.starts_with(tail) && !at_end {
        return Decision::Wait;
    }
    Decision::Release(1)
}

fn decide_fence(tail: &str, at_end: bool) -> Decision {
    let Some(body) = tail.strip_prefix(FENCE) else {
        if FENCE.starts_with(tail) && !at_end {
            return Decision::Wait;
        }
        return Decision::Release(1);
    };
    let Some(nl) = body.find('\n') else {
        return if at_end {
            Decision::Candidate(tail.len())
        } else {
            Decision::Wait
        };
    };
    if !is_json_fence(body[..nl].trim()) {
        return Decision::Code(FENCE.len() + nl + 1);
    }
    let content = nl + 1;
    match body[content..].find(FENCE) {
        Some(end) => Decision::Candidate(FENCE.len() + content + end + FENCE.len()),
        None if at_end => Decision::Candidate(tail.len()),
        None => Decision::Wait,
    }
}

/// A `{` opening a line: a candidate until its braces balance, unless what
/// follows the brace cannot be a JSON object.
fn decide_object(tail: &str, at_end: bool) -> Decision {
    let after = tail[1..].trim_start();
    match after.chars().next() {
        None => {
            return if at_end {
                Decision::Candidate(tail.len())
            } else {
                Decision::Wait
            };
        }
        Some('"') | Some('}') => {}
        Some(_) => return Decision::Release(1),
    }
    match balanced_end(tail) {
        Some(end) => Decision::Candidate(end),
        None if at_end => Decision::Candidate(tail.len()),
        None => Decision::Wait,
    }
}

/// Byte length of the JSON value starting `text` once its brackets balance
/// (strings and escapes respected); None while it is still open.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `text` one char at a time; returns the segments, merged.
    fn run(text: &str) -> Vec<Segment> {
        run_pieces(&text.chars().map(String::from).collect::<Vec<_>>())
    }

    fn run_pieces(pieces: &[String]) -> Vec<Segment> {
        let mut h = Holdback::default();
        let mut out = Vec::new();
        for p in pieces {
            out.extend(h.push(p));
        }
        out.extend(h.finish());
        merge(out)
    }

    fn merge(segments: Vec<Segment>) -> Vec<Segment> {
        let mut out: Vec<Segment> = Vec::new();
        for s in segments {
            match (out.last_mut(), s) {
                (Some(Segment::Text(a)), Segment::Text(b)) => a.push_str(&b),
                (_, s) => out.push(s),
            }
        }
        out
    }

    fn text(s: &str) -> Segment {
        Segment::Text(s.into())
    }

    fn cand(s: &str) -> Segment {
        Segment::Candidate(s.into())
    }

    #[test]
    fn plain_text_is_released_as_it_comes() {
        let mut h = Holdback::default();
        assert_eq!(h.push("Hello "), vec![text("Hello ")]);
        assert_eq!(h.push("world, a < b."), vec![text("world, a < b.")]);
        assert_eq!(h.finish(), vec![]);
    }

    #[test]
    fn a_partial_tag_is_held_until_it_resolves() {
        let mut h = Holdback::default();
        assert_eq!(h.push("See <tool"), vec![text("See ")]);
        assert_eq!(h.push("box> here"), vec![text("<toolbox> here")]);
    }

    #[test]
    fn a_tagged_call_is_one_candidate() {
        let call = "<tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n</tool_call>";
        let out = run(&format!("Let me look.\n{call}\nafter"));
        assert_eq!(
            out,
            vec![text("Let me look.\n"), cand(call), text("\nafter")]
        );
    }

    #[test]
    fn an_unterminated_tag_is_a_candidate_at_the_end() {
        let out = run("<tool_call>\n{\"name\"");
        assert_eq!(out, vec![cand("<tool_call>\n{\"name\"")]);
    }

    #[test]
    fn json_fences_are_candidates_other_fences_are_released() {
        let block = "```json\n{\"a\": 1}\n```";
        assert_eq!(
            run(&format!("x\n{block}\ny")),
            vec![text("x\n"), cand(block), text("\ny")]
        );
        let code = "```rust\nfn main() {\n}\n```\n{\"name\": 1}";
        assert_eq!(
            run(code),
            vec![
                text("```rust\nfn main() {\n}\n```\n"),
                cand("{\"name\": 1}")
            ]
        );
        let mut h = Holdback::default();
        assert_eq!(h.push("```py"), vec![]);
        assert_eq!(h.push("thon\nx = {"), vec![text("```python\nx = {")]);
        assert_eq!(h.push("}\n``"), vec![text("}\n")]);
        assert_eq!(h.push("`\nok"), vec![text("```\nok")]);
    }

    #[test]
    fn inline_code_is_not_held() {
        assert_eq!(run("use `ls` here"), vec![text("use `ls` here")]);
    }

    #[test]
    fn objects_only_at_line_start_and_only_json_like() {
        assert_eq!(run("a {\"name\": 1} b"), vec![text("a {\"name\": 1} b")]);
        assert_eq!(
            run("ok\n  {\"name\": \"}\"} tail"),
            vec![text("ok\n  "), cand("{\"name\": \"}\"}"), text(" tail")]
        );
        assert_eq!(run("{x}\n"), vec![text("{x}\n")]);
    }

    #[test]
    fn multi_char_pieces_split_the_same_way() {
        let pieces: Vec<String> = [
            "Sure.",
            "\n<",
            "tool_call",
            ">\n{\"n",
            "\": 1}\n</",
            "tool_call>",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            run_pieces(&pieces),
            vec![
                text("Sure.\n"),
                cand("<tool_call>\n{\"n\": 1}\n</tool_call>")
            ]
        );
    }
}
