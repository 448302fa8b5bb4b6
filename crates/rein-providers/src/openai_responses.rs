//! The OpenAI Responses wire API (`POST /responses`), as served by OpenAI and
//! by compatible endpoints (DeepSeek, GitHub Copilot, proxies).
//!
//! # Requests
//!
//! rein is stateless towards the service: every request sets `store: false`
//! and replays the whole conversation as `input` items. The system prompt
//! goes to `instructions`. Reasoning that the service returned encrypted
//! (`encrypted_content`, asked for with `include:
//! ["reasoning.encrypted_content"]` on every request, except for the
//! non-reasoning models that reject it) is replayed as a
//! `reasoning` item so the model keeps its chain of thought across turns;
//! reasoning without encrypted content (DeepSeek's plain reasoning text,
//! other providers' thinking) is not sent back. Tools are flat `function`
//! tools with `strict: false`: the API defaults to strict schemas, which
//! rein's tool schemas do not promise to satisfy.
//!
//! # Streams
//!
//! Events are read by the `type` inside their data (some servers send no
//! `event:` line). Everything is keyed by `output_index`, never by item id:
//! some servers (GitHub Copilot) send a fresh `item_id` on every event. The
//! `.done` events and `response.output_item.done` carry whole values; they
//! only add what the deltas did not already deliver (all of it when no delta
//! came, the missing tail when the deltas were a prefix), so nothing is
//! duplicated. When a stream carries no output events at all, the items of
//! the final `response` object are used instead.
//!
//! Freeform `custom_tool_call` items (tools whose input is free text) are
//! mapped to ordinary tool calls whose arguments are the JSON object
//! `{"input": "<the raw input>"}`, so the engine sees and answers the call
//! instead of it vanishing. A refusal (`response.refusal.*`) is shown as
//! text and ends the answer with `FinishReason::ContentFilter`.
//!
//! Events that are not JSON (a `[DONE]` marker, say) and event types rein
//! has no use for (lifecycle, built-in tools, annotations, audio...) are
//! ignored.

use std::collections::{BTreeMap, HashMap};

use rein_core::{
    ContentPart, FinishReason, Message, ModelRequest, ProviderError, ProviderErrorKind,
    StreamChunk, Usage,
};
use serde_json::{Map, Value, json};

use crate::protocol::{EndpointConfig, StreamParser, WireProtocol, WireRequest, kind_for_status};
use crate::sse::SseEvent;

/// The OpenAI Responses wire protocol (`kind() == "openai-responses"`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiResponses;

