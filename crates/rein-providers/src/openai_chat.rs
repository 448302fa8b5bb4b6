//! The OpenAI Chat Completions wire API (`POST /chat/completions`), as
//! spoken by OpenAI and by every OpenAI-compatible server: DeepSeek, vLLM,
//! llama.cpp, Ollama, OpenRouter, Groq, Mistral, xAI, Cerebras, Alibaba,
//! z.ai and others.
//!
//! Requests always stream, with `stream_options.include_usage` so the token
//! counts arrive in a last chunk. The parser reads one JSON chunk per
//! event and copes with what those servers do differently:
//!
//! - only choice 0 is read (a request with `n > 1` interleaves choices);
//! - tool-call fragments are keyed by their `index`, which may start at 1
//!   (Anthropic's compatibility layer) or be missing (Mistral): then a
//!   fragment with a new id starts a call and one without an id continues
//!   the last one. A different id on an index already in use starts a new
//!   call too. Empty ids and names on continuations (`id: ""`,
//!   `name: ""`) are ignored;
//! - reasoning arrives as `reasoning_content` (DeepSeek, xAI, llama.cpp,
//!   z.ai), `reasoning` (Cerebras, Groq, Ollama, OpenRouter) or
//!   `reasoning_details` (OpenRouter; only read when neither string field
//!   carries the same text); a `reasoning.text` signature and a
//!   `reasoning.encrypted` payload close the reasoning block with that data;
//! - usage is read wherever it comes: a final `choices: []` chunk, the
//!   finish chunk, Groq's `x_groq.usage`, or inside choice 0. It is held
//!   and sent just before `Done`, because it usually follows the finish
//!   reason. `Done` is only sent at `data: [DONE]` or at the end of the
//!   stream, never at `finish_reason`; a stream that ends before either
//!   was cut off and fails with a retryable transport error;
//! - an `error` object in a chunk (OpenRouter, Groq's `event: error`) ends
//!   the answer with an error even though the HTTP status was 200.
//!
//! Refusals (`refusal` instead of `content`) are shown as text, and an
//! answer that contained one finishes with `ContentFilter` instead of
//! `Stop`: the model declined, which the caller should be able to tell
//! apart from an answer.

mod errors;
mod stream;

use rein_core::{
    AssistantMessage, FinishReason, Image, Message, ModelRequest, ProviderError, ProviderErrorKind,
    StreamChunk, ToolCall, ToolResult, ToolSpec, Usage,
};
use serde_json::{Map, Value, json};

use crate::protocol::{EndpointConfig, StreamParser, WireProtocol, WireRequest, kind_for_status};
use errors::*;
use stream::ChatStreamParser;

/// The OpenAI Chat Completions protocol (`kind` `openai`).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiChat;

impl OpenAiChat {
    /// The protocol; same as `OpenAiChat::default()`.
    pub fn new() -> Self {
        OpenAiChat
    }
}

/// The named schema of OpenAI's structured outputs (`json_schema` of
/// `response_format`, the `text.format` of the Responses API): not
/// `strict`, which accepts only a subset of JSON Schema; rein checks the
/// answer itself.
pub(crate) fn answer_format(schema: &Value) -> Map<String, Value> {
    let mut format = Map::new();
    format.insert("name".into(), json!("answer"));
    format.insert("schema".into(), schema.clone());
    format.insert("strict".into(), json!(false));
    format
}

