//! The thread that runs the model: llama.cpp contexts are neither async nor
//! shareable, so one thread loads the model, keeps one context and its KV
//! cache, and serves requests one at a time from a channel. The model
//! itself (weights and vocabulary) is read-only once loaded and is shared
//! with the provider, which tokenizes with it for counting.

use std::num::NonZeroU32;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, OnceLock};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use rein_core::{
    FinishReason, ModelRequest, ProviderError, ProviderErrorKind, StreamChunk, ToolSpec, Usage,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::answer_grammar::answer_grammar;
use super::config::LocalConfig;
use super::cpu::physical_cores;
use super::grammar::{ToolGrammar, tool_call_grammar};
use super::output::OutputBuilder;
use super::prefix::reusable_prefix;
use super::progress::ProgressReporter;
use super::prompter::Prompter;
use super::runaway::{Resample, Sampling};
use super::sampler::{CallShape, Hold, TokenSampler};
use super::template::ChatTemplate;
use super::utf8::PieceDecoder;

/// Tokens per decode call, and the most evaluated between two looks at the
/// cancel token.
const BATCH: u32 = 256;

/// A failed evaluation, as the stream reports it.
fn decode_error(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(
        ProviderErrorKind::Stream,
        format!("the local model failed to evaluate: {e}"),
    )
}

/// What the stream receives.
pub(crate) type ChunkResult = Result<StreamChunk, ProviderError>;

/// One request for the worker.
pub(crate) struct Job {
    pub(crate) request: ModelRequest,
    pub(crate) cancel: CancellationToken,
    pub(crate) tx: UnboundedSender<ChunkResult>,
}

/// Facts about the loaded model, and the model itself.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    pub(crate) model_name: String,
    pub(crate) n_ctx: u32,
    /// Shared read-only with the provider (llama.cpp's model is `Sync`:
    /// tokenizing only reads the vocabulary).
    pub(crate) model: Arc<LlamaModel>,
    /// How requests become the model's tokens, shared for counting.
    pub(crate) prompter: Arc<Prompter>,
}

/// llama.cpp's backend may be initialised once per process.
static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

fn backend() -> Result<&'static LlamaBackend, ProviderError> {
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            if std::env::var_os("REIN_LLAMA_LOG").is_none() {
                backend.void_logs();
            }
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| {
            ProviderError::new(
                ProviderErrorKind::Config,
                format!("cannot start llama.cpp: {e}"),
            )
        })
}

fn config_error(message: String) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Config, message)
}

/// Start the worker thread and wait until the model is loaded.
pub(crate) fn spawn(config: LocalConfig) -> Result<(std_mpsc::Sender<Job>, Loaded), ProviderError> {
    let backend = backend()?;
    let (ready_tx, ready_rx) = std_mpsc::channel();
    let (jobs_tx, jobs_rx) = std_mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("rein-local-model".into())
        .spawn(move || worker_main(backend, config, ready_tx, jobs_rx))
        .map_err(|e| config_error(format!("cannot start the local model thread: {e}")))?;
    match ready_rx.recv() {
        Ok(Ok(loaded)) => Ok((jobs_tx, loaded)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(config_error(
            "the local model thread stopped while loading the model".to_string(),
        )),
    }
}

fn worker_main(
    backend: &'static LlamaBackend,
    config: LocalConfig,
    ready: std_mpsc::Sender<Result<Loaded, ProviderError>>,
    jobs: std_mpsc::Receiver<Job>,
) {
    let model = match load_model(backend, &config.model_path) {
        Ok(m) => Arc::new(m),
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    // Declared after `model`: the context is dropped before this thread's
    // handle on the model.
    let mut worker = match Worker::new(backend, &model, config) {
        Ok(w) => w,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let loaded = Loaded {
        model_name: worker.model_name.clone(),
        n_ctx: worker.ctx.n_ctx(),
        model: Arc::clone(&model),
        prompter: Arc::clone(&worker.prompter),
    };
    if ready.send(Ok(loaded)).is_err() {
        return;
    }
    while let Ok(job) = jobs.recv() {
        let tx = job.tx.clone();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| worker.run(job)));
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = tx.send(Err(e));
            }
            Err(panic) => {
                worker.forget_cache();
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown failure".to_string());
                let _ = tx.send(Err(ProviderError::new(
                    ProviderErrorKind::Stream,
                    format!("the local model failed: {what}"),
                )));
            }
        }
    }
}

