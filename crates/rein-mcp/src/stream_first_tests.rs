//! The gate on its own (virtual time: a wait shows as elapsed time, and no
//! test sleeps), and the wrapper around the real HTTP client against a
//! local HTTP server that answers the standalone GET as servers do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rmcp::model::{
    ClientRequest, ClientResult, InitializedNotification, NumberOrString, PingRequest,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::*;

fn initialized() -> ClientJsonRpcMessage {
    ClientJsonRpcMessage::notification(ClientNotification::InitializedNotification(
        InitializedNotification::default(),
    ))
}

fn request() -> ClientJsonRpcMessage {
    ClientJsonRpcMessage::request(
        ClientRequest::PingRequest(PingRequest::default()),
        NumberOrString::Number(7),
    )
}

fn response() -> ClientJsonRpcMessage {
    ClientJsonRpcMessage::response(ClientResult::empty(()), NumberOrString::Number(3))
}

/// A gate whose session has just sent its initialized notification.
fn opening() -> Gate {
    let gate = Gate::default();
    let now = Instant::now();
    let initialized = futures_now(gate.before_post(&initialized(), true));
    assert!(initialized);
    gate.posted(initialized, true);
    assert_eq!(now.elapsed(), Duration::ZERO);
    gate
}

/// The value of a future that must not wait.
fn futures_now<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    let waker = std::task::Waker::noop();
    match f.as_mut().poll(&mut std::task::Context::from_waker(waker)) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("it waited"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_request_after_the_handshake_waits_until_the_standalone_get_is_answered() {
    let gate = opening();
    let start = Instant::now();
    let waiting = tokio::spawn({
        let gate = gate.clone();
        async move { gate.before_post(&request(), true).await }
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!waiting.is_finished(), "the request went before the GET");
    gate.answered();
    assert!(!waiting.await.unwrap());
    // It went when the GET was answered, not at the end of its wait.
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn notifications_responses_and_the_handshake_never_wait() {
    // Before the handshake completes nothing is opening.
    let gate = Gate::default();
    futures_now(gate.before_post(&request(), false));
    futures_now(gate.before_post(&request(), true));
    // While the stream opens, what is not a request goes at once.
    let gate = opening();
    futures_now(gate.before_post(&response(), true));
    futures_now(gate.before_post(&initialized(), true));
    // A session-less server opens no stream: its initialized marks nothing.
    let gate = Gate::default();
    assert!(!futures_now(gate.before_post(&initialized(), false)));
    futures_now(gate.before_post(&request(), false));
}

#[tokio::test(start_paused = true)]
async fn a_failed_initialized_notification_holds_nothing_up() {
    let gate = Gate::default();
    let initialized = futures_now(gate.before_post(&initialized(), true));
    gate.posted(initialized, false);
    futures_now(gate.before_post(&request(), true));
}

#[tokio::test(start_paused = true)]
async fn a_get_never_answered_is_waited_for_once_then_no_more() {
    let gate = opening();
    let start = Instant::now();
    gate.before_post(&request(), true).await;
    assert_eq!(start.elapsed(), STREAM_WAIT);
    futures_now(gate.before_post(&request(), true));
}

/// A one-connection-at-a-time HTTP server: POSTs are accepted (202), the
/// GET gets `get_answer` and its connection is kept open.
async fn server(get_answer: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut byte = [0u8];
                if conn.read(&mut byte).await.unwrap_or(0) == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse().unwrap());
            let mut body = vec![0u8; length];
            conn.read_exact(&mut body).await.unwrap();
            let answer = if head.starts_with("get") {
                get_answer
            } else {
                "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            };
            conn.write_all(answer.as_bytes()).await.unwrap();
            kept.push(conn);
        }
    });
    url
}

/// Through the real HTTP client: the initialized notification marks the
/// stream as opening, and the GET's answer settles it whether the server
/// opens the stream or refuses it (405), so requests then go at once.
#[tokio::test]
async fn an_opened_or_refused_standalone_stream_lets_requests_go() {
    let refused = "HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n";
    let opened = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
    for (answer, opens) in [(refused, false), (opened, true)] {
        let url: Arc<str> = server(answer).await.into();
        crate::install_tls_provider();
        let client = StreamFirst::new(crate::connect::http_client().unwrap());
        let session: Option<Arc<str>> = Some("s1".into());
        let limits = StreamableHttpResponseLimits::default();
        let posted = client
            .post_message_with_response_limits(
                url.clone(),
                initialized(),
                session.clone(),
                None,
                HashMap::new(),
                limits,
            )
            .await;
        assert!(
            matches!(posted, Ok(StreamableHttpPostResponse::Accepted)),
            "{posted:?}"
        );
        assert_eq!(*client.gate.0.borrow(), Standalone::Opening);
        let stream = client
            .get_stream_with_max_sse_event_size(
                url,
                session,
                None,
                None,
                HashMap::new(),
                limits.max_sse_event_size,
            )
            .await;
        assert_eq!(stream.is_ok(), opens, "{answer}");
        assert_eq!(*client.gate.0.borrow(), Standalone::Settled, "{answer}");
        futures_now(client.gate.before_post(&request(), true));
    }
}
