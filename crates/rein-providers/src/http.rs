//! The HTTP provider: one client, one SSE decoder and one stream loop for
//! every wire API; the API-specific parts come from a `WireProtocol`.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures_util::StreamExt;
use rein_core::{
    Capabilities, ChunkStream, ModelRequest, Pricing, Provider, ProviderError, ProviderErrorKind,
    StreamChunk, TokenCounter,
};
use tokio_util::sync::CancellationToken;

use crate::protocol::{EndpointConfig, StreamParser, WireProtocol};
use crate::sse::SseDecoder;

/// Transport settings.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// A stream with no bytes for this long fails (default 120 s); the
    /// engine retries it, discarding what had been streamed.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// Context window reported to the engine; from the catalog when unset.
    pub context_window: Option<u64>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            idle_timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(15),
            context_window: None,
        }
    }
}

/// A model behind an HTTP API.
pub struct HttpProvider {
    name: String,
    protocol: Arc<dyn WireProtocol>,
    endpoint: EndpointConfig,
    options: HttpOptions,
    client: reqwest::Client,
    /// OpenAI's tokenizer for OpenAI's models, kept so that its
    /// calibration and its tables outlive a run.
    counter: Option<Arc<dyn TokenCounter>>,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("name", &self.name)
            .field("kind", &self.protocol.kind())
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

fn transport(e: &reqwest::Error, what: &str) -> ProviderError {
    // reqwest's message names the URL but never headers, so no secret leaks.
    let mut msg = format!("{what}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    ProviderError::new(ProviderErrorKind::Transport, msg)
}

/// Makes ring rustls's process-wide crypto provider (reqwest is built
/// without one, so that aws-lc stays out of the build). Harmless when a
/// provider is already installed.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Whether a client for `base_url` may need TLS: an `https` URL, or any URL
/// when a proxy is set (the proxy may be reached over TLS). Reading the
/// system's trust store costs about a third of a short run's CPU (hundreds
/// of PEM files parsed), so a plain-`http` endpoint with no proxy, such as
/// a model server on this machine, gets a client with no trusted roots: a
/// redirect to `https` fails verification instead of connecting.
fn needs_trust_store(base_url: &str, env_set: impl Fn(&str) -> bool) -> bool {
    let plain_http = base_url
        .get(..7)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("http://"));
    let proxied = ["ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY"]
        .iter()
        .any(|k| env_set(k) || env_set(&k.to_ascii_lowercase()));
    !plain_http || proxied
}

impl HttpProvider {
    /// `name` is what the user selected (`openai`, `deepseek`...).
    pub fn new(
        name: impl Into<String>,
        protocol: Arc<dyn WireProtocol>,
        endpoint: EndpointConfig,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        install_tls_provider();
        let mut builder = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")));
        if !needs_trust_store(&endpoint.base_url, |k| std::env::var_os(k).is_some()) {
            builder = builder.tls_certs_only(Vec::new());
        }
        let client = builder.build().map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Config,
                format!("cannot set up HTTP: {e}"),
            )
        })?;
        let counter = if protocol.kind().starts_with("openai") {
            crate::tokens::openai_counter(&endpoint.model)
        } else {
            None
        };
        Ok(HttpProvider {
            name: name.into(),
            protocol,
            endpoint,
            options,
            client,
            counter,
        })
    }

    pub fn endpoint(&self) -> &EndpointConfig {
        &self.endpoint
    }

    async fn send(&self, request: &ModelRequest) -> Result<reqwest::Response, ProviderError> {
        let wire = self.protocol.build_request(request, &self.endpoint);
        let url = format!(
            "{}{}",
            self.endpoint.base_url.trim_end_matches('/'),
            wire.path
        );
        let mut rb = self
            .client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream, application/json");
        for (k, v) in &self.endpoint.headers {
            rb = rb.header(k, v);
        }
        for (k, v) in &wire.headers {
            rb = rb.header(k, v);
        }
        let body = serde_json::to_vec(&wire.body).map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Protocol,
                format!("cannot encode the request: {e}"),
            )
        })?;
        let resp = tokio::time::timeout(self.options.idle_timeout, rb.body(body).send())
            .await
            .map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::Idle,
                    format!(
                        "{} did not answer within {} s",
                        self.name,
                        self.options.idle_timeout.as_secs()
                    ),
                )
            })?
            .map_err(|e| transport(&e, &format!("cannot reach {}", self.name)))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = crate::retry_after::parse(
            resp.headers()
                .iter()
                .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))),
            SystemTime::now(),
        );
        let text = match tokio::time::timeout(self.options.idle_timeout, resp.bytes()).await {
            Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
            _ => String::new(),
        };
        let mut err = self.protocol.parse_error(status.as_u16(), &text);
        err.status = Some(status.as_u16());
        err.retry_after = retry_after;
        if err.kind == ProviderErrorKind::Auth && self.endpoint.api_key.is_none() {
            err.message
                .push_str(" (no API key is configured for this provider)");
        }
        Err(err)
    }
}

