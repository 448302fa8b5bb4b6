//! The HTTP transport shared by every wire API, against a local server:
//! streaming across reads, error statuses, retry-after, idle streams,
//! dropped connections, cancellation, secrets.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rein_core::{
    CancellationToken, FinishReason, ModelRequest, Provider, ProviderError, ProviderErrorKind,
    StreamChunk,
};
use rein_providers::http::{HttpOptions, HttpProvider};
use rein_providers::mock_server::{MockResponse, MockServer, Part};
use rein_providers::protocol::{
    EndpointConfig, StreamParser, WireProtocol, WireRequest, kind_for_status,
};
use rein_providers::sse::SseEvent;
use serde_json::{Value, json};

/// The smallest protocol: each `data:` is text, `[DONE]` ends.
struct Echo;

struct EchoParser {
    seen: bool,
}

impl StreamParser for EchoParser {
    fn on_event(&mut self, e: &SseEvent) -> Result<Vec<StreamChunk>, ProviderError> {
        if e.data == "[DONE]" {
            return Ok(vec![StreamChunk::Done(FinishReason::Stop)]);
        }
        self.seen = true;
        Ok(vec![StreamChunk::TextDelta(e.data.clone())])
    }
    fn finish(&mut self) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.seen {
            Ok(vec![StreamChunk::Done(FinishReason::Stop)])
        } else {
            Err(ProviderError::new(
                ProviderErrorKind::Protocol,
                "empty stream",
            ))
        }
    }
}

impl WireProtocol for Echo {
    fn kind(&self) -> &'static str {
        "echo"
    }
    fn build_request(&self, req: &ModelRequest, ep: &EndpointConfig) -> WireRequest {
        WireRequest {
            path: "/echo".into(),
            headers: vec![(
                "authorization".into(),
                format!("Bearer {}", ep.api_key.clone().unwrap_or_default()),
            )],
            body: json!({"model": ep.model, "n": req.messages.len()}),
        }
    }
    fn parser(&self) -> Box<dyn StreamParser> {
        Box::new(EchoParser { seen: false })
    }
    fn parse_response(&self, body: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
        Ok(vec![
            StreamChunk::TextDelta(body["text"].as_str().unwrap_or("").to_string()),
            StreamChunk::Done(FinishReason::Stop),
        ])
    }
    fn parse_error(&self, status: u16, body: &str) -> ProviderError {
        ProviderError::new(kind_for_status(status), format!("{status}: {body}"))
    }
}

const KEY: &str = "sk-test-SECRET-123";

fn provider(server: &MockServer, idle: Duration) -> HttpProvider {
    let mut headers = std::collections::BTreeMap::new();
    headers.insert("x-extra".to_string(), "yes".to_string());
    HttpProvider::new(
        "echo",
        Arc::new(Echo),
        EndpointConfig {
            base_url: format!("{}/v1/", server.url()),
            api_key: Some(KEY.into()),
            model: "echo-1".into(),
            max_output_tokens: None,
            headers,
        },
        HttpOptions {
            idle_timeout: idle,
            ..Default::default()
        },
    )
    .unwrap()
}

async fn collect(
    p: &HttpProvider,
    cancel: &CancellationToken,
) -> (Vec<StreamChunk>, Option<ProviderError>) {
    let mut out = Vec::new();
    let mut stream = match p.stream(&ModelRequest::default(), cancel).await {
        Ok(s) => s,
        Err(e) => return (out, Some(e)),
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(c) => out.push(c),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

fn text(chunks: &[StreamChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_stream_split_across_reads_arrives_whole_with_the_right_request() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(b"data: hel".to_vec()),
        Part::Pause(Duration::from_millis(20)),
        Part::Bytes(b"lo\r\n\r\ndata: [DO".to_vec()),
        Part::Bytes(b"NE]\r\n\r\n".to_vec()),
    ]));
    let p = provider(&server, Duration::from_secs(5));
    let (chunks, err) = collect(&p, &CancellationToken::new()).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text(&chunks), "hello");
    assert_eq!(chunks.last(), Some(&StreamChunk::Done(FinishReason::Stop)));
    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/echo");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("x-extra"), Some("yes"));
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(req.json(), json!({"model": "echo-1", "n": 0}));
}

