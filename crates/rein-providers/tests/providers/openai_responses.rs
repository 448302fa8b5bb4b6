//! The OpenAI Responses protocol against recorded traffic: every fixture
//! under `openai-responses/`, the Responses error fixtures, the OpenAPI
//! spec's example events, and the exact request rein sends.

use rein_core::{
    AssistantMessage, ContentPart, FinishReason, Image, Message, ModelRequest, ProviderError,
    ProviderErrorKind, ReasoningBlock, StreamChunk, ToolCall, ToolResult, ToolSpec, Usage,
};
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use rein_providers::sse::SseEvent;
use serde_json::{Value, json};

use super::fixtures::{self, Body, Parsed};

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

// ------------------------------------------------------------- streams

#[test]
fn text_stream_gives_the_text_usage_and_stop_and_drops_an_empty_reasoning_item() {
    let parsed = parse_interactions(TEXT_STREAM);
    assert_eq!(parsed.len(), 1);
    assert_answer(
        &parsed[0],
        "Oi!",
        &[],
        &[],
        usage(19, 118, 0, 64),
        FinishReason::Stop,
    );
}

#[test]
fn parallel_function_calls_come_once_each_keyed_by_output_index_then_the_follow_up_text() {
    let parsed = parse_interactions(PARALLEL_CALLS);
    assert_eq!(parsed.len(), 2);
    assert_answer(
        &parsed[0],
        "",
        &[],
        &[
            call(
                "call_inViAUr9eV0GDtyOywkCxp59",
                "add",
                r#"{"a":2,"b":3}"#,
                json!({"a": 2, "b": 3}),
            ),
            call(
                "call_Op66UUnzuOoKmgGeFJQJFTUY",
                "multiply",
                r#"{"a":2,"b":3}"#,
                json!({"a": 2, "b": 3}),
            ),
        ],
        usage(109, 223, 0, 128),
        FinishReason::ToolCalls,
    );
    // The calls are announced at output_item.added with the stream's
    // output_index (the reasoning item holds index 0).
    let indexes: Vec<usize> = parsed[0]
        .chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::ToolCallDelta {
                index, id: Some(_), ..
            } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, [1, 2]);
    assert_answer(
        &parsed[1],
        "Results:\n- Addition (2 + 3) = 5\n- Multiplication (2 × 3) = 6",
        &[],
        &[],
        usage(167, 30, 0, 0),
        FinishReason::Stop,
    );
}

#[test]
fn non_streaming_responses_give_the_call_then_the_answer() {
    let interactions = fixtures::load(NONSTREAM_CALL);
    assert_eq!(interactions.len(), 2);
    let bodies: Vec<Value> = interactions
        .iter()
        .map(|i| match &i.body {
            Body::Json(v) => v.clone(),
            other => panic!("expected JSON, got {other:?}"),
        })
        .collect();

    let chunks = OpenAiResponses.parse_response(&bodies[0]).unwrap();
    let turn1 = Parsed {
        message: assemble(&chunks),
        chunks,
    };
    assert_answer(
        &turn1,
        "",
        &[],
        &[call(
            "call_ves1YcSxZVxr4IGeGzt3Hn6u",
            "weather",
            r#"{"location":"Florence, Italy"}"#,
            json!({"location": "Florence, Italy"}),
        )],
        usage(63, 132, 0, 64),
        FinishReason::ToolCalls,
    );

    let chunks = OpenAiResponses.parse_response(&bodies[1]).unwrap();
    let turn2 = Parsed {
        message: assemble(&chunks),
        chunks,
    };
    assert_answer(
        &turn2,
        "The current temperature in Florence, Italy is about 40°C (104°F).",
        &[],
        &[],
        usage(92, 241, 0, 192),
        FinishReason::Stop,
    );
}

#[test]
fn reasoning_summary_stream_keeps_the_summary_the_final_encrypted_content_and_the_item_id() {
    let parsed = parse_interactions(SUMMARY_STREAM);
    assert_eq!(parsed.len(), 2);
    assert_answer(
        &parsed[0],
        "",
        &[Think {
            text: "**Getting weather info**\n\nI need to respond to the user's question about the weather in Florence, Italy. I'll use the weather tool, which requires the location string. According to the instructions, I can call functions.weather directly since I only need one tool for this task. There's no need for parallel execution here. I'll call the tool to retrieve the current weather information for Florence and see what it returns!",
            id: Some("rs_017e85da2ae23b69016a3c1251dcec819daf72930a854fd4d1"),
            // The content of output_item.done (output_item.added carries a
            // shorter, earlier one).
            enc: Some(Enc {
                len: 1572,
                head: "gAAAAABqPBJWAIvEAmUTQCqL",
                tail: "CPT4YAP6tjmQE0XasRCHxQ==",
            }),
        }],
        &[call(
            "call_zgUaIBRPTwxxOusyyKw5NVMH",
            "weather",
            r#"{"location":"Florence, Italy"}"#,
            json!({"location": "Florence, Italy"}),
        )],
        usage(63, 121, 0, 64),
        FinishReason::ToolCalls,
    );
    assert_answer(
        &parsed[1],
        "Right now in Florence, Italy, it’s about 40°C (104°F). Would you like a forecast or details like wind and humidity?",
        &[Think {
            text: "**Finalizing the response**\n\nI can mention the time of day, but since that wasn't provided, I'll just stick with \"right now.\" I think it’s best not to overcomplicate things. The returned value could reflect the midday high or other specifics. I’ll keep the tone friendly and straightforward. It's important to me that the final response is clear and user-friendly without unnecessary complexity. Let’s get this right!",
            id: Some("rs_065915db01d8635a016a3c1256d2dc81a3a6206cbb8ad411b6"),
            enc: Some(Enc {
                len: 3596,
                head: "gAAAAABqPBJc4a19bWzRV5X7",
                tail: "ZwNWpJubPzcAueIRIwP9I_5s",
            }),
        }],
        &[],
        usage(92, 456, 0, 384),
        FinishReason::Stop,
    );
}

