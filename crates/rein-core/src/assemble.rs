//! Builds an `AssistantMessage` from streamed chunks, whatever mix of
//! fragments and whole parts a provider sends.
//!
//! With a cap on arguments ([`AssistantAssembler::with_args_cap`]), a call's
//! arguments are kept up to one byte past the cap and the rest is dropped as
//! it arrives: memory stays bounded whatever the model streams, and the gate
//! still sees that the call was too big.

use std::collections::HashMap;

use crate::schema::{AssistantMessage, ContentPart, FinishReason, StreamChunk, ToolCall, Usage};

/// Accumulates chunks of one model answer.
#[derive(Debug, Default)]
pub struct AssistantAssembler {
    parts: Vec<ContentPart>,
    /// Tool-call stream index -> position in `parts`.
    calls_by_index: HashMap<usize, usize>,
    /// Position of the reasoning block still receiving deltas.
    open_reasoning: Option<usize>,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    /// Bytes of arguments kept per call, past which the rest is dropped
    /// (`None`: no cap).
    args_cap: Option<usize>,
    /// The most bytes of arguments one call was sent, once over the cap.
    oversized: Option<usize>,
}

impl AssistantAssembler {
    /// An assembler that keeps at most `cap + 1` bytes of each call's
    /// arguments (enough for the gate to see they are over `cap`).
    pub fn with_args_cap(cap: usize) -> Self {
        AssistantAssembler {
            args_cap: Some(cap),
            ..Default::default()
        }
    }

    /// Bytes a call's arguments reached once one passed the cap.
    pub fn oversized_call(&self) -> Option<usize> {
        self.oversized
    }

    /// Keep `call`'s arguments within the cap, remembering how big they got.
    fn bound(&mut self, arguments: &mut String, arriving: usize) {
        let Some(cap) = self.args_cap else { return };
        if arguments.len() <= cap {
            return;
        }
        let seen = self
            .oversized
            .unwrap_or(0)
            .max(arguments.len())
            .max(arriving);
        self.oversized = Some(seen);
        let keep = crate::text::ceil_boundary(arguments, cap + 1);
        arguments.truncate(keep);
        arguments.shrink_to_fit();
    }

