//! The Anthropic Messages protocol: every recorded fixture under
//! `anthropic/` and `errors/anthropic_*` (each streaming one in every SSE
//! variant), the exact request body, and the rule-breaking streams.

use rein_core::*;
use rein_providers::anthropic::{
    API_VERSION, Anthropic, AnthropicStreamParser, DEFAULT_MAX_TOKENS,
};
use rein_providers::protocol::{EndpointConfig, StreamParser, WireProtocol};
use rein_providers::sse::SseEvent;
use serde_json::{Value, json};

use super::fixtures::{self, Body, Interaction, Parsed};

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

// --- streamed fixtures ----------------------------------------------------

#[test]
fn basic_text_stream_with_a_spaced_ping_and_no_final_blank_line() {
    let p = parse_fixture("anthropic_claude-3-opus_text_basic.sse");
    assert_eq!(
        p.chunks,
        vec![
            StreamChunk::TextDelta("Hello".into()),
            StreamChunk::TextDelta(" there".into()),
            StreamChunk::TextDelta("!".into()),
            StreamChunk::Usage(usage(11, 0, 6)),
            StreamChunk::Done(FinishReason::Stop),
        ]
    );
    assert_eq!(p.message.text(), "Hello there!");
    assert_eq!(p.message.content.len(), 1);
}

#[test]
fn text_stream_without_event_lines_takes_output_tokens_from_message_delta() {
    let p = parse_fixture("anthropic_claude-sonnet-4-5_text.data.jsonl");
    assert_eq!(
        p.message.text(),
        "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?"
    );
    assert_eq!(p.message.usage, Some(usage(12, 0, 30)));
    assert_eq!(p.message.finish, Some(FinishReason::Stop));
    assert!(!p.message.has_tool_calls());
}

#[test]
fn input_tokens_sent_only_in_message_delta_supersede_message_start() {
    let p =
        parse_fixture("anthropic-compatible_message-delta-input-tokens_reordered-keys.data.jsonl");
    assert_eq!(p.message.text(), "pong");
    // message_start said 43, message_delta 61: the later count wins.
    assert_eq!(p.message.usage, Some(usage(61, 0, 2)));
    assert_eq!(p.message.finish, Some(FinishReason::Stop));
}

#[test]
fn text_then_tool_use_joins_input_json_fragments_split_mid_token() {
    let p = parse_fixture("anthropic_claude-sonnet-4_text-then-tool-use_input-json-delta.sse");
    assert_eq!(
        p.message.text(),
        "I'll check the current weather in Paris for you."
    );
    let c = calls(&p.message);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_01NRLabsLyVHZPKxbKvkfSMn",
        "get_weather",
        json!({"location": "Paris"}),
    );
    assert!(matches!(p.message.content[0], ContentPart::Text { .. }));
    assert!(matches!(p.message.content[1], ContentPart::ToolCall(_)));
    assert_eq!(p.message.usage, Some(usage(377, 0, 65)));
    assert_eq!(p.message.finish, Some(FinishReason::ToolCalls));
    // The tool's id and name come first, keyed by the block index.
    assert!(p.chunks.contains(&StreamChunk::ToolCallDelta {
        index: 1,
        id: Some("toolu_01NRLabsLyVHZPKxbKvkfSMn".into()),
        name: Some("get_weather".into()),
        arguments: String::new(),
    }));
}

#[test]
fn a_tool_whose_only_input_delta_is_empty_gets_empty_object_arguments_despite_pings() {
    let p = parse_fixture("anthropic_claude-sonnet-4-5_tool-no-args_empty-partial-json.data.jsonl");
    assert_eq!(p.message.text(), "I'll update the issue list for you.");
    let c = calls(&p.message);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_01QE1WLsSVp5hy5Q3GmGTmjP",
        "updateIssueList",
        json!({}),
    );
    assert_eq!(c[0].arguments, "{}");
    assert_eq!(p.message.usage, Some(usage(565, 0, 48)));
    assert_eq!(p.message.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn max_tokens_in_the_middle_of_a_tool_input_delivers_the_broken_json_with_finish_length() {
    let p = parse_fixture("anthropic_claude-3-7-sonnet_max-tokens-mid-tool-input_padded-json.sse");
    assert_eq!(
        p.message.text(),
        "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now."
    );
    let c = calls(&p.message);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, "toolu_01EKqbqmZrGRXy18eN7m9kvY");
    assert_eq!(c[0].name, "make_file");
    assert_eq!(
        c[0].arguments,
        "{\"filename\": \"taxes.txt\", \"lines_of_text\": [\n\"# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s\",\n\"\",\n\"## INTRODUCTION\",\n\"\",\n\"Filing taxes"
    );
    assert!(
        serde_json::from_str::<Value>(&c[0].arguments).is_err(),
        "the cut-off input must stay invalid JSON for the engine's gate"
    );
    assert_eq!(p.message.usage, Some(usage(450, 0, 124)));
    assert_eq!(p.message.finish, Some(FinishReason::Length));
    assert_eq!(
        p.chunks.last(),
        Some(&StreamChunk::Done(FinishReason::Length))
    );
}

