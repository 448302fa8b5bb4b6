//! Error bodies and error events: kinds, retryability and the service's
//! message.

use rein_core::ProviderErrorKind;
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::WireProtocol;
use serde_json::json;

use super::{ERR_400_DECIMAL, ERR_429_QUOTA, ERR_DEEPSEEK_400, ERR_MIDSTREAM_QUOTA, run};
use crate::providers::fixtures::{self, Body};

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
