//! The replay provider: plays a JSON script of model turns.
//!
//! `rein exec --provider replay --script FILE` answers every model call with
//! the next turn of a script instead of asking a real model. It streams each
//! turn the way a real provider would (text in small deltas, tool calls as
//! argument fragments, then usage and a finish reason), so the whole engine
//! runs for real: demos, tests and bug reports that reproduce without a
//! network or an API key.
//!
//! # Script format
//!
//! A script is one JSON object (comments below are for explanation only;
//! JSON itself has none):
//!
//! ```jsonc
//! {
//!   "description": "free text, ignored",   // optional
//!   "model": "replay",                     // optional; the model name reported (default "replay")
//!   "context_window": 128000,              // optional; reported in Capabilities (default: unknown)
//!   "pricing": {"input": 2.0, "cached_input": 0.5, "output": 8.0},  // optional; US$ per million tokens
//!   "turns": [                             // required, at least one turn
//!     {
//!       "reasoning": "optional thinking text",
//!       "reasoning_signature": "optional opaque signature",
//!       "text": "optional answer text",
//!       "tool_calls": [
//!         {"id": "call_1_1", "name": "read_file", "arguments": {"path": "a.txt"}}
//!       ],
//!       "usage": {"input_tokens": 100, "output_tokens": 20,
//!                 "cached_input_tokens": 0, "reasoning_tokens": 0},
//!       "finish": "stop",
//!       "chunk_chars": 16,
//!       "delay_ms": 0,
//!       "error": {"kind": "unavailable", "message": "overloaded", "status": 529,
//!                 "retry_after_ms": 10, "after_text": false}
//!     }
//!   ]
//! }
//! ```
//!
//! Turns and tool calls are numbered from 1 in ids and error messages.
//!
//! Top level:
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `description` | string, optional | Free text for the reader (what the script reproduces); ignored. |
//! | `model` | string, optional | Model name the provider reports. Default `"replay"`. |
//! | `context_window` | integer, optional | Context window in tokens, reported in the capabilities. |
//! | `pricing` | object, optional | The model's prices the provider reports, in US$ per million tokens: `input` and `output` (required numbers ≥ 0) and `cached_input` (default: the `input` price). Without it the prices are unknown, as for an unlisted model. |
//! | `turns` | array, required | The model turns, played one per model call, in order. Must not be empty. |
//! | `agents` | object, optional | Turns for sub-agents, by agent name: `{"explore": [turn, ...]}`. A request from a sub-agent of that name (its system prompt carries the `[rein sub-agent: NAME]` marker) plays the next of these turns instead of the next of `turns`, so children running side by side get their own answers whatever the order. |
//! | `summaries` | array of strings, optional | Answers to the engine's compaction summary requests, in order (the last repeats when they run out). They take no turn, so a long script can cross compactions. Without it a summary request takes the next turn like any call. |
//!
//! A turn (every field optional, but a turn must have at least one of
//! `text`, `reasoning`, `reasoning_signature`, a tool call, or `error`):
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `reasoning` | string | Reasoning ("thinking") text, streamed first as reasoning deltas. |
//! | `reasoning_signature` | string | Opaque signature closing the reasoning block (kept byte for byte). Alone, it makes a block with no visible text. |
//! | `text` | string | Answer text, streamed after the reasoning as text deltas. `""` is allowed (an empty answer). |
//! | `tool_calls` | array | Tool calls, streamed after the text (see below). |
//! | `usage` | object | Token usage reported for the call: `input_tokens`, `output_tokens`, `cached_input_tokens`, `reasoning_tokens` (each an integer, default 0). Nothing is reported when absent. |
//! | `finish` | string | `"stop"`, `"tool_calls"`, `"length"` or `"content_filter"`. Default `"tool_calls"` when the turn has tool calls, else `"stop"`. |
//! | `chunk_chars` | integer ≥ 1 | Split text and reasoning into deltas of this many characters (Unicode scalar values, never inside one). Default: three words per delta, whitespace kept with the word before it. |
//! | `delay_ms` | integer | Pause this long before each chunk (and before an immediate error). Cancelling the call cuts the pause short. Default 0. |
//! | `error` | object | A failure to inject (see below). |
//!
//! A tool call:
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `id` | string, optional | Call id. Default `call_<turn>_<n>`, e.g. `call_2_1` for the first call of turn 2. Must not be empty. |
//! | `name` | string, required | Tool name. Must not be empty. |
//! | `arguments` | any JSON, optional | The arguments. A JSON string is sent **verbatim** as the argument text (so `"{\"path\": "` injects malformed JSON); any other value is re-serialised compactly. Default `{}`. |
//!
//! Each call is streamed as two or three argument fragments with the same
//! index; only the first carries the id and name, as real providers do.
//!
//! An injected error:
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `kind` | string, required | `transport`, `unavailable`, `auth`, `invalid_request`, `context_length_exceeded`, `idle`, `protocol` or `stream`. `transport`, `unavailable` and `idle` are retryable. |
//! | `message` | string, optional | Error message. Default `replayed <kind> error`. |
//! | `status` | integer, optional | HTTP status to report. |
//! | `retry_after_ms` | integer, optional | The wait the "service" asks for before a retry. |
//! | `after_text` | bool, optional | `false` (default): the call fails at once, before any chunk, and the turn's other content is not played. `true`: the reasoning and text are streamed first, then the stream yields the error (a mid-stream failure); tool calls, usage and finish are not played. |
//!
//! Unknown fields anywhere are rejected, so a typo in a script is an error
//! rather than a silently ignored line.
//!
//! # Playing
//!
//! Every [`Provider::stream`] call takes the next turn, whatever the request
//! says; a retry after an injected retryable error therefore gets the *next*
//! turn, which is how a script shows the engine recovering. A call made when
//! every turn has been played fails with a [`ProviderErrorKind::Config`] error
//! (`replay script exhausted: it has 3 turns and turn 4 was requested`).
//!
//! One turn streams, in this order: reasoning deltas, a reasoning end with
//! the signature (when there is one), text deltas, tool-call fragments,
//! usage (when given) and `Done(finish)`.
//!
//! Every request received is recorded; [`ReplayProvider::requests`] returns
//! them, so a test or a bug report can check exactly what the model was sent.