#[test]
fn parallel_tool_use_stream_gives_two_calls_and_the_follow_up_text() {
    let its = interactions("anthropic_claude-sonnet-4_parallel-tool-use_stream.vcr.yaml");
    assert_eq!(its.len(), 2);

    let first = parse_sse(sse_body(&its[0]));
    assert_eq!(
        first.message.text(),
        "I'll add and multiply the numbers 2 and 3 for you."
    );
    let c = calls(&first.message);
    assert_eq!(c.len(), 2);
    assert_call(
        &c[0],
        "toolu_01UYxUYC2zRPY8wiutnF48eP",
        "add",
        json!({"a": 2, "b": 3}),
    );
    assert_call(
        &c[1],
        "toolu_01VaRx1jpWCvPhi7L4kywAcd",
        "multiply",
        json!({"a": 2, "b": 3}),
    );
    assert_eq!(first.message.usage, Some(usage(502, 0, 137)));
    assert_eq!(first.message.finish, Some(FinishReason::ToolCalls));

    let second = parse_sse(sse_body(&its[1]));
    assert_eq!(
        second.message.text(),
        "The results are:\n- 2 + 3 = 5\n- 2 \u{d7} 3 = 6"
    );
    assert_eq!(second.message.usage, Some(usage(700, 0, 31)));
    assert_eq!(second.message.finish, Some(FinishReason::Stop));

    // What rein replays of turn 1 is what the recording client sent.
    let recorded = its[1].request.as_ref().unwrap();
    let req = ModelRequest {
        system: "sys".into(),
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(first.message.clone()),
            tool_result("toolu_01UYxUYC2zRPY8wiutnF48eP", "5", false),
            tool_result("toolu_01VaRx1jpWCvPhi7L4kywAcd", "6", false),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(body["messages"][0], recorded["messages"][0]);
    assert_eq!(body["messages"][1], recorded["messages"][1]);
}

const FLORENCE_THINKING: &str = "The user is asking for weather information for Florence, Italy. I have access to a weather function that takes a location parameter. The user has provided the location as \"Florence, Italy\" which is specific enough for the weather function. I have all the required parameters to make the function call.";
const FLORENCE_SIGNATURE: &str = "EtYDCkYICxgCKkAVHEWRYo6RgSMs4ZZDX4gW16kdfp2EIXftcLesVephGa/p1m+1Y8mRQPvvKOQICrOkGKYoJBKSNLJ4ukI/mo6LEgx7FMTwIpYzM2WTWT8aDKY6c2i52xIX2NYX3SIwY5gI8frldE4pwUhseod0S0xZV2hTAQhqMCOu4+effAu250K2RPrqrO98+VD/hjF9Kr0C7EzGQ7dZ7MNwrkE+tCARkzIRk5Wtv8vVAhADlMcs78QvxmjOToU65I91p7w2/VP11peDoc9+7AbyldRKGp3chNnQgXHI7ObK89s0ltFBGrLf6tegaQL9httOtcUGCioZnI9LI9vJHMlQeoZiiWRq8hVbHlHc3f6BwBqlUJhYUyk7ld34UoaSNc5UKUNuLAmkOLg3KQLdbI7b3BQVdsWOhNTKd12fRJQcOLhXNSCv7hQ9FtWfV5C+pX59xF6YYIO3TCPUqWSubCtqdrDEoQVWdHtyveFA+4iixZxyqZ7Ea+kzbmc/6pXxwO2MX0rHrbe/yXWYAmU/XxY9HJTzXEO+CibGQOAaHdC11s8gOCFb8EWt3ALguFfj/p2SJtqybC44Alrjnhjqk+7Mi+DoMcINUh7SCK9rVl4VeDhPFVAYAQ==";

#[test]
fn thinking_keeps_its_exact_text_and_signature_and_is_replayed_as_the_client_did() {
    let its = interactions("anthropic_claude-sonnet-4_thinking-signature-tool-use_stream.vcr.yaml");
    assert_eq!(its.len(), 2);

    let first = parse_sse(sse_body(&its[0]));
    let m = &first.message;
    assert_eq!(m.content.len(), 2);
    match &m.content[0] {
        ContentPart::Reasoning(r) => {
            assert_eq!(r.text, FLORENCE_THINKING);
            assert_eq!(r.signature.as_deref(), Some(FLORENCE_SIGNATURE));
            assert_eq!(r.encrypted, None);
            assert_eq!(r.id, None);
        }
        other => panic!("{other:?}"),
    }
    match &m.content[1] {
        ContentPart::ToolCall(c) => assert_call(
            c,
            "toolu_01Js4AMfx5qpTLhwTusnvT68",
            "weather",
            json!({"location": "Florence, Italy"}),
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(m.text(), "");
    assert_eq!(m.usage, Some(usage(424, 0, 119)));
    assert_eq!(m.finish, Some(FinishReason::ToolCalls));
    // The signature closes the block once, when the block stops.
    let ends: Vec<_> = first
        .chunks
        .iter()
        .filter(|c| matches!(c, StreamChunk::ReasoningEnd { .. }))
        .collect();
    assert_eq!(
        ends,
        vec![&StreamChunk::ReasoningEnd {
            signature: Some(FLORENCE_SIGNATURE.into()),
            encrypted: None,
            id: None,
        }]
    );

    // Turn 2's request shows the thinking block the API accepted back:
    // rein's replay is identical, byte for byte.
    let recorded = its[1].request.as_ref().unwrap();
    let req = ModelRequest {
        system: "You are a helpful assistant".into(),
        messages: vec![
            Message::user("What's the weather in Florence, Italy?"),
            Message::Assistant(m.clone()),
            tool_result("toolu_01Js4AMfx5qpTLhwTusnvT68", "40 C", false),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(body["messages"][0], recorded["messages"][0]);
    assert_eq!(body["messages"][1], recorded["messages"][1]);
    assert_eq!(
        serde_json::to_string(&body["messages"][1]["content"][0]["thinking"]).unwrap(),
        serde_json::to_string(&recorded["messages"][1]["content"][0]["thinking"]).unwrap()
    );

    let second = parse_sse(sse_body(&its[1]));
    assert_eq!(
        second.message.text(),
        "The current weather in Florence, Italy is 40\u{b0}C (104\u{b0}F). That's quite hot! If you're planning to visit or are currently there, make sure to stay hydrated and seek shade or air conditioning when possible."
    );
    assert_eq!(second.message.reasoning().count(), 0);
    assert_eq!(second.message.usage, Some(usage(558, 0, 51)));
    assert_eq!(second.message.finish, Some(FinishReason::Stop));
}

const REDACTED_1: &str = "EqkECkYIBxgCKkA8AZ4noDfV5VcOJe/p3JTRB6Xz5297mrWhl3MbHSXDKTMfuB/Z52U2teiWWTN0gg4eQ4bGS9TPilFX/xWTIq9HEgyOmstSPriNwyn1G7AaDC51r0hQ062qEd55IiIwYQj3Z3MSBBv0bSVdXi60LEHDvC7tzzmpQfw5Hb6R9rtyOz/6vC/xPw9/E1mUqfBqKpADO2HS2QlE/CnuzR901nZOn0TOw7kEXwH7kg30c85b9W7iKALgEejY9sELMBdPyIZNlTgKqNOKtY3R/aV5rGIRPTHh2Wh9Ijmqsf/TT7i//Z+InaYTo6f/fxF8R0vFXMRPOBME4XIscb05HcNhh4c9FDkpqQGYKaq31IR1NNwPWA0BsvdDz7SIo1nfx4H+X0qKKqqegKnQ3ynaXiD5ydT1C4U7fku4ftgF0LGwIk4PwXBE+4BP0DcKr1HV3cn7YSyNakBSDTvRJMKcXW6hl7X3w2a4//sxjC1Cjq0uzkIHkhzRWirN0OSXt+g3m6b1ex0wGmSyuO17Ak6kgVBpxwPugtrqsflG0oujFem44hecXJ9LQNssPf4RSlcydiG8EXp/XLGTe0YfHbe3kJagkowSH/Dm6ErXBiVs7249brncyY8WA+7MOoqIM82YIU095B9frCqDJDUWnN84VwOszRrcaywmpJXZO4aeQLMC1kXD5Wabu+O/00tD/X67EWkkWuR0AhDIXXjpot45vnBd4ewJ/hgB";
const REDACTED_2: &str = "EtgBCkYIBxgCKkDQfGkwzflEJP5asG3oQfJXcTwJLoRznn8CmuczWCsJ36dv93X9H0NCeaJRbi5BrCA2DyMgFnRKRuzZx8VTv5axEgwkFmcHJk8BSiZMZRQaDDYv2KZPfbFgRa2QjyIwm47f5YYsSK9CT/oh/WWpU1HJJVHr8lrC6HG1ItRdtMvYQYmEGy+KhyfcIACfbssVKkDGv/NKqNMOAcu0bd66gJ2+R1R0PX11Jxn2Nd1JtZqkxx7vMT/PXtHDhm9jkDZ2k/6RjRRFuab/DBV3yRYdZ1J0GAE=";

#[test]
fn redacted_thinking_blocks_keep_their_data_and_are_replayed_as_redacted_thinking() {
    let its = interactions("anthropic_redacted-thinking_stream.vcr.yaml");
    assert_eq!(its.len(), 1);
    let p = parse_sse(sse_body(&its[0]));
    let m = &p.message;
    assert_eq!(m.content.len(), 3);
    let blocks: Vec<_> = m.reasoning().cloned().collect();
    assert_eq!(
        blocks,
        vec![
            ReasoningBlock {
                encrypted: Some(REDACTED_1.into()),
                ..Default::default()
            },
            ReasoningBlock {
                encrypted: Some(REDACTED_2.into()),
                ..Default::default()
            },
        ]
    );
    assert_eq!(
        m.text(),
        "I notice that you've sent what appears to be some kind of test string or command. I don't have any special \"magic string\" triggers or backdoor commands that would expose internal systems or change my behavior.\n\nI'm Claude, an AI assistant created by Anthropic to be helpful, harmless, and honest. How can I assist you today with a legitimate task or question?"
    );
    assert!(matches!(m.content[2], ContentPart::Text { .. }));
    assert_eq!(m.usage, Some(usage(92, 0, 189)));
    assert_eq!(m.finish, Some(FinishReason::Stop));

    let req = ModelRequest {
        messages: vec![
            Message::user("hi"),
            Message::Assistant(m.clone()),
            Message::user("again"),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "redacted_thinking", "data": REDACTED_1},
            {"type": "redacted_thinking", "data": REDACTED_2},
            {"type": "text", "text": m.text()},
        ])
    );
}

#[test]
fn refusal_without_content_blocks_finishes_with_content_filter() {
    let p = parse_fixture("anthropic_refusal-stop-reason_no-content-blocks.data.jsonl");
    assert_eq!(
        p.chunks,
        vec![
            StreamChunk::Usage(usage(18, 0, 5)),
            StreamChunk::Done(FinishReason::ContentFilter),
        ]
    );
    assert!(p.message.content.is_empty());
    assert_eq!(p.message.finish, Some(FinishReason::ContentFilter));
}

#[test]
fn web_search_server_tool_blocks_are_skipped_and_cited_text_is_kept() {
    let p = parse_fixture("anthropic_web-search-server-tool_citations-delta.data.jsonl");
    let m = &p.message;
    // The server tool's input deltas are not a call rein must run.
    assert!(!m.has_tool_calls());
    assert!(!p.chunks.iter().any(|c| matches!(
        c,
        StreamChunk::ToolCallDelta { .. } | StreamChunk::ToolCall(_)
    )));
    assert_eq!(m.reasoning().count(), 0);
    assert_eq!(
        m.text(),
        "Based on my search results, here are the key tech news developments from today (September 26, 2025):\n\n## Apple News\nApple today announced the grand reopening of Apple Ginza on Friday, September 26, located in the vibrant Ginza district where Apple's retail journey in Japan began more than two decades ago. Apple Ginza opens to customers Friday, September 26, at 10 a.m. JST. Opened in 2003 as Apple's first store outside the U.S., Apple Ginza now returns in an all-new four-story design that brings together the best of Apple's products, services, and experiences in one beautifully reimagined space.\n\n## Recent Apple Product Updates\nApple is considering building a pilot production line for a foldable iPhone in Taiwan, with plans to launch the new foldable iPhone in 2026. Currently, multiple sources have confirmed that Apple plans to release its first foldable iPhone in 2026 as part of the iPhone 18 lineup.\n\nOpenAI launches ChatGPT Pulse, proactively writing your morning briefing. OpenAI is rolling out a new feature in ChatGPT called Pulse, which generates personalized reports while users sleep. Pulse provides users with a quick overview of their day with 5-10 briefings, designed to encourage them to check ChatGPT first thing in the morning.\n\n## Major Tech Industry Developments from Yesterday\n\nOn September 25, 2025, headlines were dominated by seismic shifts in AI infrastructure, potential blockbuster partnerships between legacy chip giants, and escalating regulatory battles that could redefine global innovation.\n\nKey highlights include:\n- Microsoft shook up its AI stack by integrating Anthropic's models into Copilot for Microsoft 365, reducing OpenAI dependency and boosting productivity tools like real-time analytics.\n- Oracle followed with a $15 billion bond raise for cloud expansion, riding AI demand waves.\n- Google launched Mixboard, an AI mood board app with Gemini-powered suggestions for designers, and rolled conversational editing to more Android phones in Photos.\n\n## Recent iOS Updates\nWith iOS 26 officially launched, Apple is moving forward with iOS 26.1. Apple released iOS 26 on September 15, bringing the Liquid Glass redesign to the iPhone.\n\nThe main tech story today appears to be Apple's significant retail milestone with the reopening of their redesigned flagship Ginza store in Tokyo, marking over 20 years since their first international retail expansion."
    );
    // message_start said 2037 input tokens; message_delta's 15665 counts the
    // search results too.
    assert_eq!(m.usage, Some(usage(15665, 0, 795)));
    assert_eq!(m.finish, Some(FinishReason::Stop));
}

#[test]
fn a_duplicated_message_start_is_ignored_and_text_is_not_doubled() {
    let p = parse_fixture("synthetic_duplicate-message-start.data.jsonl");
    assert_eq!(
        p.chunks,
        vec![
            StreamChunk::TextDelta("Hello, World!".into()),
            StreamChunk::Usage(usage(17, 0, 227)),
            StreamChunk::Done(FinishReason::Stop),
        ]
    );
    assert_eq!(p.message.text(), "Hello, World!");
}

#[test]
fn a_different_message_spliced_in_mid_tool_input_fails_the_stream_as_a_protocol_error() {
    let sse =
        fixtures::sse_of("anthropic/synthetic_spliced-message-start_mid-tool-input.data.jsonl");
    for (name, chunks) in fixtures::variants(&sse) {
        let err = fixtures::parse_stream(&Anthropic, &chunks).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Protocol, "variant {name}");
        // A mangled stream is most often a proxy's doing: retried.
        assert!(err.is_retryable());
        assert!(
            err.message.contains("msg_second") && err.message.contains("msg_first"),
            "{}",
            err.message
        );
    }
    // What was passed on before the splice: the first message only.
    let mut parser = AnthropicStreamParser::new();
    let mut before = Vec::new();
    let mut error = None;
    for event in rein_providers::sse::decode_all(&sse) {
        match parser.on_event(&event) {
            Ok(chunks) => before.extend(chunks),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    assert!(error.is_some());
    assert_eq!(
        before,
        vec![
            StreamChunk::ReasoningDelta("I will call the tool.".into()),
            StreamChunk::ReasoningEnd {
                signature: Some("sig-first".into()),
                encrypted: None,
                id: None,
            },
            StreamChunk::ToolCallDelta {
                index: 1,
                id: Some("toolu_first".into()),
                name: Some("test-tool".into()),
                arguments: String::new(),
            },
            StreamChunk::ToolCallDelta {
                index: 1,
                id: None,
                name: None,
                arguments: "{\"value\":\"Spark".into(),
            },
        ]
    );
}

// --- whole (non-streamed) responses ---------------------------------------

#[test]
fn non_streamed_text_response_gives_text_usage_and_stop() {
    let its = interactions("anthropic_claude-sonnet-4-5_text.response.json");
    let m = response_message(json_body(&its[0]));
    assert_eq!(
        m.text(),
        "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?"
    );
    assert_eq!(m.usage, Some(usage(12, 0, 29)));
    assert_eq!(m.finish, Some(FinishReason::Stop));
}

#[test]
fn non_streamed_tool_use_with_empty_input_gives_empty_object_arguments() {
    let its = interactions("anthropic_claude-3-opus_tool-no-args.response.json");
    let m = response_message(json_body(&its[0]));
    assert_eq!(
        m.text(),
        "<thinking>\nThe updateIssueList tool was provided in the list of available functions. The tool has no required parameters, so it can be called without any additional information needed from the user.\n</thinking>\n\nOkay, I will update the current issue list:"
    );
    let c = calls(&m);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_01LRmxn9vGM1d2DZSDBowdZ1",
        "updateIssueList",
        json!({}),
    );
    assert_eq!(m.usage, Some(usage(602, 0, 93)));
    assert_eq!(m.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn non_streamed_parallel_tool_use_re_serialises_inputs_compactly_and_replays_them() {
    let its = interactions("anthropic_claude-sonnet-4_parallel-tool-use_nonstream.vcr.yaml");
    assert_eq!(its.len(), 2);
    let first = response_message(json_body(&its[0]));
    assert_eq!(
        first.text(),
        "I'll add and multiply the numbers 2 and 3 for you."
    );
    let c = calls(&first);
    assert_eq!(c.len(), 2);
    assert_call(
        &c[0],
        "toolu_01StBeRxDEwsqcc3arbDgpS9",
        "add",
        json!({"a": 2, "b": 3}),
    );
    assert_call(
        &c[1],
        "toolu_01AC6WQhj2iRkdYHgTAGMpVQ",
        "multiply",
        json!({"a": 2, "b": 3}),
    );
    assert_eq!(c[0].arguments, r#"{"a":2,"b":3}"#);
    assert_eq!(first.usage, Some(usage(507, 0, 137)));
    assert_eq!(first.finish, Some(FinishReason::ToolCalls));

    let second = response_message(json_body(&its[1]));
    assert_eq!(
        second.text(),
        "The results are:\n- 2 + 3 = 5\n- 2 \u{d7} 3 = 6"
    );
    assert_eq!(second.usage, Some(usage(705, 0, 31)));
    assert_eq!(second.finish, Some(FinishReason::Stop));

    let recorded = its[1].request.as_ref().unwrap();
    let req = ModelRequest {
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(first),
            tool_result("toolu_01StBeRxDEwsqcc3arbDgpS9", "5", false),
            tool_result("toolu_01AC6WQhj2iRkdYHgTAGMpVQ", "6", false),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(body["messages"][0], recorded["messages"][0]);
    assert_eq!(body["messages"][1], recorded["messages"][1]);
}

#[test]
fn tool_runner_recording_every_turn_parses_and_follow_ups_match_the_recorded_requests() {
    let its = interactions("anthropic_tool-runner_nonstream_with-headers.nock.json");
    assert_eq!(its.len(), 10);
    let m: Vec<AssistantMessage> = its.iter().map(|i| response_message(json_body(i))).collect();
    let finishes: Vec<_> = m.iter().map(|m| m.finish.clone().unwrap()).collect();
    use FinishReason::{Stop, ToolCalls};
    assert_eq!(
        finishes,
        vec![
            ToolCalls, Stop, ToolCalls, Stop, ToolCalls, Stop, ToolCalls, Stop, Stop, Stop
        ]
    );
    let usages: Vec<_> = m.iter().map(|m| m.usage.unwrap()).collect();
    assert_eq!(
        usages,
        vec![
            usage(415, 0, 76),
            usage(505, 0, 41),
            usage(418, 0, 113),
            usage(602, 0, 45),
            usage(415, 0, 76),
            usage(505, 0, 33),
            usage(591, 0, 1056),
            usage(311, 0, 497),
            usage(2123, 0, 140),
            usage(1847, 0, 651),
        ]
    );

    assert_eq!(
        m[0].text(),
        "I'll use the test_tool with the value \"test\" as requested, then provide a final response."
    );
    let c = calls(&m[0]);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_011LF2VkWpAfJnTKJcmh1PNf",
        "test_tool",
        json!({"value": "test"}),
    );
    assert_eq!(
        m[1].text(),
        "I have successfully executed the test_tool with the value \"test\". The tool completed without any errors. This was a simple test to demonstrate the tool functionality and confirm it's working properly."
    );
    assert_eq!(
        m[2].text(),
        "I'll use the test_tool twice as requested - first with count 1, then with count 2."
    );
    let c = calls(&m[2]);
    assert_eq!(c.len(), 2);
    assert_call(
        &c[0],
        "toolu_01L8GVQapA1HmggQcrwboukH",
        "test_tool",
        json!({"count": 1}),
    );
    assert_call(
        &c[1],
        "toolu_01J5Fvzxu7DP1Uh59c1kr5JD",
        "test_tool",
        json!({"count": 2}),
    );
    assert_eq!(
        m[3].text(),
        "I've successfully used the test_tool twice:\n- First call with count 1: returned \"Called with 1\"\n- Second call with count 2: returned \"Called with 2\""
    );
    assert_eq!(
        m[4].text(),
        "I'll use the test_tool with the input \"test\" as requested, then provide a final response."
    );
    let c = calls(&m[4]);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_01BTPr2x4Nduos6gVrE19JZr",
        "test_tool",
        json!({"input": "test"}),
    );
    assert_eq!(
        m[5].text(),
        "I have successfully executed the test_tool with the input \"test\". The tool ran and returned a result. The test has been completed as requested."
    );
    // The long answers: their ends and lengths.
    let t = m[6].text();
    assert!(t.starts_with("I'll write a detailed 500-word essay about dogs, cats, and b"));
    assert!(t.ends_with("ill our days with joy, making our lives immeasurably richer."));
    assert_eq!(t.chars().count(), 3885);
    let c = calls(&m[6]);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, "toolu_01XcUoZcU2fsiw59H5aEAyY6");
    assert_eq!(c[0].name, "submit_analysis");
    let args: Value = serde_json::from_str(&c[0].arguments).unwrap();
    let summary = args["summary"].as_str().unwrap();
    assert!(summary.starts_with("This 500-word essay explores the unique characteri"));
    assert!(summary.ends_with("unique contributions to human wellbeing."));
    assert_eq!(summary.chars().count(), 1214);
    for (i, head, tail, len) in [
        (
            7,
            "<summary>\n## Task Overview\nThe user requested:\n1. Write a de",
            " should contain the same or different information\n</summary>",
            2179,
        ),
        (
            8,
            "Perfect! I've completed both parts of your request:\n\n1. **Wr",
            "tinctive qualities and suitability for different lifestyles.",
            683,
        ),
        (
            9,
            "<summary>\n## Task Overview\nThe user requested:\n1. Write a de",
            "ssfully completed with both deliverables provided\n</summary>",
            3010,
        ),
    ] {
        let t = m[i].text();
        assert!(t.starts_with(head), "{i}");
        assert!(t.ends_with(tail), "{i}");
        assert_eq!(t.chars().count(), len, "{i}");
        assert!(!m[i].has_tool_calls());
    }

    // The follow-up requests 1 and 3 replay turns 0 and 2 and their results
    // exactly as rein does (rein adds its cache breakpoint on top).
    for (turn, results) in [
        (
            0usize,
            vec![("toolu_011LF2VkWpAfJnTKJcmh1PNf", "Tool result")],
        ),
        (
            2,
            vec![
                ("toolu_01L8GVQapA1HmggQcrwboukH", "Called with 1"),
                ("toolu_01J5Fvzxu7DP1Uh59c1kr5JD", "Called with 2"),
            ],
        ),
    ] {
        let recorded = its[turn + 1].request.as_ref().unwrap();
        let mut messages = vec![
            Message::user(recorded["messages"][0]["content"].as_str().unwrap()),
            Message::Assistant(m[turn].clone()),
        ];
        messages.extend(results.iter().map(|(id, out)| tool_result(id, out, false)));
        let body = body_of(&ModelRequest {
            messages,
            ..Default::default()
        });
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[1], recorded["messages"][1], "turn {turn}");
        assert_eq!(
            without_cache_control(&sent[2]),
            recorded["messages"][2],
            "turn {turn}"
        );
    }
}

// --- errors ---------------------------------------------------------------

fn error_fixture(name: &str) -> (u16, String) {
    let its = fixtures::load(&format!("errors/{name}"));
    assert_eq!(its.len(), 1);
    let body = match &its[0].body {
        Body::Json(v) => v.to_string(),
        Body::Text(t) => t.clone(),
        Body::Sse(_) => panic!("not an error body"),
    };
    (its[0].status, body)
}

#[test]
fn error_400_invalid_request_keeps_type_message_and_request_id() {
    let (status, body) =
        error_fixture("anthropic_400_invalid-request-error_unsupported-effort.vcr.yaml");
    assert_eq!(status, 400);
    let err = Anthropic.parse_error(status, &body);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert_eq!(err.status, Some(400));
    assert_eq!(
        err.message,
        "400 invalid_request_error: This model does not support effort level 'xhigh'. Supported levels: high, low, max, medium. (request_id: req_011Ca7jT9AHpgXgdv8igm4z9)"
    );
}

#[test]
fn error_404_not_found_is_an_invalid_request_with_its_request_id() {
    let (status, body) = error_fixture("anthropic_404_not-found-error_request-id.vcr.yaml");
    assert_eq!(status, 404);
    let err = Anthropic.parse_error(status, &body);
    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert_eq!(
        err.message,
        "404 not_found_error: model: claude-sonet-4-5 (request_id: req_011CdufXo8Y2LVfY2veyuQWG)"
    );
}

fn envelope(etype: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": etype, "message": message}}).to_string()
}

#[test]
fn error_kinds_follow_status_and_are_refined_by_the_error_type_and_message() {
    use ProviderErrorKind::*;
    let cases = [
        (529, envelope("overloaded_error", "Overloaded"), Unavailable),
        (429, envelope("rate_limit_error", "slow down"), Unavailable),
        (
            500,
            envelope("api_error", "Internal server error"),
            Unavailable,
        ),
        (408, String::new(), Unavailable),
        (409, String::new(), Unavailable),
        (503, "<html>busy</html>".to_string(), Unavailable),
        (
            401,
            envelope("authentication_error", "invalid x-api-key"),
            Auth,
        ),
        (403, envelope("permission_error", "no access"), Auth),
        (
            413,
            envelope("request_too_large", "Request exceeds the maximum size"),
            InvalidRequest,
        ),
        (422, String::new(), InvalidRequest),
        (
            400,
            envelope(
                "invalid_request_error",
                "prompt is too long: 208310 tokens > 200000 maximum",
            ),
            ContextLengthExceeded,
        ),
        (
            400,
            envelope(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000",
            ),
            ContextLengthExceeded,
        ),
        // A proxy answering 400 for an overloaded upstream: the type decides.
        (400, envelope("overloaded_error", "Overloaded"), Unavailable),
    ];
    for (status, body, kind) in cases {
        let err = Anthropic.parse_error(status, &body);
        assert_eq!(err.kind, kind, "{status} {body}");
        assert_eq!(err.status, Some(status));
        assert_eq!(err.is_retryable(), kind == Unavailable, "{status} {body}");
    }
    assert_eq!(
        Anthropic
            .parse_error(529, &envelope("overloaded_error", "Overloaded"))
            .message,
        "529 overloaded_error: Overloaded"
    );
    assert_eq!(
        Anthropic.parse_error(503, "<html>busy</html>").message,
        "503: <html>busy</html>"
    );
    assert_eq!(
        Anthropic.parse_error(502, "").message,
        "502: empty error body"
    );
    assert_eq!(
        Anthropic
            .parse_error(500, r#"{"type":"error","error":{"type":"api_error"}}"#)
            .message,
        "500 api_error"
    );
}

#[test]
fn error_messages_never_carry_a_key_the_server_echoed() {
    let body = envelope(
        "authentication_error",
        "invalid x-api-key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx",
    );
    let err = Anthropic.parse_error(401, &body);
    assert!(!err.message.contains("AbCdEfGh"), "{}", err.message);
    assert_eq!(
        err.message,
        "401 authentication_error: invalid x-api-key: sk-[redacted]"
    );
}

#[test]
fn an_error_event_mid_stream_fails_with_a_kind_from_its_type() {
    // The shape Anthropic sends after a 200 (SOURCES.md: note the `details`
    // key and the space before the final brace), then closes the stream.
    let overloaded = r#"{"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"} }"#;
    let body = sse(&[
        MESSAGE_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}"#,
        overloaded,
    ]);
    for (name, chunks) in fixtures::variants(&body) {
        let err = fixtures::parse_stream(&Anthropic, &chunks).unwrap_err();
        assert_eq!(err.kind, ProviderErrorKind::Unavailable, "{name}");
        assert!(err.is_retryable());
        assert_eq!(err.message, "overloaded_error: Overloaded");
    }
    let mut parser = AnthropicStreamParser::new();
    let mut got = Vec::new();
    for e in rein_providers::sse::decode_all(&body) {
        match parser.on_event(&e) {
            Ok(c) => got.extend(c),
            Err(_) => break,
        }
    }
    assert_eq!(got, vec![StreamChunk::TextDelta("Hel".into())]);

    use ProviderErrorKind::*;
    for (etype, message, kind) in [
        ("rate_limit_error", "slow", Unavailable),
        ("api_error", "oops", Unavailable),
        ("invalid_request_error", "bad", Stream),
        (
            "invalid_request_error",
            "prompt is too long: 5 tokens > 4 maximum",
            ContextLengthExceeded,
        ),
        ("something_new", "?", Stream),
    ] {
        let data = envelope(etype, message);
        let err = AnthropicStreamParser::new()
            .on_event(&ev(&data))
            .unwrap_err();
        assert_eq!(err.kind, kind, "{etype}");
        assert_eq!(err.message, format!("{etype}: {message}"));
    }
}

#[test]
fn an_error_body_given_as_a_whole_response_is_an_error() {
    let body: Value = serde_json::from_str(&envelope("overloaded_error", "Overloaded")).unwrap();
    let err = Anthropic.parse_response(&body).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    let err = Anthropic.parse_response(&json!({"what": 1})).unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Protocol);
}

// --- streams that break the rules ------------------------------------------

#[test]
fn a_stream_cut_before_its_stop_reason_is_a_retryable_transport_failure() {
    // Cut inside a block, after a whole tool call, before any message, or
    // with nothing at all: none of them is an answer.
    for body in [
        sse(&[
            MESSAGE_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}"#,
        ]),
        sse(&[
            MESSAGE_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_x","name":"glob","input":{}}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ]),
        Vec::new(),
        sse(&[r#"{"type": "ping"}"#, r#"{"type": "ping"}"#]),
        b"data: [DONE]\n\n".to_vec(),
    ] {
        let err = fixtures::parse_stream(&Anthropic, std::slice::from_ref(&body)).unwrap_err();
        assert_eq!(
            err.kind,
            ProviderErrorKind::Transport,
            "{}",
            String::from_utf8_lossy(&body)
        );
        assert!(err.is_retryable());
        assert!(
            err.message.contains("ended before the answer was complete"),
            "{}",
            err.message
        );
    }
}

#[test]
fn a_stream_cut_after_its_stop_reason_is_complete_without_message_stop() {
    let body = sse(&[
        MESSAGE_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
    ]);
    let p = parse_sse(&body);
    assert_eq!(p.message.text(), "hi");
    assert_eq!(p.message.finish, Some(FinishReason::Stop));
}

#[test]
fn events_after_message_stop_and_done_markers_are_ignored() {
    let mut parser = AnthropicStreamParser::new();
    assert!(parser.on_event(&ev(MESSAGE_START)).unwrap().is_empty());
    let end = parser.on_event(&ev(r#"{"type":"message_stop"}"#)).unwrap();
    assert_eq!(end.last(), Some(&StreamChunk::Done(FinishReason::Stop)));
    assert!(
        parser
            .on_event(&ev(
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"late"}}"#
            ))
            .unwrap()
            .is_empty()
    );
    assert!(parser.on_event(&ev("[DONE]")).unwrap().is_empty());
    assert!(parser.finish().unwrap().is_empty());
}

#[test]
fn unreadable_event_data_is_a_protocol_error_but_an_unreadable_error_event_is_a_stream_error() {
    let err = AnthropicStreamParser::new()
        .on_event(&ev("{not json"))
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Protocol);
    let err = AnthropicStreamParser::new()
        .on_event(&SseEvent {
            event: "error".into(),
            data: "Internal server error".into(),
            id: None,
        })
        .unwrap_err();
    assert_eq!(err.kind, ProviderErrorKind::Stream);
    assert!(err.message.contains("Internal server error"));
}

#[test]
fn malformed_events_never_panic() {
    let weird = [
        "{}",
        "null",
        "[]",
        "42",
        r#"{"type":5}"#,
        r#"{"type":"message_start"}"#,
        r#"{"type":"message_start","message":null}"#,
        r#"{"type":"message_start","message":{"usage":{"input_tokens":"x","output_tokens":-1}}}"#,
        r#"{"type":"content_block_start"}"#,
        r#"{"type":"content_block_start","index":-3,"content_block":7}"#,
        r#"{"type":"content_block_start","index":99999999999999999999,"content_block":{"type":"tool_use","input":[1]}}"#,
        r#"{"type":"content_block_delta","index":"0","delta":null}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":5}}"#,
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"signature_delta"}}"#,
        r#"{"type":"content_block_stop","index":null}"#,
        r#"{"type":"content_block_stop","index":12345}"#,
        r#"{"type":"message_delta"}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":7},"usage":[]}"#,
        r#"{"type":"error"}"#,
        r#"{"type":"error","error":"flat"}"#,
        r#"{"type":"message_stop","extra":true}"#,
    ];
    for first in weird {
        for second in weird {
            let mut parser = AnthropicStreamParser::new();
            let _ = parser.on_event(&ev(first));
            let _ = parser.on_event(&ev(second));
            let _ = parser.finish();
        }
    }
    for body in [
        json!(null),
        json!([]),
        json!({"content": "text"}),
        json!({"content": [1, null, {"type": 3}, {"type": "tool_use"}, {"type": "thinking"}]}),
        json!({"content": [], "usage": "x", "stop_reason": 1}),
    ] {
        let _ = Anthropic.parse_response(&body);
    }
    for status in [0, 100, 200, 302, 400, 499, 599, 600, u16::MAX] {
        let _ = Anthropic.parse_error(status, "{\"error\": 1}");
        let _ = Anthropic.parse_error(status, "\u{0}\u{fffd}");
    }
}

#[test]
fn cache_reads_and_writes_count_as_input_and_reads_as_cached() {
    let body = sse(&[
        r#"{"type":"message_start","message":{"id":"msg_c","usage":{"input_tokens":10,"cache_creation_input_tokens":50,"cache_read_input_tokens":100,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let p = parse_sse(&body);
    assert_eq!(p.message.usage, Some(usage(160, 100, 9)));
    let whole = json!({
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 50, "cache_read_input_tokens": 100, "output_tokens": 9}
    });
    assert_eq!(response_message(&whole).usage, Some(usage(160, 100, 9)));
}

#[test]
fn a_second_message_start_before_any_content_replaces_the_first() {
    let body = sse(&[
        MESSAGE_START,
        r#"{"type":"message_start","message":{"id":"msg_2","usage":{"input_tokens":7,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"second"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let p = parse_sse(&body);
    assert_eq!(p.message.text(), "second");
    assert_eq!(p.message.usage, Some(usage(7, 0, 2)));
}

#[test]
fn a_tool_input_sent_whole_in_its_start_event_is_kept() {
    let body = sse(&[
        MESSAGE_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_w","name":"read_file","input":{"path":"a.txt"}}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let p = parse_sse(&body);
    assert_call(
        &calls(&p.message)[0],
        "toolu_w",
        "read_file",
        json!({"path": "a.txt"}),
    );
}

#[test]
fn thinking_with_a_signature_but_no_text_is_kept_and_replayed() {
    let body = sse(&[
        MESSAGE_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"only-sig"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"second"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"sig-2"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"done"}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let m = parse_sse(&body).message;
    let blocks: Vec<_> = m.reasoning().cloned().collect();
    assert_eq!(
        blocks,
        vec![
            ReasoningBlock {
                signature: Some("only-sig".into()),
                ..Default::default()
            },
            ReasoningBlock {
                text: "second".into(),
                signature: Some("sig-2".into()),
                ..Default::default()
            },
        ]
    );
    let body = body_of(&ModelRequest {
        messages: vec![
            Message::user("q"),
            Message::Assistant(m),
            Message::user("r"),
        ],
        ..Default::default()
    });
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "", "signature": "only-sig"},
            {"type": "thinking", "thinking": "second", "signature": "sig-2"},
            {"type": "text", "text": "done"},
        ])
    );
}

#[test]
fn stop_reasons_map_to_finish_reasons() {
    for (reason, finish) in [
        ("end_turn", FinishReason::Stop),
        ("stop_sequence", FinishReason::Stop),
        ("tool_use", FinishReason::ToolCalls),
        ("max_tokens", FinishReason::Length),
        ("model_context_window_exceeded", FinishReason::Length),
        ("refusal", FinishReason::ContentFilter),
        ("pause_turn", FinishReason::Other("pause_turn".into())),
        ("brand_new", FinishReason::Other("brand_new".into())),
    ] {
        let whole = json!({"content": [], "stop_reason": reason});
        assert_eq!(
            Anthropic.parse_response(&whole).unwrap(),
            vec![StreamChunk::Done(finish.clone())],
            "{reason}"
        );
        let delta = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":1}}}}"#
        );
        let p = parse_sse(&sse(&[MESSAGE_START, &delta, r#"{"type":"message_stop"}"#]));
        assert_eq!(p.message.finish, Some(finish), "{reason}");
    }
}

// --- the request ----------------------------------------------------------

#[test]
fn request_puts_system_and_tools_at_the_top_with_cache_breakpoints_and_replays_the_turn_exactly() {
    let req = ModelRequest {
        system: "You are rein.".into(),
        messages: vec![
            Message::user("Read a and b."),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "Both files, at once.".into(),
                        signature: Some("c2ln+/==".into()),
                        ..Default::default()
                    }),
                    ContentPart::Text {
                        text: "Reading both.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_2".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path": "b", "limit": 10}"#.into(),
                    }),
                ],
                usage: Some(usage(1, 0, 1)),
                finish: Some(FinishReason::ToolCalls),
            }),
            tool_result("toolu_1", "contents of a", false),
            tool_result("toolu_2", "no such file: b", true),
        ],
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            ToolSpec {
                name: "glob".into(),
                description: "Find files.".into(),
                parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
            },
        ],
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
    };
    let mut ep = endpoint();
    ep.max_output_tokens = Some(4096);
    let wire = Anthropic.build_request(&req, &ep);
    assert_eq!(Anthropic.kind(), "anthropic");
    assert_eq!(wire.path, "/messages");
    assert_eq!(
        wire.headers,
        vec![
            ("x-api-key".to_string(), "sk-ant-test".to_string()),
            ("anthropic-version".to_string(), API_VERSION.to_string()),
        ]
    );
    assert_eq!(API_VERSION, "2023-06-01");
    assert_eq!(
        wire.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": true,
            "system": [
                {"type": "text", "text": "You are rein.", "cache_control": {"type": "ephemeral"}}
            ],
            "tools": [
                {
                    "name": "read_file",
                    "description": "Read a file.",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
                },
                {
                    "name": "glob",
                    "description": "Find files.",
                    "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
                    "cache_control": {"type": "ephemeral"}
                }
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Read a and b."}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Both files, at once.", "signature": "c2ln+/=="},
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b", "limit": 10}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents of a"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file: b", "is_error": true,
                     "cache_control": {"type": "ephemeral"}}
                ]}
            ]
        })
    );
}