fn load_model(backend: &LlamaBackend, path: &Path) -> Result<LlamaModel, ProviderError> {
    let params = LlamaModelParams::default();
    LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
        config_error(format!(
            "cannot load model file {}: llama.cpp could not read it, the file may be truncated or corrupt ({e}); fetch it again",
            path.display()
        ))
    })
}

struct Worker<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    prompter: Arc<Prompter>,
    config: LocalConfig,
    model_name: String,
    /// The tokens held in the KV cache, positions 0..len.
    cached: Vec<LlamaToken>,
    /// The grammar built for the last tool set.
    grammar: Option<(Vec<ToolSpec>, Option<ToolGrammar>)>,
    /// The prompt whose answer's call broke: its retries sample warmer.
    resample: Resample,
}

impl<'m> Worker<'m> {
    fn new(
        backend: &LlamaBackend,
        model: &'m LlamaModel,
        config: LocalConfig,
    ) -> Result<Self, ProviderError> {
        let trained = model.n_ctx_train();
        let mut n_ctx = config.context_size.max(64);
        if trained > 0 {
            n_ctx = n_ctx.min(trained);
        }
        let threads = config
            .threads
            .filter(|&n| n > 0)
            .unwrap_or_else(physical_cores);
        let threads = i32::try_from(threads).unwrap_or(i32::MAX);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(BATCH.min(n_ctx))
            .with_n_ubatch(BATCH.min(n_ctx))
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model.new_context(backend, params).map_err(|e| {
            config_error(format!(
                "cannot create a {n_ctx}-token context for model {}: {e}",
                config.model_path.display()
            ))
        })?;
        let vocab = model.vocab();
        let piece = |t: LlamaToken| {
            String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned()
        };
        let bos_text = if vocab.should_add_bos() {
            piece(vocab.bos())
        } else {
            String::new()
        };
        let eos_text = piece(vocab.eos());
        let source = model
            .chat_template(None)
            .ok()
            .and_then(|t| t.to_string().ok());
        let template = ChatTemplate::new(source.as_deref(), piece(vocab.bos()), eos_text)
            .map_err(|e| config_error(format!("model {}: {e}", config.model_path.display())))?;
        let model_name = super::naming::shown_name(
            model.meta_val_str("general.name").ok().as_deref(),
            model.meta_val_str("general.file_type").ok().as_deref(),
            &config.model_path,
        );
        let prompter = Prompter::new(template, bos_text, config.tool_results_as_user);
        Ok(Worker {
            model,
            ctx,
            prompter: Arc::new(prompter),
            config,
            model_name,
            cached: Vec::new(),
            grammar: None,
            resample: Resample::default(),
        })
    }

    /// Drop everything from the KV cache.
    fn forget_cache(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }

    fn grammar_for(&mut self, tools: &[ToolSpec]) -> Option<ToolGrammar> {
        if !self.config.grammar || tools.is_empty() {
            return None;
        }
        if let Some((cached_tools, grammar)) = &self.grammar
            && cached_tools == tools
        {
            return grammar.clone();
        }
        let grammar = tool_call_grammar(tools);
        self.grammar = Some((tools.to_vec(), grammar.clone()));
        grammar
    }