impl WireProtocol for OpenAiResponses {
    fn kind(&self) -> &'static str {
        "openai-responses"
    }

    fn build_request(&self, req: &ModelRequest, endpoint: &EndpointConfig) -> WireRequest {
        let mut headers = Vec::new();
        if let Some(key) = endpoint.api_key.as_deref().filter(|k| !k.is_empty()) {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(endpoint.model));
        body.insert("stream".into(), json!(true));
        body.insert("store".into(), json!(false));
        if returns_encrypted_reasoning(&endpoint.model) {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        if !req.system.is_empty() {
            body.insert("instructions".into(), json!(req.system));
        }
        body.insert("input".into(), Value::Array(input_items(&req.messages)));
        if !req.tools.is_empty() {
            let tools: Vec<Value> = req
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                        "strict": false,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(max) = req.max_output_tokens.or(endpoint.max_output_tokens) {
            body.insert("max_output_tokens".into(), json!(max));
        }
        WireRequest {
            path: "/responses".to_string(),
            headers,
            body: Value::Object(body),
        }
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(ResponsesParser::default())
    }

    fn parse_response(&self, body: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
        let response = match body.get("response") {
            Some(r) if r.is_object() => r,
            _ => body,
        };
        let known = response.get("output").is_some_and(Value::is_array)
            || response.get("status").is_some_and(Value::is_string)
            || response.get("error").is_some_and(Value::is_object);
        if !known {
            return Err(ProviderError::new(
                ProviderErrorKind::Protocol,
                format!(
                    "the answer is not a Responses API response object: {}",
                    truncate(&body.to_string(), 300)
                ),
            ));
        }
        let mut parser = ResponsesParser::default();
        parser.terminal(response, "")
    }

    fn parse_error(&self, status: u16, body: &str) -> ProviderError {
        let head = match reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
        {
            Some(reason) => format!("{status} {reason}"),
            None => status.to_string(),
        };
        let mut kind = kind_for_status(status);
        let detail = match serde_json::from_str::<Value>(body) {
            Ok(v) => ErrorInfo::from_body(&v),
            Err(_) => None,
        };
        let text = match detail {
            Some(info) => {
                if info.is_context_length() {
                    kind = ProviderErrorKind::ContextLengthExceeded;
                } else if info.is_quota() {
                    kind = ProviderErrorKind::Auth;
                }
                info.describe()
            }
            None => truncate(body.trim(), 300),
        };
        let message = if text.is_empty() {
            head
        } else {
            format!("{head}: {text}")
        };
        let mut err = ProviderError::new(kind, message);
        err.status = Some(status);
        err
    }
}

/// Whether `include: ["reasoning.encrypted_content"]` may be sent for
/// `model`. OpenAI refuses it with a 400 ("Encrypted content is not supported
/// with this model") for models that do not reason: the GPT-3.5/GPT-4
/// families, `chatgpt-*` and the `*-chat` variants. Every other model gets
/// it, so new reasoning models work without a change here.
fn returns_encrypted_reasoning(model: &str) -> bool {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    !(name.starts_with("gpt-3")
        || name.starts_with("gpt-4")
        || name.starts_with("chatgpt")
        || name.contains("-chat"))
}

/// The `input` items for a conversation, in order.
fn input_items(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        match message {
            Message::System { content } => items.push(json!({
                "role": "system",
                "content": [{"type": "input_text", "text": content}],
            })),
            Message::User { content } => items.push(json!({
                "role": "user",
                "content": [{"type": "input_text", "text": content}],
            })),
            Message::Assistant(assistant) => {
                // Consecutive text parts share one message item.
                let mut texts: Vec<Value> = Vec::new();
                for part in &assistant.content {
                    if let ContentPart::Text { text } = part {
                        if !text.is_empty() {
                            texts.push(json!({"type": "output_text", "text": text}));
                        }
                        continue;
                    }
                    flush_assistant_text(&mut texts, &mut items);
                    match part {
                        ContentPart::Reasoning(block) => {
                            // Only OpenAI reasoning can be replayed: it is
                            // encrypted and has no (Anthropic) signature.
                            let Some(encrypted) = &block.encrypted else {
                                continue;
                            };
                            if block.signature.is_some() {
                                continue;
                            }
                            let mut item = Map::new();
                            item.insert("type".into(), json!("reasoning"));
                            if let Some(id) = &block.id {
                                item.insert("id".into(), json!(id));
                            }
                            let summary = if block.text.is_empty() {
                                json!([])
                            } else {
                                json!([{"type": "summary_text", "text": block.text}])
                            };
                            item.insert("summary".into(), summary);
                            item.insert("encrypted_content".into(), json!(encrypted));
                            items.push(Value::Object(item));
                        }
                        ContentPart::ToolCall(call) => {
                            let arguments = if call.arguments.trim().is_empty() {
                                "{}"
                            } else {
                                call.arguments.as_str()
                            };
                            items.push(json!({
                                "type": "function_call",
                                "call_id": call.id,
                                "name": call.name,
                                "arguments": arguments,
                            }));
                        }
                        ContentPart::Text { .. } => {}
                    }
                }
                flush_assistant_text(&mut texts, &mut items);
            }
            Message::Tool(result) => {
                let output = if result.is_error
                    && !result.output.to_ascii_lowercase().starts_with("error")
                {
                    format!("Error: {}", result.output)
                } else {
                    result.output.clone()
                };
                items.push(json!({
                    "type": "function_call_output",
                    "call_id": result.call_id,
                    "output": output,
                }));
            }
        }
    }
    items
}

fn flush_assistant_text(texts: &mut Vec<Value>, items: &mut Vec<Value>) {
    if texts.is_empty() {
        return;
    }
    items.push(json!({
        "type": "message",
        "role": "assistant",
        "content": std::mem::take(texts),
    }));
}