mod error;
mod parse;
mod plan;

pub use error::ReplayError;
use plan::plan;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream;
use rein_core::{
    CancellationToken, Capabilities, ChunkStream, FinishReason, ModelRequest, Pricing, Provider,
    ProviderError, ProviderErrorKind, Usage,
};

/// Model name reported when the script names none.
pub const DEFAULT_MODEL: &str = "replay";

/// Words per text delta when a turn sets no `chunk_chars`.
const WORDS_PER_DELTA: usize = 3;

/// The error kinds a script may inject, by their script names.
const KINDS: &[(&str, ProviderErrorKind)] = &[
    ("transport", ProviderErrorKind::Transport),
    ("unavailable", ProviderErrorKind::Unavailable),
    ("auth", ProviderErrorKind::Auth),
    ("invalid_request", ProviderErrorKind::InvalidRequest),
    (
        "context_length_exceeded",
        ProviderErrorKind::ContextLengthExceeded,
    ),
    ("idle", ProviderErrorKind::Idle),
    ("protocol", ProviderErrorKind::Protocol),
    ("stream", ProviderErrorKind::Stream),
];

/// The finish reasons a script may give, by their script names.
const FINISHES: &[(&str, FinishReason)] = &[
    ("stop", FinishReason::Stop),
    ("tool_calls", FinishReason::ToolCalls),
    ("length", FinishReason::Length),
    ("content_filter", FinishReason::ContentFilter),
];

fn kind_name(kind: ProviderErrorKind) -> &'static str {
    KINDS
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("provider", |(name, _)| *name)
}

// ---------------------------------------------------------------------------
// The script, as the provider plays it
// ---------------------------------------------------------------------------

