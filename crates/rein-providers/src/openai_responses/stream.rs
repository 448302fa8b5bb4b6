//! Reading a Responses event stream.

use std::collections::{BTreeMap, HashMap};

use rein_core::{FinishReason, ProviderError, StreamChunk, Usage};
use serde_json::{Value, json};

use super::{ErrorInfo, index_field, str_of};
use crate::protocol::{StreamParser, cut_off};
use crate::sse::SseEvent;

/// What the parser knows about one output item.
#[derive(Debug, Default)]
struct Item {
    /// Text streamed so far, by content index (message items).
    text: BTreeMap<usize, String>,
    /// Reasoning text streamed so far (summary parts joined by blank lines).
    reasoning: String,
    /// The summary or content part the last reasoning delta belonged to.
    reasoning_part: Option<(bool, usize)>,
    /// The reasoning block was closed with a `ReasoningEnd`.
    reasoning_ended: bool,
    /// A tool call was started for this item.
    call_started: bool,
    call_has_id: bool,
    call_has_name: bool,
    /// Arguments streamed so far (function calls) or raw input collected
    /// (custom tool calls).
    arguments: String,
    /// A custom tool call: its input is sent as one JSON object at the end.
    custom: bool,
    /// The custom tool call's arguments were sent.
    custom_sent: bool,
}

/// Reads one Responses event stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesParser {
    items: BTreeMap<usize, Item>,
    /// Item id -> output index, for events from servers that omit the index.
    ids: HashMap<String, usize>,
    last_index: usize,
    /// The output index whose reasoning block is open in the assembler.
    open_reasoning: Option<usize>,
    /// Any text, reasoning or tool call was emitted.
    produced: bool,
    saw_call: bool,
    refused: bool,
    done: bool,
    error: Option<ProviderError>,
}

impl ResponsesParser {
    fn index(&mut self, data: &Value) -> usize {
        let index = index_field(data, "output_index").or_else(|| {
            str_of(data, "item_id")
                .or_else(|| data.get("item").and_then(|i| str_of(i, "id")))
                .and_then(|id| self.ids.get(id).copied())
        });
        let index = index.unwrap_or(self.last_index);
        self.last_index = index;
        index
    }

    fn item(&mut self, index: usize) -> &mut Item {
        self.items.entry(index).or_default()
    }

    /// Close a reasoning block of another item that is still open.
    fn close_other_reasoning(&mut self, index: usize, out: &mut Vec<StreamChunk>) {
        if let Some(open) = self.open_reasoning
            && open != index
        {
            self.open_reasoning = None;
            out.push(StreamChunk::ReasoningEnd {
                signature: None,
                encrypted: None,
                id: None,
            });
        }
    }

    fn text_delta(&mut self, index: usize, part: usize, delta: &str, out: &mut Vec<StreamChunk>) {
        if delta.is_empty() {
            return;
        }
        self.open_reasoning = None;
        self.item(index)
            .text
            .entry(part)
            .or_default()
            .push_str(delta);
        self.produced = true;
        out.push(StreamChunk::TextDelta(delta.to_string()));
    }

    /// The whole text of one content part: emit what the deltas missed.
    fn text_complete(&mut self, index: usize, part: usize, full: &str, out: &mut Vec<StreamChunk>) {
        let streamed = self
            .items
            .get(&index)
            .and_then(|i| i.text.get(&part))
            .map(String::as_str)
            .unwrap_or("");
        if let Some(rest) = missing_tail(streamed, full) {
            let rest = rest.to_string();
            self.text_delta(index, part, &rest, out);
        }
    }

    fn reasoning_delta(
        &mut self,
        index: usize,
        part: Option<(bool, usize)>,
        delta: &str,
        out: &mut Vec<StreamChunk>,
    ) {
        if delta.is_empty() {
            return;
        }
        self.close_other_reasoning(index, out);
        let item = self.item(index);
        let mut text = String::new();
        // A new summary part (or content part) starts a new paragraph.
        if part.is_some()
            && item.reasoning_part.is_some()
            && item.reasoning_part != part
            && !item.reasoning.is_empty()
        {
            text.push_str("\n\n");
        }
        if part.is_some() {
            item.reasoning_part = part;
        }
        text.push_str(delta);
        item.reasoning.push_str(&text);
        self.open_reasoning = Some(index);
        self.produced = true;
        out.push(StreamChunk::ReasoningDelta(text));
    }