    /// Bring the KV cache to `tokens`: keep the longest prefix it already
    /// holds, evaluate the rest in batches (looking at `cancel` between
    /// them, reporting each to `progress`). Returns how many tokens were
    /// reused and the batch index of the last one's logits.
    fn evaluate(
        &mut self,
        tokens: &[LlamaToken],
        cancel: &CancellationToken,
        progress: &mut ProgressReporter<'_>,
    ) -> Result<(usize, i32), ProviderError> {
        let mut keep = reusable_prefix(&self.cached, tokens);
        if keep < self.cached.len() {
            let from = u32::try_from(keep).unwrap_or(u32::MAX);
            if !matches!(
                self.ctx.clear_kv_cache_seq(Some(0), Some(from), None),
                Ok(true)
            ) {
                self.forget_cache();
                keep = 0;
            }
            self.cached.truncate(keep);
        }
        let mut batch = LlamaBatch::new(BATCH as usize, 1);
        let mut last_idx = 0;
        progress.prompt(keep, tokens.len());
        for chunk in tokens[keep..].chunks(BATCH as usize) {
            if cancel.is_cancelled() {
                return Err(ProviderError::new(
                    ProviderErrorKind::Cancelled,
                    "cancelled",
                ));
            }
            batch.clear();
            for (i, &token) in chunk.iter().enumerate() {
                let pos = self.cached.len() + i;
                let is_last = pos + 1 == tokens.len();
                batch
                    .add(token, pos as i32, &[0], is_last)
                    .map_err(decode_error)?;
            }
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.forget_cache();
                return Err(decode_error(e));
            }
            self.cached.extend_from_slice(chunk);
            last_idx = batch.n_tokens() - 1;
            progress.prompt(self.cached.len(), tokens.len());
        }
        Ok((keep, last_idx))
    }

    /// Answer one job: the prompt's tokens, the KV cache brought to them,
    /// generation, then the stream closed with usage and finish reason.
    fn run(&mut self, job: Job) -> Result<(), ProviderError> {
        let (prompt, tokens) = self.tokenize_prompt(&job.request)?;
        let mut progress = ProgressReporter::new(&job.tx);
        let (keep, last_idx) = self.evaluate(&tokens, &job.cancel, &mut progress)?;
        progress.prompt_read();
        let prompt_time = progress.elapsed();
        let mut output = OutputBuilder::new(&job.request.tools);
        let mut decoder = PieceDecoder::default();
        let prompt_ids: Vec<i32> = tokens.iter().map(|t| t.0).collect();
        let temperature = job.request.temperature.unwrap_or(self.config.temperature);
        let sampling = self
            .resample
            .sampling(&prompt_ids, temperature, self.config.seed);
        let Some(generation) = self.generate(
            &job,
            sampling,
            last_idx,
            &mut progress,
            &mut output,
            &mut decoder,
        )?
        else {
            return Ok(());
        };
        if std::env::var_os("REIN_LOCAL_TRACE").is_some() {
            eprintln!(
                "---- PROMPT (cached {keep} of {}, {prompt_time:?})\n{prompt}\n---- OUTPUT ({:?}, {} tokens in {:?})\n{}\n----",
                tokens.len(),
                generation.finish,
                generation.tokens,
                progress.elapsed() - prompt_time,
                generation.raw,
            );
        }
        let usage = Usage {
            input_tokens: tokens.len() as u64,
            output_tokens: generation.tokens,
            cached_input_tokens: keep as u64,
            reasoning_tokens: 0,
        };
        let broke = close_stream(&job.tx, output, decoder, usage, generation.finish);
        self.resample
            .answered(&prompt_ids, broke, generation.tokens);
        Ok(())
    }

    /// The request rendered with the chat template, and its tokens; refused
    /// when empty or when it does not fit the context.
    fn tokenize_prompt(
        &self,
        request: &ModelRequest,
    ) -> Result<(String, Vec<LlamaToken>), ProviderError> {
        let (prompt, tokens) = self
            .prompter
            .tokens(self.model, request)
            .map_err(|e| ProviderError::new(ProviderErrorKind::InvalidRequest, e))?;
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.len() >= n_ctx {
            return Err(ProviderError::new(
                ProviderErrorKind::ContextLengthExceeded,
                format!(
                    "the conversation is {} tokens but the local model's context holds {n_ctx}",
                    tokens.len()
                ),
            ));
        }
        if tokens.is_empty() {
            return Err(ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                "the prompt is empty",
            ));
        }
        Ok((prompt, tokens))
    }

    /// The most tokens to generate: the request's cap within the
    /// configured one, at least one.
    fn output_cap(&self, request: &ModelRequest) -> u32 {
        request
            .max_output_tokens
            .map_or(self.config.max_output_tokens, |m| {
                m.min(self.config.max_output_tokens)
            })
            .max(1)
    }

    /// The sampler for `request`: with the tool-call grammar when tools
    /// are offered, or with the answer's grammar from the first token when
    /// the answer is held to a JSON Schema (unless this turn must be
    /// calls); without any when llama.cpp refuses the grammar.
    fn sampler_for(
        &mut self,
        request: &ModelRequest,
        Sampling {
            temperature, seed, ..
        }: Sampling,
    ) -> Result<TokenSampler, ProviderError> {
        let grammar = self.grammar_for(&request.tools);
        let shape = CallShape {
            forced: request.tool_choice.forces_call(&request.tools),
            single: request.single_tool_call,
        };
        let forced_calls = shape.forced && grammar.is_some();
        let whole = request
            .answer_schema
            .as_ref()
            .filter(|_| self.config.grammar && !forced_calls)
            .and_then(|schema| answer_grammar(schema, grammar.as_ref(), shape.single));
        let hold = match (&whole, &grammar) {
            (Some(text), _) => Hold::Whole(text),
            (None, Some(g)) => Hold::Calls(g, shape),
            (None, None) => Hold::Free,
        };
        TokenSampler::new(self.model, temperature, seed, hold)
            .or_else(|_| TokenSampler::new(self.model, temperature, seed, Hold::Free))
            .map_err(|e| ProviderError::new(ProviderErrorKind::Config, e))
    }

    /// Sample and evaluate one token at a time, streaming the text through
    /// `output`, until the model ends its turn, repeats itself or runs away,
    /// or the output cap or the context is reached. `None` when the
    /// receiver has gone; an error when cancelled or evaluation fails.
    fn generate(
        &mut self,
        job: &Job,
        sampling: Sampling,
        mut last_idx: i32,
        progress: &mut ProgressReporter<'_>,
        output: &mut OutputBuilder,
        decoder: &mut PieceDecoder,
    ) -> Result<Option<Generation>, ProviderError> {
        let vocab = self.model.vocab();
        let max_new = self
            .output_cap(&job.request)
            .min(sampling.cap.unwrap_or(u32::MAX));
        let n_ctx = self.ctx.n_ctx() as usize;
        let mut sampler = self.sampler_for(&job.request, sampling)?;
        let mut batch = LlamaBatch::new(1, 1);
        let mut generated: u64 = 0;
        let mut produced: Vec<i32> = Vec::new();
        let mut raw = String::new();
        let finish = loop {
            if job.cancel.is_cancelled() {
                return Err(ProviderError::new(
                    ProviderErrorKind::Cancelled,
                    "cancelled",
                ));
            }
            if job.tx.is_closed() {
                return Ok(None);
            }
            let token = match sampler.sample(&self.ctx, last_idx, |t| vocab.is_eog(t)) {
                Ok(t) => t,
                Err(_) => break FinishReason::Stop,
            };
            if vocab.is_eog(token) {
                break FinishReason::Stop;
            }
            generated += 1;
            progress.generated(generated);
            let text = decoder.push(&vocab.token_to_piece(token, false, None));
            raw.push_str(&text);
            for chunk in output.push(&text) {
                let _ = job.tx.send(Ok(chunk));
            }
            if output.repeated() {
                break FinishReason::Stop;
            }
            produced.push(token.0);
            if super::runaway::is_runaway(&produced) {
                break FinishReason::Length;
            }
            if generated >= u64::from(max_new) || self.cached.len() >= n_ctx {
                break FinishReason::Length;
            }
            batch.clear();
            batch
                .add(token, self.cached.len() as i32, &[0], true)
                .map_err(decode_error)?;
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.forget_cache();
                return Err(decode_error(e));
            }
            self.cached.push(token);
            last_idx = 0;
        };
        Ok(Some(Generation {
            finish,
            tokens: generated,
            raw,
        }))
    }
}

