//! Turning generated text into stream chunks: text as it comes, tool calls
//! once recognised.

use rein_core::{StreamChunk, ToolCall, ToolSpec};

use super::echo::EchoFilter;
use super::holdback::{Holdback, Segment};
use super::toolcall::parse_tool_calls;

/// The chunks of one answer, built from its text piece by piece.
#[derive(Debug)]
pub(crate) struct OutputBuilder {
    /// Drops rein's own wording written back by the model.
    echo: EchoFilter,
    holdback: Holdback,
    offered: Vec<ToolSpec>,
    /// Whitespace not shown yet: it is dropped when a tool call or the end
    /// follows, so an answer renders back the way it was generated.
    blank: String,
    calls: usize,
    /// (name, arguments) of the calls made so far.
    seen: Vec<(String, String)>,
    /// A call repeated one made earlier in this answer (small models loop).
    repeated: bool,
    /// The start of a call that was cut off or cannot be read (a
    /// `<tool_call>` whose body never completed): never shown as text.
    broken: Option<String>,
}

impl OutputBuilder {
    pub(crate) fn new(offered: &[ToolSpec]) -> Self {
        OutputBuilder {
            echo: EchoFilter::new(offered.iter().map(|t| t.name.clone())),
            holdback: Holdback::default(),
            offered: offered.to_vec(),
            blank: String::new(),
            calls: 0,
            seen: Vec::new(),
            repeated: false,
            broken: None,
        }
    }

    /// Add generated text; returns the chunks it releases.
    pub(crate) fn push(&mut self, text: &str) -> Vec<StreamChunk> {
        let text = self.echo.push(text);
        let segments = self.holdback.push(&text);
        self.convert(segments)
    }

    /// Whether the model repeated a call of this answer: the repeat was
    /// dropped, and generating further is a loop.
    pub(crate) fn repeated(&self) -> bool {
        self.repeated
    }

    /// The answer ended: the chunks left, whether it made tool calls, and
    /// the start of a call it began and never completed (or that cannot
    /// be read), if any.
    pub(crate) fn finish(mut self) -> (Vec<StreamChunk>, bool, Option<String>) {
        let tail = self.echo.finish();
        let mut chunks = self.push_past_echo(&tail);
        let holdback = std::mem::take(&mut self.holdback);
        let segments = holdback.finish();
        chunks.extend(self.convert(segments));
        (chunks, self.calls > 0, self.broken)
    }

    /// Whether a candidate that holds no call is one begun and broken: it
    /// opens a `<tool_call>` tag, or is JSON naming an offered tool.
    fn is_broken_call(&self, text: &str) -> bool {
        let text = text.trim_start();
        if text.starts_with("<tool_call>") {
            return true;
        }
        let names_tool = |t: &ToolSpec| {
            let compact: String = text.split_whitespace().collect();
            compact.starts_with(&format!("{{\"name\":\"{}\"", t.name))
        };
        text.starts_with('{') && self.offered.iter().any(names_tool)
    }

    fn push_past_echo(&mut self, text: &str) -> Vec<StreamChunk> {
        let segments = self.holdback.push(text);
        self.convert(segments)
    }

    fn convert(&mut self, segments: Vec<Segment>) -> Vec<StreamChunk> {
        let mut out = Vec::new();
        for segment in segments {
            match segment {
                Segment::Text(text) => self.text(&text, &mut out),
                Segment::Candidate(text) => {
                    let (rest, calls) = parse_tool_calls(&text, &self.offered);
                    if calls.is_empty() && self.is_broken_call(&text) {
                        let start: String = text.trim().chars().take(120).collect();
                        self.broken.get_or_insert(start);
                        continue;
                    }
                    if calls.is_empty() {
                        self.text(&text, &mut out);
                        continue;
                    }
                    self.blank.clear();
                    self.text(&rest, &mut out);
                    self.blank.clear();
                    for call in calls {
                        let key = (call.name.clone(), call.arguments.clone());
                        if self.seen.contains(&key) {
                            self.repeated = true;
                            continue;
                        }
                        self.seen.push(key);
                        self.calls += 1;
                        out.push(StreamChunk::ToolCall(ToolCall {
                            id: format!("call_{}", self.calls),
                            ..call
                        }));
                    }
                }
            }
        }
        out
    }

    fn text(&mut self, text: &str, out: &mut Vec<StreamChunk>) {
        let body = text.trim_end();
        if body.is_empty() {
            self.blank.push_str(text);
            return;
        }
        let mut shown = std::mem::take(&mut self.blank);
        shown.push_str(body);
        self.blank.push_str(&text[body.len()..]);
        out.push(StreamChunk::TextDelta(shown));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "read_file".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }]
    }

    fn run(pieces: &[&str]) -> (Vec<StreamChunk>, bool) {
        let mut b = OutputBuilder::new(&offered());
        let mut out = Vec::new();
        for p in pieces {
            out.extend(b.push(p));
        }
        let (rest, calls, _) = b.finish();
        out.extend(rest);
        (out, calls)
    }

    #[test]
    fn text_streams_and_trailing_blanks_are_dropped() {
        let (out, calls) = run(&["Hello", " world", "\n\n"]);
        assert_eq!(
            out,
            vec![
                StreamChunk::TextDelta("Hello".into()),
                StreamChunk::TextDelta(" world".into())
            ]
        );
        assert!(!calls);
    }

    #[test]
    fn calls_become_chunks_with_numbered_ids() {
        let (out, calls) = run(&[
            "Let me look.\n",
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
            "\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}\n</tool_call>",
        ]);
        assert!(calls);
        assert_eq!(
            out,
            vec![
                StreamChunk::TextDelta("Let me look.".into()),
                StreamChunk::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"a"}"#.into()
                }),
                StreamChunk::ToolCall(ToolCall {
                    id: "call_2".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"b"}"#.into()
                }),
            ]
        );
    }

    #[test]
    fn a_repeated_call_is_dropped_and_flagged() {
        let call = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n";
        let mut b = OutputBuilder::new(&offered());
        let first = b.push(call);
        assert_eq!(first.len(), 1);
        assert!(!b.repeated());
        assert!(b.push(call).is_empty());
        assert!(b.repeated());
        let (rest, calls, broken) = b.finish();
        assert!(rest.is_empty() && calls && broken.is_none());
    }

    #[test]
    fn a_candidate_that_is_no_call_is_shown_as_text() {
        let (out, calls) = run(&["x\n", "{\"name\": \"other\"}", " y"]);
        assert!(!calls);
        let text: String = out
            .iter()
            .map(|c| match c {
                StreamChunk::TextDelta(t) => t.clone(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(text, "x\n{\"name\": \"other\"} y");
    }

    /// A call the repetition stop (or the token limit) cut off is never
    /// text for the user: it is reported as broken.
    #[test]
    fn a_cut_call_is_reported_and_never_shown_as_text() {
        for cut in [
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"pa",
            "{\"name\": \"read_file\", \"arguments\": {\"path\": ",
        ] {
            let mut b = OutputBuilder::new(&offered());
            let mut out = b.push("Checking.\n");
            out.extend(b.push(cut));
            let (rest, calls, broken) = b.finish();
            out.extend(rest);
            assert!(!calls);
            assert!(broken.unwrap().contains("read_file"), "{cut}");
            let shown: Vec<&StreamChunk> = out
                .iter()
                .filter(|c| matches!(c, StreamChunk::TextDelta(t) if t.contains("name")))
                .collect();
            assert!(shown.is_empty(), "{out:?}");
        }
    }
}
