//! The OpenAI Chat Completions protocol against recorded traffic from
//! OpenAI and OpenAI-compatible servers: every fixture of its set has a test
//! asserting the text, reasoning, tool calls, usage and finish reason read
//! from it (values taken from the fixture, written as literals), and every
//! stream must read the same in every SSE variant.

use rein_core::{
    AssistantAssembler, AssistantMessage, ContentPart, FinishReason, Message, ModelRequest,
    ProviderError, ProviderErrorKind, ReasoningBlock, StreamChunk, ToolCall, ToolResult, ToolSpec,
    Usage,
};
use rein_providers::openai_chat::OpenAiChat;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use rein_providers::sse::SseEvent;
use serde_json::{Value, json};

use super::fixtures::{self, Body, Parsed};

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
// Coverage: every fixture of this protocol's set has a test below.

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

// ---------------------------------------------------------------------------
// openai-chat/

#[test]
fn openai_text_stream_joins_content_and_sends_the_trailing_usage_before_done() {
    let parsed = check_stream(
        "openai-chat/openai_gpt-4o_text_include-usage.sse",
        0,
        &Want {
            text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
            reasoning: &[],
            calls: vec![],
            usage: usage(14, 30, 0, 0),
            finish: FinishReason::Stop,
        },
    );
    // Only content deltas, then usage and Done: the finish chunk itself
    // sends nothing.
    assert!(
        parsed.chunks[..parsed.chunks.len() - 2]
            .iter()
            .all(|c| matches!(c, StreamChunk::TextDelta(t) if !t.is_empty()))
    );
}

