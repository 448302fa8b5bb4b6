//! The OpenAI Chat Completions protocol against recorded traffic from
//! OpenAI and OpenAI-compatible servers: every fixture of its set has a test
//! asserting the text, reasoning, tool calls, usage and finish reason read
//! from it (values taken from the fixture, written as literals), and every
//! stream must read the same in every SSE variant.
//!
//! This module holds the shared helpers and the coverage check; the tests
//! live in its submodules: the `openai-chat/` and `openai-compatible/`
//! recordings, errors, requests and edge cases.

use rein_core::{
    AssistantAssembler, AssistantMessage, FinishReason, ProviderError, StreamChunk, ToolCall, Usage,
};
use rein_providers::openai_chat::OpenAiChat;
use rein_providers::protocol::WireProtocol;
use serde_json::Value;

use super::fixtures::{self, Body, Parsed};

mod compatible;
mod edge_cases;
mod errors;
mod openai;
mod requests;

// ---------------------------------------------------------------------------
// Helpers

/// What one answer must assemble to.
struct Want {
    text: &'static str,
    /// Texts of the reasoning blocks, in order.
    reasoning: &'static [&'static str],
    /// (id, name, arguments as JSON).
    calls: Vec<(&'static str, &'static str, Value)>,
    usage: Option<Usage>,
    finish: FinishReason,
}

fn usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Option<Usage> {
    Some(Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    })
}

fn check_message(what: &str, msg: &AssistantMessage, want: &Want) {
    assert_eq!(msg.text(), want.text, "{what}: text");
    let reasoning: Vec<&str> = msg.reasoning().map(|r| r.text.as_str()).collect();
    assert_eq!(reasoning, want.reasoning, "{what}: reasoning blocks");
    let calls: Vec<&ToolCall> = msg.tool_calls().collect();
    assert_eq!(
        calls.len(),
        want.calls.len(),
        "{what}: number of tool calls in {calls:?}"
    );
    for (i, (call, (id, name, args))) in calls.iter().zip(&want.calls).enumerate() {
        assert_eq!(call.id, *id, "{what}: id of call {i}");
        assert_eq!(call.name, *name, "{what}: name of call {i}");
        let parsed: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|e| {
            panic!(
                "{what}: arguments of call {i} are not JSON ({e}): {:?}",
                call.arguments
            )
        });
        assert_eq!(parsed, *args, "{what}: arguments of call {i}");
    }
    assert_eq!(msg.usage, want.usage, "{what}: usage");
    assert_eq!(msg.finish.as_ref(), Some(&want.finish), "{what}: finish");
}

/// The bodies of a fixture's interactions, in order.
fn bodies(rel: &str) -> Vec<Body> {
    fixtures::load(rel).into_iter().map(|i| i.body).collect()
}

fn sse_body(rel: &str, nth: usize) -> Vec<u8> {
    match bodies(rel).into_iter().nth(nth) {
        Some(Body::Sse(b)) => b,
        other => panic!("{rel}: interaction {nth} is not a stream: {other:?}"),
    }
}

fn json_body(rel: &str, nth: usize) -> Value {
    match bodies(rel).into_iter().nth(nth) {
        Some(Body::Json(v)) => v,
        other => panic!("{rel}: interaction {nth} is not a JSON body: {other:?}"),
    }
}

/// Parse `sse` as one piece and in every variant shape; all must agree.
fn parse_everywhere(what: &str, sse: &[u8]) -> Parsed {
    let base = fixtures::parse_stream(&OpenAiChat, &[sse.to_vec()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (variant, chunks) in fixtures::variants(sse) {
        let got = fixtures::parse_stream(&OpenAiChat, &chunks)
            .unwrap_or_else(|e| panic!("{what} ({variant}): {e}"));
        assert_eq!(got, base, "{what}: variant {variant} differs");
    }
    base
}

/// Exactly one `Done`, last; held usage right before it.
fn check_stream_shape(what: &str, parsed: &Parsed) {
    let dones = parsed
        .chunks
        .iter()
        .filter(|c| matches!(c, StreamChunk::Done(_)))
        .count();
    assert_eq!(dones, 1, "{what}: one Done");
    assert!(
        matches!(parsed.chunks.last(), Some(StreamChunk::Done(_))),
        "{what}: Done is last"
    );
    let usages: Vec<usize> = parsed
        .chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, StreamChunk::Usage(_)))
        .map(|(i, _)| i)
        .collect();
    if parsed.message.usage.is_some() {
        assert_eq!(
            usages,
            vec![parsed.chunks.len() - 2],
            "{what}: usage sent once, just before Done"
        );
    } else {
        assert!(usages.is_empty(), "{what}: no usage");
    }
}

