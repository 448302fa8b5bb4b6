//! The error recordings: HTTP error bodies and errors sent inside a stream.

use rein_core::{FinishReason, ProviderErrorKind};
use serde_json::json;

use super::{Want, check_response, check_stream, http_error, sse_body, stream_error, usage};

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
