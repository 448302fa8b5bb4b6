//! The Anthropic Messages API (`POST /v1/messages`), streamed.
//!
//! Request side: the system prompt goes at the top level, tool results are
//! sent as `tool_result` blocks of a user message, consecutive user-side
//! messages are merged (the API wants user and assistant turns to
//! alternate), reasoning is replayed exactly as it was received (`thinking`
//! with its `signature`, `redacted_thinking` with its `data`), and three
//! prompt-cache breakpoints are set: system, tools and the newest message.
//!
//! Stream side: `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta` and `message_stop` become rein's chunks. Choices made for
//! streams that break the rules:
//!
//! - A second `message_start` for the message already open (same id, or no
//!   id to tell them apart) is ignored. One with a different id after
//!   content was already passed on means two streams were spliced together
//!   (a proxy retried mid-answer): chunks already delivered cannot be taken
//!   back, so the stream fails with a `Protocol` error rather than mixing
//!   two answers into one. Before any content arrived the new message simply
//!   replaces the old one.
//! - Usage from `message_delta` supersedes `message_start`, field by field
//!   (some compatible servers report the input tokens only there).
//! - Server tools (`server_tool_use`, `web_search_tool_result`, ...) are run
//!   by Anthropic itself: their blocks and deltas are skipped.
//! - A tool's input cut off by `max_tokens` is delivered as it is (invalid
//!   JSON) with finish `Length`; the engine reports the broken call.
//! - The stream ending before `message_stop` is a retryable transport
//!   failure (the connection was cut), unless the `message_delta` carrying
//!   `stop_reason` had arrived: then every block is closed and the answer
//!   is whole.

mod stream;

use rein_core::{
    AssistantMessage, ContentPart, FinishReason, Image, Message, ModelRequest, ProviderError,
    ProviderErrorKind, ReasoningBlock, StreamChunk, ToolCall, ToolResult,
};
use serde_json::{Map, Value, json};

use crate::protocol::{EndpointConfig, StreamParser, WireProtocol, WireRequest, kind_for_status};
pub use stream::AnthropicStreamParser;
use stream::RawUsage;

/// The `anthropic-version` header value sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when neither the request nor the endpoint sets one (the API
/// requires the field).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Stands in for an empty tool output: the API rejects empty `tool_result`
/// content.
const EMPTY_TOOL_OUTPUT: &str = "(no output)";

/// The Anthropic Messages wire protocol.
#[derive(Debug, Clone, Copy, Default)]
pub struct Anthropic;