impl WireProtocol for OpenAiChat {
    fn kind(&self) -> &'static str {
        "openai"
    }

    /// `POST /chat/completions`, streaming with usage. The output cap
    /// (`max_completion_tokens`; newer OpenAI models refuse `max_tokens`) is
    /// the smaller of the request's and the endpoint's when both are set.
    fn build_request(&self, req: &ModelRequest, endpoint: &EndpointConfig) -> WireRequest {
        let mut messages = Vec::new();
        if !req.system.is_empty() {
            messages.push(json!({"role": "system", "content": req.system}));
        }
        for message in &req.messages {
            messages.push(match message {
                Message::System { content } => json!({"role": "system", "content": content}),
                Message::User { content, images } => user_message(content, images),
                Message::Assistant(a) => assistant_message(a),
                Message::Tool(r) => tool_message(r),
            });
        }
        let mut body = Map::new();
        body.insert("model".into(), json!(endpoint.model));
        body.insert("messages".into(), Value::Array(messages));
        if !req.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(req.tools.iter().map(tool_spec).collect()),
            );
        }
        if req.tool_choice.forces_call(&req.tools) {
            body.insert("tool_choice".into(), json!("required"));
        }
        if req.single_tool_call && !req.tools.is_empty() {
            body.insert("parallel_tool_calls".into(), json!(false));
        }
        if let Some(schema) = &req.answer_schema {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": answer_format(schema)}),
            );
        }
        if let Some(t) = req.temperature {
            body.insert("temperature".into(), json!(t));
        }
        let cap = match (req.max_output_tokens, endpoint.max_output_tokens) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(cap) = cap {
            body.insert("max_completion_tokens".into(), json!(cap));
        }
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        let mut headers = Vec::new();
        if let Some(key) = endpoint.api_key.as_deref().filter(|k| !k.is_empty()) {
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        WireRequest {
            path: "/chat/completions".into(),
            headers,
            body: Value::Object(body),
        }
    }

    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(ChatStreamParser::default())
    }

    /// Reads a whole `chat.completion` body: choice 0's message (reasoning,
    /// content, refusal, tool calls), `usage` and `finish_reason`. A body
    /// holding an `error` object is returned as that error.
    fn parse_response(&self, body: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
        if let Some(err) = body.get("error").filter(|e| !e.is_null()) {
            return Err(in_band_error(err));
        }
        let choices = body
            .get("choices")
            .and_then(Value::as_array)
            .ok_or_else(|| protocol_error("the answer has no `choices`"))?;
        let choice = choices
            .iter()
            .find(|c| choice_index(c) == 0)
            .or_else(|| choices.first())
            .ok_or_else(|| protocol_error("the answer has no choices"))?;
        let message = choice
            .get("message")
            .or_else(|| choice.get("delta"))
            .unwrap_or(&Value::Null);
        let mut out = Vec::new();
        reasoning_chunks(message, &mut out);
        if let Some(text) = message.get("content").and_then(content_text) {
            push_text(&mut out, text);
        }
        let refusal = message
            .get("refusal")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        if let Some(refusal) = refusal {
            push_text(&mut out, refusal.to_string());
        }
        let mut calls = 0;
        for call in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let function = call.get("function");
            calls += 1;
            out.push(StreamChunk::ToolCall(ToolCall {
                id: str_field(call, "id").unwrap_or_default().to_string(),
                name: function
                    .and_then(|f| str_field(f, "name"))
                    .unwrap_or_default()
                    .to_string(),
                arguments: function
                    .and_then(|f| f.get("arguments"))
                    .map(arguments_text)
                    .unwrap_or_default(),
            }));
        }
        if let Some(usage) = find_usage(body, Some(choice)) {
            out.push(StreamChunk::Usage(usage));
        }
        let finish = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(finish_reason);
        out.push(StreamChunk::Done(final_finish(
            finish,
            calls > 0,
            refusal.is_some(),
        )));
        Ok(out)
    }

    /// The kind comes from the status (see [`kind_for_status`]), refined by
    /// the body: a context-length complaint gives `ContextLengthExceeded`,
    /// and `insufficient_quota` (a 429 that no retry fixes) gives
    /// `InvalidRequest`. The message is the status, then the service's
    /// message with its code, parameter, upstream provider's words
    /// (OpenRouter `metadata.raw`) and rejected output (Groq
    /// `failed_generation`); a body that is not a JSON error gives its
    /// first 300 characters instead.
    fn parse_error(&self, status: u16, body: &str) -> ProviderError {
        let mut kind = kind_for_status(status);
        let prefix = match reason_phrase(status) {
            Some(reason) => format!("{status} {reason}"),
            None => format!("HTTP {status}"),
        };
        let info = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| ErrorInfo::from_body(&v));
        let message = match info {
            Some(info) => {
                let mut text = info.render();
                if info.is_quota() {
                    kind = ProviderErrorKind::InvalidRequest;
                    text.push_str(
                        " (the account has no quota or credit left: retrying will not help)",
                    );
                } else if kind == ProviderErrorKind::InvalidRequest && info.is_context_length() {
                    kind = ProviderErrorKind::ContextLengthExceeded;
                }
                format!("{prefix}: {text}")
            }
            None => {
                let snippet = first_chars(body.trim(), 300);
                if kind == ProviderErrorKind::InvalidRequest && mentions_context_length(snippet) {
                    kind = ProviderErrorKind::ContextLengthExceeded;
                }
                if snippet.is_empty() {
                    format!("{prefix} (the response had no body)")
                } else {
                    format!("{prefix}: {snippet}")
                }
            }
        };
        ProviderError {
            kind,
            message,
            status: Some(status),
            retry_after: None,
        }
    }
}