/// At most `max` characters of `s`.
fn truncate(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn index_field(v: &Value, key: &str) -> Option<usize> {
    v.get(key)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
}

/// A string or number field as text (`code` is a number on some servers).
fn code_of(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// What an error object said.
#[derive(Debug, Default)]
struct ErrorInfo {
    message: Option<String>,
    code: Option<String>,
    kind: Option<String>,
    /// HTTP status given inside the event (WebSocket-style errors).
    status: Option<u16>,
}

impl ErrorInfo {
    /// From `{"error": {...}}`, a flat `{code, message}` object, an
    /// `{"error": "text"}` or a list holding one of those.
    fn from_body(v: &Value) -> Option<ErrorInfo> {
        if let Some(first) = v.as_array().and_then(|a| a.first()) {
            return ErrorInfo::from_body(first);
        }
        if !v.is_object() {
            return None;
        }
        let info = match v.get("error") {
            Some(Value::String(s)) => ErrorInfo {
                message: Some(s.clone()),
                ..Default::default()
            },
            Some(inner @ Value::Object(_)) => ErrorInfo::from_object(inner),
            _ => ErrorInfo::from_object(v),
        };
        let info = ErrorInfo {
            status: v
                .get("status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok()),
            ..info
        };
        (info.message.is_some() || info.code.is_some() || info.kind.is_some()).then_some(info)
    }

    fn from_object(v: &Value) -> ErrorInfo {
        let message = str_of(v, "message")
            .or_else(|| str_of(v, "detail"))
            .filter(|m| !m.is_empty())
            .map(str::to_string);
        ErrorInfo {
            message,
            code: code_of(v, "code"),
            kind: code_of(v, "type").filter(|t| t != "error"),
            status: None,
        }
    }

    fn is_code(&self, wanted: &[&str]) -> bool {
        [&self.code, &self.kind]
            .into_iter()
            .flatten()
            .any(|c| wanted.contains(&c.as_str()))
    }

    fn is_quota(&self) -> bool {
        self.is_code(&["insufficient_quota"])
    }

    fn is_context_length(&self) -> bool {
        if self.is_code(&["context_length_exceeded"]) {
            return true;
        }
        let message = self.message.as_deref().unwrap_or("").to_ascii_lowercase();
        message.contains("maximum context length") || message.contains("context window")
    }

    /// The kind of an error the service reported inside a stream.
    fn stream_kind(&self) -> ProviderErrorKind {
        if self.is_context_length() {
            ProviderErrorKind::ContextLengthExceeded
        } else if self.is_quota() {
            ProviderErrorKind::Auth
        } else if self.is_code(&[
            "rate_limit_exceeded",
            "rate_limit_error",
            "server_error",
            "server_is_overloaded",
            "overloaded_error",
            "service_unavailable",
            "service_unavailable_error",
            "internal_error",
            "api_error",
            "slow_down",
        ]) {
            ProviderErrorKind::Unavailable
        } else if let Some(status) = self.status {
            kind_for_status(status)
        } else {
            ProviderErrorKind::Stream
        }
    }

    /// The message, with a note when retrying cannot help.
    fn describe(&self) -> String {
        let base = match (&self.message, &self.code, &self.kind) {
            (Some(m), _, _) => m.clone(),
            (None, Some(c), _) | (None, None, Some(c)) => format!("error {c}"),
            (None, None, None) => "the service reported an error".to_string(),
        };
        if self.is_quota() {
            format!(
                "{base} (insufficient quota: retrying will not help until the account's plan or billing is fixed)"
            )
        } else {
            base
        }
    }

    fn into_error(self) -> ProviderError {
        let mut err = ProviderError::new(self.stream_kind(), self.describe());
        err.status = self.status;
        err
    }
}

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
struct ResponsesParser {
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
    fn terminal(
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
        let mut out = Vec::new();
        self.close_custom_calls(&mut out);
        if !self.produced {
            return Err(self.fail(ProviderError::new(
                ProviderErrorKind::Protocol,
                "the Responses stream ended without any output or a completion event",
            )));
        }
        self.done = true;
        out.push(StreamChunk::Done(self.natural_end()));
        Ok(out)
    }
}
