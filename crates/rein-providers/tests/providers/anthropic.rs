//! The Anthropic Messages protocol: every recorded fixture under
//! `anthropic/` and `errors/anthropic_*` (each streaming one in every SSE
//! variant), the exact request body, and the rule-breaking streams.
//!
//! This module holds the shared helpers and the coverage check; the tests
//! live in its submodules, one per kind of behaviour.

use rein_core::*;
use rein_providers::anthropic::Anthropic;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use rein_providers::sse::SseEvent;
use serde_json::Value;

use super::fixtures::{self, Body, Interaction, Parsed};

mod errors;
mod request;
mod rule_breaking_streams;
mod streamed;
mod whole_responses;

// --- helpers --------------------------------------------------------------

/// Parse `sse` as sent, assert every variant parses to the very same
/// chunks and message, and return that.
fn parse_sse(sse: &[u8]) -> Parsed {
    let expected = fixtures::parse_stream(&Anthropic, &[sse.to_vec()]).unwrap();
    for (name, chunks) in fixtures::variants(sse) {
        let got = fixtures::parse_stream(&Anthropic, &chunks)
            .unwrap_or_else(|e| panic!("variant {name}: {e}"));
        assert_eq!(got, expected, "variant {name}");
    }
    expected
}

fn parse_fixture(name: &str) -> Parsed {
    parse_sse(&fixtures::sse_of(&format!("anthropic/{name}")))
}

fn interactions(name: &str) -> Vec<Interaction> {
    fixtures::load(&format!("anthropic/{name}"))
}

fn sse_body(i: &Interaction) -> &[u8] {
    match &i.body {
        Body::Sse(b) => b,
        other => panic!("not a stream: {other:?}"),
    }
}

fn json_body(i: &Interaction) -> &Value {
    match &i.body {
        Body::Json(v) => v,
        other => panic!("not JSON: {other:?}"),
    }
}

/// SSE from JSON payload lines, with `event:` names.
fn sse(lines: &[&str]) -> Vec<u8> {
    fixtures::jsonl_to_sse(&lines.join("\n"), true)
}

fn assemble(chunks: &[StreamChunk]) -> AssistantMessage {
    let mut asm = AssistantAssembler::default();
    for c in chunks {
        if asm.push(c.clone()) {
            break;
        }
    }
    asm.finish()
}

/// `parse_response` of a whole body, assembled.
fn response_message(body: &Value) -> AssistantMessage {
    let chunks = Anthropic.parse_response(body).unwrap();
    assert!(
        matches!(chunks.last(), Some(StreamChunk::Done(_))),
        "{chunks:?}"
    );
    assemble(&chunks)
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        reasoning_tokens: 0,
    }
}

fn calls(m: &AssistantMessage) -> Vec<ToolCall> {
    m.tool_calls().cloned().collect()
}

fn assert_call(call: &ToolCall, id: &str, name: &str, args: Value) {
    assert_eq!(call.id, id);
    assert_eq!(call.name, name);
    let parsed: Value = serde_json::from_str(&call.arguments)
        .unwrap_or_else(|e| panic!("{}: {e}: {}", call.id, call.arguments));
    assert_eq!(parsed, args, "{}", call.id);
}

fn endpoint() -> EndpointConfig {
    EndpointConfig {
        base_url: "https://api.anthropic.com/v1".into(),
        api_key: Some("sk-ant-test".into()),
        model: "claude-sonnet-4-5".into(),
        max_output_tokens: None,
        headers: Default::default(),
    }
}

fn body_of(req: &ModelRequest) -> Value {
    Anthropic.build_request(req, &endpoint()).body
}

fn tool_result(call_id: &str, output: &str, is_error: bool) -> Message {
    Message::Tool(ToolResult {
        images: Vec::new(),
        call_id: call_id.into(),
        name: "t".into(),
        output: output.into(),
        is_error,
    })
}

/// `v` without any `cache_control` (rein's breakpoints, which the recorded
/// clients did not set).
fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

fn ev(data: &str) -> SseEvent {
    SseEvent {
        event: String::new(),
        data: data.into(),
        id: None,
    }
}

const MESSAGE_START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}"#;

// --- coverage -------------------------------------------------------------

#[test]
fn every_anthropic_fixture_is_covered_by_a_test_here() {
    let mut found = fixtures::list("anthropic");
    found.extend(
        fixtures::list("errors")
            .into_iter()
            .filter(|f| f.starts_with("errors/anthropic_")),
    );
    let covered = [
        "anthropic/anthropic-compatible_message-delta-input-tokens_reordered-keys.data.jsonl",
        "anthropic/anthropic_claude-3-7-sonnet_max-tokens-mid-tool-input_padded-json.sse",
        "anthropic/anthropic_claude-3-opus_text_basic.sse",
        "anthropic/anthropic_claude-3-opus_tool-no-args.response.json",
        "anthropic/anthropic_claude-sonnet-4-5_text.data.jsonl",
        "anthropic/anthropic_claude-sonnet-4-5_text.response.json",
        "anthropic/anthropic_claude-sonnet-4-5_tool-no-args_empty-partial-json.data.jsonl",
        "anthropic/anthropic_claude-sonnet-4_parallel-tool-use_nonstream.vcr.yaml",
        "anthropic/anthropic_claude-sonnet-4_parallel-tool-use_stream.vcr.yaml",
        "anthropic/anthropic_claude-sonnet-4_text-then-tool-use_input-json-delta.sse",
        "anthropic/anthropic_claude-sonnet-4_thinking-signature-tool-use_stream.vcr.yaml",
        "anthropic/anthropic_redacted-thinking_stream.vcr.yaml",
        "anthropic/anthropic_refusal-stop-reason_no-content-blocks.data.jsonl",
        "anthropic/anthropic_tool-runner_nonstream_with-headers.nock.json",
        "anthropic/anthropic_web-search-server-tool_citations-delta.data.jsonl",
        "anthropic/synthetic_duplicate-message-start.data.jsonl",
        "anthropic/synthetic_spliced-message-start_mid-tool-input.data.jsonl",
        "errors/anthropic_400_invalid-request-error_unsupported-effort.vcr.yaml",
        "errors/anthropic_404_not-found-error_request-id.vcr.yaml",
    ];
    assert_eq!(found, covered);
}