#[test]
fn openai_parallel_tool_calls_stream_joins_fragments_per_index() {
    check_stream(
        "openai-chat/openai_gpt-4o_parallel-tool-calls_include-usage.sse",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "call_JMW1whyEaYG438VE1OIflxA2",
                    "GetWeatherArgs",
                    json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
                ),
                (
                    "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                    "get_stock_price",
                    json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
                ),
            ],
            usage: usage(149, 60, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn openai_single_tool_call_joins_arguments_split_mid_token() {
    check_stream(
        "openai-chat/openai_gpt-4o_single-tool-call_args-fragments.sse",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![(
                "call_c91SqDXlYFuETYv8mUHzz6pp",
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "UK", "units": "c"}),
            )],
            usage: usage(76, 24, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn openai_n3_stream_reads_only_choice_zero() {
    let parsed = check_stream(
        "openai-chat/openai_gpt-4o_n3-multiple-choices.sse",
        0,
        &Want {
            text: "{\"city\":\"San Francisco\",\"temperature\":65,\"units\":\"f\"}",
            reasoning: &[],
            calls: vec![],
            usage: usage(79, 42, 0, 0),
            finish: FinishReason::Stop,
        },
    );
    // Choices 1 and 2 said 61 and 59; none of their text leaks in.
    let all: String = parsed
        .chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(!all.contains("61") && !all.contains("59"), "{all}");
}

#[test]
fn openai_max_tokens_stream_finishes_with_length() {
    check_stream(
        "openai-chat/openai_gpt-4o_finish-length_max-tokens-1.sse",
        0,
        &Want {
            text: "{\"",
            reasoning: &[],
            calls: vec![],
            usage: usage(79, 1, 0, 0),
            finish: FinishReason::Length,
        },
    );
}

#[test]
fn openai_refusal_deltas_become_text_and_finish_as_content_filter() {
    check_stream(
        "openai-chat/openai_gpt-4o_refusal-deltas.sse",
        0,
        &Want {
            text: "I'm sorry, I can't assist with that request.",
            reasoning: &[],
            calls: vec![],
            usage: usage(79, 11, 0, 0),
            // The service said "stop", but the model refused.
            finish: FinishReason::ContentFilter,
        },
    );
}

#[test]
fn openai_logprobs_are_ignored() {
    check_stream(
        "openai-chat/openai_gpt-4o_content-logprobs.sse",
        0,
        &Want {
            text: "Foo!",
            reasoning: &[],
            calls: vec![],
            usage: usage(9, 2, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_stream_with_obfuscation_and_null_usage_and_no_done_marker_reads_fully() {
    check_stream(
        "openai-chat/openai_gpt-4.1-nano_text_obfuscation.data.jsonl",
        0,
        &Want {
            text: "**Holiday Name:** Harmony Day\n\n**Date:** Celebrated annually on the first Saturday of May\n\n**Purpose:** Harmony Day is dedicated to fostering understanding, kindness, and unity among diverse communities. It emphasizes celebrating cultural differences while promoting empathy and collaboration.\n\n**Traditions:**\n\n1. **Cultural Potluck Gatherings:** Communities come together to share traditional dishes from their backgrounds, encouraging conversation and curiosity about different cultures.\n\n2. **Story Circles:** People of all ages are encouraged to share stories from their heritage or personal experiences that promote understanding and empathy.\n\n3. **Decorate for Unity:** Public spaces and homes are decorated with symbols representing different cultures—flags, traditional art, and meaningful motifs—to visually celebrate diversity.\n\n4. **Collaborative Art Projects:** Communities create murals or sculptures that symbolize unity and diversity, involving artists and residents of all ages.\n\n5. **Acts of Kindness:** As a central activity, participants perform Small acts of kindness throughout the day, such as volunteering, helping neighbors, or inviting someone new to join festivities.\n\n6. **Music & Dance Festivals:** Local performances showcase a variety of musical styles and dances from different parts of the world, emphasizing shared joy and creativity.\n\n7. **Educational Workshops:** Interactive sessions teach about various cultures’ histories, traditions, and celebrations, fostering respect and knowledge.\n\n**Overall Spirit:** Harmony Day aims to create a sense of global community, reminding everyone that despite our differences, we are all connected through shared human experiences and mutual respect.",
            reasoning: &[],
            calls: vec![],
            usage: usage(16, 300, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_nonstreaming_text_body_reads_content_usage_and_finish() {
    check_response(
        "openai-chat/openai_gpt-4.1-nano_text.response.json",
        0,
        &Want {
            text: "**Holiday Name:** Galaxy Day  \n\n**Date:** October 31st, aligning with the night sky's peak viewing of constellations and celestial events.  \n\n**Purpose:** Galaxy Day celebrates the universe's vastness, beauty, and our collective curiosity about the cosmos. It's a time to honor science, imagination, and our shared human wonder about the stars and beyond.  \n\n**Traditions:**  \n\n1. **Stargazing Festivals:** Communities host outdoor gatherings in parks, rooftops, or open fields. People set up telescopes, enjoy guided stargazing sessions, and share stories about space, astronomy, and mythologies linked to constellations.  \n\n2. **Cosmic Costumes:** Participants dress up as planets, stars, astronauts, aliens, or celestial phenomena. Parades and costume contests encourage creativity inspired by the universe's mysteries.  \n\n3. **Celestial Art:** Art installations and light shows depict galaxies, nebulae, and astronomical phenomena. Schools and galleries often hold exhibitions or workshops focusing on space-inspired creativity.  \n\n4. **Educational Activities:** Museums and science centers offer special exhibits, planetarium shows, and activities for all ages to learn about space exploration, astronomy, and the universe's origins.  \n\n5. **Offering of Light:** In homage to distant stars, families and communities light candles or lanterns, symbolizing hope, curiosity, and the idea that even the smallest light can illuminate vast darkness—mirroring our quest to find knowledge amidst the cosmos.  \n\n6. **Global Connection:** As Galaxy Day emphasizes shared wonder, people are encouraged to connect virtually with friends or communities worldwide to share discoveries, stories, and aspirations related to space.  \n\nGalaxy Day fosters a sense of unity, exploration, and awe, inspiring individuals to look up and dream beyond our world.",
            reasoning: &[],
            calls: vec![],
            usage: usage(16, 363, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn azure_stream_skips_the_prompt_filter_chunk_and_reads_reasoning_tokens() {
    check_stream(
        "openai-chat/azure-openai_gpt-5-nano_model-router_prompt-filter-results.data.jsonl",
        0,
        &Want {
            text: "Capital of Denmark.",
            reasoning: &[],
            calls: vec![],
            usage: usage(15, 78, 0, 64),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_nonstreaming_parallel_tool_calls_then_text_turn() {
    let rel = "openai-chat/openai_gpt-4o_parallel-tool-calls_nonstream.vcr.yaml";
    check_response(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "call_fifE5poZ3dg3JDUKGFi48NGq",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "call_cvvIly4eGLZUYOMhAviT8jAF",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(110, 50, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_response(
        rel,
        1,
        &Want {
            text: "The result of adding 2 and 3 is 5, and the result of multiplying 2 and 3 is 6.",
            reasoning: &[],
            calls: vec![],
            usage: usage(176, 28, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_streamed_parallel_tool_calls_then_text_turn() {
    let rel = "openai-chat/openai_gpt-4o_parallel-tool-calls_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "call_ehIWdjL1abZk1h8FWGLQ0Hie",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "call_fBSgA47J5VeONggizTIvl7AH",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(106, 50, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "The sum of 2 and 3 is 5, and the product is 6.",
            reasoning: &[],
            calls: vec![],
            usage: usage(172, 20, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

// ---------------------------------------------------------------------------
// openai-compatible/

#[test]
fn alibaba_continuations_with_empty_ids_join_the_first_call() {
    check_stream(
        "openai-compatible/alibaba/alibaba-qwen_tool-call_include-usage.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![(
                "call_eee11723464a4b9eb8cee71d",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(295, 22, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn anthropic_compat_tool_index_starting_at_one_makes_one_call_after_the_text() {
    let parsed = check_stream(
        "openai-compatible/anthropic-openai-compat/anthropic-openai-compat_haiku-4-5_tool-index-starts-at-1.sse",
        0,
        &Want {
            text: "Reading it.",
            reasoning: &[],
            calls: vec![("toolu_sanitized", "read_file", json!({"path": "a.txt"}))],
            usage: None,
            finish: FinishReason::ToolCalls,
        },
    );
    assert!(matches!(
        parsed.message.content.as_slice(),
        [ContentPart::Text { .. }, ContentPart::ToolCall(_)]
    ));
}

#[test]
fn cerebras_reasoning_field_streams_each_read_on_their_own() {
    // Two complete answers recorded back to back (no [DONE] in this
    // format): split after the first finish chunk and read each.
    let rel = "openai-compatible/cerebras/cerebras_zai-glm-4.7_reasoning-field_tool-calls_2-streams.data.jsonl";
    let whole = String::from_utf8(sse_body(rel, 0)).unwrap();
    let at = whole.find("\"finish_reason\":\"tool_calls\"").unwrap();
    let cut = at + whole[at..].find("\n\n").unwrap() + 2;
    let (first, second) = whole.split_at(cut);
    check_sse(
        &format!("{rel} (first answer)"),
        first.as_bytes(),
        &Want {
            text: "",
            reasoning: &[
                "The user is asking about a \"magic number\". I have access to a function called \"nonUsefulTool\" that \"returns a magic number\". Let me call this function to get the magic number for the user.\n\nLooking at the function schema:\n- Function name: \"nonUsefulTool\"\n- Parameters: empty object (no parameters required)\n- Description: \"A non-useful tool that returns a magic number\"\n\nI should call this function to get the magic number.",
            ],
            calls: vec![("bbd2b9d98", "nonUsefulTool", json!({}))],
            usage: usage(322, 104, 256, 97),
            finish: FinishReason::ToolCalls,
        },
    );
    check_sse(
        &format!("{rel} (second answer)"),
        second.as_bytes(),
        &Want {
            text: "{\"result\": \"2026\"}",
            reasoning: &[
                "The nonUsefulTool returned the number 2026 as the \"magic number\". Now I need to provide this result in the specified JSON format according to the schema provided.\n\nThe schema requires:\n- A JSON object with a \"result\" property of type string\n- The \"result\" property is required\n- No additional properties are allowed\n\nSo I need to return:\n```json\n{\"result\": \"2026\"}\n```\n\nNote that the result should be a string according to the schema, even though it's a number.",
            ],
            calls: vec![("e0ecf32e0", "nonUsefulTool", json!({}))],
            usage: usage(433, 122, 256, 108),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn deepseek_reasoning_content_then_tool_call_with_usage_on_the_finish_chunk() {
    check_stream(
        "openai-compatible/deepseek/deepseek-reasoner_reasoning-content_then-tool-call.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[
                "The user is asking for the weather in San Francisco. I need to use the weather tool to get this information. Let me invoke the weather tool with the location parameter set to \"San Francisco\".",
            ],
            calls: vec![(
                "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(339, 83, 320, 39),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn deepseek_nonstreaming_reasoning_content_and_tool_call() {
    check_response(
        "openai-compatible/deepseek/deepseek-reasoner_reasoning-content_tool-call.response.json",
        0,
        &Want {
            text: "",
            reasoning: &[
                "The user is asking for the weather in San Francisco. I have a weather tool available that can get weather information for a location. I should use this tool with the location parameter set to \"San Francisco\". Let me call the weather function.",
            ],
            calls: vec![(
                "call_00_9V0vrf86Pc9aelHCJMZqnJBo",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(339, 92, 320, 48),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn deepseek_long_reasoning_then_text_stream() {
    check_stream(
        "openai-compatible/deepseek/deepseek_reasoning-content_text_stream.vcr.yaml",
        0,
        &Want {
            text: "Hello there! 😊 How can I help you today?",
            reasoning: &[
                "Hmm, the user just said \"Hello\". It's a simple greeting but I wonder if there's more to it.  \n\nThe message is very brief, so I don't have much context to work with. Maybe they're just testing if I'm responsive, or perhaps they're new to chatting with AI.  \n\nI should keep my reply warm and inviting to encourage further conversation. A smiley face would help make it friendly. Since they didn't specify a need, I'll leave it open-ended by asking how I can help them today.  \n\nThe tone should be cheerful but professional - not too stiff, not too casual. \"Hello there!\" feels right for a start. Adding \"What can I do for you today?\" turns it into an invitation rather than just mirroring their greeting.  \n\nI'll avoid assumptions about their gender, location, or intent since there's zero information. If they're just being polite, they might not reply further - and that's okay too.",
            ],
            calls: vec![],
            usage: usage(6, 212, 0, 198),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn groq_kimi_whole_calls_in_single_chunks_and_duplicate_usage() {
    let rel = "openai-compatible/groq/groq_kimi-k2_parallel-tool-calls_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "I'll perform both addition and multiplication on the numbers 2 and 3 for you.",
            reasoning: &[],
            calls: vec![
                ("functions.add:0", "add", json!({"a": 2, "b": 3})),
                ("functions.multiply:1", "multiply", json!({"a": 2, "b": 3})),
            ],
            usage: usage(201, 58, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "Here are the results:\n- Addition: 2 + 3 = 5\n- Multiplication: 2 × 3 = 6",
            reasoning: &[],
            calls: vec![],
            usage: usage(296, 30, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn groq_whole_tool_call_in_one_chunk_with_x_groq_usage() {
    check_stream(
        "openai-compatible/groq/groq_llama-3.3-70b_whole-tool-call-in-one-chunk_x-groq.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![("tk85n1k4m", "weather", json!({}))],
            usage: usage(210, 15, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn llama_cpp_reasoning_content_tool_call_and_usage_beside_timings() {
    let rel = "openai-compatible/llama.cpp/llama-cpp-b7010_gpt-oss-20b_reasoning-content_tool-call_timings_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &["User wants weather in Florence, Italy. We can use the weather function."],
            calls: vec![(
                "g2KOIWzn722hzEaZQmNVP4roUPEiYafL",
                "weather",
                json!({"location": "Florence, Italy"}),
            )],
            usage: usage(139, 41, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "The current weather in Florence, Italy is **40\u{202f}°C**.",
            reasoning: &[],
            calls: vec![],
            usage: usage(196, 18, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn llama_cpp_nonstreaming_bodies_with_choices_first_and_timings() {
    let rel =
        "openai-compatible/llama.cpp/llama-cpp_gpt-oss-20b_tool-call_nonstream_timings.vcr.yaml";
    check_response(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[
                "The user asks: \"What's the weather in Florence, Italy?\" We have a tool \"functions.weather\" that can get weather information. We should call it.",
            ],
            calls: vec![(
                "mvVq65j66dyGRizURhbdNCEnSO56GhXx",
                "weather",
                json!({"location": "Florence,Italy"}),
            )],
            usage: usage(139, 58, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_response(
        rel,
        1,
        &Want {
            text: "The current weather in Florence, Italy is **40\u{202f}°C**.",
            reasoning: &[],
            calls: vec![],
            usage: usage(213, 18, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn mistral_tool_call_without_index_or_type_beside_finish_and_usage() {
    check_stream(
        "openai-compatible/mistral/mistral-small_tool-call-without-index-or-type.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![("gSIMJiOkT", "weather", json!({"location": "San Francisco"}))],
            usage: usage(124, 22, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn empty_name_on_a_continuation_keeps_the_first_name() {
    check_stream(
        "openai-compatible/mistral/zai-glm-5-2_incremental-tool-call_empty-name-continuation.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![(
                "chatcmpl-tool-9f149c74c42f265b",
                "webSearchTool",
                json!({"query": "current Berlin weather"}),
            )],
            usage: usage(171, 14, 128, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn ollama_nonstreaming_reasoning_field_text_then_tool_call() {
    let rel = "openai-compatible/ollama/ollama-cloud_tool-call_nonstream.vcr.yaml";
    check_response(
        rel,
        0,
        &Want {
            text: "Paris.",
            reasoning: &[
                "We need to answer question: \"What is the capital of France?\" The answer: Paris. The user didn't request the output to be in a specific format, but the system instructions specify that the tool should be used only if user requests. The user didn't request a tool. So we can produce a direct answer. The instruction: \"When I need to: use tool, say I need it with a brief statement\" - that's for tool usage. We don't need the tool. Just give the answer. Ensure no extra marks. Just plain text.",
            ],
            calls: vec![],
            usage: usage(134, 122, 0, 0),
            finish: FinishReason::Stop,
        },
    );
    check_response(
        rel,
        1,
        &Want {
            text: "",
            reasoning: &[
                "The conversation: user asked \"What is the capital of France?\" assistant responded \"Paris.\" That is fine. But they expect a JSON output? They saw a validation error: \"Expected JSON: invalid JSON.\" The system is set up such that the assistant must respond using the function \"final_result\" JSON object with keys city and country. The previous response was not JSON; that's why validator error. So we must call function final_result with city = \"Paris\" and country = \"France\". We need to produce JSON accordingly. The function signature: final_result({city: string, country: string}). We need to output the JSON. Using the functions interface. Let's produce: { \"city\": \"Paris\", \"country\": \"France\" } as JSON.\n\nWe need to provide answer in JSON format. Let's do that.",
            ],
            calls: vec![(
                "call_o2vnpxrw",
                "final_result",
                json!({"city": "Paris", "country": "France"}),
            )],
            usage: usage(206, 194, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn openrouter_comments_empty_fragments_and_repeated_finish_chunk() {
    let rel =
        "openai-compatible/openrouter/openrouter_anthropic_parallel-tool-calls_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "toolu_bdrk_01L6Xsux1sqgXSsd2xi64poF",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "toolu_bdrk_014pCKe2FHbyMZerLY1JxG4a",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(685, 120, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "Perfect! Here are the results:\n\n- **Addition**: 2 + 3 = **5**\n- **Multiplication**: 2 × 3 = **6**",
            reasoning: &[],
            calls: vec![],
            usage: usage(866, 43, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openrouter_reasoning_and_reasoning_details_are_not_doubled_and_keep_the_signature() {
    let parsed = check_stream(
        "openai-compatible/openrouter/openrouter_processing-comments_reasoning-details_stream.vcr.yaml",
        0,
        &Want {
            text: "2 + 2 = 4",
            reasoning: &["This is a simple arithmetic question. 2+2 equals 4."],
            calls: vec![],
            usage: usage(43, 36, 0, 13),
            finish: FinishReason::Stop,
        },
    );
    let block: &ReasoningBlock = parsed.message.reasoning().next().unwrap();
    assert_eq!(
        block.signature.as_deref(),
        Some(
            "Et0BCkgIChACGAIqQA2s7h7tA7IG35fbwVkou9PM2hANVJNUwcEM4q12fTRDK6y3v6YoEvJ+7bko8wnW/GLsQFXadaJPAEMCpLkhI9ISDLjFkeR1aVUIvdCtyBoMrUTovh0jwk+wpnZWIjANV3e6VVdgbGSsEyyTHO6KMmVtqqs79f9blnVdJmmMIwMyTi6bEtG59+jTU7v1zlsqQ2IKGZILOlr6adh0Aam7zYttvisys+wjyZZXU1y/Srz0nmp1cFgVOJe1BLKQI3SSRrjsqQC0uAEUZy0GX0Rq1AXjvIcYAQ=="
        )
    );
}

#[test]
fn vllm_stream_ignores_token_id_fields() {
    check_stream(
        "openai-compatible/vllm/vllm-0.24_crusoe_llama-3.3-70b_text_include-usage.vcr.yaml",
        0,
        &Want {
            text: "1, 2, 3, 4, 5",
            reasoning: &[],
            calls: vec![],
            usage: usage(46, 14, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn xai_reasoning_tokens_outside_completion_tokens_are_added_to_output() {
    // xAI: prompt 291 + completion 26 + reasoning 196 = total 513.
    check_stream(
        "openai-compatible/xai/xai_grok-3-mini_reasoning-content_tool-call.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &["First, the user is"],
            calls: vec![(
                "call_55117580",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(291, 222, 290, 196),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn zai_reasoning_text_and_two_whole_calls_with_usage_on_the_finish_chunk() {
    let rel = "openai-compatible/zai/zai_glm-4.7-flash_reasoning-content_parallel-tool-calls_stream.vcr.yaml";
    let parsed = check_stream(
        rel,
        0,
        &Want {
            text: "I'll both add and multiply the numbers 2 and 3 for you.",
            reasoning: &[
                "The user wants me to both add and multiply the numbers 2 and 3. I need to use both the add and multiply functions on the same time, as instructed.\n\nFor add: a=2, b=3\nFor multiply: a=2, b=3\n\nI'll call both functions together.",
            ],
            calls: vec![
                (
                    "call_4f8cb52342424eb9bbc1b20e",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "call_0d06add371834452b339ffdb",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(275, 112, 43, 64),
            finish: FinishReason::ToolCalls,
        },
    );
    assert!(matches!(
        parsed.message.content.as_slice(),
        [
            ContentPart::Reasoning(_),
            ContentPart::Text { .. },
            ContentPart::ToolCall(_),
            ContentPart::ToolCall(_)
        ]
    ));
    check_stream(
        rel,
        1,
        &Want {
            text: "I've calculated both operations for you:\n\n- **Addition:** 2 + 3 = **5**\n- **Multiplication:** 2 × 3 = **6**",
            reasoning: &[
                "I got the results:\n- Addition: 2 + 3 = 5\n- Multiplication: 2 × 3 = 6\n\nNow I can provide a complete answer to the user.",
            ],
            calls: vec![],
            usage: usage(395, 79, 251, 41),
            finish: FinishReason::Stop,
        },
    );
}

// ---------------------------------------------------------------------------
// errors/

#[test]
fn openai_404_model_not_found_is_an_invalid_request_with_the_service_message() {
    let err = http_error("errors/openai-chat_404_model-not-found.vcr.yaml", 0);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert_eq!(err.status, Some(404));
    assert!(
        err.message.starts_with(
            "404 Not Found: The model `gpt-5.2-proo` does not exist or you do not have access to it."
        ),
        "{}",
        err.message
    );
    assert!(err.message.contains("model_not_found"), "{}", err.message);
}

#[test]
fn openai_400_unsupported_system_role_names_the_parameter() {
    let err = http_error(
        "errors/openai-chat_400_unsupported-value_system-role.vcr.yaml",
        0,
    );
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert!(
        err.message.starts_with(
            "400 Bad Request: Unsupported value: 'messages[0].role' does not support 'system' with this model."
        ),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("param: messages[0].role"),
        "{}",
        err.message
    );
}

#[test]
fn openai_400_unsupported_max_tokens_is_an_invalid_request() {
    let err = http_error(
        "errors/openai_400_unsupported-parameter_max-tokens.body.json",
        0,
    );
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert!(
        err.message.contains(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        ),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("unsupported_parameter"),
        "{}",
        err.message
    );
}

#[test]
fn openai_400_with_null_code_still_gives_the_message() {
    let err = http_error(
        "errors/openai_400_unsupported-parameter_temperature_code-null.body.json",
        0,
    );
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert_eq!(
        err.message,
        "400 Bad Request: Unsupported parameter: 'temperature' is not supported with this model. (type: invalid_request_error, param: temperature)"
    );
}

#[test]
fn openai_429_insufficient_quota_is_not_retryable() {
    let err = http_error("errors/openai_429_insufficient-quota.body.json", 0);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert!(
        err.message
            .starts_with("429 Too Many Requests: You exceeded your current quota"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("retrying will not help"),
        "{}",
        err.message
    );
}

#[test]
fn openrouter_429_with_numeric_code_is_retryable_and_quotes_the_upstream() {
    let rel = "errors/openrouter_429_upstream-rate-limited_numeric-code.vcr.yaml";
    for nth in 0..3 {
        let err = http_error(rel, nth);
        assert_eq!(err.kind, ProviderErrorKind::Unavailable, "#{nth}");
        assert!(err.is_retryable());
        assert!(
            err.message
                .starts_with("429 Too Many Requests: Provider returned error (code: 429)"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("upstream Google: google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream."),
            "{}",
            err.message
        );
    }
}

#[test]
fn groq_400_tool_use_failed_includes_the_failed_generation_and_later_turns_read() {
    let rel = "errors/groq_400_tool-use-failed_failed-generation.vcr.yaml";
    let err = http_error(rel, 0);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert!(
        err.message.starts_with("400 Bad Request: Tool call validation failed: tool call validation failed: parameters for tool get_something_by_name did not match schema"),
        "{}",
        err.message
    );
    assert!(err.message.contains("tool_use_failed"), "{}", err.message);
    assert!(
        err.message
            .contains("failed generation: {\"name\": \"get_something_by_name\""),
        "{}",
        err.message
    );
    check_response(
        rel,
        1,
        &Want {
            text: "",
            reasoning: &[
                "We need to call with correct param: name field. Use some name, e.g., \"test\".",
            ],
            calls: vec![(
                "fc_311ba17b-89f9-48d3-8fd9-7e74a1264855",
                "get_something_by_name",
                json!({"name": "test"}),
            )],
            usage: usage(301, 52, 0, 22),
            finish: FinishReason::ToolCalls,
        },
    );
    check_response(
        rel,
        2,
        &Want {
            text: "The first call failed due to missing and extra parameters, as expected. The second call succeeded and returned: \"Something with name: test\".",
            reasoning: &[
                "We need to respond to user request. They asked: \"Please call the ... tool with non-existent parameters to test error handling; on the second try you can use valid args\". We already did that. Now we should respond concisely, maybe acknowledging the result. Use regular quotes.",
            ],
            calls: vec![],
            usage: usage(336, 96, 256, 59),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn groq_error_event_mid_stream_fails_the_answer_and_later_turns_read() {
    let rel = "errors/groq_midstream-event-error_tool-use-failed.vcr.yaml";
    let err = stream_error(rel, &sse_body(rel, 0));
    assert_eq!(err.kind, ProviderErrorKind::Stream);
    assert!(!err.is_retryable());
    assert!(
        err.message.starts_with("Tool call validation failed: tool call validation failed: parameters for tool get_something_by_name did not match schema: errors: [missing properties: 'name', additionalProperties 'invalid_param' not allowed]"),
        "{}",
        err.message
    );
    assert!(err.message.contains("invalid_param"), "{}", err.message);
    check_stream(
        rel,
        1,
        &Want {
            text: "",
            reasoning: &[
                "We need to call the function with correct parameter \"name\". Provide a name, e.g., \"example\".",
            ],
            calls: vec![(
                "fc_bfb39741-3748-4def-9886-a93fc9c64a90",
                "get_something_by_name",
                json!({"name": "example"}),
            )],
            usage: usage(304, 49, 0, 23),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        2,
        &Want {
            text: "The tool returned the expected result for the valid call.",
            reasoning: &[
                "The user wants to test error handling by calling tool with non-existent parameters first (we did) and then second try with valid args. We have succeeded. Now respond concisely.",
            ],
            calls: vec![],
            usage: usage(339, 58, 0, 38),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openrouter_error_inside_a_chunk_after_200_fails_the_answer() {
    let rel = "errors/openrouter_midstream-error-inside-chunk_after-200.vcr.yaml";
    let err = stream_error(rel, &sse_body(rel, 0));
    assert_eq!(err.kind, ProviderErrorKind::Stream);
    assert!(!err.is_retryable());
    assert_eq!(err.message, "Token limit reached (code: 400)");
}

// ---------------------------------------------------------------------------
// Requests

#[test]
fn request_carries_system_messages_calls_reasoning_results_and_tools() {
    let req = ModelRequest {
        system: "You are rein.".into(),
        messages: vec![
            Message::user("Look at a.txt and b.txt"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "Read both.".into(),
                        ..Default::default()
                    }),
                    ContentPart::Text {
                        text: "Reading both.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"a.txt\"}".into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\": \"b.txt\"}".into(),
                    }),
                ],
                usage: None,
                finish: Some(FinishReason::ToolCalls),
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_1".into(),
                name: "read_file".into(),
                output: "hello".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_2".into(),
                name: "read_file".into(),
                output: "no such file".into(),
                is_error: true,
            }),
            Message::Assistant(AssistantMessage::from_text("a.txt says hello.")),
            Message::user("thanks"),
            Message::user("bye"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            }),
        }],
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
    };
    let endpoint = EndpointConfig {
        base_url: "https://api.openai.com/v1".into(),
        api_key: Some("sk-test".into()),
        model: "gpt-4.1".into(),
        max_output_tokens: Some(4096),
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert_eq!(wire.path, "/chat/completions");
    assert_eq!(
        wire.headers,
        vec![("authorization".to_string(), "Bearer sk-test".to_string())]
    );
    assert_eq!(
        wire.body,
        json!({
            "model": "gpt-4.1",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 4096,
            "messages": [
                {"role": "system", "content": "You are rein."},
                {"role": "user", "content": "Look at a.txt and b.txt"},
                {
                    "role": "assistant",
                    "content": "Reading both.",
                    "reasoning_content": "Read both.",
                    "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                        {"id": "call_2", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\": \"b.txt\"}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
                {"role": "assistant", "content": "a.txt says hello."},
                {"role": "user", "content": "thanks"},
                {"role": "user", "content": "bye"},
            ],
            "tools": [{
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                },
            }],
        })
    );
}

#[test]
fn request_without_system_tools_key_or_cap_leaves_them_out() {
    let req = ModelRequest {
        messages: vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "glob".into(),
                    arguments: "{}".into(),
                })],
                ..Default::default()
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "c".into(),
                name: "glob".into(),
                output: "Error: bad pattern".into(),
                is_error: true,
            }),
        ],
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "llama".into(),
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert!(wire.headers.is_empty());
    assert_eq!(
        wire.body,
        json!({
            "model": "llama",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "glob", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "c", "content": "Error: bad pattern"},
            ],
        })
    );
}

#[test]
fn request_output_cap_is_the_smaller_of_request_and_endpoint() {
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        max_output_tokens: Some(100),
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "m".into(),
        max_output_tokens: Some(4096),
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert_eq!(wire.body["max_completion_tokens"], json!(100));
    assert!(wire.body.get("max_tokens").is_none());
}

#[test]
fn kind_is_openai() {
    assert_eq!(OpenAiChat.kind(), "openai");
}

// ---------------------------------------------------------------------------
// Edge cases beyond the recordings

#[test]
fn a_done_marker_with_no_answer_before_it_is_a_protocol_error() {
    let err = fixtures::parse_stream(&OpenAiChat, &[b"data: [DONE]\n\n".to_vec()]).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Protocol);
    assert_eq!(err.message, "the stream ended before any answer");
}

#[test]
fn a_stream_that_stops_before_finish_reason_or_done_is_a_retryable_transport_failure() {
    let half_event = [
        sse(&[r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#]),
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par".to_vec(),
    ]
    .concat();
    let whole_call = sse(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}}]}"#,
    ]);
    for body in [
        Vec::new(),
        b": keep-alive\n\n".to_vec(),
        // A prompt-filter chunk with no choices is not an answer either.
        sse(&[r#"{"choices":[],"prompt_filter_results":[]}"#]),
        half_event,
        whole_call,
    ] {
        let err = fixtures::parse_stream(&OpenAiChat, std::slice::from_ref(&body)).unwrap_err();
        assert_eq!(
            err.kind,
            ProviderErrorKind::Transport,
            "{}",
            String::from_utf8_lossy(&body)
        );
        assert!(err.is_retryable());
    }
    // finish_reason without [DONE] is a whole answer (several servers stop there).
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ]);
    let p = fixtures::parse_stream(&OpenAiChat, &[body]).unwrap();
    assert_eq!(p.message.text(), "Hi");
}

#[test]
fn non_json_data_is_a_protocol_error_naming_its_first_bytes() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#,
        "<html>502 Bad Gateway</html>",
    ]);
    let err = fixtures::parse_stream(&OpenAiChat, &[body]).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Protocol);
    assert!(
        err.message.contains("<html>502 Bad Gateway</html>"),
        "{}",
        err.message
    );
}

#[test]
fn events_after_done_are_ignored_and_finish_after_done_adds_nothing() {
    let mut parser = OpenAiChat.parser();
    let ev = |data: &str| SseEvent {
        data: data.into(),
        ..Default::default()
    };
    parser
        .on_event(&ev(
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        ))
        .unwrap();
    assert_eq!(
        parser.on_event(&ev("[DONE]")).unwrap(),
        vec![StreamChunk::Done(FinishReason::Stop)]
    );
    assert!(parser.on_event(&ev("garbage")).unwrap().is_empty());
    assert!(parser.finish().unwrap().is_empty());
}

#[test]
fn finish_reason_is_held_until_done_and_unknown_reasons_are_kept() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"eos"}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":null}]}"#,
    ]);
    let parsed = fixtures::parse_stream(&OpenAiChat, &[body]).unwrap();
    assert_eq!(
        parsed.chunks,
        vec![
            StreamChunk::TextDelta("x".into()),
            StreamChunk::Done(FinishReason::Other("eos".into())),
        ]
    );
}

#[test]
fn calls_without_index_start_on_a_new_id_and_continue_without_one() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"glob","arguments":"{\"pat"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"tern\":\"*\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"grep","arguments":"{}"}}]}}]}"#,
        "[DONE]",
    ]);
    let msg = fixtures::parse_stream(&OpenAiChat, &[body])
        .unwrap()
        .message;
    let calls: Vec<_> = msg.tool_calls().cloned().collect();
    assert_eq!(
        calls,
        vec![
            ToolCall {
                id: "a".into(),
                name: "glob".into(),
                arguments: "{\"pattern\":\"*\"}".into()
            },
            ToolCall {
                id: "b".into(),
                name: "grep".into(),
                arguments: "{}".into()
            },
        ]
    );
    assert_eq!(msg.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn a_new_id_on_a_used_index_starts_a_new_call() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"glob","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"grep","arguments":"{\"q\":1}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let msg = fixtures::parse_stream(&OpenAiChat, &[body])
        .unwrap()
        .message;
    let names: Vec<_> = msg
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(names, vec![("a", "glob", "{}"), ("b", "grep", "{\"q\":1}")]);
}

#[test]
fn encrypted_reasoning_details_close_the_block_with_their_data() {
    let body = sse(&[
        r#"{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.summary","summary":"Plan."}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"opaque==","id":"rs_1"}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let msg = fixtures::parse_stream(&OpenAiChat, &[body])
        .unwrap()
        .message;
    let blocks: Vec<_> = msg.reasoning().cloned().collect();
    assert_eq!(
        blocks,
        vec![ReasoningBlock {
            text: "Plan.".into(),
            encrypted: Some("opaque==".into()),
            id: Some("rs_1".into()),
            ..Default::default()
        }]
    );
    assert_eq!(msg.text(), "Done.");
}

#[test]
fn rate_limit_error_inside_a_stream_is_retryable() {
    for err_json in [
        r#"{"error":{"code":429,"message":"Rate limit exceeded: free-models-per-min"}}"#,
        r#"{"error":{"code":"rate_limit_exceeded","message":"slow down"}}"#,
        r#"{"error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        r#"{"error":{"code":502,"message":"upstream gone"}}"#,
    ] {
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            err_json,
        ]);
        let err = fixtures::parse_stream(&OpenAiChat, &[body]).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Unavailable, "{err_json}");
        assert!(err.is_retryable());
    }
}

#[test]
fn context_length_errors_are_recognised() {
    let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let err = OpenAiChat.parse_error(400, body);
    assert_eq!(err.kind, ProviderErrorKind::ContextLengthExceeded);
    assert!(
        err.message.contains("maximum context length is 128000"),
        "{}",
        err.message
    );
    // vLLM's flat shape, code null.
    let body = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}"#;
    assert_eq!(
        OpenAiChat.parse_error(400, body).kind,
        ProviderErrorKind::ContextLengthExceeded
    );
    // llama.cpp's plain wording.
    let body = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#;
    assert_eq!(
        OpenAiChat.parse_error(400, body).kind,
        ProviderErrorKind::ContextLengthExceeded
    );
}

#[test]
fn error_bodies_that_are_not_json_errors_give_their_first_300_characters() {
    let html = format!("<html><body>{}</body></html>", "x".repeat(1000));
    let err = OpenAiChat.parse_error(502, &html);
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert!(err.is_retryable());
    assert_eq!(err.message, format!("502 Bad Gateway: {}", &html[..300]));
    let err = OpenAiChat.parse_error(503, "");
    assert_eq!(
        err.message,
        "503 Service Unavailable (the response had no body)"
    );
    let err = OpenAiChat.parse_error(401, r#"{"error":"invalid api key"}"#);
    assert_eq!(err.kind, ProviderErrorKind::Auth);
    assert_eq!(err.message, "401 Unauthorized: invalid api key");
    let err = OpenAiChat.parse_error(422, r#"{"detail":"model field required"}"#);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert_eq!(
        err.message,
        "422 Unprocessable Entity: model field required"
    );
    let err = OpenAiChat.parse_error(529, "{\"error\":{\"message\":\"Overloaded\"}}");
    assert!(err.is_retryable());
}

#[test]
fn odd_input_never_makes_the_parser_panic() {
    let odd = [
        "{}",
        "null",
        "[]",
        "1e400",
        r#"{"choices":null,"usage":"x"}"#,
        r#"{"choices":[{"index":"0","delta":[]}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"function":{"arguments":{"a":1}}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[null,7,{"function":null}]}}]}"#,
        r#"{"usage":{"prompt_tokens":18446744073709551615,"completion_tokens":18446744073709551615,"total_tokens":1,"completion_tokens_details":{"reasoning_tokens":18446744073709551615}}}"#,
        r#"{"choices":[{"delta":{"reasoning_details":[1,{"type":"reasoning.encrypted"}]}}]}"#,
        r#"{"error":null,"choices":[{"delta":{"content":["a",{"text":"b"}]}}]}"#,
    ];
    for data in odd {
        let mut parser = OpenAiChat.parser();
        let _ = parser.on_event(&SseEvent {
            data: data.into(),
            ..Default::default()
        });
        let _ = parser.finish();
        if let Ok(v) = serde_json::from_str::<Value>(data) {
            let _ = OpenAiChat.parse_response(&v);
        }
        let _ = OpenAiChat.parse_error(400, data);
    }
}

#[test]
fn replaying_a_recorded_turn_rebuilds_the_messages_openai_accepted() {
    // Turn 1 of the recording streams two calls; the client then sent the
    // conversation back with the calls and their results (turn 2's
    // recorded request). Parsing turn 1 and building turn 2 from it must
    // give the same messages (rein sends `content: null` beside the calls
    // where that client left `content` out).
    let rel = "openai-chat/openai_gpt-4o_parallel-tool-calls_stream.vcr.yaml";
    let recorded = fixtures::load(rel)[1].request.clone().unwrap();
    let answer = fixtures::parse_stream(&OpenAiChat, &[sse_body(rel, 0)])
        .unwrap()
        .message;
    let ids: Vec<String> = answer.tool_calls().map(|c| c.id.clone()).collect();
    let req = ModelRequest {
        system: "You are a helpful assistant. Always use both add and multiply at the same time."
            .into(),
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(answer),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: ids[0].clone(),
                name: "add".into(),
                output: "5".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: ids[1].clone(),
                name: "multiply".into(),
                output: "6".into(),
                is_error: false,
            }),
        ],
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "gpt-4o".into(),
        ..Default::default()
    };
    let mut body = OpenAiChat.build_request(&req, &endpoint).body;
    let assistant = body["messages"][2].as_object_mut().unwrap();
    assert_eq!(assistant.remove("content"), Some(Value::Null));
    assert_eq!(body["messages"], recorded["messages"]);
    assert_eq!(body["model"], recorded["model"]);
    assert_eq!(body["stream"], recorded["stream"]);
    assert_eq!(body["stream_options"], recorded["stream_options"]);
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice_required_only_with_tools() {
    let spec = rein_core::ToolSpec {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object"}),
    };
    let endpoint = EndpointConfig {
        model: "m".into(),
        ..Default::default()
    };
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![spec],
        tool_choice: rein_core::ToolChoice::Required,
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert_eq!(wire.body["tool_choice"], json!("required"));
    assert!(wire.body.get("parallel_tool_calls").is_none());
    req.tool_choice = rein_core::ToolChoice::Auto;
    req.single_tool_call = true;
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert!(wire.body.get("tool_choice").is_none());
    assert_eq!(wire.body["parallel_tool_calls"], json!(false));
    req.tool_choice = rein_core::ToolChoice::Required;
    req.tools.clear();
    assert!(
        OpenAiChat
            .build_request(&req, &endpoint)
            .body
            .get("tool_choice")
            .is_none()
    );
}
