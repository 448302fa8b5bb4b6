//! The embedded local model: a GGUF file run in-process with llama.cpp.
//!
//! One worker thread owns the model and a single context; requests are
//! rendered with the model's own chat template, the longest prefix already
//! in the KV cache is reused (the agent loop only appends, so each turn
//! evaluates just the new tokens), and tool calls are recognised in the
//! generated text, with a lazy grammar keeping them well-formed.
//!
//! Debugging: `REIN_LLAMA_LOG=1` keeps llama.cpp's own log on stderr (it is
//! silenced otherwise); `REIN_LOCAL_TRACE=1` prints every rendered prompt
//! and raw answer, with timings, to stderr.

mod answer_grammar;
mod config;
mod cpu;
mod echo;
mod grammar;
mod holdback;
mod naming;
mod output;
mod prefix;
mod preflight;
mod progress;
mod prompter;
mod runaway;
mod sampler;
mod template;
mod toolcall;
mod utf8;
mod worker;

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;

use async_trait::async_trait;
use futures_util::stream;
use llama_cpp_2::model::LlamaModel;
use rein_core::{
    Capabilities, ChunkStream, ModelRequest, Pricing, Provider, ProviderError, ProviderErrorKind,
    StreamChunk, TokenCounter,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use config::LocalConfig;

/// The local models read text only: a prompt with images is refused
/// before the model is loaded (front ends ask this before building it).
pub const TAKES_IMAGES: bool = false;
pub use toolcall::parse_tool_calls;

use worker::{ChunkResult, Job};

/// A GGUF model run in this process.
pub struct LocalProvider {
    jobs: std_mpsc::Sender<Job>,
    model: String,
    n_ctx: u32,
    /// The loaded model, shared with the worker, for counting tokens.
    weights: Arc<LlamaModel>,
    /// How requests become the model's tokens (the worker's own).
    prompter: Arc<prompter::Prompter>,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("model", &self.model)
            .field("n_ctx", &self.n_ctx)
            .finish()
    }
}

impl LocalProvider {
    /// Load the model (blocking: a few seconds at most for small models).
    /// A missing, foreign, truncated or too large file is a `Config` error
    /// with a one-line message.
    pub fn load(config: LocalConfig) -> Result<LocalProvider, ProviderError> {
        preflight::check_model_file(&config.model_path)?;
        let (jobs, loaded) = worker::spawn(config)?;
        Ok(LocalProvider {
            jobs,
            model: loaded.model_name,
            n_ctx: loaded.n_ctx,
            weights: loaded.model,
            prompter: loaded.prompter,
        })
    }

    /// A counter with this model's own vocabulary (the GGUF's tokenizer).
    pub fn gguf_counter(&self) -> GgufCounter {
        GgufCounter {
            model: Arc::clone(&self.weights),
        }
    }

    /// The context window in use, in tokens.
    pub fn context_size(&self) -> u32 {
        self.n_ctx
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        "local"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            parallel_tool_calls: true,
            reasoning: false,
            prompt_caching: true,
            session_titles: false,
            images: TAKES_IMAGES,
            context_window: Some(u64::from(self.n_ctx)),
        }
    }

    fn token_counter(&self) -> Option<Arc<dyn TokenCounter>> {
        Some(Arc::new(self.gguf_counter()))
    }

    /// Exact: the request rendered with the chat template and tokenized,
    /// as the worker will evaluate it.
    fn count_request(&self, request: &ModelRequest) -> Option<u64> {
        let (_, tokens) = self.prompter.tokens(&self.weights, request).ok()?;
        Some(tokens.len() as u64)
    }

    /// A model on this machine costs nothing per token.
    fn pricing(&self) -> Option<Pricing> {
        Some(Pricing {
            input: 0.0,
            cached_input: 0.0,
            output: 0.0,
        })
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        let (tx, rx) = mpsc::unbounded_channel::<ChunkResult>();
        self.jobs
            .send(Job {
                request: request.clone(),
                cancel: cancel.clone(),
                tx,
            })
            .map_err(|_| {
                ProviderError::new(
                    ProviderErrorKind::Stream,
                    "the local model thread has stopped",
                )
            })?;
        Ok(Box::pin(chunk_stream(rx)))
    }
}

/// Counts tokens with a GGUF model's own vocabulary, the way the worker
/// tokenizes prompts (special-token markers in the text count as the
/// special tokens they are; no BOS is added). Tokenizing reads only the
/// vocabulary, so it runs on the caller's thread, beside a generation, and
/// takes microseconds for a message. Holding a counter keeps the model
/// loaded.
#[derive(Clone)]
pub struct GgufCounter {
    model: Arc<LlamaModel>,
}

impl std::fmt::Debug for GgufCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufCounter").finish_non_exhaustive()
    }
}

impl GgufCounter {
    /// The token ids of `text`.
    pub fn tokenize(&self, text: &str) -> Vec<i32> {
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .into_iter()
            .map(|t| t.0)
            .collect()
    }
}

impl TokenCounter for GgufCounter {
    fn count(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        self.model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .len() as u64
    }

    fn exact(&self) -> bool {
        true
    }
}

/// The worker's chunks as a stream; a stream that closes before its `Done`
/// (or an error) ends with an error instead of passing for complete.
fn chunk_stream(
    rx: mpsc::UnboundedReceiver<ChunkResult>,
) -> impl futures_util::Stream<Item = ChunkResult> + Send {
    stream::unfold((rx, false), |(mut rx, finished)| async move {
        if finished {
            return None;
        }
        match rx.recv().await {
            Some(item) => {
                let end = matches!(item, Ok(StreamChunk::Done(_)) | Err(_));
                Some((item, (rx, end)))
            }
            None => Some((
                Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    "the local model stopped before finishing its answer",
                )),
                (rx, true),
            )),
        }
    })
}