    /// Start the tool call of an item, or fill in the id and name it lacked.
    fn call_start(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
        out: &mut Vec<StreamChunk>,
    ) {
        let id = id.filter(|s| !s.is_empty());
        let name = name.filter(|s| !s.is_empty());
        self.open_reasoning = None;
        self.saw_call = true;
        self.produced = true;
        let item = self.item(index);
        let new_id = id.filter(|_| !item.call_has_id);
        let new_name = name.filter(|_| !item.call_has_name);
        if item.call_started && new_id.is_none() && new_name.is_none() && arguments.is_empty() {
            return;
        }
        item.call_started = true;
        item.call_has_id |= new_id.is_some();
        item.call_has_name |= new_name.is_some();
        if !item.custom {
            item.arguments.push_str(arguments);
        }
        out.push(StreamChunk::ToolCallDelta {
            index,
            id: new_id.map(str::to_string),
            name: new_name.map(str::to_string),
            arguments: if item.custom {
                String::new()
            } else {
                arguments.to_string()
            },
        });
    }

    /// The whole arguments of a function call: emit what the deltas missed.
    fn arguments_complete(&mut self, index: usize, full: &str, out: &mut Vec<StreamChunk>) {
        let streamed = self
            .items
            .get(&index)
            .map(|i| i.arguments.as_str())
            .unwrap_or("");
        if let Some(rest) = missing_tail(streamed, full) {
            let rest = rest.to_string();
            self.call_start(index, None, None, &rest, out);
        }
    }

    /// Send a custom tool call's input as `{"input": ...}`, once.
    fn custom_complete(&mut self, index: usize, input: Option<&str>, out: &mut Vec<StreamChunk>) {
        let item = self.item(index);
        item.custom = true;
        if item.custom_sent {
            return;
        }
        if let Some(input) = input.filter(|s| !s.is_empty()) {
            item.arguments = input.to_string();
        }
        item.custom_sent = true;
        item.call_started = true;
        let arguments = json!({"input": item.arguments}).to_string();
        self.saw_call = true;
        self.produced = true;
        self.open_reasoning = None;
        out.push(StreamChunk::ToolCallDelta {
            index,
            id: None,
            name: None,
            arguments,
        });
    }

    fn item_added(&mut self, index: usize, item: &Value, out: &mut Vec<StreamChunk>) {
        if let Some(id) = str_of(item, "id") {
            self.ids.insert(id.to_string(), index);
        }
        match str_of(item, "type") {
            Some("function_call") => {
                let arguments = str_of(item, "arguments").unwrap_or("");
                self.call_start(
                    index,
                    str_of(item, "call_id"),
                    str_of(item, "name"),
                    arguments,
                    out,
                );
            }
            Some("custom_tool_call") => {
                self.item(index).custom = true;
                self.call_start(
                    index,
                    str_of(item, "call_id"),
                    str_of(item, "name"),
                    "",
                    out,
                );
                if let Some(input) = str_of(item, "input") {
                    self.item(index).arguments = input.to_string();
                }
            }
            _ => {}
        }
    }

    /// A finished item: add whatever its deltas did not deliver.
    fn item_done(&mut self, index: usize, item: &Value, out: &mut Vec<StreamChunk>) {
        match str_of(item, "type") {
            Some("message") => {
                let parts = item.get("content").and_then(Value::as_array);
                for (part, content) in parts.into_iter().flatten().enumerate() {
                    match str_of(content, "type") {
                        Some("output_text") => {
                            if let Some(text) = str_of(content, "text") {
                                self.text_complete(index, part, text, out);
                            }
                        }
                        Some("refusal") => {
                            self.refused = true;
                            if let Some(text) = str_of(content, "refusal") {
                                self.text_complete(index, part, text, out);
                            }
                        }
                        _ => {}
                    }
                }
            }
            Some("reasoning") => self.reasoning_done(index, item, out),
            Some("function_call") => {
                self.call_start(
                    index,
                    str_of(item, "call_id"),
                    str_of(item, "name"),
                    "",
                    out,
                );
                if let Some(arguments) = str_of(item, "arguments") {
                    self.arguments_complete(index, arguments, out);
                }
            }
            Some("custom_tool_call") => {
                self.item(index).custom = true;
                self.call_start(
                    index,
                    str_of(item, "call_id"),
                    str_of(item, "name"),
                    "",
                    out,
                );
                self.custom_complete(index, str_of(item, "input"), out);
            }
            _ => {}
        }
    }