// ---------------------------------------------------------------------------
// Requests

fn assistant_message(a: &AssistantMessage) -> Value {
    let text = a.text();
    let calls: Vec<Value> = a
        .tool_calls()
        .map(|c| {
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })
        })
        .collect();
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    // OpenAI wants `content: null` beside tool calls, and refuses an
    // assistant message with neither content nor tool calls.
    let content = if !text.is_empty() {
        json!(text)
    } else if calls.is_empty() {
        json!("")
    } else {
        Value::Null
    };
    m.insert("content".into(), content);
    let reasoning: Vec<&str> = a
        .reasoning()
        .map(|r| r.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    if !reasoning.is_empty() {
        // DeepSeek-style servers want the reasoning that preceded tool
        // calls back; others ignore the field.
        m.insert("reasoning_content".into(), json!(reasoning.join("\n\n")));
    }
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(m)
}

/// A user message: its text alone, or with its images as `image_url`
/// content parts carrying data URLs.
fn user_message(content: &str, images: &[Image]) -> Value {
    if images.is_empty() {
        return json!({"role": "user", "content": content});
    }
    let mut parts = vec![json!({"type": "text", "text": content})];
    parts.extend(
        images
            .iter()
            .map(|image| json!({"type": "image_url", "image_url": {"url": image.data_url()}})),
    );
    json!({"role": "user", "content": parts})
}

fn tool_message(r: &ToolResult) -> Value {
    let starts_with_error = r
        .output
        .trim_start()
        .as_bytes()
        .get(..5)
        .is_some_and(|b| b.eq_ignore_ascii_case(b"error"));
    let content = if r.is_error && !starts_with_error {
        format!("Error: {}", r.output)
    } else {
        r.output.clone()
    };
    json!({"role": "tool", "tool_call_id": r.call_id, "content": content})
}

fn tool_spec(t: &ToolSpec) -> Value {
    let parameters = if t.parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        t.parameters.clone()
    };
    json!({
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": parameters},
    })
}

// ---------------------------------------------------------------------------
// Shared reading helpers

/// A choice's `index`; missing counts as 0.
fn choice_index(choice: &Value) -> u64 {
    choice.get("index").and_then(Value::as_u64).unwrap_or(0)
}

/// A non-empty string field.
fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn push_text(out: &mut Vec<StreamChunk>, text: String) {
    if !text.is_empty() {
        out.push(StreamChunk::TextDelta(text));
    }
}