#[test]
fn background_mode_stream_with_response_queued_gives_the_text() {
    let parsed = parse_interactions(BACKGROUND);
    assert_eq!(parsed.len(), 1);
    assert_answer(
        &parsed[0],
        "2 + 2 equals 4.",
        &[],
        &[],
        usage(15, 9, 0, 0),
        FinishReason::Stop,
    );
}

#[test]
fn encrypted_reasoning_without_summary_becomes_a_block_with_empty_text() {
    let parsed = parse_interactions(STREAMING_USAGE);
    assert_eq!(parsed.len(), 1);
    assert_answer(
        &parsed[0],
        "",
        &[Think {
            text: "",
            id: Some("rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"),
            enc: Some(Enc {
                len: 3896,
                head: "gAAAAABoyXvxI6jwG5j6rvTG",
                tail: "ztUnIVgXKYQko02bg-rk3VE=",
            }),
        }],
        &[call(
            "call_CWXgs68YprAjp6t0371hiPOI",
            "final_result",
            r#"{"result":6666}"#,
            json!({"result": 6666}),
        )],
        usage(53, 469, 0, 448),
        FinishReason::ToolCalls,
    );
}

/// The four streams of the concatenated recording, each as SSE.
fn four_streams() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(fixtures::dir().join(FOUR_STREAMS)).unwrap();
    let mut streams = Vec::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        current.push_str(line);
        current.push('\n');
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "response.completed" {
            streams.push(fixtures::jsonl_to_sse(&std::mem::take(&mut current), true));
        }
    }
    assert!(
        current.is_empty(),
        "trailing events after the last completion"
    );
    streams
}

#[test]
fn concatenated_recording_splits_into_four_streams_each_its_own_answer() {
    let streams = four_streams();
    assert_eq!(streams.len(), 4);
    let parsed: Vec<Parsed> = streams.iter().map(|s| parse(s)).collect();
    assert_answer(
        &parsed[0],
        "",
        &[Think {
            text: "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product.",
            id: Some("rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"),
            enc: Some(Enc {
                len: 1060,
                head: "gAAAAABpPDIVOKrsHNZ0Gwso",
                tail: "QxSo_8XMnObfNxat0wz4uQ==",
            }),
        }],
        &[call(
            "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
            "calculator",
            r#"{"a":12,"b":7,"op":"add"}"#,
            json!({"a": 12, "b": 7, "op": "add"}),
        )],
        usage(134, 28, 0, 0),
        FinishReason::ToolCalls,
    );
    assert_answer(
        &parsed[1],
        "",
        &[],
        &[call(
            "call_Q6pW65MUgW9vF59BmItYGos3",
            "calculator",
            r#"{"a":19,"b":3,"op":"multiply"}"#,
            json!({"a": 19, "b": 3, "op": "multiply"}),
        )],
        usage(221, 26, 0, 0),
        FinishReason::ToolCalls,
    );
    assert_answer(
        &parsed[2],
        "",
        &[],
        &[call(
            "call_Zl5vIMnD7dVAjgU6FkhmiCZh",
            "calculator",
            r#"{"a":57,"b":10,"op":"multiply"}"#,
            json!({"a": 57, "b": 10, "op": "multiply"}),
        )],
        usage(260, 26, 0, 0),
        FinishReason::ToolCalls,
    );
    assert_answer(
        &parsed[3],
        "The final result is **570**.",
        &[],
        &[],
        usage(299, 12, 0, 0),
        FinishReason::Stop,
    );
    // Read as one stream, the answer ends at the first completion.
    let whole = parse(&fixtures::sse_of(FOUR_STREAMS));
    assert_eq!(whole, parsed[0]);
}

#[test]
fn custom_tool_call_becomes_a_tool_call_whose_arguments_wrap_the_raw_input() {
    let parsed = parse(&fixtures::sse_of(CUSTOM_TOOL));
    assert_answer(
        &parsed,
        "",
        &[],
        &[call(
            "call_custom_sql_001",
            "write_sql",
            r#"{"input":"SELECT * FROM users WHERE age > 25"}"#,
            json!({"input": "SELECT * FROM users WHERE age > 25"}),
        )],
        usage(50, 20, 0, 0),
        FinishReason::ToolCalls,
    );
}

#[test]
fn rotating_item_ids_of_github_copilot_still_join_reasoning_and_text_by_output_index() {
    let parsed = parse(&fixtures::sse_of(COPILOT));
    assert_answer(
        &parsed,
        "There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \nYou can see **r** at positions **3, 8, and 9**.",
        &[Think {
            text: "**Counting character occurrences**",
            // The id output_item.done gave (added said capture-id-3).
            id: Some("capture-id-8"),
            enc: None,
        }],
        &[],
        usage(19, 105, 0, 44),
        FinishReason::Stop,
    );
}