    fn reasoning_done(&mut self, index: usize, item: &Value, out: &mut Vec<StreamChunk>) {
        let texts = |key: &str| -> String {
            item.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| str_of(p, "text"))
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        let mut full = texts("summary");
        if full.is_empty() {
            full = texts("content");
        }
        let streamed = self
            .items
            .get(&index)
            .map(|i| i.reasoning.as_str())
            .unwrap_or("");
        if let Some(rest) = missing_tail(streamed, &full) {
            let rest = rest.to_string();
            self.reasoning_delta(index, None, &rest, out);
        }
        let encrypted = str_of(item, "encrypted_content")
            .filter(|e| !e.is_empty())
            .map(str::to_string);
        let state = self.item(index);
        let has_text = !state.reasoning.is_empty();
        if state.reasoning_ended || (!has_text && encrypted.is_none()) {
            return;
        }
        state.reasoning_ended = true;
        if has_text && self.open_reasoning != Some(index) && encrypted.is_none() {
            // Text arrived after this block, so it is closed already and an
            // end marker would only add an empty block.
            return;
        }
        self.close_other_reasoning(index, out);
        self.open_reasoning = None;
        self.produced = true;
        out.push(StreamChunk::ReasoningEnd {
            signature: None,
            encrypted,
            id: str_of(item, "id").map(str::to_string),
        });
    }