#[tokio::test]
async fn a_json_answer_to_a_stream_request_is_read_as_a_whole_answer() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::json(200, &json!({"text": "whole"})));
    let p = provider(&server, Duration::from_secs(5));
    let (chunks, err) = collect(&p, &CancellationToken::new()).await;
    assert!(err.is_none());
    assert_eq!(text(&chunks), "whole");
}

#[tokio::test]
async fn error_statuses_map_to_kinds_with_retry_after_and_never_show_the_key() {
    let server = MockServer::start().await.unwrap();
    server.push(
        MockResponse::json(429, &json!({"error": "slow down"})).with_header("retry-after", "3"),
    );
    server.push(MockResponse::json(503, &json!({})).with_header("retry-after-ms", "250"));
    server.push(MockResponse::json(
        401,
        &json!({"error": "invalid api key"}),
    ));
    server.push(MockResponse::json(400, &json!({"error": "bad"})));
    let p = provider(&server, Duration::from_secs(5));
    let cancel = CancellationToken::new();
    let e = collect(&p, &cancel).await.1.unwrap();
    assert_eq!(
        (e.kind, e.status, e.retry_after),
        (
            ProviderErrorKind::Unavailable,
            Some(429),
            Some(Duration::from_secs(3))
        )
    );
    assert!(e.is_retryable());
    let e = collect(&p, &cancel).await.1.unwrap();
    assert_eq!(e.retry_after, Some(Duration::from_millis(250)));
    let e = collect(&p, &cancel).await.1.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Auth);
    assert!(!e.is_retryable());
    assert!(e.message.contains("invalid api key"), "{}", e.message);
    let e = collect(&p, &cancel).await.1.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::InvalidRequest);
    for e in [format!("{p:?}"), format!("{:?}", p.endpoint())] {
        assert!(!e.contains(KEY), "{e}");
    }
}

#[tokio::test]
async fn a_silent_stream_fails_as_idle_after_the_timeout() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(b"data: partial\n\n".to_vec()),
        Part::Pause(Duration::from_secs(30)),
    ]));
    let p = provider(&server, Duration::from_millis(300));
    let started = Instant::now();
    let (chunks, err) = collect(&p, &CancellationToken::new()).await;
    let err = err.unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Idle);
    assert!(err.is_retryable());
    assert!(err.message.contains("went silent"), "{}", err.message);
    assert_eq!(text(&chunks), "partial");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_a_transport_error_after_what_arrived() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(b"data: first\n\n".to_vec()),
        Part::Drop,
    ]));
    let p = provider(&server, Duration::from_secs(5));
    let (chunks, err) = collect(&p, &CancellationToken::new()).await;
    assert_eq!(text(&chunks), "first");
    let err = err.expect("a dropped connection is an error, not a normal end");
    assert_eq!(err.kind, ProviderErrorKind::Transport);
    assert!(err.message.contains("stream broke"), "{}", err.message);
}

#[tokio::test]
async fn nobody_listening_is_a_retryable_transport_error() {
    let server = MockServer::start().await.unwrap();
    let p = provider(&server, Duration::from_secs(5));
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = collect(&p, &CancellationToken::new()).await.1.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Transport);
    assert!(e.is_retryable());
    assert!(e.message.starts_with("cannot reach echo"), "{}", e.message);
}

#[tokio::test]
async fn cancelling_ends_a_stream_promptly() {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(b"data: a\n\n".to_vec()),
        Part::Pause(Duration::from_secs(30)),
    ]));
    let p = provider(&server, Duration::from_secs(60));
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let (_, err) = collect(&p, &cancel).await;
    assert_eq!(err.unwrap().kind, ProviderErrorKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
}