impl WireProtocol for Anthropic {
    fn kind(&self) -> &'static str {
        "anthropic"
    }

    /// `max_tokens` is the request's cap, else the endpoint's, else
    /// [`DEFAULT_MAX_TOKENS`]. Headers the endpoint already sets itself
    /// (`x-api-key`, `anthropic-version`) are not sent twice.
    fn build_request(&self, req: &ModelRequest, endpoint: &EndpointConfig) -> WireRequest {
        let mut headers = Vec::new();
        let endpoint_sets = |name: &str| {
            endpoint
                .headers
                .keys()
                .any(|k| k.eq_ignore_ascii_case(name))
        };
        if let Some(key) = endpoint.api_key.as_deref().filter(|k| !k.is_empty())
            && !endpoint_sets("x-api-key")
        {
            headers.push(("x-api-key".to_string(), key.to_string()));
        }
        if !endpoint_sets("anthropic-version") {
            headers.push(("anthropic-version".to_string(), API_VERSION.to_string()));
        }

        let mut body = Map::new();
        body.insert("model".into(), json!(endpoint.model));
        let max_tokens = req
            .max_output_tokens
            .or(endpoint.max_output_tokens)
            .unwrap_or(DEFAULT_MAX_TOKENS);
        body.insert("max_tokens".into(), json!(max_tokens));
        body.insert("stream".into(), json!(true));

        let system = system_blocks(req);
        if !system.is_empty() {
            body.insert("system".into(), Value::Array(system));
        }
        if !req.tools.is_empty() {
            body.insert("tools".into(), Value::Array(tool_specs(req)));
        }
        if !req.tools.is_empty()
            && (req.tool_choice.forces_call(&req.tools) || req.single_tool_call)
        {
            let mut choice = Map::new();
            let kind = if req.tool_choice.forces_call(&req.tools) {
                "any"
            } else {
                "auto"
            };
            choice.insert("type".into(), json!(kind));
            if req.single_tool_call {
                choice.insert("disable_parallel_tool_use".into(), json!(true));
            }
            body.insert("tool_choice".into(), Value::Object(choice));
        }
        if let Some(schema) = &req.answer_schema {
            let format = json!({"type": "json_schema", "schema": schema.as_ref()});
            body.insert("output_config".into(), json!({ "format": format }));
        }
        if let Some(t) = req.temperature {
            body.insert("temperature".into(), json!(t));
        }
        body.insert("messages".into(), Value::Array(messages(&req.messages)));

        WireRequest {
            path: "/messages".into(),
            headers,
            body: Value::Object(body),
        }
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(AnthropicStreamParser::default())
    }

    fn parse_response(&self, body: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return Err(event_error(body));
        }
        let Some(content) = body.get("content").and_then(Value::as_array) else {
            return Err(ProviderError::new(
                ProviderErrorKind::Protocol,
                format!(
                    "not an Anthropic Messages response: {}",
                    snippet(&body.to_string())
                ),
            ));
        };
        let mut out = Vec::new();
        let mut saw_tool_use = false;
        for block in content {
            let text_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
            match block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "text" => {
                    let text = text_of("text");
                    if !text.is_empty() {
                        out.push(StreamChunk::TextDelta(text.to_string()));
                    }
                }
                "thinking" => {
                    let text = text_of("thinking");
                    let signature = text_of("signature");
                    if !text.is_empty() {
                        out.push(StreamChunk::ReasoningDelta(text.to_string()));
                    }
                    if !text.is_empty() || !signature.is_empty() {
                        out.push(StreamChunk::ReasoningEnd {
                            signature: non_empty(signature),
                            encrypted: None,
                            id: None,
                        });
                    }
                }
                "redacted_thinking" => {
                    if let Some(data) = non_empty(text_of("data")) {
                        out.push(StreamChunk::ReasoningEnd {
                            signature: None,
                            encrypted: Some(data),
                            id: None,
                        });
                    }
                }
                "tool_use" => {
                    saw_tool_use = true;
                    let arguments = match block.get("input") {
                        None | Some(Value::Null) => "{}".to_string(),
                        Some(Value::String(raw)) => raw.clone(),
                        Some(input) => input.to_string(),
                    };
                    out.push(StreamChunk::ToolCall(ToolCall {
                        id: text_of("id").to_string(),
                        name: text_of("name").to_string(),
                        arguments,
                    }));
                }
                // Server tools and anything newer: nothing for rein to do.
                _ => {}
            }
        }
        let mut usage = RawUsage::default();
        if let Some(u) = body.get("usage") {
            usage.merge(u);
        }
        if usage.known() {
            out.push(StreamChunk::Usage(usage.usage()));
        }
        let finish = body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(finish_reason)
            .unwrap_or_else(|| inferred_finish(saw_tool_use));
        out.push(StreamChunk::Done(finish));
        Ok(out)
    }

    fn parse_error(&self, status: u16, body: &str) -> ProviderError {
        let mut kind = kind_for_status(status);
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let envelope = parsed
            .as_ref()
            .and_then(|v| v.get("error"))
            .filter(|e| e.is_object());
        let message = match envelope {
            Some(error) => {
                let etype = error.get("type").and_then(Value::as_str).unwrap_or("error");
                let text = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                kind = refine_kind(kind, etype, text);
                let mut m = format!("{status} {}", with_message(etype, text));
                if let Some(id) = parsed
                    .as_ref()
                    .and_then(|v| v.get("request_id"))
                    .and_then(Value::as_str)
                {
                    m.push_str(&format!(" (request_id: {id})"));
                }
                m
            }
            None if body.trim().is_empty() => format!("{status}: empty error body"),
            None => format!("{status}: {}", snippet(body.trim())),
        };
        let mut err = ProviderError::new(kind, redact_keys(&message));
        err.status = Some(status);
        err
    }
}