/// What generation produced once it stopped.
struct Generation {
    finish: FinishReason,
    /// Tokens generated.
    tokens: u64,
    /// The text as generated, for `REIN_LOCAL_TRACE`.
    raw: String,
}

/// Send the text held back by `decoder` and `output`, the usage, and
/// `Done` — with `ToolCalls` when the answer made calls. True when the
/// answer failed instead: a call begun and never completed.
fn close_stream(
    tx: &UnboundedSender<ChunkResult>,
    mut output: OutputBuilder,
    mut decoder: PieceDecoder,
    usage: Usage,
    finish: FinishReason,
) -> bool {
    let send = |chunk: StreamChunk| {
        let _ = tx.send(Ok(chunk));
    };
    for chunk in output.push(&decoder.finish()) {
        send(chunk);
    }
    let (rest, made_calls, broken) = output.finish();
    for chunk in rest {
        send(chunk);
    }
    // A call begun and never completed is no answer: the attempt fails
    // (and is retried), so it never becomes the task's answer.
    if let Some(start) = broken.filter(|_| !made_calls) {
        let _ = tx.send(Err(ProviderError::new(
            ProviderErrorKind::Protocol,
            format!("the model's tool call was cut off or cannot be read: {start}"),
        )));
        return true;
    }
    send(StreamChunk::Usage(usage));
    send(StreamChunk::Done(if made_calls {
        FinishReason::ToolCalls
    } else {
        finish
    }));
    false
}
