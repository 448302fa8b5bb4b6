//! The OpenAI Responses protocol against recorded traffic: every fixture
//! under `openai-responses/`, the Responses error fixtures, the OpenAPI
//! spec's example events, and the exact request rein sends.
//!
//! This module holds the fixture names, the shared helpers and the
//! coverage check; the tests live in its submodules.

use rein_core::{
    AssistantMessage, FinishReason, ProviderError, ReasoningBlock, StreamChunk, ToolCall, Usage,
};
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::WireProtocol;
use rein_providers::sse::SseEvent;
use serde_json::Value;

use super::fixtures::{self, Body, Parsed};

mod errors;
mod requests;
mod spec_examples;
mod stream_edges;
mod streams;

const TEXT_STREAM: &str = "openai-responses/openai_gpt-5_text_stream.vcr.yaml";
const PARALLEL_CALLS: &str =
    "openai-responses/openai_gpt-5_parallel-function-calls_stream.vcr.yaml";
const NONSTREAM_CALL: &str = "openai-responses/openai_gpt-5_function-call_nonstream.vcr.yaml";
const SUMMARY_STREAM: &str =
    "openai-responses/openai_gpt-5_reasoning-summary_function-call_stream.vcr.yaml";
const BACKGROUND: &str = "openai-responses/openai_background-mode_response-queued_stream.vcr.yaml";
const STREAMING_USAGE: &str = "openai-responses/openai_function-call_streaming-usage.vcr.yaml";
const FOUR_STREAMS: &str =
    "openai-responses/openai_reasoning-encrypted-content_4-concatenated-streams.data.jsonl";
const CUSTOM_TOOL: &str = "openai-responses/openai_custom-tool-call_input-deltas.data.jsonl";
const COPILOT: &str = "openai-responses/github-copilot_responses_item-id-rotation.data.jsonl";
const WEB_SEARCH: &str = "openai-responses/openai_web-search-builtin-tool_annotations.data.jsonl";
const DEEPSEEK: &str =
    "openai-responses/deepseek_responses-api_reasoning-text_function-call_stream.vcr.yaml";
const SPEC_EXAMPLES: &str =
    "openai-responses/openapi-spec_responses-stream-event-examples.extract.json";
const ERR_400_DECIMAL: &str = "errors/openai-responses_400_decimal-below-min-value.vcr.yaml";
const ERR_MIDSTREAM_QUOTA: &str = "errors/openai-responses_midstream-error-event_insufficient-quota_then-response-failed.data.jsonl";
const ERR_DEEPSEEK_400: &str = "errors/deepseek-responses_400_raw-body_octet-stream.vcr.yaml";
const ERR_429_QUOTA: &str = "errors/openai_429_insufficient-quota.body.json";

// ---------------------------------------------------------------- helpers

/// Parse a stream in every SSE variant; all must give the same answer.
fn parse(sse: &[u8]) -> Parsed {
    let expected = fixtures::parse_stream(&OpenAiResponses, &[sse.to_vec()])
        .unwrap_or_else(|e| panic!("stream failed: {} ({:?})", e.message, e.kind));
    for (name, chunks) in fixtures::variants(sse) {
        let got = fixtures::parse_stream(&OpenAiResponses, &chunks)
            .unwrap_or_else(|e| panic!("variant {name} failed: {}", e.message));
        assert_eq!(got, expected, "variant {name} differs");
    }
    expected
}

/// Every interaction of a recording, each a stream, parsed.
fn parse_interactions(rel: &str) -> Vec<Parsed> {
    fixtures::load(rel)
        .into_iter()
        .map(|i| match i.body {
            Body::Sse(bytes) => parse(&bytes),
            other => panic!("{rel}: expected a stream, got {other:?}"),
        })
        .collect()
}

fn usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    }
}

/// Encrypted reasoning content, too long to write out: its length, start
/// and end.
struct Enc {
    len: usize,
    head: &'static str,
    tail: &'static str,
}

struct Think {
    text: &'static str,
    id: Option<&'static str>,
    enc: Option<Enc>,
}

struct Call {
    id: &'static str,
    name: &'static str,
    /// The raw arguments, exactly (a duplicated fragment would show here).
    raw: &'static str,
    json: Value,
}

fn call(id: &'static str, name: &'static str, raw: &'static str, json: Value) -> Call {
    Call {
        id,
        name,
        raw,
        json,
    }
}