/// A parsed, checked replay script.
///
/// Usually read with [`ReplayScript::parse`] or [`ReplayScript::from_file`];
/// it can also be built in code (the fields are public). A script built in
/// code is not checked: a turn with nothing in it plays as an empty answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayScript {
    /// Free text describing the script; ignored when playing.
    pub description: Option<String>,
    /// The model name the provider reports.
    pub model: String,
    /// Context window reported in [`Capabilities`].
    pub context_window: Option<u64>,
    /// Prices reported by [`Provider::pricing`]; `None`: unknown.
    pub pricing: Option<Pricing>,
    /// The turns, played one per model call.
    pub turns: Vec<ReplayTurn>,
    /// Answers to compaction summary requests, in order (the last one is
    /// repeated when they run out). Empty: summary requests take turns
    /// like any other call.
    pub summaries: Vec<String>,
    /// The turns of each sub-agent, by agent name: a request from a
    /// sub-agent (its system prompt names it) takes the next of its own
    /// turns, so parallel children play deterministically.
    pub agents: std::collections::BTreeMap<String, Vec<ReplayTurn>>,
}

impl Default for ReplayScript {
    fn default() -> Self {
        ReplayScript {
            description: None,
            model: DEFAULT_MODEL.to_string(),
            context_window: None,
            pricing: None,
            turns: Vec::new(),
            summaries: Vec::new(),
            agents: Default::default(),
        }
    }
}

/// One scripted model turn: what a single model call streams.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayTurn {
    /// Reasoning text, streamed first.
    pub reasoning: Option<String>,
    /// Signature closing the reasoning block.
    pub reasoning_signature: Option<String>,
    /// Answer text, streamed after the reasoning.
    pub text: Option<String>,
    /// Tool calls, streamed after the text.
    pub tool_calls: Vec<ReplayToolCall>,
    /// Usage reported for the call, if any.
    pub usage: Option<Usage>,
    /// Finish reason; `None` means `ToolCalls` when there are calls, else `Stop`.
    pub finish: Option<FinishReason>,
    /// Characters per text/reasoning delta; `None` (or 0) means a few words
    /// per delta.
    pub chunk_chars: Option<usize>,
    /// Pause before each chunk.
    pub delay: Duration,
    /// A failure to inject.
    pub error: Option<ReplayFailure>,
}

impl ReplayTurn {
    /// A turn that answers with `text`.
    pub fn text(text: impl Into<String>) -> Self {
        ReplayTurn {
            text: Some(text.into()),
            ..Default::default()
        }
    }

    /// A turn that makes one tool call with the given raw argument text.
    pub fn call(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ReplayTurn {
            tool_calls: vec![ReplayToolCall {
                id: None,
                name: name.into(),
                arguments: arguments.into(),
            }],
            ..Default::default()
        }
    }

    /// A turn whose call fails at once with `kind` and `message`.
    pub fn failure(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        ReplayTurn {
            error: Some(ReplayFailure {
                kind,
                message: message.into(),
                status: None,
                retry_after: None,
                after_text: false,
            }),
            ..Default::default()
        }
    }

    /// The finish reason this turn reports.
    pub fn finish_reason(&self) -> FinishReason {
        match &self.finish {
            Some(f) => f.clone(),
            None if self.tool_calls.is_empty() => FinishReason::Stop,
            None => FinishReason::ToolCalls,
        }
    }
}

/// One scripted tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayToolCall {
    /// Call id; `None` means `call_<turn>_<n>`.
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// The argument text, streamed verbatim (may be malformed JSON on purpose).
    pub arguments: String,
}

/// A failure a turn injects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayFailure {
    /// The error kind (decides whether the engine retries).
    pub kind: ProviderErrorKind,
    /// The error message.
    pub message: String,
    /// HTTP status to report.
    pub status: Option<u16>,
    /// The wait the "service" asks for before a retry.
    pub retry_after: Option<Duration>,
    /// Stream the turn's reasoning and text first, then fail mid-stream.
    pub after_text: bool,
}

impl ReplayFailure {
    /// The provider error this failure produces.
    pub fn to_provider_error(&self) -> ProviderError {
        ProviderError {
            kind: self.kind,
            message: self.message.clone(),
            status: self.status,
            retry_after: self.retry_after,
        }
    }
}

// ---------------------------------------------------------------------------
// The provider
// ---------------------------------------------------------------------------