#[test]
fn request_without_system_tools_or_key_omits_them_and_defaults_max_tokens() {
    let mut ep = endpoint();
    ep.api_key = None;
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let wire = Anthropic.build_request(&req, &ep);
    assert_eq!(
        wire.headers,
        vec![("anthropic-version".to_string(), "2023-06-01".to_string())]
    );
    assert_eq!(
        wire.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": DEFAULT_MAX_TOKENS,
            "stream": true,
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
                ]}
            ]
        })
    );
    assert_eq!(DEFAULT_MAX_TOKENS, 8192);
}

#[test]
fn the_request_cap_on_output_tokens_wins_over_the_endpoint_cap() {
    let mut ep = endpoint();
    ep.max_output_tokens = Some(4096);
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        max_output_tokens: Some(100),
        ..Default::default()
    };
    assert_eq!(Anthropic.build_request(&req, &ep).body["max_tokens"], 100);
}

#[test]
fn headers_the_endpoint_sets_itself_are_not_sent_twice() {
    let mut ep = endpoint();
    ep.headers
        .insert("Anthropic-Version".into(), "2024-01-01".into());
    ep.headers.insert("X-Api-Key".into(), "other".into());
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    assert!(Anthropic.build_request(&req, &ep).headers.is_empty());
}

/// A tool result's images go to Anthropic as image blocks of the
/// result's content, after its text.
#[test]
fn a_tool_results_images_are_sent_as_image_blocks() {
    let mut result = tool_result("toolu_1", "[image image/png, 8 bytes]", false);
    if let Message::Tool(r) = &mut result {
        r.images = vec![Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }];
    }
    let req = ModelRequest {
        messages: vec![
            Message::user("look"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "shot".into(),
                    arguments: "{}".into(),
                })],
                ..Default::default()
            }),
            result,
        ],
        ..Default::default()
    };
    let body = without_cache_control(&body_of(&req));
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        json!([
            {"type": "text", "text": "[image image/png, 8 bytes]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
        ])
    );
}

