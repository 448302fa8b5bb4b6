//! Streams that break the rules: cut, duplicated, unreadable or
//! out-of-order events, and how stop reasons and cache counts map.

use rein_core::*;
use rein_providers::anthropic::{Anthropic, AnthropicStreamParser};
use rein_providers::protocol::{StreamParser, WireProtocol};
use rein_providers::sse::SseEvent;
use serde_json::json;

use super::{
    MESSAGE_START, assert_call, body_of, calls, ev, parse_sse, response_message, sse, usage,
};
use crate::providers::fixtures;

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