/// A [`Provider`] that plays a [`ReplayScript`], one turn per model call.
#[derive(Debug)]
pub struct ReplayProvider {
    script: ReplayScript,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Index of the next turn to play (may run past the end).
    next: usize,
    /// Summary requests answered from `summaries`.
    summaries_played: usize,
    /// Every request received, in order.
    requests: Vec<ModelRequest>,
    /// Turns played of each sub-agent's own list.
    agent_next: std::collections::BTreeMap<String, usize>,
}

impl ReplayProvider {
    /// A provider playing `script`.
    pub fn new(script: ReplayScript) -> Self {
        ReplayProvider {
            script,
            state: Mutex::new(State::default()),
        }
    }

    /// A provider playing the script in the file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, ReplayError> {
        ReplayScript::from_file(path).map(ReplayProvider::new)
    }

    /// The script being played.
    pub fn script(&self) -> &ReplayScript {
        &self.script
    }

    /// A copy of every request received so far, in order: one per
    /// [`Provider::stream`] call, including calls that failed (an injected
    /// error, an exhausted script). A call whose cancel token had already
    /// fired is not recorded: nothing was "sent".
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// How many turns have been handed out so far.
    pub fn turns_played(&self) -> usize {
        self.lock().next.min(self.script.turns.len())
    }

    /// How many turns are left to play.
    pub fn turns_remaining(&self) -> usize {
        self.script.turns.len() - self.turns_played()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent whatever panicked while holding it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn cancelled() -> ProviderError {
    ProviderError::new(ProviderErrorKind::Cancelled, "cancelled")
}

/// Wait `delay`, or fail with `Cancelled` as soon as `cancel` fires.
async fn pause(delay: Duration, cancel: &CancellationToken) -> Result<(), ProviderError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    if delay.is_zero() {
        return Ok(());
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(cancelled()),
        _ = tokio::time::sleep(delay) => Ok(()),
    }
}

#[async_trait]
impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    fn model(&self) -> &str {
        &self.script.model
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            parallel_tool_calls: true,
            reasoning: true,
            prompt_caching: false,
            session_titles: false,
            // A script answers whatever it is sent, images included.
            images: true,
            context_window: self.script.context_window,
        }
    }

    fn pricing(&self) -> Option<Pricing> {
        self.script.pricing
    }

    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        if !self.script.summaries.is_empty()
            && request.system == rein_core::compaction::SUMMARY_SYSTEM
        {
            let k = {
                let mut state = self.lock();
                state.requests.push(request.clone());
                state.summaries_played += 1;
                state.summaries_played - 1
            };
            let last = self.script.summaries.len() - 1;
            let turn = ReplayTurn::text(self.script.summaries[k.min(last)].clone());
            let items = plan(&turn, 0);
            return Ok(Box::pin(stream::iter(items)));
        }
        let agent = rein_core::agents::agent_of(&request.system)
            .filter(|name| self.script.agents.contains_key(*name));
        let (list, whose, index) = {
            let mut state = self.lock();
            state.requests.push(request.clone());
            match agent {
                Some(name) => {
                    let next = state.agent_next.entry(name.to_string()).or_default();
                    *next += 1;
                    let list = &self.script.agents[name];
                    (list, format!("agent `{name}` of the "), *next - 1)
                }
                None => {
                    state.next += 1;
                    (&self.script.turns, String::new(), state.next - 1)
                }
            }
        };
        let total = list.len();
        let Some(turn) = list.get(index) else {
            return Err(ProviderError::new(
                ProviderErrorKind::Config,
                format!(
                    "{whose}replay script exhausted: it has {total} turn{} and turn {} was requested",
                    if total == 1 { "" } else { "s" },
                    index + 1
                ),
            ));
        };
        if let Some(failure) = &turn.error
            && !failure.after_text
        {
            pause(turn.delay, cancel).await?;
            return Err(failure.to_provider_error());
        }
        let items = plan(turn, index + 1);
        let state = Some((items.into_iter(), cancel.clone()));
        let delay = turn.delay;
        Ok(Box::pin(stream::unfold(state, move |state| async move {
            let (mut items, cancel) = state?;
            let item = items.next()?;
            if let Err(e) = pause(delay, &cancel).await {
                return Some((Err(e), None));
            }
            // Nothing follows an error.
            let rest = item.is_ok().then_some((items, cancel));
            Some((item, rest))
        })))
    }
}

#[cfg(test)]
mod tests;
