//! Reading a streamed Chat Completions answer.

use std::collections::HashMap;

use rein_core::{FinishReason, ProviderError, ProviderErrorKind, StreamChunk, Usage};
use serde_json::Value;

use super::{
    arguments_text, choice_index, content_text, final_finish, find_usage, finish_reason,
    first_chars, in_band_error, protocol_error, push_text, reasoning_chunks, str_field,
};
use crate::protocol::{StreamParser, cut_off};
use crate::sse::SseEvent;

/// Reads one streamed answer.
#[derive(Debug, Default)]
pub(crate) struct ChatStreamParser {
    /// A choice or usage arrived.
    answered: bool,
    /// `Done` was sent; later events are ignored.
    done: bool,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// A non-empty refusal was streamed.
    refused: bool,
    calls: CallSlots,
}

impl StreamParser for ChatStreamParser {
    fn on_event(&mut self, event: &SseEvent) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        let data = event.data.trim();
        let is_error_event = event.event == "error";
        if data.is_empty() {
            if is_error_event {
                return Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    "the service reported an error without details",
                ));
            }
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            if !self.answered {
                return Err(protocol_error("the stream ended before any answer"));
            }
            return Ok(self.end());
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(_) if is_error_event => {
                return Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    first_chars(data, 300).to_string(),
                ));
            }
            Err(e) => {
                return Err(protocol_error(format!(
                    "the server sent an event that is not JSON ({e}): {:?}",
                    first_chars(data, 100)
                )));
            }
        };
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            return Err(in_band_error(err));
        }
        if is_error_event {
            return Err(in_band_error(&value));
        }
        if !value.is_object() {
            return Err(protocol_error(format!(
                "the server sent an event that is not a JSON object: {:?}",
                first_chars(data, 100)
            )));
        }
        Ok(self.chunk(&value))
    }

    /// The end of the answer is `data: [DONE]` or a `finish_reason`
    /// (several compatible servers stop after it without `[DONE]`); a
    /// stream that stops before both was cut off.
    fn finish(&mut self) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.done {
            return Ok(Vec::new());
        }
        if self.finish.is_none() {
            return Err(cut_off("Chat Completions", "finish_reason or [DONE]"));
        }
        Ok(self.end())
    }
}

impl ChatStreamParser {
    fn chunk(&mut self, v: &Value) -> Vec<StreamChunk> {
        let mut out = Vec::new();
        let choice = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| choice_index(c) == 0));
        if let Some(usage) = find_usage(v, choice) {
            self.usage = Some(usage);
            self.answered = true;
        }
        let Some(choice) = choice else {
            return out;
        };
        self.answered = true;
        if let Some(delta) = choice.get("delta").filter(|d| d.is_object()) {
            reasoning_chunks(delta, &mut out);
            if let Some(text) = delta.get("content").and_then(content_text) {
                push_text(&mut out, text);
            }
            if let Some(refusal) = delta
                .get("refusal")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                self.refused = true;
                push_text(&mut out, refusal.to_string());
            }
            for fragment in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.extend(self.calls.fragment(fragment));
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(reason));
        }
        out
    }

    /// Held usage, then `Done`.
    fn end(&mut self) -> Vec<StreamChunk> {
        self.done = true;
        let mut out = Vec::new();
        if let Some(usage) = self.usage.take() {
            out.push(StreamChunk::Usage(usage));
        }
        let finish = final_finish(
            self.finish.take(),
            !self.calls.slots.is_empty(),
            self.refused,
        );
        out.push(StreamChunk::Done(finish));
        out
    }
}

/// The tool calls of one answer, in the order they started.
#[derive(Debug, Default)]
struct CallSlots {
    slots: Vec<Slot>,
    /// Wire `index` -> slot.
    by_index: HashMap<u64, usize>,
}

#[derive(Debug, Default)]
struct Slot {
    id: String,
    name: String,
}

impl CallSlots {
    /// The chunk for one wire fragment, keyed by slot number (0, 1, ...),
    /// whatever the server's `index` was; `None` when it adds nothing.
    fn fragment(&mut self, fragment: &Value) -> Option<StreamChunk> {
        let wire_index = fragment.get("index").and_then(Value::as_u64);
        let id = str_field(fragment, "id");
        let function = fragment.get("function");
        let name = function.and_then(|f| str_field(f, "name"));
        let arguments = function
            .and_then(|f| f.get("arguments"))
            .map(arguments_text)
            .unwrap_or_default();
        let existing = match wire_index {
            Some(i) => self.by_index.get(&i).copied().filter(|&slot| {
                // A different id on an index in use is a new call.
                match (id, self.slots.get(slot)) {
                    (Some(new), Some(s)) => s.id.is_empty() || s.id == new,
                    _ => true,
                }
            }),
            None => match id {
                Some(new) => self.slots.iter().rposition(|s| s.id == new),
                None => self.slots.len().checked_sub(1),
            },
        };
        let (slot, fresh) = match existing {
            Some(slot) => (slot, false),
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1, true)
            }
        };
        if let Some(i) = wire_index {
            self.by_index.insert(i, slot);
        }
        let entry = self.slots.get_mut(slot)?;
        let mut new_id = None;
        if let Some(id) = id
            && entry.id.is_empty()
        {
            entry.id = id.to_string();
            new_id = Some(entry.id.clone());
        }
        let mut new_name = None;
        if let Some(name) = name
            && entry.name.is_empty()
        {
            entry.name = name.to_string();
            new_name = Some(entry.name.clone());
        }
        if !fresh && new_id.is_none() && new_name.is_none() && arguments.is_empty() {
            return None;
        }
        Some(StreamChunk::ToolCallDelta {
            index: slot,
            id: new_id,
            name: new_name,
            arguments,
        })
    }
}
