//! Keeping rein's own wording out of answers. When tool results go back
//! to the model as user text (see [`super::template::results_as_user_text`]),
//! a small model sometimes writes that wording back: a header such as "The
//! read_file call returned:" or the closing request to answer. Those lines
//! are the harness talking, not the model, and are dropped from the
//! answer as it streams.
//!
//! Text is released at once unless the line it is on could still become
//! one of those lines; such a line is held until it is known (a newline,
//! or the end of the answer), so streaming stays token by token for
//! everything else.

use super::template::RESULTS_CLOSING;

/// The streaming filter for one answer.
#[derive(Debug, Default)]
pub(crate) struct EchoFilter {
    /// Names of the offered tools (a header names one).
    tools: Vec<String>,
    /// The start of the current line, held while it could be harness
    /// wording.
    held: String,
    /// The current line was released already: the rest of it passes.
    passing: bool,
}

impl EchoFilter {
    pub(crate) fn new(tools: impl IntoIterator<Item = String>) -> Self {
        EchoFilter {
            tools: tools.into_iter().collect(),
            ..Default::default()
        }
    }

    /// Take generated text; returns what can be shown now.
    pub(crate) fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for piece in text.split_inclusive('\n') {
            let ends_line = piece.ends_with('\n');
            if self.passing {
                out.push_str(piece);
            } else {
                self.held.push_str(piece);
                if ends_line {
                    // The line is whole: drop it if it is ours.
                    if !self.is_harness_line(&self.held) {
                        out.push_str(&self.held);
                    }
                    self.held.clear();
                } else if !self.could_become_harness_line(&self.held) {
                    out.push_str(&std::mem::take(&mut self.held));
                    self.passing = true;
                }
            }
            if ends_line {
                self.passing = false;
            }
        }
        out
    }

    /// The answer ended: what is still held, unless it is ours.
    pub(crate) fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        if self.is_harness_line(&held) {
            String::new()
        } else {
            held
        }
    }

    /// "The <tool> call[ <arguments>] returned:" (or "failed:"), or the
    /// closing request, alone on a line.
    fn is_harness_line(&self, line: &str) -> bool {
        let line = line.trim();
        if line == RESULTS_CLOSING {
            return true;
        }
        let Some(rest) = line.strip_prefix("The ") else {
            return false;
        };
        let names_a_call = self.tools.iter().any(|t| {
            rest.strip_prefix(t.as_str())
                .is_some_and(|r| r.starts_with(" call"))
        });
        names_a_call && (line.ends_with(" returned:") || line.ends_with(" failed:"))
    }

    /// Whether more text on this line could still make it a harness line.
    fn could_become_harness_line(&self, start: &str) -> bool {
        let start = start.trim_start();
        if start.is_empty() || RESULTS_CLOSING.starts_with(start) {
            return true;
        }
        // A header: "The ", a tool's name, " call", then its arguments.
        if "The ".starts_with(start) {
            return true;
        }
        let Some(rest) = start.strip_prefix("The ") else {
            return false;
        };
        self.tools.iter().any(|t| {
            let head = format!("{t} call");
            head.starts_with(rest) || (rest.starts_with(&head) && rest.len() < 4096)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter() -> EchoFilter {
        EchoFilter::new(["read_file".to_string(), "bash".to_string()])
    }

    /// Feed `pieces` one by one; the text shown after each, and at the end.
    fn run(pieces: &[&str]) -> (Vec<String>, String) {
        let mut f = filter();
        let shown: Vec<String> = pieces.iter().map(|p| f.push(p)).collect();
        let end = f.finish();
        (shown, end)
    }

    #[test]
    fn a_header_and_the_closing_request_written_back_are_dropped() {
        let (shown, end) = run(&[
            "The read",
            "_file call returned:\n",
            "```\nPORT=8080\n```\n",
            "Now answer my question in plain text, ",
            "unless you need to call another tool first.",
        ]);
        let all = format!("{}{end}", shown.concat());
        assert_eq!(all, "```\nPORT=8080\n```\n");
        assert_eq!(shown[0], "", "held while it could be a header");
    }

    #[test]
    fn a_header_with_arguments_or_a_failure_is_dropped_too() {
        let (shown, end) = run(&[
            "The bash call {\"command\": \"ls\"} failed:\n",
            "The port is 8080.",
        ]);
        assert_eq!(format!("{}{end}", shown.concat()), "The port is 8080.");
    }

    #[test]
    fn ordinary_text_streams_at_once_even_when_it_starts_alike() {
        let (shown, end) = run(&["The ", "port", " is 8080.\n", "Now", " done."]);
        assert_eq!(shown, ["", "The port", " is 8080.\n", "", "Now done."]);
        assert_eq!(end, "");
        // A sentence that only mentions a call is the model's own.
        let (shown, end) = run(&["The read_file call shows the port.\n"]);
        assert_eq!(
            format!("{}{end}", shown.concat()),
            "The read_file call shows the port.\n"
        );
    }

    #[test]
    fn a_held_line_that_ends_the_answer_is_released_unless_it_is_ours() {
        let mut f = filter();
        assert_eq!(f.push("Now answer"), "");
        assert_eq!(f.finish(), "Now answer");
        let mut f = filter();
        assert_eq!(f.push(RESULTS_CLOSING), "");
        assert_eq!(f.finish(), "");
    }
}