/// State of one response being read.
struct Reading {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    decoder: SseDecoder,
    parser: Box<dyn StreamParser>,
    pending: VecDeque<Result<StreamChunk, ProviderError>>,
    finished: bool,
    cancel: CancellationToken,
    idle: Duration,
    name: String,
}

impl Reading {
    fn take(&mut self, results: Result<Vec<StreamChunk>, ProviderError>) {
        match results {
            Ok(chunks) => {
                for c in chunks {
                    let done = matches!(c, StreamChunk::Done(_));
                    self.pending.push_back(Ok(c));
                    if done {
                        // Stop reading: a server may keep the connection open.
                        self.finished = true;
                        return;
                    }
                }
            }
            Err(e) => {
                self.pending.push_back(Err(e));
                self.finished = true;
            }
        }
    }

    async fn next(mut self) -> Option<(Result<StreamChunk, ProviderError>, Reading)> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some((item, self));
            }
            if self.finished {
                return None;
            }
            let next = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    self.finished = true;
                    return Some((Err(ProviderError::new(ProviderErrorKind::Cancelled, "cancelled")), self));
                }
                n = tokio::time::timeout(self.idle, self.body.next()) => n,
            };
            match next {
                Err(_) => {
                    let msg = format!(
                        "the {} stream went silent for {} s",
                        self.name,
                        self.idle.as_secs()
                    );
                    self.take(Err(ProviderError::new(ProviderErrorKind::Idle, msg)));
                }
                Ok(Some(Ok(bytes))) => {
                    for event in self.decoder.feed(&bytes) {
                        let r = self.parser.on_event(&event);
                        self.take(r);
                        if self.finished {
                            break;
                        }
                    }
                }
                Ok(Some(Err(e))) => {
                    let err = transport(&e, &format!("the {} stream broke", self.name));
                    self.take(Err(err));
                }
                Ok(None) => {
                    // An event cut off by the end of the stream is dropped;
                    // the parser then says whether the answer was complete.
                    self.decoder.finish();
                    if !self.finished {
                        let r = self.parser.finish();
                        self.take(r);
                        self.finished = true;
                    }
                }
            }
        }
    }
}

#[async_trait]
impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            parallel_tool_calls: true,
            reasoning: true,
            prompt_caching: true,
            session_titles: true,
            // Every wire API rein speaks takes images in the user's message.
            images: true,
            context_window: self
                .options
                .context_window
                .or_else(|| crate::catalog::context_window(&self.endpoint.model)),
        }
    }

    /// OpenAI's own tokenizer for OpenAI's models on the OpenAI APIs; other
    /// models (an OpenAI-compatible server's, Claude) have none offline.
    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        self.counter.clone()
    }

    fn pricing(&self) -> Option<Pricing> {
        crate::catalog::pricing(&self.endpoint.model)
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        let resp = tokio::select! {
            r = self.send(request) => r?,
            _ = cancel.cancelled() => return Err(ProviderError::new(ProviderErrorKind::Cancelled, "cancelled")),
        };
        let is_json = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.contains("json"));
        if is_json {
            // The server answered without streaming.
            let bytes = tokio::time::timeout(self.options.idle_timeout, resp.bytes())
                .await
                .map_err(|_| {
                    ProviderError::new(
                        ProviderErrorKind::Idle,
                        format!("{} stopped sending its answer", self.name),
                    )
                })?
                .map_err(|e| transport(&e, &format!("the {} answer broke", self.name)))?;
            let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                ProviderError::new(
                    ProviderErrorKind::Protocol,
                    format!("{} sent JSON that does not parse: {e}", self.name),
                )
            })?;
            let chunks = self.protocol.parse_response(&value)?;
            return Ok(Box::pin(futures_util::stream::iter(
                chunks.into_iter().map(Ok),
            )));
        }
        let reading = Reading {
            body: resp.bytes_stream().boxed(),
            decoder: SseDecoder::new(),
            parser: self.protocol.parser(),
            pending: VecDeque::new(),
            finished: false,
            cancel: cancel.clone(),
            idle: self.options.idle_timeout,
            name: self.name.clone(),
        };
        Ok(Box::pin(futures_util::stream::unfold(
            reading,
            Reading::next,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::needs_trust_store;

    #[test]
    fn a_plain_http_endpoint_with_no_proxy_builds_its_client_without_the_trust_store() {
        let none = |_: &str| false;
        assert!(!needs_trust_store("http://127.0.0.1:8080/v1", none));
        assert!(!needs_trust_store("HTTP://localhost:11434/v1", none));
    }

    #[test]
    fn https_or_a_proxy_keeps_the_system_trust_store() {
        let none = |_: &str| false;
        assert!(needs_trust_store("https://api.example.com/v1", none));
        assert!(needs_trust_store("HTTPS://api.example.com/v1", none));
        assert!(needs_trust_store("", none));
        for proxy in ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "http_proxy"] {
            assert!(
                needs_trust_store("http://127.0.0.1:8080/v1", |k| k == proxy),
                "{proxy} set"
            );
        }
    }
}
