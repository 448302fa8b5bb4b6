//! The standalone stream first: a remote server may send its own requests
//! (an elicitation in the middle of a tool call, say) on the session's
//! standalone GET stream, which rmcp opens in the background right after
//! the handshake. A request POSTed before that stream is there can make
//! the server send into nothing (the TypeScript and Python SDKs drop such
//! a message), so the call hangs until it times out. [`StreamFirst`] wraps
//! the HTTP client the transport uses and orders the two. Steps:
//!
//! 1. The `notifications/initialized` POST of a session (a session id is
//!    set) marks the standalone stream as opening: rmcp opens it once that
//!    POST is answered. A failed POST marks it settled (no stream comes).
//! 2. The stream's GET (the session id, no `Last-Event-ID`) marks it
//!    settled once it is answered, whatever the answer: the stream is
//!    open, or the server refuses it (405: no stream, nothing to wait
//!    for), or it failed.
//! 3. A JSON-RPC request POSTed while the stream is opening waits until it
//!    has settled, at most [`STREAM_WAIT`]; a server that never answers
//!    the GET is waited for that once, and then no more.
//!
//! Everything before the handshake completes, notifications and responses
//! never wait (a response may be what the server needs to answer the GET).
//! Every call goes to the wrapped client unchanged, the response limits
//! included.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_core::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientNotification};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::watch;

/// How long a request waits at most for the standalone stream.
pub(crate) const STREAM_WAIT: Duration = Duration::from_secs(5);

/// Where a session's standalone stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standalone {
    /// Being opened: requests wait.
    Opening,
    /// Open, refused, failed, given up on, or not asked for: nothing waits.
    Settled,
}

/// The ordering of one connection (shared by the transport's clones of its
/// client).
#[derive(Debug, Clone)]
pub(crate) struct Gate(Arc<watch::Sender<Standalone>>);

impl Default for Gate {
    fn default() -> Self {
        Gate(Arc::new(watch::Sender::new(Standalone::Settled)))
    }
}

impl Gate {
    /// Before `message` is POSTed (step 1 and 3): whether it is the
    /// session's initialized notification, which [`Gate::posted`] needs.
    pub(crate) async fn before_post(&self, message: &ClientJsonRpcMessage, session: bool) -> bool {
        match message {
            ClientJsonRpcMessage::Notification(n)
                if session
                    && matches!(
                        n.notification,
                        ClientNotification::InitializedNotification(_)
                    ) =>
            {
                self.0.send_replace(Standalone::Opening);
                true
            }
            ClientJsonRpcMessage::Request(_) => {
                self.wait().await;
                false
            }
            _ => false,
        }
    }

    /// After a POST: a failed initialized notification opens no stream.
    pub(crate) fn posted(&self, initialized: bool, ok: bool) {
        if initialized && !ok {
            self.0.send_replace(Standalone::Settled);
        }
    }

    /// Step 2: the standalone GET was answered, one way or another.
    pub(crate) fn answered(&self) {
        self.0.send_replace(Standalone::Settled);
    }

    /// Until the stream has settled, or [`STREAM_WAIT`] (then it is given up on).
    async fn wait(&self) {
        let mut state = self.0.subscribe();
        let settled = state.wait_for(|s| *s == Standalone::Settled);
        if tokio::time::timeout(STREAM_WAIT, settled).await.is_err() {
            self.answered();
        }
    }
}

/// An HTTP client for rmcp's streamable HTTP transport that opens the
/// standalone stream before requests go out (see the module's steps).
#[derive(Debug, Clone)]
pub(crate) struct StreamFirst<C> {
    inner: C,
    gate: Gate,
}

impl<C> StreamFirst<C> {
    pub(crate) fn new(inner: C) -> Self {
        StreamFirst {
            inner,
            gate: Gate::default(),
        }
    }
}

type Posted<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;
type SseStream<E> = Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<E>>;

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for StreamFirst<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted<C::Error> {
        let initialized = self.gate.before_post(&message, session_id.is_some()).await;
        let posted = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.gate.posted(initialized, posted.is_ok());
        posted
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Posted<C::Error> {
        let initialized = self.gate.before_post(&message, session_id.is_some()).await;
        let posted = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.gate.posted(initialized, posted.is_ok());
        posted
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted<C::Error> {
        let initialized = self.gate.before_post(&message, session_id.is_some()).await;
        let posted = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.gate.posted(initialized, posted.is_ok());
        posted
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> SseStream<C::Error> {
        let standalone = session_id.is_some() && last_event_id.is_none();
        let stream = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        if standalone {
            self.gate.answered();
        }
        stream
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> SseStream<C::Error> {
        let standalone = session_id.is_some() && last_event_id.is_none();
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if standalone {
            self.gate.answered();
        }
        stream
    }
}

#[cfg(test)]
#[path = "stream_first_tests.rs"]
mod tests;
