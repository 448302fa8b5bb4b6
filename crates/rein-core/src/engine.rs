//! `AgentEngine`: the ReAct loop. One loop serves `run` (events into any
//! sink) and `run_stream` (events as a `Stream`).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

mod builder;
mod calls;
mod compact;
mod control;
mod guard;
mod setup;
mod state;
mod turn;

pub use builder::{AgentEngineBuilder, EngineConfig};
pub use control::RunControl;

use guard::LoopGuard;
pub use guard::LoopGuardConfig;
use state::{Conversation, Opened, Tracker};

use crate::approval::{Approvals, ProjectRules};
use crate::assemble::AssistantAssembler;
use crate::compaction::{self, CompactionConfig, CompactionReason, TaskLedger};
use crate::context::{self, PromptFacts};
use crate::dispatch::{Gate, GateEvents, GateLimits, RunPolicy};
use crate::event::{Event, EventSink, StopReason};
use crate::history::repair_history;
use crate::permission::{PermissionMode, Permissions, Rule};
use crate::provider::{ModelRequest, Provider, ProviderError, ProviderErrorKind};
use crate::schema::{AssistantMessage, Message, ToolCall, ToolResult, Usage};
use crate::store::{NewSession, SessionStore, StoreError};
use crate::text::preview;
use crate::tokens::{CalibratedEstimator, CallKind, LedgerEntry, LedgerTotals, TokenCounter};
use crate::tool::OutputSpill;
use crate::tool::{Tool, ToolContext};

/// A failure to build an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("workspace {path} does not exist or is not a directory")]
    Workspace { path: String },
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub prompt: String,
    /// Continue this session (id or unique prefix) instead of starting one.
    pub resume: Option<String>,
    /// The permission mode of this run (default: the engine's).
    pub mode: Option<PermissionMode>,
    /// A handle to steer the run while it goes on (queued messages, mode).
    pub control: Option<RunControl>,
}

impl RunRequest {
    pub fn new(prompt: impl Into<String>) -> Self {
        RunRequest {
            prompt: prompt.into(),
            ..Default::default()
        }
    }
}

/// How a run ended; the same facts as its `Stopped` event.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// None only when the run stopped before it had a session.
    pub session_id: Option<String>,
    pub reason: StopReason,
    pub turns: u32,
    pub usage: Usage,
    pub final_text: String,
    pub error: Option<String>,
    /// This run's model calls, summed from its ledger entries.
    pub totals: LedgerTotals,
}

struct Inner {
    /// Swappable: `set_provider` takes effect at the next model call.
    provider: std::sync::RwLock<Arc<dyn Provider>>,
    store: Arc<dyn SessionStore>,
    gate: Arc<Gate>,
    workspace: PathBuf,
    config: EngineConfig,
    permissions: Arc<Permissions>,
    project_rules: Option<Arc<dyn ProjectRules>>,
}

/// The agent loop. Cheap to clone; clones share tools, locks and store.
#[derive(Clone)]
pub struct AgentEngine {
    inner: Arc<Inner>,
}

/// What every request of a run carries besides the history.
struct FixedPart {
    system: String,
    tools: Vec<crate::schema::ToolSpec>,
    tokens: u64,
    chars: u64,
}

/// Why a model turn did not produce a message.
enum TurnFailure {
    Cancelled(AssistantMessage),
    Provider(ProviderError, AssistantMessage),
}

/// Mutable state of one run.
pub(crate) struct RunState {
    session_id: String,
    turns: u32,
    usage: Usage,
    final_text: String,
    totals: LedgerTotals,
}

impl RunState {
    fn stop(self, reason: StopReason, error: Option<String>) -> RunOutcome {
        RunOutcome {
            session_id: Some(self.session_id),
            reason,
            turns: self.turns,
            usage: self.usage,
            final_text: self.final_text,
            error,
            totals: self.totals,
        }
    }
}

impl AgentEngine {
    /// The canonical workspace root.
    pub fn workspace(&self) -> &Path {
        &self.inner.workspace
    }