    /// Add one chunk. Returns true when the answer is complete.
    pub fn push(&mut self, chunk: StreamChunk) -> bool {
        match chunk {
            StreamChunk::TextDelta(text) => {
                if text.is_empty() {
                    return false;
                }
                self.open_reasoning = None;
                if let Some(ContentPart::Text { text: last }) = self.parts.last_mut() {
                    last.push_str(&text);
                } else {
                    self.parts.push(ContentPart::Text { text });
                }
            }
            StreamChunk::ReasoningDelta(text) => {
                if text.is_empty() {
                    return false;
                }
                match self.open_reasoning.and_then(|i| self.parts.get_mut(i)) {
                    Some(ContentPart::Reasoning(block)) => block.text.push_str(&text),
                    _ => {
                        self.open_reasoning = Some(self.parts.len());
                        self.parts
                            .push(ContentPart::Reasoning(crate::schema::ReasoningBlock {
                                text,
                                ..Default::default()
                            }));
                    }
                }
            }
            StreamChunk::ReasoningEnd {
                signature,
                encrypted,
                id,
            } => {
                let block = match self
                    .open_reasoning
                    .take()
                    .and_then(|i| self.parts.get_mut(i))
                {
                    Some(ContentPart::Reasoning(block)) => block,
                    _ => {
                        self.parts.push(ContentPart::Reasoning(
                            crate::schema::ReasoningBlock::default(),
                        ));
                        match self.parts.last_mut() {
                            Some(ContentPart::Reasoning(block)) => block,
                            _ => return false,
                        }
                    }
                };
                if signature.is_some() {
                    block.signature = signature;
                }
                if encrypted.is_some() {
                    block.encrypted = encrypted;
                }
                if id.is_some() {
                    block.id = id;
                }
            }
            StreamChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments,
            } => self.push_call_delta(index, id, name, &arguments),
            StreamChunk::ToolCall(mut call) => {
                self.open_reasoning = None;
                let arriving = call.arguments.len();
                self.bound(&mut call.arguments, arriving);
                self.parts.push(ContentPart::ToolCall(call));
            }
            StreamChunk::Usage(usage) => self.usage = Some(usage),
            // Progress is shown, never part of the answer.
            StreamChunk::Progress(_) => {}
            StreamChunk::Done(reason) => {
                self.finish = Some(reason);
                return true;
            }
        }
        false
    }

    fn push_call_delta(
        &mut self,
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: &str,
    ) {
        self.open_reasoning = None;
        let id = id.filter(|s| !s.is_empty());
        let name = name.filter(|s| !s.is_empty());
        if let Some(ContentPart::ToolCall(call)) = self
            .calls_by_index
            .get(&index)
            .and_then(|&pos| self.parts.get_mut(pos))
        {
            // A new id on an index that already holds a started call means
            // the server reused the index for a new call.
            let new_call = matches!(&id, Some(new) if !call.id.is_empty() && *new != call.id)
                && !call.arguments.is_empty();
            if !new_call {
                if call.id.is_empty()
                    && let Some(id) = id
                {
                    call.id = id;
                }
                if call.name.is_empty()
                    && let Some(name) = name
                {
                    call.name = name;
                }
                let before = call.arguments.len();
                let room = self
                    .args_cap
                    .map_or(usize::MAX, |cap| (cap + 1).saturating_sub(before));
                if room == 0 {
                    // Already over: count, keep nothing.
                    let seen = before.saturating_add(arguments.len());
                    self.oversized = Some(self.oversized.unwrap_or(0).max(seen));
                    return;
                }
                let take = if arguments.len() <= room {
                    arguments.len()
                } else {
                    crate::text::ceil_boundary(arguments, room)
                };
                let mut args = std::mem::take(&mut call.arguments);
                args.push_str(&arguments[..take]);
                let arriving = before.saturating_add(arguments.len());
                self.bound(&mut args, arriving);
                if let Some(ContentPart::ToolCall(call)) = self
                    .calls_by_index
                    .get(&index)
                    .and_then(|&pos| self.parts.get_mut(pos))
                {
                    call.arguments = args;
                }
                return;
            }
        }
        self.calls_by_index.insert(index, self.parts.len());
        let mut args = arguments.to_string();
        self.bound(&mut args, arguments.len());
        self.parts.push(ContentPart::ToolCall(ToolCall {
            id: id.unwrap_or_default(),
            name: name.unwrap_or_default(),
            arguments: args,
        }));
    }

    /// Whether anything visible was produced yet.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The message so far, without its tool calls (what survives a cancel:
    /// calls that never ran are not kept).
    pub fn partial(&self) -> AssistantMessage {
        AssistantMessage {
            content: self
                .parts
                .iter()
                .filter(|p| !matches!(p, ContentPart::ToolCall(_)))
                .cloned()
                .collect(),
            usage: self.usage,
            finish: None,
        }
    }

    /// The finished message. Calls without an id get one; empty arguments
    /// become `{}`.
    pub fn finish(self) -> AssistantMessage {
        let mut content = self.parts;
        let mut n = 0;
        for part in &mut content {
            if let ContentPart::ToolCall(call) = part {
                n += 1;
                if call.id.is_empty() {
                    call.id = format!("call_{n}");
                }
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_string();
                }
            }
        }
        let finish = self.finish.or_else(|| {
            Some(
                if content
                    .iter()
                    .any(|p| matches!(p, ContentPart::ToolCall(_)))
                {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                },
            )
        });
        AssistantMessage {
            content,
            usage: self.usage,
            finish,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> StreamChunk {
        StreamChunk::ToolCallDelta {
            index,
            id: id.map(str::to_string),
            name: name.map(str::to_string),
            arguments: args.to_string(),
        }
    }

    #[test]
    fn fragments_join_per_index_and_keep_first_id_and_name() {
        let mut a = AssistantAssembler::default();
        a.push(StreamChunk::TextDelta("Let me look.".into()));
        a.push(delta(0, Some("c1"), Some("read_file"), ""));
        a.push(delta(1, Some("c2"), Some("glob"), "{\"pat"));
        a.push(delta(0, None, Some(""), "{\"path\":"));
        a.push(delta(0, None, None, "\"a\"}"));
        a.push(delta(1, None, None, "tern\":\"*\"}"));
        assert!(a.push(StreamChunk::Done(FinishReason::ToolCalls)));
        let msg = a.finish();
        let calls: Vec<_> = msg.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].arguments, "{\"path\":\"a\"}");
        assert_eq!(calls[1].id, "c2");
        assert_eq!(calls[1].arguments, "{\"pattern\":\"*\"}");
        assert_eq!(msg.text(), "Let me look.");
    }

    #[test]
    fn missing_ids_and_empty_arguments_are_filled_in() {
        let mut a = AssistantAssembler::default();
        a.push(delta(3, None, Some("todo_write"), ""));
        let msg = a.finish();
        let call = msg.tool_calls().next().unwrap();
        assert_eq!(call.id, "call_1");
        assert_eq!(call.arguments, "{}");
        assert_eq!(msg.finish, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn reused_index_with_new_id_starts_a_new_call() {
        let mut a = AssistantAssembler::default();
        a.push(delta(0, Some("a"), Some("glob"), "{}"));
        a.push(delta(0, Some("b"), Some("grep"), "{}"));
        assert_eq!(a.finish().tool_calls().count(), 2);
    }

    #[test]
    fn reasoning_signature_closes_the_open_block() {
        let mut a = AssistantAssembler::default();
        a.push(StreamChunk::ReasoningDelta("hm".into()));
        a.push(StreamChunk::ReasoningDelta("m".into()));
        a.push(StreamChunk::ReasoningEnd {
            signature: Some("sig".into()),
            encrypted: None,
            id: None,
        });
        a.push(StreamChunk::ReasoningEnd {
            signature: None,
            encrypted: Some("opaque".into()),
            id: None,
        });
        a.push(StreamChunk::TextDelta("ok".into()));
        let msg = a.finish();
        let blocks: Vec<_> = msg.reasoning().collect();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].text, "hmm");
        assert_eq!(blocks[0].signature.as_deref(), Some("sig"));
        assert_eq!(blocks[1].encrypted.as_deref(), Some("opaque"));
        assert_eq!(msg.text(), "ok");
    }

    #[test]
    fn partial_drops_tool_calls_that_never_ran() {
        let mut a = AssistantAssembler::default();
        a.push(StreamChunk::TextDelta("half".into()));
        a.push(delta(0, Some("x"), Some("bash"), "{\"comm"));
        let p = a.partial();
        assert_eq!(p.text(), "half");
        assert!(!p.has_tool_calls());
    }
}