/// `content` as text: a string, or an array of parts whose `text` fields
/// are joined.
fn content_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|t| t == "text" || t == "output_text")
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
        ),
        _ => None,
    }
}

/// Tool-call arguments as the raw text the model produced (some servers
/// send an object instead of a string; it is serialised back).
fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Reasoning in a delta or message: `reasoning_content`, else `reasoning`,
/// else the texts of `reasoning_details`; signatures and encrypted details
/// close the block.
fn reasoning_chunks(obj: &Value, out: &mut Vec<StreamChunk>) {
    let text = str_field(obj, "reasoning_content").or_else(|| str_field(obj, "reasoning"));
    if let Some(text) = text {
        out.push(StreamChunk::ReasoningDelta(text.to_string()));
    }
    for detail in obj
        .get("reasoning_details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = detail.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "reasoning.encrypted" => {
                if let Some(data) = str_field(detail, "data") {
                    out.push(StreamChunk::ReasoningEnd {
                        signature: None,
                        encrypted: Some(data.to_string()),
                        id: str_field(detail, "id").map(str::to_string),
                    });
                }
            }
            _ => {
                if text.is_none()
                    && let Some(t) =
                        str_field(detail, "text").or_else(|| str_field(detail, "summary"))
                {
                    out.push(StreamChunk::ReasoningDelta(t.to_string()));
                }
                if let Some(signature) = str_field(detail, "signature") {
                    out.push(StreamChunk::ReasoningEnd {
                        signature: Some(signature.to_string()),
                        encrypted: None,
                        id: str_field(detail, "id").map(str::to_string),
                    });
                }
            }
        }
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "length" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_string()),
    }
}

/// The finish to report: the service's, else what the answer holds; an
/// answer with a refusal that "stopped" normally reports `ContentFilter`.
fn final_finish(finish: Option<FinishReason>, has_calls: bool, refused: bool) -> FinishReason {
    let finish = finish.unwrap_or(if has_calls {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    });
    if refused && finish == FinishReason::Stop {
        FinishReason::ContentFilter
    } else {
        finish
    }
}

/// Usage from a chunk or body: top-level `usage`, else Groq's
/// `x_groq.usage`, else the choice's `usage`.
fn find_usage(v: &Value, choice: Option<&Value>) -> Option<Usage> {
    v.get("usage")
        .and_then(usage_of)
        .or_else(|| v.pointer("/x_groq/usage").and_then(usage_of))
        .or_else(|| choice.and_then(|c| c.get("usage")).and_then(usage_of))
}

/// A token count: an integer, or a non-negative float some servers send.
fn count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64)
    })
}

/// Maps `prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens` (or DeepSeek's
/// `prompt_cache_hit_tokens`) and `completion_tokens_details.reasoning_tokens`.
/// xAI leaves reasoning out of `completion_tokens` (its `total_tokens` adds
/// all three); then the reasoning is added to the output so that it stays a
/// subset of it, as everywhere else.
fn usage_of(u: &Value) -> Option<Usage> {
    if !u.is_object() {
        return None;
    }
    let input = count(u.get("prompt_tokens")).or_else(|| count(u.get("input_tokens")));
    let output = count(u.get("completion_tokens")).or_else(|| count(u.get("output_tokens")));
    if input.is_none() && output.is_none() {
        return None;
    }
    let input = input.unwrap_or(0);
    let mut output = output.unwrap_or(0);
    let cached = count(u.pointer("/prompt_tokens_details/cached_tokens"))
        .or_else(|| count(u.get("prompt_cache_hit_tokens")))
        .unwrap_or(0);
    let reasoning = count(u.pointer("/completion_tokens_details/reasoning_tokens")).unwrap_or(0);
    if reasoning > 0
        && let Some(total) = count(u.get("total_tokens"))
    {
        let without = input.saturating_add(output);
        if total != without && total == without.saturating_add(reasoning) {
            output = output.saturating_add(reasoning);
        }
    }
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    })
}
