//! Reading an Anthropic Messages event stream.

use std::collections::BTreeMap;

use rein_core::{FinishReason, ProviderError, ProviderErrorKind, StreamChunk, Usage};
use serde_json::Value;

use super::{event_error, finish_reason, index_of, inferred_finish, non_empty, snippet};
use crate::protocol::{StreamParser, cut_off};
use crate::sse::SseEvent;

/// Token counts as reported; a later report replaces a field it carries.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RawUsage {
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_creation: Option<u64>,
    output: Option<u64>,
}

impl RawUsage {
    pub(crate) fn merge(&mut self, usage: &Value) {
        let field = |k: &str| usage.get(k).and_then(Value::as_u64);
        if let Some(n) = field("input_tokens") {
            self.input = Some(n);
        }
        if let Some(n) = field("cache_read_input_tokens") {
            self.cache_read = Some(n);
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            self.cache_creation = Some(n);
        }
        if let Some(n) = field("output_tokens") {
            self.output = Some(n);
        }
    }

    pub(crate) fn known(&self) -> bool {
        self.input.is_some()
            || self.cache_read.is_some()
            || self.cache_creation.is_some()
            || self.output.is_some()
    }

    /// Input counts cache reads and cache writes too: Anthropic reports the
    /// three separately.
    pub(crate) fn usage(&self) -> Usage {
        let cache_read = self.cache_read.unwrap_or(0);
        Usage {
            input_tokens: self
                .input
                .unwrap_or(0)
                .saturating_add(cache_read)
                .saturating_add(self.cache_creation.unwrap_or(0)),
            output_tokens: self.output.unwrap_or(0),
            cached_input_tokens: cache_read,
            reasoning_tokens: 0,
        }
    }
}

/// A content block that has started and not yet stopped.
#[derive(Debug)]
enum Block {
    Text,
    Thinking {
        /// `signature_delta`s, given out when the block stops.
        signature: String,
        has_text: bool,
    },
    ToolUse {
        has_args: bool,
        /// The start event's `input` when not empty (compatible servers may
        /// send the whole input there), compact JSON.
        start_input: Option<String>,
    },
    /// Redacted thinking (given out at its start), server tools and block
    /// types rein does not know: their deltas are skipped.
    Skipped,
}

/// Reads one Anthropic Messages event stream; see the `anthropic` module docs
/// for how it treats streams that break the rules.
#[derive(Debug, Default)]
pub struct AnthropicStreamParser {
    /// A message (or any of its events) arrived.
    started: bool,
    /// `message_start` arrived.
    message_open: bool,
    message_id: Option<String>,
    /// Content chunks were given out.
    emitted: bool,
    blocks: BTreeMap<usize, Block>,
    saw_tool_use: bool,
    usage: RawUsage,
    finish: Option<FinishReason>,
    done: bool,
}

