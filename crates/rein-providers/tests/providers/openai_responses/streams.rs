//! The streamed and whole recordings: text, parallel calls, reasoning
//! summaries, custom tools, rotating item ids and built-in tools.

use rein_core::{FinishReason, StreamChunk, ToolCall};
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::WireProtocol;
use serde_json::{Value, json};

use super::{
    BACKGROUND, COPILOT, CUSTOM_TOOL, DEEPSEEK, Enc, FOUR_STREAMS, NONSTREAM_CALL, PARALLEL_CALLS,
    STREAMING_USAGE, SUMMARY_STREAM, TEXT_STREAM, Think, WEB_SEARCH, assemble, assert_answer, call,
    parse, parse_interactions, run, usage,
};
use crate::providers::fixtures::{self, Body, Parsed};

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