#[test]
fn consecutive_user_side_messages_merge_with_tool_results_first() {
    let req = ModelRequest {
        messages: vec![
            Message::user("first"),
            Message::user("second"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                })],
                ..Default::default()
            }),
            Message::user("stop that"),
            tool_result("toolu_1", "a b", false),
        ],
        ..Default::default()
    };
    assert_eq!(
        body_of(&req)["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second"}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"},
                {"type": "text", "text": "stop that", "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[test]
fn foreign_reasoning_blank_text_and_broken_arguments_are_not_sent_as_such() {
    let req = ModelRequest {
        messages: vec![
            Message::user("go"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    // Another provider's reasoning: no signature, no data.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "plain thoughts".into(),
                        ..Default::default()
                    }),
                    // OpenAI Responses reasoning: encrypted, but with an id.
                    ContentPart::Reasoning(ReasoningBlock {
                        encrypted: Some("gAAAA".into()),
                        id: Some("rs_1".into()),
                        ..Default::default()
                    }),
                    ContentPart::Text { text: "".into() },
                    ContentPart::Text { text: " \n".into() },
                    ContentPart::ToolCall(ToolCall {
                        id: "functions.bash:0".into(),
                        name: "bash".into(),
                        arguments: r#"{"command": "ls"#.into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_b".into(),
                        name: "todo_read".into(),
                        arguments: "".into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_c".into(),
                        name: "glob".into(),
                        arguments: "[1]".into(),
                    }),
                ],
                ..Default::default()
            }),
            tool_result("functions.bash:0", "invalid JSON arguments", true),
            tool_result("toolu_b", "", false),
            tool_result("toolu_c", "  ", false),
        ],
        ..Default::default()
    };
    assert_eq!(
        body_of(&req)["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "functions_bash_0", "name": "bash", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "todo_read", "input": {}},
                {"type": "tool_use", "id": "toolu_c", "name": "glob", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "functions_bash_0", "content": "invalid JSON arguments", "is_error": true},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "(no output)"},
                {"type": "tool_result", "tool_use_id": "toolu_c", "content": "(no output)",
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[test]
fn an_assistant_turn_left_empty_is_dropped_and_the_user_turns_around_it_merge() {
    let req = ModelRequest {
        messages: vec![
            Message::user("a"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::Reasoning(ReasoningBlock {
                    text: "foreign".into(),
                    ..Default::default()
                })],
                ..Default::default()
            }),
            Message::user("b"),
        ],
        ..Default::default()
    };
    assert_eq!(
        body_of(&req)["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[test]
fn system_messages_inside_the_conversation_join_the_top_level_system() {
    let req = ModelRequest {
        system: "Base prompt.".into(),
        messages: vec![
            Message::user("a"),
            Message::system("Summary of earlier work."),
            Message::user("b"),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(
        body["system"],
        json!([
            {"type": "text", "text": "Base prompt."},
            {"type": "text", "text": "Summary of earlier work.", "cache_control": {"type": "ephemeral"}}
        ])
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn the_cache_breakpoint_of_a_trailing_assistant_turn_skips_its_thinking() {
    let req = ModelRequest {
        messages: vec![
            Message::user("a"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Text {
                        text: "part".into(),
                    },
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "t".into(),
                        signature: Some("s".into()),
                        ..Default::default()
                    }),
                ],
                ..Default::default()
            }),
        ],
        tools: vec![ToolSpec {
            name: "noop".into(),
            description: String::new(),
            parameters: Value::Null,
        }],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "part", "cache_control": {"type": "ephemeral"}},
            {"type": "thinking", "thinking": "t", "signature": "s"}
        ])
    );
    // A tool without description or schema still gets a valid definition.
    assert_eq!(
        body["tools"],
        json!([{"name": "noop", "input_schema": {"type": "object", "properties": {}},
                "cache_control": {"type": "ephemeral"}}])
    );
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice_any() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: serde_json::json!({"type": "object"}),
        }],
        tool_choice: ToolChoice::Required,
        ..Default::default()
    };
    let body = Anthropic.build_request(&req, &endpoint()).body;
    assert_eq!(body["tool_choice"], serde_json::json!({"type": "any"}));
    req.tool_choice = ToolChoice::Auto;
    assert!(
        Anthropic
            .build_request(&req, &endpoint())
            .body
            .get("tool_choice")
            .is_none()
    );
    req.single_tool_call = true;
    assert_eq!(
        Anthropic.build_request(&req, &endpoint()).body["tool_choice"],
        serde_json::json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}