impl AnthropicStreamParser {
    /// A parser for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn message_start(&mut self, v: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
        let message = v.get("message");
        let id = message
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .and_then(non_empty);
        if self.message_open {
            let same = match (&self.message_id, &id) {
                (Some(open), Some(new)) => open == new,
                _ => true,
            };
            if same {
                return Ok(Vec::new());
            }
            if self.emitted {
                return Err(ProviderError::new(
                    ProviderErrorKind::Protocol,
                    format!(
                        "message {} started while message {} was still open: two answers \
                         were spliced into one stream",
                        id.unwrap_or_default(),
                        self.message_id.clone().unwrap_or_default()
                    ),
                ));
            }
            // Nothing was passed on yet: take the new message instead.
            *self = Self::default();
        }
        self.started = true;
        self.message_open = true;
        self.message_id = id;
        if let Some(u) = message.and_then(|m| m.get("usage")) {
            self.usage.merge(u);
        }
        Ok(Vec::new())
    }

    fn block_start(&mut self, v: &Value, out: &mut Vec<StreamChunk>) {
        let index = index_of(v);
        // Blocks do not overlap: one starting ends any reasoning still open
        // (its signature must close that block, not the next one).
        let open: Vec<usize> = self
            .blocks
            .iter()
            .filter(|(i, b)| **i != index && matches!(b, Block::Thinking { .. }))
            .map(|(i, _)| *i)
            .collect();
        for i in open {
            self.close_block(i, out);
        }
        let cb = v.get("content_block").cloned().unwrap_or(Value::Null);
        let text_of = |key: &str| cb.get(key).and_then(Value::as_str).unwrap_or_default();
        let block = match text_of("type") {
            "text" => {
                self.text(text_of("text"), out);
                Block::Text
            }
            "thinking" => {
                let text = text_of("thinking");
                self.reasoning(text, out);
                Block::Thinking {
                    signature: text_of("signature").to_string(),
                    has_text: !text.is_empty(),
                }
            }
            "redacted_thinking" => {
                if let Some(data) = non_empty(text_of("data")) {
                    self.emitted = true;
                    out.push(StreamChunk::ReasoningEnd {
                        signature: None,
                        encrypted: Some(data),
                        id: None,
                    });
                }
                Block::Skipped
            }
            "tool_use" => {
                self.saw_tool_use = true;
                self.emitted = true;
                out.push(StreamChunk::ToolCallDelta {
                    index,
                    id: non_empty(text_of("id")),
                    name: non_empty(text_of("name")),
                    arguments: String::new(),
                });
                let start_input = match cb.get("input") {
                    Some(Value::Object(m)) if !m.is_empty() => {
                        Some(Value::Object(m.clone()).to_string())
                    }
                    Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                    _ => None,
                };
                Block::ToolUse {
                    has_args: false,
                    start_input,
                }
            }
            _ => Block::Skipped,
        };
        self.blocks.insert(index, block);
    }

    fn block_delta(&mut self, v: &Value, out: &mut Vec<StreamChunk>) {
        let index = index_of(v);
        let delta = v.get("delta").cloned().unwrap_or(Value::Null);
        let text_of = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        // A delta counts for the block it belongs to, or for a block whose
        // start never came (it is then opened as that kind).
        match text_of("type") {
            "text_delta" => match self.blocks.get(&index) {
                Some(Block::Text) => self.text(text_of("text"), out),
                None => {
                    self.blocks.insert(index, Block::Text);
                    self.text(text_of("text"), out);
                }
                Some(_) => {}
            },
            "thinking_delta" => {
                let text = text_of("thinking");
                let has = !text.is_empty();
                match self.blocks.entry(index).or_insert(Block::Thinking {
                    signature: String::new(),
                    has_text: false,
                }) {
                    Block::Thinking { has_text, .. } => *has_text |= has,
                    _ => return,
                }
                self.reasoning(text, out);
            }
            "signature_delta" => {
                if let Block::Thinking { signature, .. } =
                    self.blocks.entry(index).or_insert(Block::Thinking {
                        signature: String::new(),
                        has_text: false,
                    })
                {
                    signature.push_str(text_of("signature"));
                }
            }
            "input_json_delta" => {
                let partial = text_of("partial_json");
                let entry = self.blocks.entry(index).or_insert_with(|| {
                    self.saw_tool_use = true;
                    Block::ToolUse {
                        has_args: false,
                        start_input: None,
                    }
                });
                if let Block::ToolUse { has_args, .. } = entry
                    && !partial.is_empty()
                {
                    *has_args = true;
                    self.emitted = true;
                    out.push(StreamChunk::ToolCallDelta {
                        index,
                        id: None,
                        name: None,
                        arguments: partial.to_string(),
                    });
                }
            }
            // citations_delta and anything newer.
            _ => {}
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<StreamChunk>) {
        if !text.is_empty() {
            self.emitted = true;
            out.push(StreamChunk::TextDelta(text.to_string()));
        }
    }

    fn reasoning(&mut self, text: &str, out: &mut Vec<StreamChunk>) {
        if !text.is_empty() {
            self.emitted = true;
            out.push(StreamChunk::ReasoningDelta(text.to_string()));
        }
    }

    /// End block `index`, giving out what it still owes: the reasoning
    /// signature, or `{}` for a tool whose input never came.
    fn close_block(&mut self, index: usize, out: &mut Vec<StreamChunk>) {
        match self.blocks.remove(&index) {
            Some(Block::Thinking {
                signature,
                has_text,
            }) if has_text || !signature.is_empty() => {
                self.emitted = true;
                out.push(StreamChunk::ReasoningEnd {
                    signature: non_empty(&signature),
                    encrypted: None,
                    id: None,
                });
            }
            Some(Block::ToolUse {
                has_args: false,
                start_input,
            }) => {
                out.push(StreamChunk::ToolCallDelta {
                    index,
                    id: None,
                    name: None,
                    arguments: start_input.unwrap_or_else(|| "{}".to_string()),
                });
            }
            _ => {}
        }
    }

    /// Close every open block, then usage and `Done`.
    fn end(&mut self) -> Vec<StreamChunk> {
        let mut out = Vec::new();
        let open: Vec<usize> = self.blocks.keys().copied().collect();
        for i in open {
            self.close_block(i, &mut out);
        }
        if self.usage.known() {
            out.push(StreamChunk::Usage(self.usage.usage()));
        }
        let finish = self
            .finish
            .take()
            .unwrap_or_else(|| inferred_finish(self.saw_tool_use));
        out.push(StreamChunk::Done(finish));
        self.done = true;
        out
    }
}

impl StreamParser for AnthropicStreamParser {
    fn on_event(&mut self, event: &SseEvent) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let v: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(_) if event.event == "error" => {
                return Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    format!("stream error: {}", snippet(data)),
                ));
            }
            Err(e) => {
                return Err(ProviderError::new(
                    ProviderErrorKind::Protocol,
                    format!("unreadable stream event ({e}): {}", snippet(data)),
                ));
            }
        };
        let kind = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        let mut out = Vec::new();
        match kind {
            "message_start" => return self.message_start(&v),
            "content_block_start" => {
                self.started = true;
                self.block_start(&v, &mut out);
            }
            "content_block_delta" => {
                self.started = true;
                self.block_delta(&v, &mut out);
            }
            "content_block_stop" => {
                self.started = true;
                self.close_block(index_of(&v), &mut out);
            }
            "message_delta" => {
                self.started = true;
                if let Some(reason) = v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.finish = Some(finish_reason(reason));
                }
                if let Some(u) = v.get("usage") {
                    self.usage.merge(u);
                }
            }
            "message_stop" => return Ok(self.end()),
            "error" => return Err(event_error(&v)),
            // ping, and event types added later.
            _ => {}
        }
        Ok(out)
    }

    /// The end of the answer is `message_stop`. A stream cut after the
    /// `message_delta` that carries `stop_reason` is complete too: every
    /// block is closed by then and only `message_stop` is missing.
    fn finish(&mut self) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish.is_none() {
            return Err(cut_off("Anthropic", "stop_reason or message_stop"));
        }
        Ok(self.end())
    }
}
