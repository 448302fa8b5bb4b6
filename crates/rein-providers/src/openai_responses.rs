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
//! ignored. Only `response.completed`, `.incomplete` or `.failed` ends an
//! answer: a stream that stops before one was cut off and fails with a
//! retryable transport error.

mod stream;

use rein_core::{
    ContentPart, Image, Message, ModelRequest, ProviderError, ProviderErrorKind, StreamChunk,
};
use serde_json::{Map, Value, json};

use crate::protocol::{EndpointConfig, StreamParser, WireProtocol, WireRequest, kind_for_status};
use stream::ResponsesParser;

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
        if req.tool_choice.forces_call(&req.tools) {
            body.insert("tool_choice".into(), json!("required"));
        }
        if req.single_tool_call && !req.tools.is_empty() {
            body.insert("parallel_tool_calls".into(), json!(false));
        }
        if let Some(schema) = &req.answer_schema {
            let mut format = crate::openai_chat::answer_format(schema);
            format.insert("type".into(), json!("json_schema"));
            body.insert("text".into(), json!({ "format": format }));
        }
        if let Some(t) = req.temperature {
            body.insert("temperature".into(), json!(t));
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
            Message::User { content, images } => {
                let mut parts = vec![json!({"type": "input_text", "text": content})];
                parts.extend(images.iter().map(input_image));
                items.push(json!({"role": "user", "content": parts}));
            }
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
                // Images go with the text as the output's content parts.
                let output = if result.images.is_empty() {
                    json!(output)
                } else {
                    let mut parts = vec![json!({"type": "input_text", "text": output})];
                    parts.extend(result.images.iter().map(input_image));
                    Value::Array(parts)
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

/// An image as an `input_image` content part (a data URL), in a user
/// message or a tool's output.
fn input_image(image: &Image) -> Value {
    json!({"type": "input_image", "image_url": image.data_url()})
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
