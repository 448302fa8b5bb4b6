//! Streamed fixtures: text, tool input, thinking and server-tool blocks
//! as recorded, each read the same in every SSE variant.

use rein_core::*;
use rein_providers::anthropic::{Anthropic, AnthropicStreamParser};
use rein_providers::protocol::StreamParser;
use serde_json::{Value, json};

use super::{
    assert_call, body_of, calls, interactions, parse_fixture, parse_sse, sse_body, tool_result,
    usage,
};
use crate::providers::fixtures;

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