#[test]
fn rotating_item_ids_on_function_call_events_still_give_one_call() {
    let events = [
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"id-1","call_id":"call_1","name":"glob","arguments":""}}),
        json!({"type":"response.function_call_arguments.delta","output_index":0,"item_id":"id-2","delta":"{\"pattern\":"}),
        json!({"type":"response.function_call_arguments.delta","output_index":0,"item_id":"id-3","delta":"\"*.rs\"}"}),
        json!({"type":"response.function_call_arguments.done","output_index":0,"item_id":"id-4","arguments":"{\"pattern\":\"*.rs\"}"}),
        json!({"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"id-5","call_id":"call_1","name":"glob","arguments":"{\"pattern\":\"*.rs\"}"}}),
        json!({"type":"response.completed","response":{"status":"completed","output":[],"usage":{"input_tokens":3,"output_tokens":4}}}),
    ];
    let chunks = run(&events).unwrap();
    let msg = assemble(&chunks);
    let calls: Vec<&ToolCall> = msg.tool_calls().collect();
    assert_eq!(
        calls,
        [&ToolCall {
            id: "call_1".into(),
            name: "glob".into(),
            arguments: r#"{"pattern":"*.rs"}"#.into(),
        }]
    );
    assert_eq!(msg.finish, Some(FinishReason::ToolCalls));
    assert_eq!(msg.usage, Some(usage(3, 4, 0, 0)));
}

#[test]
fn web_search_builtin_tool_events_and_annotations_are_ignored_around_the_text() {
    let parsed = parse(&fixtures::sse_of(WEB_SEARCH));
    let text = parsed.message.text();
    assert_eq!(text.chars().count(), 3645);
    assert_eq!(text.len(), 3673);
    assert!(text.starts_with(
        "I checked today’s tech headlines (today = December 5, 2025) and opened a few news pages — then searched those pages for the keyword pattern \"vercel\" (case-insensitive). Summary:\n\n"
    ));
    assert!(
        text.ends_with("\n- open the Vercel funding/coverage pages and pull out more details now?")
    );
    // The same as the whole text the service sent at output_text.done.
    let done_text = std::fs::read_to_string(fixtures::dir().join(WEB_SEARCH))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "response.output_text.done")
        .unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(text, done_text);
    assert_answer(
        &parsed,
        &done_text,
        &[],
        &[],
        usage(31073, 4416, 3712, 3712),
        FinishReason::Stop,
    );
    assert_eq!(parsed.message.content.len(), 1, "one text part only");
}

#[test]
fn deepseek_reasoning_text_deltas_and_function_call_map_like_openai() {
    let parsed = parse_interactions(DEEPSEEK);
    assert_eq!(parsed.len(), 2);
    assert_answer(
        &parsed[0],
        "",
        &[Think {
            text: "The user asks about temperature in Tokyo. I'll call the tool.",
            id: Some("fa6f3a83-5d25-46e8-9d03-1a89ce5cf2ba"),
            enc: None,
        }],
        &[call(
            "call_00_xjY8Z2BvSlzgEmmw0DtH0464",
            "get_temperature",
            r#"{"city": "Tokyo"}"#,
            json!({"city": "Tokyo"}),
        )],
        usage(366, 59, 256, 14),
        FinishReason::ToolCalls,
    );
    assert_answer(
        &parsed[1],
        "The current temperature in Tokyo is **21.0°C**.",
        &[],
        &[],
        usage(440, 14, 384, 0),
        FinishReason::Stop,
    );
}

// ------------------------------------------------------- spec examples

const STORY: &str = "In a shimmering forest under a sky full of stars, a lonely unicorn named Lila discovered a hidden pond that glowed with moonlight. Every night, she would leave sparkling, magical flowers by the water's edge, hoping to share her beauty with others. One enchanting evening, she woke to find a group of friendly animals gathered around, eager to be friends and share in her magic.";