    /// The model provider the next model call goes to.
    pub fn provider(&self) -> Arc<dyn Provider> {
        match self.inner.provider.read() {
            Ok(p) => p.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Talk to `provider` from the next model call on, in every run of this
    /// engine and its clones (a running run switches at its next turn; a
    /// call already streaming finishes on the old one).
    pub fn set_provider(&self, provider: Arc<dyn Provider>) {
        match self.inner.provider.write() {
            Ok(mut p) => *p = provider,
            Err(poisoned) => *poisoned.into_inner() = provider,
        }
    }

    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// The tools offered to the model, as it would see them.
    pub fn tool_specs(&self, mode: PermissionMode) -> Vec<crate::schema::ToolSpec> {
        self.inner.gate.specs(mode)
    }

    /// The permission settings runs start from.
    pub fn permissions(&self) -> &Permissions {
        &self.inner.permissions
    }

    /// Run to the end, sending every event to `sink`. The last event is
    /// always `Stopped`, carrying the same facts as the returned outcome.
    pub async fn run(
        &self,
        request: RunRequest,
        cancel: CancellationToken,
        sink: &mut dyn EventSink,
    ) -> RunOutcome {
        let outcome = self.drive(request, &cancel, sink).await;
        sink.emit(Event::Stopped {
            reason: outcome.reason,
            turns: outcome.turns,
            usage: outcome.usage,
            final_text: outcome.final_text.clone(),
            error: outcome.error.clone(),
            totals: outcome.totals.clone(),
        });
        outcome
    }

    /// Run in a background task and read its events as a stream. Dropping
    /// the stream cancels the run.
    pub fn run_stream(&self, request: RunRequest, cancel: CancellationToken) -> RunStream {
        let (mut tx, rx) = mpsc::unbounded_channel();
        let engine = self.clone();
        let run_cancel = cancel.child_token();
        let guard = run_cancel.clone().drop_guard();
        tokio::spawn(async move {
            engine.run(request, run_cancel, &mut tx).await;
        });
        RunStream {
            rx,
            _cancel_on_drop: guard,
        }
    }

    /// The one loop.
    async fn drive(
        &self,
        request: RunRequest,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
    ) -> RunOutcome {
        let harness = |e: StoreError| Some(e.to_string());
        let early = |reason, error| RunOutcome {
            session_id: None,
            reason,
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            error,
            totals: LedgerTotals::default(),
        };
        if cancel.is_cancelled() {
            return early(StopReason::Cancelled, None);
        }
        let inner = &self.inner;
        let opened = match self.open_session(&request).await {
            Ok(s) => s,
            Err(e) => return early(StopReason::HarnessError, harness(e)),
        };
        let session_id = opened.id.clone();
        let mut st = RunState {
            session_id: session_id.clone(),
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            totals: LedgerTotals::default(),
        };
        let mut mode = request.mode.unwrap_or(inner.permissions.mode);
        let plan = mode == PermissionMode::Plan;
        sink.emit(Event::RunStarted {
            session_id: session_id.clone(),
            provider: self.provider().name().to_string(),
            model: self.provider().model().to_string(),
            workspace: inner.workspace.display().to_string(),
            resumed: opened.resumed,
            mode,
            plan,
        });
        let mut policy = match self.run_policy(&session_id, mode, sink).await {
            Ok(p) => Arc::new(p),
            Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
        };
        let counter: Arc<dyn TokenCounter> = self
            .provider()
            .token_counter()
            .unwrap_or_else(|| Arc::new(CalibratedEstimator::default()));
        let mut conv = Conversation::new(opened.messages, opened.seqs, counter.as_ref());
        let user = Message::user(request.prompt.clone());
        match self.commit(&session_id, &user, sink).await {
            Ok(seq) => conv.push(user, Some(seq), counter.as_ref()),
            Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
        }
        let mut track = Tracker {
            ledger: TaskLedger {
                latest_instruction: request.prompt.clone(),
                earlier_requests: opened.earlier_requests,
                todos: inner.store.todos(&session_id).await.unwrap_or_default(),
                ..Default::default()
            },
            guard: LoopGuard::new(inner.config.loop_guard.clone()),
        };
        if inner.config.max_cost_usd.is_some() && self.provider().pricing().is_none() {
            sink.emit(Event::Notice {
                message: format!(
                    "max_cost_usd is set but the prices of {} are unknown: the cost budget cannot stop this run",
                    self.provider().model()
                ),
            });
        }

        let agents_md = context::read_agents_md(&inner.workspace);
        let date = crate::time::format_date(crate::time::now_millis());
        let mut fixed = self.fixed_part(mode, agents_md.as_deref(), &date, counter.as_ref());
        let started = tokio::time::Instant::now();
        // One request for the whole run: its messages are lent from the
        // conversation for each call (swapped, never copied), so a turn
        // costs the same however long the history is.
        let mut req = ModelRequest {
            system: std::mem::take(&mut fixed.system),
            messages: Vec::new(),
            tools: std::mem::take(&mut fixed.tools),
            max_output_tokens: None,
        };
        let control = request.control.clone().unwrap_or_default();

        loop {
            if cancel.is_cancelled() {
                return st.stop(StopReason::Cancelled, None);
            }
            if let Some(reason) = self.budget_exceeded(&st, started) {
                return st.stop(reason, None);
            }
            if let Some(m) = control.take_mode()
                && m != mode
            {
                mode = m;
                policy = match self.run_policy(&session_id, mode, sink).await {
                    Ok(p) => Arc::new(p),
                    Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
                };
                fixed = self.fixed_part(mode, agents_md.as_deref(), &date, counter.as_ref());
                req.system = std::mem::take(&mut fixed.system);
                req.tools = std::mem::take(&mut fixed.tools);
                sink.emit(Event::ModeChanged { mode });
            }
            for text in control.take_queued() {
                let user = Message::user(text.clone());
                match self.commit(&session_id, &user, sink).await {
                    Ok(seq) => conv.push(user, Some(seq), counter.as_ref()),
                    Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
                }
                let earlier = std::mem::replace(&mut track.ledger.latest_instruction, text);
                track.ledger.earlier_requests.push(earlier);
            }
            st.turns += 1;
            sink.emit(Event::TurnStarted { turn: st.turns });
            // The provider may have been switched (`set_provider`).
            let window = self.provider().capabilities().context_window;

            let cfg = &inner.config.compaction;
            if cfg.enabled
                && let Some(w) = window
                && fixed.tokens.saturating_add(conv.tokens()) as f64 > cfg.threshold * w as f64
                && let Err(e) = self
                    .compact(
                        &session_id,
                        &mut conv,
                        CompactionReason::Threshold,
                        &track.ledger,
                        counter.as_ref(),
                        cancel,
                        sink,
                        &mut st,
                    )
                    .await
            {
                return st.stop(StopReason::HarnessError, harness(e));
            }

            std::mem::swap(&mut req.messages, &mut conv.messages);
            let mut outcome = self
                .model_turn(&session_id, &req, cancel, sink, &mut st)
                .await;
            std::mem::swap(&mut req.messages, &mut conv.messages);
            if let Err(TurnFailure::Provider(e, partial)) = &outcome
                && e.kind == ProviderErrorKind::ContextLengthExceeded
                && partial.content.is_empty()
                && inner.config.compaction.enabled
            {
                // Compact, then try the turn once more.
                if let Err(e) = self
                    .compact(
                        &session_id,
                        &mut conv,
                        CompactionReason::ContextLengthExceeded,
                        &track.ledger,
                        counter.as_ref(),
                        cancel,
                        sink,
                        &mut st,
                    )
                    .await
                {
                    return st.stop(StopReason::HarnessError, harness(e));
                }
                std::mem::swap(&mut req.messages, &mut conv.messages);
                outcome = self
                    .model_turn(&session_id, &req, cancel, sink, &mut st)
                    .await;
                std::mem::swap(&mut req.messages, &mut conv.messages);
            }
            let (assistant, failure) = match outcome {
                Ok(a) => (a, None),
                Err(TurnFailure::Cancelled(partial)) => {
                    (partial, Some((StopReason::Cancelled, None)))
                }
                Err(TurnFailure::Provider(e, partial)) => (
                    partial,
                    Some((StopReason::ProviderError, Some(e.to_string()))),
                ),
            };
            if let Some(u) = &assistant.usage {
                st.usage.add(u);
                if u.input_tokens > 0 {
                    counter.observe(fixed.chars.saturating_add(conv.chars()), u.input_tokens);
                }
            }
            if assistant.content.is_empty()
                && let Some((reason, error)) = failure
            {
                return st.stop(reason, error);
            }
            st.final_text = assistant.text();
            let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
            let actual = assistant.usage.map(|u| u.total());
            let message = Message::Assistant(assistant);
            let seq = match self.commit(&session_id, &message, sink).await {
                Ok(seq) => seq,
                Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
            };
            conv.push(message, Some(seq), counter.as_ref());
            sink.emit(Event::TokenUpdate {
                estimated: fixed.tokens.saturating_add(conv.tokens()),
                actual,
                window,
            });
            if let Some((reason, error)) = failure {
                return st.stop(reason, error);
            }
            if calls.is_empty() {
                if control.pending() > 0 {
                    // The user wrote while the model answered: go on.
                    continue;
                }
                return st.stop(StopReason::Completed, None);
            }
            let note = match track.guard.before(&calls) {
                guard::Verdict::Run => None,
                guard::Verdict::Remind(n) => Some(n),
                guard::Verdict::Stop(why) => {
                    for call in &calls {
                        let r = Message::Tool(ToolResult {
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            output: format!("error: not run: {why}; the run was stopped"),
                            is_error: true,
                        });
                        match self.commit(&session_id, &r, sink).await {
                            Ok(seq) => conv.push(r, Some(seq), counter.as_ref()),
                            Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
                        }
                    }
                    return st.stop(StopReason::Repetition, Some(why));
                }
            };
            let (results, fault) = self
                .run_tools(&session_id, calls.clone(), &policy, note, cancel, sink)
                .await;
            let wrote = track.observe(&calls, &results, st.turns, &inner.gate);
            track.guard.after(results.iter().map(|(r, _)| r), wrote);
            for (r, seq) in results {
                conv.push(Message::Tool(r), seq, counter.as_ref());
            }
            if let Some(e) = fault {
                return st.stop(StopReason::HarnessError, harness(e));
            }
            if let Ok(todos) = inner.store.todos(&session_id).await
                && todos != track.ledger.todos
            {
                track.ledger.todos = todos.clone();
                sink.emit(Event::TodosUpdated { todos });
            }
        }
    }

    /// The budget this run has used up, if any.
    fn budget_exceeded(&self, st: &RunState, started: tokio::time::Instant) -> Option<StopReason> {
        let cfg = &self.inner.config;
        if st.turns >= cfg.max_turns {
            return Some(StopReason::MaxTurns);
        }
        if let Some(max) = cfg.max_tokens
            && st
                .totals
                .input_tokens
                .saturating_add(st.totals.output_tokens)
                >= max
        {
            return Some(StopReason::MaxTokens);
        }
        if let Some(max) = cfg.max_cost_usd
            && st.totals.cost_usd >= max
        {
            return Some(StopReason::MaxCost);
        }
        if let Some(max) = cfg.max_wall_time
            && started.elapsed() >= max
        {
            return Some(StopReason::MaxWallTime);
        }
        None
    }

    /// Store a message and announce it.
    async fn commit(
        &self,
        session_id: &str,
        message: &Message,
        sink: &mut dyn EventSink,
    ) -> Result<u64, StoreError> {
        let seq = self.inner.store.append_message(session_id, message).await?;
        sink.emit(Event::MessageCommitted {
            seq,
            message: message.clone(),
        });
        Ok(seq)
    }
}

/// A session title from the first line of the prompt.
fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(79).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// The events of a run started with `run_stream`.
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<Event>,
    _cancel_on_drop: DropGuard,
}

impl Stream for RunStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.rx.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_non_empty_line() {
        assert_eq!(title_of("\n  fix the test \nmore"), "fix the test");
        assert_eq!(title_of(&"x".repeat(100)).chars().count(), 80);
    }
}
