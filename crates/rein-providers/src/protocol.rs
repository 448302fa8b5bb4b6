//! What each wire API (OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages) supplies to the shared HTTP provider: how to build a request,
//! how to read its event stream, and how to read its error bodies.

use std::collections::BTreeMap;

use rein_core::{ModelRequest, ProviderError, StreamChunk};
use serde_json::Value;

use crate::sse::SseEvent;

/// Settings of one configured endpoint. Its `Debug` output never shows the
/// key.
#[derive(Clone, Default)]
pub struct EndpointConfig {
    /// Base URL without the API path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The secret, never logged or shown.
    pub api_key: Option<String>,
    pub model: String,
    pub max_output_tokens: Option<u32>,
    /// Extra headers sent with every request.
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// One HTTP request to make.
#[derive(Debug, Clone)]
pub struct WireRequest {
    /// Appended to the base URL, e.g. `/chat/completions`.
    pub path: String,
    /// Headers besides `content-type: application/json` and the endpoint's
    /// extra headers (authentication goes here).
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// A wire API.
pub trait WireProtocol: Send + Sync + 'static {
    /// Short name as users select it: `openai`, `openai-responses`, `anthropic`.
    fn kind(&self) -> &'static str;

    /// The streaming request for `req`.
    fn build_request(&self, req: &ModelRequest, endpoint: &EndpointConfig) -> WireRequest;

    /// A parser for one response stream.
    fn parser(&self) -> Box<dyn StreamParser>;

    /// Chunks for a whole non-streaming JSON answer (some servers ignore
    /// `stream: true`, and recorded traffic has such bodies), ending in
    /// `Done`.
    fn parse_response(&self, body: &Value) -> Result<Vec<StreamChunk>, ProviderError>;

    /// Turn a non-2xx response into an error: the message the service gave,
    /// and the kind refined from the body (context length exceeded, say).
    /// `status` decides the kind otherwise; `retry_after` is set by the caller.
    fn parse_error(&self, status: u16, body: &str) -> ProviderError;
}

/// Reads one response's events, in order.
pub trait StreamParser: Send {
    /// Chunks for one event. A `Done` chunk ends the answer; an error event
    /// from the service is returned as `Err`.
    fn on_event(&mut self, event: &SseEvent) -> Result<Vec<StreamChunk>, ProviderError>;

    /// The stream ended: chunks still owed (usage held back, a `Done` if the
    /// service never sent its end marker), or an error if the answer is
    /// unusable.
    fn finish(&mut self) -> Result<Vec<StreamChunk>, ProviderError>;
}

/// The stream ended before the protocol's end of the answer: a connection
/// dropped by a proxy or a load balancer, most often. Retryable, like any
/// transport failure; what arrived is not an answer.
pub fn cut_off(api: &str, expected: &str) -> ProviderError {
    ProviderError::new(
        rein_core::ProviderErrorKind::Transport,
        format!("the {api} stream ended before the answer was complete (no {expected})"),
    )
}

/// The error kind an HTTP status means before the body is read: 401/403
/// authentication; 408, 409, 429, 5xx and 529 worth a retry; other 4xx a
/// request the service will keep refusing; anything else is not an error
/// status at all, so the service broke its protocol.
pub fn kind_for_status(status: u16) -> rein_core::ProviderErrorKind {
    use rein_core::ProviderErrorKind as K;
    match status {
        401 | 403 => K::Auth,
        408 | 409 | 429 | 500..=599 => K::Unavailable,
        400..=499 => K::InvalidRequest,
        _ => K::Protocol,
    }
}