#[test]
fn every_spec_example_event_is_handled_and_the_meaningful_ones_map() {
    let doc = match fixtures::load(SPEC_EXAMPLES).remove(0).body {
        Body::Json(v) => v,
        other => panic!("{other:?}"),
    };
    let events = doc["events"].as_array().unwrap();
    assert_eq!(events.len(), 108);
    for e in events {
        let schema = e["schema"].as_str().unwrap();
        let name = e["event"].as_str().unwrap();
        let text = e["example_text"].as_str().unwrap();
        let mut parser = OpenAiResponses.parser();
        let got = parser.on_event(&SseEvent {
            event: name.to_string(),
            data: text.to_string(),
            id: None,
        });
        let ctx = format!("{schema} ({name})");
        match name {
            "error" => {
                let err = got.expect_err(&ctx);
                if schema.ends_with("WsError") {
                    // Nested error with an HTTP status beside it.
                    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest, "{ctx}");
                    assert_eq!(
                        err.message,
                        "This WebSocket connection has reached its stream limit."
                    );
                    assert_eq!(err.status, Some(400));
                } else {
                    // The spec's flat error event.
                    assert_eq!(err.kind, ProviderErrorKind::Stream, "{ctx}");
                    assert_eq!(err.message, "Something went wrong");
                }
                assert!(!err.is_retryable());
                // The first error sticks.
                assert_eq!(parser.finish().unwrap_err().message, err.message);
            }
            "response.failed" => {
                let err = got.expect_err(&ctx);
                assert_eq!(err.kind, ProviderErrorKind::Unavailable, "{ctx}");
                assert!(err.is_retryable());
                assert_eq!(err.message, "The model failed to generate a response.");
            }
            _ => {
                let chunks = got.unwrap_or_else(|e| panic!("{ctx}: {}", e.message));
                let expected: Vec<StreamChunk> = match name {
                    // Nothing streamed before: the final object's output is
                    // the answer.
                    "response.completed" => vec![
                        StreamChunk::TextDelta(STORY.into()),
                        StreamChunk::Usage(Usage::default()),
                        StreamChunk::Done(FinishReason::Stop),
                    ],
                    // reason max_tokens, usage null.
                    "response.incomplete" => vec![StreamChunk::Done(FinishReason::Length)],
                    "response.output_text.delta" => vec![StreamChunk::TextDelta("In".into())],
                    "response.output_text.done" | "response.output_item.done" => {
                        vec![StreamChunk::TextDelta(STORY.into())]
                    }
                    "response.reasoning_summary_text.delta" => vec![StreamChunk::ReasoningDelta(
                        "**Responding to a greeting**\n\nThe user just said, \"Hello!\" So, it seems I need to engage. I'll greet them back and offer help since they're looking to chat. I could say something like, \"Hello! How can I assist you today?\" That feels friendly and open. They didn't ask a specific question, so this approach will work well for starting a conversation. Let's see where it goes from there!".into(),
                    )],
                    "response.reasoning_text.delta" => {
                        vec![StreamChunk::ReasoningDelta("The".into())]
                    }
                    "response.refusal.delta" => {
                        vec![StreamChunk::TextDelta("refusal text so far".into())]
                    }
                    "response.refusal.done" => {
                        vec![StreamChunk::TextDelta("final refusal text".into())]
                    }
                    "response.function_call_arguments.done" => vec![
                        StreamChunk::ToolCallDelta {
                            index: 1,
                            id: None,
                            name: Some("get_weather".into()),
                            arguments: String::new(),
                        },
                        StreamChunk::ToolCallDelta {
                            index: 1,
                            id: None,
                            name: None,
                            arguments: "{ \"arg\": 123 }".into(),
                        },
                    ],
                    "response.custom_tool_call_input.done" => vec![StreamChunk::ToolCallDelta {
                        index: 0,
                        id: None,
                        name: None,
                        arguments: r#"{"input":"final complete input text"}"#.into(),
                    }],
                    "response.function_call_arguments.delta" => {
                        // The spec's example lacks a comma: not JSON, skipped.
                        assert!(serde_json::from_str::<Value>(text).is_err(), "{ctx}");
                        vec![]
                    }
                    // Lifecycle, built-in tools, audio, annotations, part
                    // markers, custom-tool input deltas (held until done).
                    _ => vec![],
                };
                assert_eq!(chunks, expected, "{ctx}");
            }
        }
    }
}

// ---------------------------------------------------------------- errors

fn json_body(rel: &str) -> (u16, String) {
    let i = fixtures::load(rel).remove(0);
    match i.body {
        Body::Json(v) => (i.status, v.to_string()),
        Body::Text(t) => (i.status, t),
        other => panic!("{rel}: {other:?}"),
    }
}

#[test]
fn http_400_decimal_below_min_value_is_a_non_retryable_invalid_request_with_the_service_message() {
    let (status, body) = json_body(ERR_400_DECIMAL);
    assert_eq!(status, 400);
    let err = OpenAiResponses.parse_error(status, &body);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert_eq!(err.status, Some(400));
    assert_eq!(
        err.message,
        "400 Bad Request: Invalid 'temperature': decimal below minimum value. Expected a value >= 0, but got -1 instead."
    );
}

#[test]
fn deepseek_400_served_as_octet_stream_is_still_read_as_a_json_error() {
    let interaction = fixtures::load(ERR_DEEPSEEK_400).remove(0);
    assert!(
        interaction
            .headers
            .iter()
            .any(|(k, v)| k == "content-type" && v == "application/octet-stream")
    );
    let (status, body) = json_body(ERR_DEEPSEEK_400);
    assert_eq!(status, 400);
    let err = OpenAiResponses.parse_error(status, &body);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert_eq!(
        err.message,
        "400 Bad Request: No tool output found for tool call call-a."
    );
}

#[test]
fn http_429_insufficient_quota_is_not_retryable_and_says_so() {
    let text = std::fs::read_to_string(fixtures::dir().join(ERR_429_QUOTA)).unwrap();
    let err = OpenAiResponses.parse_error(429, &text);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert!(!err.is_retryable());
    assert_eq!(
        err.message,
        "429 Too Many Requests: You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors. (insufficient quota: retrying will not help until the account's plan or billing is fixed)"
    );
    // A plain rate limit stays retryable.
    let err = OpenAiResponses.parse_error(
        429,
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
    );
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert!(err.is_retryable());
    assert_eq!(err.message, "429 Too Many Requests: Rate limit reached");
}