/// Check a parsed answer: text, reasoning blocks, tool calls, usage and
/// finish reason, and that the chunks end in exactly one `Done`.
fn assert_answer(
    p: &Parsed,
    text: &str,
    thinking: &[Think],
    calls: &[Call],
    usage: Usage,
    finish: FinishReason,
) {
    let m = &p.message;
    assert_eq!(m.text(), text, "text");
    let blocks: Vec<&ReasoningBlock> = m.reasoning().collect();
    assert_eq!(
        blocks.len(),
        thinking.len(),
        "reasoning blocks: {blocks:#?}"
    );
    for (got, want) in blocks.iter().zip(thinking) {
        assert_eq!(got.text, want.text, "reasoning text");
        assert_eq!(got.id.as_deref(), want.id, "reasoning id");
        assert_eq!(got.signature, None);
        match (&got.encrypted, &want.enc) {
            (None, None) => {}
            (Some(e), Some(w)) => {
                assert_eq!(e.len(), w.len, "encrypted length");
                assert!(e.starts_with(w.head), "encrypted start: {e}");
                assert!(e.ends_with(w.tail), "encrypted end: {e}");
            }
            (got, _) => panic!("encrypted content: got {got:?}"),
        }
    }
    let got_calls: Vec<&ToolCall> = m.tool_calls().collect();
    assert_eq!(got_calls.len(), calls.len(), "calls: {got_calls:#?}");
    for (got, want) in got_calls.iter().zip(calls) {
        assert_eq!(got.id, want.id);
        assert_eq!(got.name, want.name);
        assert_eq!(got.arguments, want.raw);
        let args: Value = serde_json::from_str(&got.arguments).unwrap();
        assert_eq!(args, want.json);
    }
    assert_eq!(m.usage, Some(usage), "usage");
    assert_eq!(m.finish.as_ref(), Some(&finish), "finish");
    let dones = p
        .chunks
        .iter()
        .filter(|c| matches!(c, StreamChunk::Done(_)))
        .count();
    assert_eq!(dones, 1, "one Done");
    assert_eq!(p.chunks.last(), Some(&StreamChunk::Done(finish)));
    let usages = p
        .chunks
        .iter()
        .filter(|c| matches!(c, StreamChunk::Usage(_)))
        .count();
    assert_eq!(usages, 1, "one Usage");
}

fn event(data: &str) -> SseEvent {
    SseEvent {
        event: String::new(),
        data: data.to_string(),
        id: None,
    }
}

/// Run a parser over JSON payloads (no `event:` names), then `finish` if no
/// `Done` came.
fn run(payloads: &[Value]) -> Result<Vec<StreamChunk>, ProviderError> {
    let mut parser = OpenAiResponses.parser();
    let mut out = Vec::new();
    for p in payloads {
        out.extend(parser.on_event(&event(&p.to_string()))?);
        if matches!(out.last(), Some(StreamChunk::Done(_))) {
            return Ok(out);
        }
    }
    out.extend(parser.finish()?);
    Ok(out)
}

fn assemble(chunks: &[StreamChunk]) -> AssistantMessage {
    let mut a = rein_core::AssistantAssembler::default();
    for c in chunks {
        if a.push(c.clone()) {
            break;
        }
    }
    a.finish()
}

// ------------------------------------------------------- fixture coverage

#[test]
fn every_fixture_of_the_responses_set_has_a_test_here() {
    let covered = [
        TEXT_STREAM,
        PARALLEL_CALLS,
        NONSTREAM_CALL,
        SUMMARY_STREAM,
        BACKGROUND,
        STREAMING_USAGE,
        FOUR_STREAMS,
        CUSTOM_TOOL,
        COPILOT,
        WEB_SEARCH,
        DEEPSEEK,
        SPEC_EXAMPLES,
    ];
    let mut all = fixtures::list("openai-responses");
    all.sort();
    let mut covered: Vec<String> = covered.iter().map(|s| s.to_string()).collect();
    covered.sort();
    assert_eq!(all, covered);
    let errors: Vec<String> = fixtures::list("errors")
        .into_iter()
        .filter(|f| {
            f.starts_with("errors/openai-responses_") || f.starts_with("errors/deepseek-responses_")
        })
        .collect();
    assert_eq!(
        errors,
        [ERR_DEEPSEEK_400, ERR_400_DECIMAL, ERR_MIDSTREAM_QUOTA]
    );
}