/// Interaction `nth` of `rel` is a stream that reads as `want`.
fn check_stream(rel: &str, nth: usize, want: &Want) -> Parsed {
    let what = format!("{rel} #{nth}");
    check_sse(&what, &sse_body(rel, nth), want)
}

fn check_sse(what: &str, sse: &[u8], want: &Want) -> Parsed {
    let parsed = parse_everywhere(what, sse);
    check_stream_shape(what, &parsed);
    check_message(what, &parsed.message, want);
    parsed
}

fn assemble(chunks: Vec<StreamChunk>) -> AssistantMessage {
    let mut asm = AssistantAssembler::default();
    for c in chunks {
        if asm.push(c) {
            break;
        }
    }
    asm.finish()
}

/// Interaction `nth` of `rel` is a non-streaming body that reads as `want`.
fn check_response(rel: &str, nth: usize, want: &Want) -> Vec<StreamChunk> {
    let what = format!("{rel} #{nth}");
    let chunks = OpenAiChat
        .parse_response(&json_body(rel, nth))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        matches!(chunks.last(), Some(StreamChunk::Done(_))),
        "{what}: ends in Done"
    );
    check_message(&what, &assemble(chunks.clone()), want);
    chunks
}

/// The first error the parser gives for a stream, the same in every variant.
fn stream_error(what: &str, sse: &[u8]) -> ProviderError {
    let base = fixtures::parse_stream(&OpenAiChat, &[sse.to_vec()])
        .err()
        .unwrap_or_else(|| panic!("{what}: the stream parsed without error"));
    for (variant, chunks) in fixtures::variants(sse) {
        let got = fixtures::parse_stream(&OpenAiChat, &chunks)
            .err()
            .unwrap_or_else(|| panic!("{what} ({variant}): no error"));
        assert_eq!(
            (got.kind, &got.message),
            (base.kind, &base.message),
            "{what}: variant {variant} differs"
        );
    }
    base
}

/// The error of interaction `nth` of `rel`, through `parse_error`.
fn http_error(rel: &str, nth: usize) -> ProviderError {
    let it = fixtures::load(rel).into_iter().nth(nth).unwrap();
    let body = match &it.body {
        Body::Json(v) => serde_json::to_string(v).unwrap(),
        Body::Text(t) => t.clone(),
        Body::Sse(b) => String::from_utf8_lossy(b).into_owned(),
    };
    OpenAiChat.parse_error(it.status, &body)
}

fn sse(lines: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for l in lines {
        out.push_str(&format!("data: {l}\n\n"));
    }
    out.into_bytes()
}

// ---------------------------------------------------------------------------
// Coverage: every fixture of this protocol's set has a test in a submodule.