#[test]
fn context_length_exceeded_body_refines_a_400() {
    let err = OpenAiResponses.parse_error(
        400,
        r#"{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
    );
    assert_eq!(err.kind, ProviderErrorKind::ContextLengthExceeded);
    assert!(!err.is_retryable());
    assert_eq!(
        err.message,
        "400 Bad Request: Your input exceeds the context window of this model."
    );
}

#[test]
fn non_json_error_bodies_give_their_first_300_characters_and_status_decides_the_kind() {
    let page = format!("<html><body>{}</body></html>", "é".repeat(400));
    let err = OpenAiResponses.parse_error(502, &page);
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert!(err.is_retryable());
    let expected: String = page.chars().take(300).collect();
    assert_eq!(err.message, format!("502 Bad Gateway: {expected}"));

    let err = OpenAiResponses.parse_error(529, "");
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert_eq!(err.message, "529");

    let err = OpenAiResponses.parse_error(401, "Unauthorized");
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.message, "401 Unauthorized: Unauthorized");

    let err = OpenAiResponses.parse_error(404, r#"{"detail":"Not Found"}"#);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert_eq!(err.message, "404 Not Found: Not Found");
}

#[test]
fn midstream_insufficient_quota_error_wins_over_the_following_response_failed() {
    let sse = fixtures::sse_of(ERR_MIDSTREAM_QUOTA);
    let message = "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors. (insufficient quota: retrying will not help until the account's plan or billing is fixed)";
    for (name, chunks) in fixtures::variants(&sse) {
        let err = fixtures::parse_stream(&OpenAiResponses, &chunks).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Auth, "{name}");
        assert!(!err.is_retryable(), "{name}");
        assert_eq!(err.message, message, "{name}");
    }
    // Event by event: created and in_progress give nothing, the error event
    // fails, the response.failed after it is ignored, and finish repeats the
    // first error.
    let events = fixtures::load(ERR_MIDSTREAM_QUOTA);
    let Body::Sse(bytes) = &events[0].body else {
        panic!()
    };
    let decoded = rein_providers::sse::decode_all(bytes);
    assert_eq!(decoded.len(), 4);
    let mut parser = OpenAiResponses.parser();
    assert_eq!(parser.on_event(&decoded[0]).unwrap(), vec![]);
    assert_eq!(parser.on_event(&decoded[1]).unwrap(), vec![]);
    assert_eq!(parser.on_event(&decoded[2]).unwrap_err().message, message);
    assert_eq!(decoded[3].event, "response.failed");
    assert_eq!(parser.on_event(&decoded[3]).unwrap(), vec![]);
    assert_eq!(parser.finish().unwrap_err().message, message);
}

#[test]
fn response_failed_alone_is_an_error_with_the_response_message() {
    let err = run(&[
        json!({"type":"response.created","response":{"status":"in_progress"}}),
        json!({"type":"response.failed","response":{"status":"failed","error":{"code":"rate_limit_exceeded","message":"Slow down."}}}),
    ])
    .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert_eq!(err.message, "Slow down.");
    let err = run(&[
        json!({"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"Too long."}}}),
    ])
    .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::ContextLengthExceeded);
}

// ------------------------------------------------- stream edge behaviour

#[test]
fn a_stream_cut_before_its_completion_event_is_a_retryable_transport_failure() {
    for events in [
        vec![
            json!({"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m"}}),
            json!({"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hal"}),
        ],
        vec![json!({"type":"response.created","response":{"status":"in_progress"}})],
        vec![],
    ] {
        let err = run(&events).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Transport, "{events:?}");
        assert!(err.is_retryable());
        assert!(
            err.message.contains("response.completed"),
            "{}",
            err.message
        );
    }
}

#[test]
fn incomplete_response_maps_its_reason_and_keeps_usage() {
    let chunks = run(&[
        json!({"type":"response.output_text.delta","output_index":0,"delta":"Lo"}),
        json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":1}}}),
    ])
    .unwrap();
    assert_eq!(
        chunks,
        [
            StreamChunk::TextDelta("Lo".into()),
            StreamChunk::Usage(usage(5, 1, 0, 0)),
            StreamChunk::Done(FinishReason::Length),
        ]
    );
    let chunks = run(&[
        json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}),
    ])
    .unwrap();
    assert_eq!(chunks, [StreamChunk::Done(FinishReason::ContentFilter)]);
}

#[test]
fn whole_values_in_done_events_only_add_what_the_deltas_missed() {
    // Arguments only in .done: used once. Text deltas that stopped short:
    // completed from output_text.done. Reasoning only in output_item.done.
    let chunks = run(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}),
        json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"First."},{"type":"summary_text","text":"Second."}],"encrypted_content":"ENC"}}),
        json!({"type":"response.output_text.delta","output_index":1,"content_index":0,"delta":"Hel"}),
        json!({"type":"response.output_text.done","output_index":1,"content_index":0,"text":"Hello"}),
        json!({"type":"response.output_item.done","output_index":1,"item":{"type":"message","content":[{"type":"output_text","text":"Hello"}]}}),
        json!({"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","call_id":"c1","name":"bash","arguments":""}}),
        json!({"type":"response.function_call_arguments.done","output_index":2,"arguments":"{\"command\":\"ls\"}"}),
        json!({"type":"response.output_item.done","output_index":2,"item":{"type":"function_call","call_id":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}}),
        json!({"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hello"}]}]}}),
    ])
    .unwrap();
    let msg = assemble(&chunks);
    assert_eq!(
        msg.content,
        [
            ContentPart::Reasoning(ReasoningBlock {
                text: "First.\n\nSecond.".into(),
                signature: None,
                encrypted: Some("ENC".into()),
                id: Some("rs_1".into()),
            }),
            ContentPart::Text {
                text: "Hello".into()
            },
            ContentPart::ToolCall(ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls"}"#.into(),
            }),
        ]
    );
    assert_eq!(msg.finish, Some(FinishReason::ToolCalls));
    assert_eq!(msg.usage, None);
}

