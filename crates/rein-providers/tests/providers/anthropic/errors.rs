//! Error bodies and error events: kinds from status, type and message,
//! and messages free of echoed keys.

use rein_core::*;
use rein_providers::anthropic::{Anthropic, AnthropicStreamParser};
use rein_providers::protocol::{StreamParser, WireProtocol};
use serde_json::{Value, json};

use super::{MESSAGE_START, ev, sse};
use crate::providers::fixtures::{self, Body};

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
