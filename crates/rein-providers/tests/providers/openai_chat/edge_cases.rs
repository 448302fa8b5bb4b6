//! Edge cases beyond the recordings: cut streams, odd finish reasons,
//! call ids and indexes, error bodies and input that must not panic.

use rein_core::{FinishReason, ProviderErrorKind, ReasoningBlock, StreamChunk, ToolCall};
use rein_providers::openai_chat::OpenAiChat;
use rein_providers::protocol::WireProtocol;
use rein_providers::sse::SseEvent;
use serde_json::Value;

use super::sse;
use crate::providers::fixtures;

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