#[test]
fn summary_parts_are_separated_by_a_blank_line_while_streaming() {
    let chunks = run(&[
        json!({"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"One"}),
        json!({"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"Two"}),
        json!({"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"r","summary":[{"type":"summary_text","text":"One"},{"type":"summary_text","text":"Two"}],"encrypted_content":"E"}}),
        json!({"type":"response.completed","response":{"status":"completed"}}),
    ])
    .unwrap();
    assert_eq!(
        chunks,
        [
            StreamChunk::ReasoningDelta("One".into()),
            StreamChunk::ReasoningDelta("\n\nTwo".into()),
            StreamChunk::ReasoningEnd {
                signature: None,
                encrypted: Some("E".into()),
                id: Some("r".into()),
            },
            StreamChunk::Done(FinishReason::Stop),
        ]
    );
}

#[test]
fn a_refusal_is_shown_as_text_and_ends_as_content_filter() {
    let chunks = run(&[
        json!({"type":"response.refusal.delta","output_index":0,"content_index":0,"delta":"I can't help"}),
        json!({"type":"response.refusal.done","output_index":0,"content_index":0,"refusal":"I can't help with that."}),
        json!({"type":"response.completed","response":{"status":"completed"}}),
    ])
    .unwrap();
    assert_eq!(
        chunks,
        [
            StreamChunk::TextDelta("I can't help".into()),
            StreamChunk::TextDelta(" with that.".into()),
            StreamChunk::Done(FinishReason::ContentFilter),
        ]
    );
}

#[test]
fn events_after_done_are_ignored_and_the_event_name_is_used_only_without_a_type() {
    let mut parser = OpenAiResponses.parser();
    let named = SseEvent {
        event: "response.output_text.delta".into(),
        data: r#"{"output_index":0,"delta":"x"}"#.into(),
        id: None,
    };
    assert_eq!(
        parser.on_event(&named).unwrap(),
        [StreamChunk::TextDelta("x".into())]
    );
    // The data's type wins over a wrong event name.
    let mislabelled = SseEvent {
        event: "response.completed".into(),
        data: r#"{"type":"response.output_text.delta","output_index":0,"delta":"y"}"#.into(),
        id: None,
    };
    assert_eq!(
        parser.on_event(&mislabelled).unwrap(),
        [StreamChunk::TextDelta("y".into())]
    );
    let done = event(r#"{"type":"response.completed","response":{"status":"completed"}}"#);
    assert_eq!(
        parser.on_event(&done).unwrap(),
        [StreamChunk::Done(FinishReason::Stop)]
    );
    assert_eq!(parser.on_event(&named).unwrap(), []);
    assert_eq!(parser.finish().unwrap(), []);
}

#[test]
fn malformed_or_unexpected_input_never_panics() {
    let junk = [
        "",
        "[DONE]",
        "null",
        "[]",
        "42",
        "\"text\"",
        "{}",
        r#"{"type":5}"#,
        r#"{"type":"response.output_text.delta","delta":5,"output_index":"0"}"#,
        r#"{"type":"response.output_text.done","output_index":-1,"text":null}"#,
        r#"{"type":"response.output_item.added","output_index":18446744073709551615,"item":[]}"#,
        r#"{"type":"response.output_item.added","item":{"type":"function_call","call_id":7,"name":null}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"message","content":"x"}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"reasoning","summary":[1,null,{"text":3}]}}"#,
        r#"{"type":"response.output_item.done","item":{"type":"custom_tool_call"}}"#,
        r#"{"type":"response.function_call_arguments.delta"}"#,
        r#"{"type":"response.function_call_arguments.done","arguments":{}}"#,
        r#"{"type":"response.custom_tool_call_input.delta","delta":[]}"#,
        r#"{"type":"response.reasoning_summary_text.delta","summary_index":"a","delta":"x"}"#,
        r#"{"type":"response.completed","response":"x"}"#,
        r#"{"type":"response.completed","response":{"usage":{"input_tokens":-1,"output_tokens_details":7}}}"#,
        r#"{"type":"response.incomplete","response":{"incomplete_details":"x"}}"#,
        r#"{"type":"response.failed"}"#,
        r#"{"type":"response.failed","response":{"error":"boom"}}"#,
        r#"{"type":"error"}"#,
        r#"{"type":"error","error":null,"status":99999}"#,
    ];
    for data in junk {
        let mut parser = OpenAiResponses.parser();
        let _ = parser.on_event(&event(data));
        let _ = parser.finish();
    }
    let mut parser = OpenAiResponses.parser();
    for data in junk {
        let _ = parser.on_event(&event(data));
    }
    let _ = parser.finish();
    // Every prefix of a real stream: no panic, and an Ok answer ends in Done.
    let decoded = rein_providers::sse::decode_all(&fixtures::sse_of(SUMMARY_STREAM));
    for n in 0..=decoded.len() {
        if let Ok(chunks) = fixtures::parse_stream(
            &OpenAiResponses,
            &[decoded[..n]
                .iter()
                .flat_map(|e| format!("data: {}\n\n", e.data).into_bytes())
                .collect()],
        )
        .map(|p| p.chunks)
        {
            assert!(
                matches!(chunks.last(), Some(StreamChunk::Done(_))),
                "prefix {n}"
            );
        }
    }
    for body in [
        json!(null),
        json!([]),
        json!({}),
        json!({"output": 5}),
        json!({"output": [1, "x", {"type": "message", "content": [{"type": "output_text"}]}]}),
        json!({"status": "failed"}),
        json!({"error": {"message": "bad"}}),
    ] {
        let _ = OpenAiResponses.parse_response(&body);
    }
    for (status, body) in [(0, ""), (999, "{"), (400, "[]"), (500, "null")] {
        let _ = OpenAiResponses.parse_error(status, body);
    }
}

#[test]
fn parse_response_rejects_what_is_not_a_response_and_fails_on_an_error_body() {
    let err = OpenAiResponses
        .parse_response(&json!({"foo": 1}))
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Protocol);
    let err = OpenAiResponses
        .parse_response(&json!({"id": "r", "status": "failed", "error": {"code": "server_error", "message": "The model failed."}, "output": []}))
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert_eq!(err.message, "The model failed.");
    // A whole response with reasoning that carries a summary and encrypted
    // content.
    let chunks = OpenAiResponses
        .parse_response(&json!({
            "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_9", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "XYZ"},
                {"type": "message", "content": [{"type": "output_text", "text": "Done."}]}
            ],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 6, "output_tokens_details": {"reasoning_tokens": 2}}
        }))
        .unwrap();
    assert_eq!(
        chunks,
        [
            StreamChunk::ReasoningDelta("Plan.".into()),
            StreamChunk::ReasoningEnd {
                signature: None,
                encrypted: Some("XYZ".into()),
                id: Some("rs_9".into()),
            },
            StreamChunk::TextDelta("Done.".into()),
            StreamChunk::Usage(usage(10, 6, 4, 2)),
            StreamChunk::Done(FinishReason::Stop),
        ]
    );
}

// ---------------------------------------------------------------- requests

fn endpoint(key: Option<&str>, max: Option<u32>) -> EndpointConfig {
    EndpointConfig {
        base_url: "https://api.openai.com/v1".into(),
        api_key: key.map(str::to_string),
        model: "gpt-5".into(),
        max_output_tokens: max,
        ..Default::default()
    }
}

fn tool(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

#[test]
fn build_request_replays_the_whole_conversation_statelessly_in_order() {
    let glob_schema = json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]});
    let read_schema =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    let req = ModelRequest {
        system: "You are rein.".into(),
        messages: vec![
            Message::user("What is in a.txt?"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "Find it, then read it.".into(),
                        signature: None,
                        encrypted: Some("gAAAA-enc".into()),
                        id: Some("rs_1".into()),
                    }),
                    ContentPart::Text {
                        text: "Let me look.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "glob".into(),
                        arguments: r#"{"pattern":"a.*"}"#.into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a.txt"}"#.into(),
                    }),
                ],
                usage: Some(usage(1, 2, 0, 0)),
                finish: Some(FinishReason::ToolCalls),
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_1".into(),
                name: "glob".into(),
                output: "a.txt".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_2".into(),
                name: "read_file".into(),
                output: "permission denied".into(),
                is_error: true,
            }),
        ],
        tools: vec![
            tool("glob", "Find files.", glob_schema.clone()),
            tool("read_file", "Read a file.", read_schema.clone()),
        ],
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(Some("sk-test"), Some(4000)));
    assert_eq!(wire.path, "/responses");
    assert_eq!(
        wire.headers,
        [("authorization".to_string(), "Bearer sk-test".to_string())]
    );
    assert_eq!(
        wire.body,
        json!({
            "model": "gpt-5",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "instructions": "You are rein.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "What is in a.txt?"}]},
                {"type": "reasoning", "id": "rs_1",
                 "summary": [{"type": "summary_text", "text": "Find it, then read it."}],
                 "encrypted_content": "gAAAA-enc"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Let me look."}]},
                {"type": "function_call", "call_id": "call_1", "name": "glob", "arguments": "{\"pattern\":\"a.*\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
                {"type": "function_call_output", "call_id": "call_2", "output": "Error: permission denied"}
            ],
            "tools": [
                {"type": "function", "name": "glob", "description": "Find files.", "parameters": glob_schema, "strict": false},
                {"type": "function", "name": "read_file", "description": "Read a file.", "parameters": read_schema, "strict": false}
            ],
            "max_output_tokens": 4000
        })
    );
    // The key shows up in the header only.
    assert!(!wire.body.to_string().contains("sk-test"));
}