    /// `response.completed`, `.incomplete` or `.failed` (or a whole
    /// non-streaming response): the end of the answer.
    pub(crate) fn terminal(
        &mut self,
        response: &Value,
        event_type: &str,
    ) -> Result<Vec<StreamChunk>, ProviderError> {
        let status = str_of(response, "status").unwrap_or("");
        if event_type == "response.failed"
            || status == "failed"
            || response.get("error").is_some_and(Value::is_object)
        {
            let info = response
                .get("error")
                .filter(|e| e.is_object())
                .map(ErrorInfo::from_object)
                .unwrap_or_default();
            let info = ErrorInfo {
                message: info
                    .message
                    .or_else(|| Some("the response failed".to_string())),
                ..info
            };
            return Err(self.fail(info.into_error()));
        }
        let mut out = Vec::new();
        if !self.produced {
            // Nothing was streamed: take the items of the final object.
            let output = response.get("output").and_then(Value::as_array);
            for (index, item) in output.into_iter().flatten().enumerate() {
                self.item_done(index, item, &mut out);
            }
        }
        self.close_custom_calls(&mut out);
        if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
            out.push(StreamChunk::Usage(usage_of(usage)));
        }
        let reason = if event_type == "response.incomplete" || status == "incomplete" {
            let why = response
                .get("incomplete_details")
                .and_then(|d| str_of(d, "reason"));
            match why {
                Some("content_filter") => FinishReason::ContentFilter,
                None | Some("max_output_tokens") | Some("max_tokens") => FinishReason::Length,
                Some(other) => FinishReason::Other(other.to_string()),
            }
        } else {
            self.natural_end()
        };
        self.done = true;
        out.push(StreamChunk::Done(reason));
        Ok(out)
    }

    fn natural_end(&self) -> FinishReason {
        if self.saw_call {
            FinishReason::ToolCalls
        } else if self.refused {
            FinishReason::ContentFilter
        } else {
            FinishReason::Stop
        }
    }

    /// Send the input of custom tool calls whose end never came.
    fn close_custom_calls(&mut self, out: &mut Vec<StreamChunk>) {
        let pending: Vec<usize> = self
            .items
            .iter()
            .filter(|(_, i)| i.custom && i.call_started && !i.custom_sent)
            .map(|(k, _)| *k)
            .collect();
        for index in pending {
            self.custom_complete(index, None, out);
        }
    }

    fn fail(&mut self, err: ProviderError) -> ProviderError {
        self.error = Some(err.clone());
        err
    }

    fn handle(
        &mut self,
        data: &Value,
        event_type: &str,
    ) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut out = Vec::new();
        match event_type {
            "response.output_text.delta" | "response.refusal.delta" => {
                if event_type == "response.refusal.delta" {
                    self.refused = true;
                }
                let index = self.index(data);
                let part = index_field(data, "content_index").unwrap_or(0);
                let delta = str_of(data, "delta").unwrap_or("");
                self.text_delta(index, part, delta, &mut out);
            }
            "response.output_text.done" | "response.refusal.done" => {
                let key = if event_type == "response.refusal.done" {
                    self.refused = true;
                    "refusal"
                } else {
                    "text"
                };
                let index = self.index(data);
                let part = index_field(data, "content_index").unwrap_or(0);
                if let Some(full) = str_of(data, key) {
                    self.text_complete(index, part, full, &mut out);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let index = self.index(data);
                let part = if event_type == "response.reasoning_summary_text.delta" {
                    (true, index_field(data, "summary_index").unwrap_or(0))
                } else {
                    (false, index_field(data, "content_index").unwrap_or(0))
                };
                let delta = str_of(data, "delta").unwrap_or("");
                self.reasoning_delta(index, Some(part), delta, &mut out);
            }
            "response.output_item.added" | "response.output_item.done" => {
                let index = self.index(data);
                if let Some(item) = data.get("item").filter(|i| i.is_object()) {
                    if event_type == "response.output_item.added" {
                        self.item_added(index, item, &mut out);
                    } else {
                        self.item_done(index, item, &mut out);
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                let index = self.index(data);
                let delta = str_of(data, "delta").unwrap_or("");
                if !delta.is_empty() {
                    self.call_start(index, None, None, delta, &mut out);
                }
            }
            "response.function_call_arguments.done" => {
                let index = self.index(data);
                if let Some(name) = str_of(data, "name") {
                    self.call_start(index, None, Some(name), "", &mut out);
                }
                if let Some(arguments) = str_of(data, "arguments") {
                    self.arguments_complete(index, arguments, &mut out);
                }
            }
            "response.custom_tool_call_input.delta" => {
                let index = self.index(data);
                let item = self.item(index);
                item.custom = true;
                if !item.custom_sent {
                    item.arguments.push_str(str_of(data, "delta").unwrap_or(""));
                }
            }
            "response.custom_tool_call_input.done" => {
                let index = self.index(data);
                self.custom_complete(index, str_of(data, "input"), &mut out);
            }
            "response.completed" | "response.done" | "response.incomplete" | "response.failed" => {
                let response = data.get("response").unwrap_or(&Value::Null);
                return self.terminal(response, event_type);
            }
            "error" => {
                let info = ErrorInfo::from_body(data).unwrap_or_default();
                return Err(self.fail(info.into_error()));
            }
            _ => {}
        }
        Ok(out)
    }
}

/// The part of `full` the stream has not delivered yet: all of it when
/// nothing came, the tail when what came is a prefix of it, else nothing.
fn missing_tail<'a>(streamed: &str, full: &'a str) -> Option<&'a str> {
    let rest = full.strip_prefix(streamed)?;
    (!rest.is_empty()).then_some(rest)
}

fn usage_of(usage: &Value) -> Usage {
    let n = |v: Option<&Value>, key: &str| v.and_then(|v| v.get(key)).and_then(Value::as_u64);
    Usage {
        input_tokens: n(Some(usage), "input_tokens").unwrap_or(0),
        output_tokens: n(Some(usage), "output_tokens").unwrap_or(0),
        cached_input_tokens: n(usage.get("input_tokens_details"), "cached_tokens").unwrap_or(0),
        reasoning_tokens: n(usage.get("output_tokens_details"), "reasoning_tokens").unwrap_or(0),
    }
}

impl StreamParser for ResponsesParser {
    fn on_event(&mut self, event: &SseEvent) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.done || self.error.is_some() {
            return Ok(Vec::new());
        }
        let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
            return Ok(Vec::new());
        };
        let event_type = match str_of(&data, "type") {
            Some(t) => t.to_string(),
            None => event.event.clone(),
        };
        self.handle(&data, &event_type)
    }

    fn finish(&mut self) -> Result<Vec<StreamChunk>, ProviderError> {
        if let Some(err) = &self.error {
            return Err(err.clone());
        }
        if self.done {
            return Ok(Vec::new());
        }
        // Only `response.completed` (or `.incomplete`, `.failed`) ends an
        // answer; without one the stream was cut off.
        Err(self.fail(cut_off(
            "Responses",
            "response.completed, .incomplete or .failed",
        )))
    }
}
