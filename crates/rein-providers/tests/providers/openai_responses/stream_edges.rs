//! How a stream behaves at its edges: cut, incomplete, done values,
//! refusals, late events and input that must not panic.

use rein_core::{
    ContentPart, FinishReason, ProviderErrorKind, ReasoningBlock, StreamChunk, ToolCall,
};
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::WireProtocol;
use rein_providers::sse::SseEvent;
use serde_json::json;

use super::{SUMMARY_STREAM, assemble, event, run, usage};
use crate::providers::fixtures;

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