#[test]
fn build_request_omits_what_is_empty_and_replays_only_encrypted_openai_reasoning() {
    let req = ModelRequest {
        system: String::new(),
        messages: vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    // Anthropic thinking (signed): not for this API.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "thought".into(),
                        signature: Some("sig".into()),
                        encrypted: None,
                        id: None,
                    }),
                    // Plain reasoning text (DeepSeek): nothing to replay.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "plain".into(),
                        signature: None,
                        encrypted: None,
                        id: Some("uuid".into()),
                    }),
                    // Encrypted without summary or id.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: String::new(),
                        signature: None,
                        encrypted: Some("E".into()),
                        id: None,
                    }),
                    ContentPart::Text { text: "a".into() },
                    ContentPart::Text { text: "b".into() },
                    ContentPart::ToolCall(ToolCall {
                        id: "c".into(),
                        name: "t".into(),
                        arguments: String::new(),
                    }),
                ],
                ..Default::default()
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "c".into(),
                name: "t".into(),
                output: "Error: already said".into(),
                is_error: true,
            }),
        ],
        tools: vec![],
        max_output_tokens: Some(50),
        tool_choice: Default::default(),
        single_tool_call: false,
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(None, Some(4000)));
    assert!(wire.headers.is_empty());
    assert_eq!(
        wire.body,
        json!({
            "model": "gpt-5",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "reasoning", "summary": [], "encrypted_content": "E"},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "a"},
                    {"type": "output_text", "text": "b"}
                ]},
                {"type": "function_call", "call_id": "c", "name": "t", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "Error: already said"}
            ],
            "max_output_tokens": 50
        })
    );
}

