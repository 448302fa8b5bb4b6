//! The `Provider` trait every model backend implements.

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures_core::Stream;
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::assemble::AssistantAssembler;
use crate::schema::{AssistantMessage, Message, StreamChunk, ToolSpec};

/// A stream of chunks from one model call.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, ProviderError>> + Send>>;

/// What a provider can do; the engine and front ends adapt to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The model may ask for several tool calls in one answer.
    pub parallel_tool_calls: bool,
    /// The model streams reasoning.
    pub reasoning: bool,
    /// The provider caches prompt prefixes.
    pub prompt_caching: bool,
    /// Context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Worth one extra short call to title a new session: a service that
    /// answers any request quickly. Not a local model (each call costs
    /// seconds of CPU) nor a script (it holds no answer for it).
    pub session_titles: bool,
    /// The model reads images in the user's message (`rein exec
    /// --image`): the hosted APIs do, the local model does not.
    pub images: bool,
}

/// One request to a model: the whole conversation, replayed.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// System prompt, built fresh for every run.
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Output token cap, when the caller wants one.
    pub max_output_tokens: Option<u32>,
    /// Whether the answer may be text only, or must call a tool.
    pub tool_choice: ToolChoice,
    /// At most one tool call per answer (OpenAI's `parallel_tool_calls:
    /// false`, Anthropic's `disable_parallel_tool_use`; the local model's
    /// grammar ends the answer after one call). Small models asked for one
    /// call tend to emit a call to every tool they are offered.
    pub single_tool_call: bool,
    /// A JSON Schema the final answer's text must meet (`rein exec
    /// --output-schema`): hosted APIs get it as their structured-output
    /// setting, the local model as a grammar; tool calls stay free.
    pub answer_schema: Option<std::sync::Arc<serde_json::Value>>,
    /// Sampling temperature for this request, when the caller wants one
    /// over the provider's own (the candidates lever samples alternative
    /// fixes warmer); `None` leaves the provider's default.
    pub temperature: Option<f32>,
}

/// What the model may answer with when tools are offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// Text, tool calls, or both: the model decides.
    #[default]
    Auto,
    /// At least one tool call (ignored when no tools are offered). Wire
    /// APIs send their own spelling (`"required"`, `{"type": "any"}`); the
    /// local model is held to a call by its grammar from the first token.
    Required,
}

impl ToolChoice {
    /// Whether this request must be answered with a call: `Required` and
    /// some tools offered.
    pub fn forces_call(self, tools: &[crate::schema::ToolSpec]) -> bool {
        self == ToolChoice::Required && !tools.is_empty()
    }
}

/// Broad class of a provider failure; decides whether a retry makes sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderErrorKind {
    /// Could not connect, connection reset, DNS and the like.
    Transport,
    /// The service is overloaded or rate-limiting (408/409/429/5xx/529).
    Unavailable,
    /// Credentials missing or refused (401/403).
    Auth,
    /// The request was refused as malformed (400/404/422).
    InvalidRequest,
    /// The conversation is larger than the model's context window.
    ContextLengthExceeded,
    /// The stream went silent for too long.
    Idle,
    /// The service sent something that breaks its own protocol.
    Protocol,
    /// An error the service reported inside the stream.
    Stream,
    /// Cancelled by the caller.
    Cancelled,
    /// A local configuration problem (no script, unknown model...).
    Config,
}

/// A provider failure with what the engine needs to decide on a retry.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// The service asked to wait this long before retrying.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
        }
    }

    /// Whether trying the same request again may succeed. A service that
    /// broke its own protocol (an event that is not JSON, two answers
    /// spliced together) is retried too: a proxy that cut or mangled the
    /// bytes is the usual cause, and the next attempt goes through cleanly.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            ProviderErrorKind::Transport
                | ProviderErrorKind::Unavailable
                | ProviderErrorKind::Idle
                | ProviderErrorKind::Protocol
        )
    }
}

/// A model backend. One streaming call; everything else is built on it.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short provider name as users select it (`openai`, `replay`...).
    fn name(&self) -> &str;

    /// The model this provider talks to.
    fn model(&self) -> &str;

    fn capabilities(&self) -> Capabilities;

    /// The model's own tokenizer, when it is available offline.
    fn token_counter(&self) -> Option<std::sync::Arc<dyn crate::tokens::TokenCounter>> {
        None
    }

    /// The exact size in tokens of `request` as the model will read it
    /// (chat template included), when the provider can tell without a
    /// call; `None` leaves it to rein's accounting
    /// ([`crate::request_size`]).
    fn count_request(&self, _request: &ModelRequest) -> Option<u64> {
        None
    }

    /// The model's prices, when known (None: cost unknown; local models
    /// cost nothing and say so with zero prices).
    fn pricing(&self) -> Option<crate::tokens::Pricing> {
        None
    }

    /// Start one model call. The returned stream must end promptly when
    /// `cancel` fires (yielding a `Cancelled` error or simply ending).
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError>;

    /// Non-streaming convenience: drive `stream` to its end and assemble the
    /// answer.
    async fn complete(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<AssistantMessage, ProviderError> {
        let mut stream = self.stream(request, cancel).await?;
        let mut assembler = AssistantAssembler::default();
        while let Some(chunk) = stream.next().await {
            if assembler.push(chunk?) {
                break;
            }
        }
        Ok(assembler.finish())
    }
}
