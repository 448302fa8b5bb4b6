//! Failures a retry recovers from: a 429 with Retry-After, a stream that
//! goes silent before or after output, a connection dropped or cut
//! mid-stream.

use std::time::Duration;

use rein_providers::mock_server::MockResponse;
use serde_json::{Value, json};

use super::{
    anthropic_text, assert_completed, exec, openai_env, openai_text_stream, responses_text, server,
    sse,
};
use crate::cli::support::*;

#[test]
fn a_429_with_retry_after_is_retried_and_shown_as_a_retry_event() {
    let (_rt, server) = server();
    server.push(
        MockResponse::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "type": "rate_limit"}}),
        )
        .with_header("retry-after", "1"),
    );
    let mut body = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    server.push(MockResponse::sse(body));
    let env = Env::new();
    let started = std::time::Instant::now();
    let o = exec(&env, "openai", &openai_env(&server, "k"));
    let events = assert_completed(&o, "ok");
    let retry = events
        .iter()
        .find(|e| e["type"] == "retry")
        .expect("a retry event");
    assert_eq!(retry["delay_ms"], 1000);
    assert_eq!(retry["attempt"], 1);
    assert!(
        retry["error"]
            .as_str()
            .unwrap()
            .contains("Rate limit reached")
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.requests().len(), 2);
}

fn config_with_idle_timeout(env: &Env, secs: u64) {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("stream_idle_timeout_secs = {secs}\nprovider_retries = 2\n"),
    )
    .unwrap();
}

#[test]
fn a_stream_that_goes_silent_before_any_output_is_retried() {
    use rein_providers::mock_server::Part;
    let (_rt, server) = server();
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(b": connected\n\n".to_vec()),
        Part::Pause(Duration::from_secs(30)),
    ]));
    server.push(MockResponse::sse(openai_text_stream("second try")));
    let env = Env::new();
    config_with_idle_timeout(&env, 1);
    let o = exec(&env, "openai", &openai_env(&server, "k"));
    let events = assert_completed(&o, "second try");
    let retry = events
        .iter()
        .find(|e| e["type"] == "retry")
        .expect("a retry event");
    assert!(
        retry["error"].as_str().unwrap().contains("went silent"),
        "{retry}"
    );
}

/// The retry events of a run, and the error they carried.
fn retries(events: &[Value]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "retry")
        .map(|e| {
            let error = e["error"].as_str().unwrap().to_string();
            (e["discarded"].as_bool().unwrap(), error)
        })
        .collect()
}

#[test]
fn a_stream_that_goes_silent_after_output_is_retried_and_the_partial_answer_discarded() {
    use rein_providers::mock_server::Part;
    let (_rt, server) = server();
    let first = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": "half an answer"}}]})],
        false,
    );
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(first),
        Part::Pause(Duration::from_secs(30)),
    ]));
    server.push(MockResponse::sse(openai_text_stream("second try")));
    let env = Env::new();
    config_with_idle_timeout(&env, 1);
    let o = exec(&env, "openai", &openai_env(&server, "k"));
    let events = assert_completed(&o, "second try");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(
        retries[0].0,
        "the retry says the partial answer was discarded"
    );
    assert!(retries[0].1.contains("went silent"), "{retries:?}");
    let stored = stored(&env, &session_id(&events));
    assert_eq!(
        stored.len(),
        2,
        "the prompt and the whole answer only: {stored:?}"
    );
    assert_eq!(stored[1]["content"][0]["text"], "second try");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_connection_dropped_or_cut_mid_stream_is_retried_on_every_wire_api() {
    use rein_providers::mock_server::{Fault, Part};
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("openai", openai_text_stream("whole"), "stream broke"),
        (
            "openai-responses",
            responses_text("whole"),
            "before the answer was complete",
        ),
        (
            "anthropic",
            anthropic_text("whole"),
            "before the answer was complete",
        ),
    ];
    for (provider, good, why) in cases {
        let (_rt, server) = server();
        // Chat: the connection breaks; the others: the body ends cleanly
        // half-way through an event, as a proxy's cut looks.
        let fault = match provider {
            "openai" => MockResponse::sse_parts(vec![
                Part::Bytes(good[..good.len() / 2].to_vec()),
                Part::Drop,
            ]),
            _ => Fault::EndMidEvent.response(&good),
        };
        server.push(fault);
        server.push(MockResponse::sse(good));
        let env = Env::new();
        let vars = match provider {
            "anthropic" => vec![
                ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
                ("ANTHROPIC_API_KEY", "k".to_string()),
            ],
            _ => openai_env(&server, "k").to_vec(),
        };
        let o = exec(&env, provider, &vars);
        let events = assert_completed(&o, "whole");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{provider}: {retries:?}");
        assert!(retries[0].1.contains(why), "{provider}: {retries:?}");
        let stored = stored(&env, &session_id(&events));
        assert_eq!(
            stored.len(),
            2,
            "{provider}: the prompt and the whole answer only"
        );
    }
}