const COVERED: &[&str] = &[
    "openai-chat/azure-openai_gpt-5-nano_model-router_prompt-filter-results.data.jsonl",
    "openai-chat/openai_gpt-4.1-nano_text.response.json",
    "openai-chat/openai_gpt-4.1-nano_text_obfuscation.data.jsonl",
    "openai-chat/openai_gpt-4o_content-logprobs.sse",
    "openai-chat/openai_gpt-4o_finish-length_max-tokens-1.sse",
    "openai-chat/openai_gpt-4o_n3-multiple-choices.sse",
    "openai-chat/openai_gpt-4o_parallel-tool-calls_include-usage.sse",
    "openai-chat/openai_gpt-4o_parallel-tool-calls_nonstream.vcr.yaml",
    "openai-chat/openai_gpt-4o_parallel-tool-calls_stream.vcr.yaml",
    "openai-chat/openai_gpt-4o_refusal-deltas.sse",
    "openai-chat/openai_gpt-4o_single-tool-call_args-fragments.sse",
    "openai-chat/openai_gpt-4o_text_include-usage.sse",
    "openai-compatible/alibaba/alibaba-qwen_tool-call_include-usage.data.jsonl",
    "openai-compatible/anthropic-openai-compat/anthropic-openai-compat_haiku-4-5_tool-index-starts-at-1.sse",
    "openai-compatible/cerebras/cerebras_zai-glm-4.7_reasoning-field_tool-calls_2-streams.data.jsonl",
    "openai-compatible/deepseek/deepseek-reasoner_reasoning-content_then-tool-call.data.jsonl",
    "openai-compatible/deepseek/deepseek-reasoner_reasoning-content_tool-call.response.json",
    "openai-compatible/deepseek/deepseek_reasoning-content_text_stream.vcr.yaml",
    "openai-compatible/groq/groq_kimi-k2_parallel-tool-calls_stream.vcr.yaml",
    "openai-compatible/groq/groq_llama-3.3-70b_whole-tool-call-in-one-chunk_x-groq.data.jsonl",
    "openai-compatible/llama.cpp/llama-cpp-b7010_gpt-oss-20b_reasoning-content_tool-call_timings_stream.vcr.yaml",
    "openai-compatible/llama.cpp/llama-cpp_gpt-oss-20b_tool-call_nonstream_timings.vcr.yaml",
    "openai-compatible/mistral/mistral-small_tool-call-without-index-or-type.data.jsonl",
    "openai-compatible/mistral/zai-glm-5-2_incremental-tool-call_empty-name-continuation.data.jsonl",
    "openai-compatible/ollama/ollama-cloud_tool-call_nonstream.vcr.yaml",
    "openai-compatible/openrouter/openrouter_anthropic_parallel-tool-calls_stream.vcr.yaml",
    "openai-compatible/openrouter/openrouter_processing-comments_reasoning-details_stream.vcr.yaml",
    "openai-compatible/vllm/vllm-0.24_crusoe_llama-3.3-70b_text_include-usage.vcr.yaml",
    "openai-compatible/xai/xai_grok-3-mini_reasoning-content_tool-call.data.jsonl",
    "openai-compatible/zai/zai_glm-4.7-flash_reasoning-content_parallel-tool-calls_stream.vcr.yaml",
    "errors/groq_400_tool-use-failed_failed-generation.vcr.yaml",
    "errors/groq_midstream-event-error_tool-use-failed.vcr.yaml",
    "errors/openai-chat_400_unsupported-value_system-role.vcr.yaml",
    "errors/openai-chat_404_model-not-found.vcr.yaml",
    "errors/openai_400_unsupported-parameter_max-tokens.body.json",
    "errors/openai_400_unsupported-parameter_temperature_code-null.body.json",
    "errors/openai_429_insufficient-quota.body.json",
    "errors/openrouter_429_upstream-rate-limited_numeric-code.vcr.yaml",
    "errors/openrouter_midstream-error-inside-chunk_after-200.vcr.yaml",
];

#[test]
fn every_chat_completions_fixture_has_a_test() {
    let mut ours: Vec<String> = fixtures::list("openai-chat");
    ours.extend(fixtures::list("openai-compatible"));
    ours.extend(fixtures::list("errors").into_iter().filter(|f| {
        let name = f.trim_start_matches("errors/");
        name.starts_with("openai-chat_")
            || (name.starts_with("openai_4") && name.ends_with(".body.json"))
            || name.starts_with("openrouter_")
            || name.starts_with("groq_")
    }));
    let missing: Vec<&String> = ours
        .iter()
        .filter(|f| !COVERED.contains(&f.as_str()))
        .collect();
    assert!(missing.is_empty(), "fixtures without a test: {missing:#?}");
    for f in COVERED {
        assert!(ours.iter().any(|o| o == f), "{f} is gone");
    }
}