/// A tool result's images go to the Responses API as `input_image` parts
/// of the call's output (data URLs), after its text.
#[test]
fn a_tool_results_images_are_sent_as_input_image_parts() {
    let req = ModelRequest {
        messages: vec![
            Message::user("look"),
            Message::Tool(ToolResult {
                images: vec![Image {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                }],
                call_id: "call_1".into(),
                name: "shot".into(),
                output: "[image image/png, 8 bytes]".into(),
                is_error: false,
            }),
        ],
        ..Default::default()
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(Some("k"), Some(4000)));
    assert_eq!(
        wire.body["input"][1]["output"],
        json!([
            {"type": "input_text", "text": "[image image/png, 8 bytes]"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
        ])
    );
}

#[test]
fn build_request_sends_the_tool_round_trip_the_way_the_recorded_client_did() {
    // Turn 1 of the recording, parsed by rein, then replayed with the tool
    // results the recording sent: the input items (after the recorded
    // developer message, which rein sends as instructions) and the tools
    // are what the recorded client sent.
    let interactions = fixtures::load(PARALLEL_CALLS);
    let Body::Sse(turn1) = &interactions[0].body else {
        panic!()
    };
    let answer = parse(turn1).message;
    let recorded = interactions[1].request.clone().unwrap();
    let recorded_tools = recorded["tools"].as_array().unwrap();
    let tools: Vec<ToolSpec> = recorded_tools
        .iter()
        .map(|t| {
            tool(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
                t["parameters"].clone(),
            )
        })
        .collect();
    let req = ModelRequest {
        system: "You are a helpful assistant. Always use both add and multiply at the same time."
            .into(),
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(answer),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_inViAUr9eV0GDtyOywkCxp59".into(),
                name: "add".into(),
                output: "5".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_Op66UUnzuOoKmgGeFJQJFTUY".into(),
                name: "multiply".into(),
                output: "6".into(),
                is_error: false,
            }),
        ],
        tools,
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(Some("k"), Some(4000)));
    let input = wire.body["input"].as_array().unwrap();
    let recorded_input = recorded["input"].as_array().unwrap();
    assert_eq!(recorded_input[0]["role"], "developer");
    assert_eq!(recorded_input[0]["content"], wire.body["instructions"]);
    assert_eq!(input.as_slice(), &recorded_input[1..]);
    assert_eq!(wire.body["tools"], recorded["tools"]);
    assert_eq!(wire.body["store"], recorded["store"]);
    assert_eq!(
        wire.body["max_output_tokens"],
        recorded["max_output_tokens"]
    );
    assert_eq!(wire.body["stream"], recorded["stream"]);
}

#[test]
fn encrypted_reasoning_is_not_requested_from_models_that_reject_it() {
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    for (model, included) in [
        ("gpt-5", true),
        ("o4-mini", true),
        ("gpt-5.1-codex", true),
        ("deepseek-v4-flash", true),
        ("gpt-4o", false),
        ("gpt-4.1-mini", false),
        ("openai/gpt-4o-mini", false),
        ("gpt-5-chat-latest", false),
        ("chatgpt-4o-latest", false),
        ("gpt-3.5-turbo", false),
    ] {
        let ep = EndpointConfig {
            model: model.into(),
            ..endpoint(None, None)
        };
        let body = OpenAiResponses.build_request(&req, &ep).body;
        assert_eq!(body.get("include").is_some(), included, "{model}");
        assert_eq!(body["store"], false, "{model}");
    }
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice_required() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![tool("read_file", "Read a file.", json!({"type": "object"}))],
        tool_choice: rein_core::ToolChoice::Required,
        ..Default::default()
    };
    let ep = endpoint(Some("k"), None);
    assert_eq!(
        OpenAiResponses.build_request(&req, &ep).body["tool_choice"],
        json!("required")
    );
    req.tool_choice = rein_core::ToolChoice::Auto;
    req.single_tool_call = true;
    let body = OpenAiResponses.build_request(&req, &ep).body;
    assert!(body.get("tool_choice").is_none());
    assert_eq!(body["parallel_tool_calls"], json!(false));
}