// --- request -------------------------------------------------------------

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The system prompt, then any system messages of the conversation (the
/// API has no system role inside `messages`), with a cache breakpoint on
/// the last block.
fn system_blocks(req: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::new();
    let texts =
        std::iter::once(req.system.as_str()).chain(req.messages.iter().filter_map(|m| match m {
            Message::System { content } => Some(content.as_str()),
            _ => None,
        }));
    for text in texts.filter(|t| !t.trim().is_empty()) {
        out.push(json!({"type": "text", "text": text}));
    }
    if let Some(Value::Object(last)) = out.last_mut() {
        last.insert("cache_control".into(), ephemeral());
    }
    out
}

/// Tool definitions, with a cache breakpoint on the last one.
fn tool_specs(req: &ModelRequest) -> Vec<Value> {
    let mut out: Vec<Value> = req
        .tools
        .iter()
        .map(|t| {
            let schema = if t.parameters.is_object() {
                t.parameters.clone()
            } else {
                json!({"type": "object", "properties": {}})
            };
            let mut spec = Map::new();
            spec.insert("name".into(), json!(t.name));
            if !t.description.is_empty() {
                spec.insert("description".into(), json!(t.description));
            }
            spec.insert("input_schema".into(), schema);
            Value::Object(spec)
        })
        .collect();
    if let Some(Value::Object(last)) = out.last_mut() {
        last.insert("cache_control".into(), ephemeral());
    }
    out
}

/// One API message being built.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The conversation as API messages: roles alternate, no message is empty,
/// the newest message's last block carries a cache breakpoint.
fn messages(history: &[Message]) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::new();
    for msg in history {
        let (role, blocks) = match msg {
            Message::System { .. } => continue,
            Message::User { content, images } => {
                let text = text_block(content).into_iter();
                ("user", text.chain(images.iter().map(image_block)).collect())
            }
            Message::Tool(result) => ("user", vec![tool_result_block(result)]),
            Message::Assistant(a) => ("assistant", assistant_blocks(a)),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(turn) if turn.role == role => turn.blocks.extend(blocks),
            _ => turns.push(Turn { role, blocks }),
        }
    }
    for turn in &mut turns {
        if turn.role == "user" {
            // `tool_result` blocks must open the user message that answers
            // the calls; the sort is stable.
            turn.blocks.sort_by_key(|b| block_type(b) != "tool_result");
        }
    }
    if let Some(turn) = turns.last_mut()
        && let Some(Value::Object(block)) = turn
            .blocks
            .iter_mut()
            .rev()
            .find(|b| !matches!(block_type(b), "thinking" | "redacted_thinking"))
    {
        block.insert("cache_control".into(), ephemeral());
    }
    turns
        .into_iter()
        .map(|t| json!({"role": t.role, "content": t.blocks}))
        .collect()
}

fn block_type(block: &Value) -> &str {
    block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A text block, or nothing for blank text (the API rejects it).
fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// An `image` block with its base64 source, in a user message or a tool
/// result.
fn image_block(image: &Image) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": image.data},
    })
}

fn tool_result_block(result: &ToolResult) -> Value {
    let content = if result.output.trim().is_empty() {
        EMPTY_TOOL_OUTPUT
    } else {
        result.output.as_str()
    };
    // Images go with the text as content blocks of the result.
    let content = if result.images.is_empty() {
        json!(content)
    } else {
        let mut blocks = vec![json!({"type": "text", "text": content})];
        blocks.extend(result.images.iter().map(image_block));
        Value::Array(blocks)
    };
    let mut block = json!({
        "type": "tool_result",
        "tool_use_id": tool_id(&result.call_id),
        "content": content,
    });
    if result.is_error
        && let Value::Object(map) = &mut block
    {
        map.insert("is_error".into(), json!(true));
    }
    block
}

/// An assistant message's parts in their stored order. Reasoning goes back
/// only when Anthropic made it (a signature, or redacted data without an
/// item id); reasoning from other providers is dropped.
fn assistant_blocks(a: &AssistantMessage) -> Vec<Value> {
    let mut out = Vec::new();
    for part in &a.content {
        match part {
            ContentPart::Text { text } => out.extend(text_block(text)),
            ContentPart::Reasoning(r) => out.extend(reasoning_block(r)),
            ContentPart::ToolCall(call) => out.push(json!({
                "type": "tool_use",
                "id": tool_id(&call.id),
                "name": call.name,
                "input": tool_input(&call.arguments),
            })),
        }
    }
    out
}

fn reasoning_block(r: &ReasoningBlock) -> Option<Value> {
    if let Some(signature) = r.signature.as_deref().filter(|s| !s.is_empty()) {
        return Some(json!({"type": "thinking", "thinking": r.text, "signature": signature}));
    }
    // OpenAI Responses reasoning also has encrypted data, but with an item
    // id; Anthropic's redacted thinking has none.
    let data = r.encrypted.as_deref().filter(|d| !d.is_empty())?;
    (r.text.is_empty() && r.id.is_none())
        .then(|| json!({"type": "redacted_thinking", "data": data}))
}

/// A call's arguments as the `input` object. Arguments that are not a JSON
/// object (the model produced broken JSON, which the engine already reported
/// to it) are sent as `{}`.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// Tool-call ids as the API accepts them (`[A-Za-z0-9_-]+`): ids made by
/// other providers may hold other characters.
fn tool_id(id: &str) -> String {
    if id.is_empty() {
        return "call".to_string();
    }
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

// --- shared helpers --------------------------------------------------------

fn index_of(v: &Value) -> usize {
    v.get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(0)
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The finish reason for a `stop_reason`.
fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

fn inferred_finish(saw_tool_use: bool) -> FinishReason {
    if saw_tool_use {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    }
}

/// The kind an error `type` and message call for, given the kind the
/// status alone suggests.
fn refine_kind(kind: ProviderErrorKind, etype: &str, message: &str) -> ProviderErrorKind {
    match etype {
        "authentication_error" | "permission_error" => ProviderErrorKind::Auth,
        "overloaded_error" | "rate_limit_error" | "api_error" | "timeout_error" => {
            ProviderErrorKind::Unavailable
        }
        _ if (etype == "invalid_request_error" || kind == ProviderErrorKind::InvalidRequest)
            && is_context_overflow(message) =>
        {
            ProviderErrorKind::ContextLengthExceeded
        }
        _ => kind,
    }
}

/// Whether an error message says the conversation does not fit: `prompt is
/// too long: N tokens > M maximum`, `input length and max_tokens exceed
/// context limit`, and the like.
fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "exceed context limit",
        "exceeds the context window",
        "context window",
        "context length",
        "maximum context",
    ]
    .iter()
    .any(|p| m.contains(p))
}

/// An `error` event (or error body) as an error: overloaded, rate-limited
/// and internal errors may pass on a retry.
fn event_error(v: &Value) -> ProviderError {
    let error = v.get("error");
    let etype = error
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("error");
    let text = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = match etype {
        "overloaded_error" | "rate_limit_error" | "api_error" => ProviderErrorKind::Unavailable,
        _ if is_context_overflow(text) => ProviderErrorKind::ContextLengthExceeded,
        _ => ProviderErrorKind::Stream,
    };
    let mut message = with_message(etype, text);
    if let Some(id) = v.get("request_id").and_then(Value::as_str) {
        message.push_str(&format!(" (request_id: {id})"));
    }
    ProviderError::new(kind, redact_keys(&message))
}

/// `type: message`, or the type alone when there is no message.
fn with_message(etype: &str, text: &str) -> String {
    if text.is_empty() {
        etype.to_string()
    } else {
        format!("{etype}: {text}")
    }
}

/// At most 500 characters of `s`.
fn snippet(s: &str) -> String {
    const MAX: usize = 500;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &s[..cut]),
        None => s.to_string(),
    }
}

/// `s` with anything shaped like an API key (`sk-` and 16 or more key
/// characters) masked, in case a proxy echoes one back.
fn redact_keys(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("sk-") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let tail = &from[3..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(tail.len());
        if len >= 16 {
            out.push_str("sk-[redacted]");
        } else {
            out.push_str(&from[..3 + len]);
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
