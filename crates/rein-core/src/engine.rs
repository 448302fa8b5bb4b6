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

mod compact;
mod control;
mod guard;
mod state;

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

/// Loop settings, all with defaults.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Most model calls in one run (default 50).
    pub max_turns: u32,
    /// Retries of a failed model call before the run stops (default 3).
    pub provider_retries: u32,
    /// First retry delay; doubles each time, with jitter (default 1 s).
    pub retry_base_delay: Duration,
    pub limits: GateLimits,
    /// Modes, rules and the sandbox's settings (default mode: `default`).
    pub permissions: Permissions,
    /// Who answers approval requests (default: nobody, so they are refused).
    pub approvals: Approvals,
    /// Most input + output tokens over all model calls of a run.
    pub max_tokens: Option<u64>,
    /// Most spent on model calls in a run, in US dollars (known prices only).
    pub max_cost_usd: Option<f64>,
    /// Longest a run may take.
    pub max_wall_time: Option<Duration>,
    pub loop_guard: LoopGuardConfig,
    pub compaction: CompactionConfig,
    /// Extra text at the end of the system prompt (long-term memory).
    pub system_note: Option<String>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_turns: 50,
            provider_retries: 3,
            retry_base_delay: Duration::from_secs(1),
            limits: GateLimits::default(),
            permissions: Permissions::new(PermissionMode::Default),
            approvals: Approvals::Refuse,
            max_tokens: None,
            max_cost_usd: None,
            max_wall_time: None,
            loop_guard: LoopGuardConfig::default(),
            compaction: CompactionConfig::default(),
            system_note: None,
        }
    }
}

/// Builds an `AgentEngine`.
pub struct AgentEngineBuilder {
    provider: Arc<dyn Provider>,
    store: Arc<dyn SessionStore>,
    workspace: PathBuf,
    tools: Vec<Arc<dyn Tool>>,
    config: EngineConfig,
    project_rules: Option<Arc<dyn ProjectRules>>,
    spill: Option<Arc<dyn OutputSpill>>,
}

impl AgentEngineBuilder {
    /// Modes, rules and sandbox settings.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.config.permissions = permissions;
        self
    }

    /// The permission mode of runs that do not choose one.
    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.config.permissions.mode = mode;
        self
    }

    /// Who answers approval requests.
    pub fn approvals(mut self, approvals: Approvals) -> Self {
        self.config.approvals = approvals;
        self
    }

    /// Token budget of a run (input + output over every call).
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.config.max_tokens = Some(n);
        self
    }

    /// Cost budget of a run in US dollars.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.config.max_cost_usd = Some(usd);
        self
    }

    /// Wall-clock budget of a run.
    pub fn max_wall_time(mut self, d: Duration) -> Self {
        self.config.max_wall_time = Some(d);
        self
    }

    pub fn loop_guard(mut self, g: LoopGuardConfig) -> Self {
        self.config.loop_guard = g;
        self
    }

    pub fn compaction(mut self, c: CompactionConfig) -> Self {
        self.config.compaction = c;
        self
    }

    /// Text added to the end of the system prompt.
    pub fn system_note(mut self, note: impl Into<String>) -> Self {
        self.config.system_note = Some(note.into());
        self
    }

    /// Where tool outputs too big for the context are saved (see
    /// `GateLimits::spill_bytes`).
    pub fn output_spill(mut self, spill: Arc<dyn OutputSpill>) -> Self {
        self.spill = Some(spill);
        self
    }

    /// Where "always for this project" approvals are written.
    pub fn project_rules(mut self, rules: Arc<dyn ProjectRules>) -> Self {
        self.project_rules = Some(rules);
        self
    }

    /// The workspace root (default: the current directory).
    pub fn workspace(mut self, path: impl Into<PathBuf>) -> Self {
        self.workspace = path.into();
        self
    }

    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    pub fn max_turns(mut self, n: u32) -> Self {
        self.config.max_turns = n;
        self
    }

    pub fn tool_timeout(mut self, d: Duration) -> Self {
        self.config.limits.tool_timeout = d;
        self
    }

    /// Cap on tool calls running at once (default: no cap).
    pub fn max_concurrent_tools(mut self, n: usize) -> Self {
        self.config.limits.max_concurrent_tools = Some(n);
        self
    }

    pub fn provider_retries(mut self, n: u32) -> Self {
        self.config.provider_retries = n;
        self
    }

    pub fn retry_base_delay(mut self, d: Duration) -> Self {
        self.config.retry_base_delay = d;
        self
    }

    /// Largest tool observation passed to the model, in bytes.
    pub fn max_output_bytes(mut self, n: usize) -> Self {
        self.config.limits.max_output_bytes = n;
        self
    }

    pub fn config(mut self, config: EngineConfig) -> Self {
        self.config = config;
        self
    }

    pub fn build(self) -> Result<AgentEngine, EngineError> {
        let workspace = std::fs::canonicalize(&self.workspace)
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| EngineError::Workspace {
                path: self.workspace.display().to_string(),
            })?;
        let mut gate = Gate::new(self.tools, self.config.limits.clone());
        if let Some(spill) = self.spill {
            gate = gate.with_spill(spill);
        }
        Ok(AgentEngine {
            inner: Arc::new(Inner {
                provider: std::sync::RwLock::new(self.provider),
                store: self.store,
                gate: Arc::new(gate),
                workspace,
                permissions: Arc::new(self.config.permissions.clone()),
                config: self.config,
                project_rules: self.project_rules,
            }),
        })
    }
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
    pub fn builder(
        provider: Arc<dyn Provider>,
        store: Arc<dyn SessionStore>,
    ) -> AgentEngineBuilder {
        AgentEngineBuilder {
            provider,
            store,
            workspace: PathBuf::from("."),
            tools: Vec::new(),
            config: EngineConfig::default(),
            project_rules: None,
            spill: None,
        }
    }

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

    /// Compact a stored session now (`rein compact`): summarise all but its
    /// last turns. Returns false when there was nothing to compact.
    pub async fn compact_session(
        &self,
        id: &str,
        cancel: CancellationToken,
        sink: &mut dyn EventSink,
    ) -> Result<bool, StoreError> {
        let store = &self.inner.store;
        let info = store.get_session(id).await?;
        let stored = store.messages(&info.id).await?;
        let mut requests = compaction::user_requests(&stored);
        let latest = requests.pop().unwrap_or_default();
        let (view, seqs) = self.model_view(&info.id, stored).await?;
        let counter: Arc<dyn TokenCounter> = self
            .provider()
            .token_counter()
            .unwrap_or_else(|| Arc::new(CalibratedEstimator::default()));
        let repaired = repair_history(view);
        let seqs = state::realign_seqs(&repaired, seqs, &Default::default());
        let mut conv = Conversation::new(repaired.messages, seqs, counter.as_ref());
        let before = conv.messages.len();
        let ledger = TaskLedger {
            latest_instruction: latest,
            earlier_requests: requests,
            todos: store.todos(&info.id).await?,
            ..Default::default()
        };
        let mut st = RunState {
            session_id: info.id.clone(),
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            totals: LedgerTotals::default(),
        };
        self.compact(
            &info.id,
            &mut conv,
            CompactionReason::Manual,
            &ledger,
            counter.as_ref(),
            &cancel,
            sink,
            &mut st,
        )
        .await?;
        Ok(conv.messages.len() != before)
    }

    /// Record one model call in the session's ledger and the run's totals.
    /// A ledger that cannot be written is a notice, never a stop.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn record_call(
        &self,
        session_id: &str,
        kind: CallKind,
        usage: Usage,
        ok: bool,
        began: std::time::Instant,
        sink: &mut dyn EventSink,
        st: &mut RunState,
    ) {
        let provider = self.provider();
        let entry = LedgerEntry {
            kind,
            provider: provider.name().to_string(),
            model: provider.model().to_string(),
            usage,
            cost_usd: provider.pricing().map(|p| p.cost(&usage)),
            ok,
            duration_ms: began.elapsed().as_millis() as u64,
            at: crate::time::now_millis(),
        };
        st.totals.add(&entry);
        if let Err(e) = self.inner.store.add_ledger(session_id, &entry).await {
            sink.emit(Event::Notice {
                message: format!("the cost ledger could not record a model call: {e}"),
            });
        }
    }

    /// Ask the model for a short title of a session from its first request
    /// and store it. The call is recorded in the session's cost ledger. On
    /// any failure the title stays as it was (the first line of the prompt).
    pub async fn title_session(
        &self,
        session_id: &str,
        cancel: CancellationToken,
    ) -> Result<String, String> {
        let store = &self.inner.store;
        let messages = store
            .messages(session_id)
            .await
            .map_err(|e| e.to_string())?;
        let first = messages
            .iter()
            .find_map(|m| match m {
                Message::User { content } => Some(content.clone()),
                _ => None,
            })
            .ok_or("the session has no request yet")?;
        let request: String = first.chars().take(2000).collect();
        let req = ModelRequest {
            system: "You name coding sessions. Reply with a title of at most six words for \
                     the user's request: no quotes, no final period, nothing else."
                .to_string(),
            messages: vec![Message::user(request)],
            tools: Vec::new(),
            max_output_tokens: Some(24),
        };
        let began = std::time::Instant::now();
        let result = self.provider().complete(&req, &cancel).await;
        let mut st = RunState {
            session_id: session_id.to_string(),
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            totals: LedgerTotals::default(),
        };
        let usage = result
            .as_ref()
            .ok()
            .and_then(|a| a.usage)
            .unwrap_or_default();
        self.record_call(
            session_id,
            CallKind::Title,
            usage,
            result.is_ok(),
            began,
            &mut crate::event::NullSink,
            &mut st,
        )
        .await;
        let answer = result.map_err(|e| e.to_string())?;
        let title = clean_title(&answer.text()).ok_or("the model gave no usable title")?;
        store
            .set_title(session_id, &title)
            .await
            .map_err(|e| e.to_string())?;
        Ok(title)
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
        let mut window: Option<u64>;
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
            window = self.provider().capabilities().context_window;

            let cfg = &inner.config.compaction;
            if cfg.enabled
                && let Some(w) = window
                && (fixed.tokens + conv.tokens()) as f64 > cfg.threshold * w as f64
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
                    counter.observe(fixed.chars + conv.chars(), u.input_tokens);
                }
            }
            if assistant.content.is_empty()
                && let Some((reason, error)) = failure
            {
                return st.stop(reason, error);
            }
            st.final_text = assistant.text();
            let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
            let actual = assistant.usage.map(|u| u.input_tokens + u.output_tokens);
            let message = Message::Assistant(assistant);
            let seq = match self.commit(&session_id, &message, sink).await {
                Ok(seq) => seq,
                Err(e) => return st.stop(StopReason::HarnessError, harness(e)),
            };
            conv.push(message, Some(seq), counter.as_ref());
            sink.emit(Event::TokenUpdate {
                estimated: fixed.tokens + conv.tokens(),
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
            && st.totals.input_tokens + st.totals.output_tokens >= max
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

    /// The permission state of a run: the session's earlier approvals
    /// come back from the store.
    /// The system prompt and tools a mode shows the model, and their size.
    fn fixed_part(
        &self,
        mode: PermissionMode,
        agents_md: Option<&str>,
        date: &str,
        counter: &dyn TokenCounter,
    ) -> FixedPart {
        let inner = &self.inner;
        let tools = inner.gate.specs(mode);
        let mut system = context::system_prompt(&PromptFacts {
            workspace: &inner.workspace,
            date,
            os: std::env::consts::OS,
            tools: &tools,
            plan: mode == PermissionMode::Plan,
            agents_md,
        });
        if let Some(note) = &inner.config.system_note
            && !note.trim().is_empty()
        {
            system.push('\n');
            system.push_str(note.trim_end());
            system.push('\n');
        }
        let tokens = counter.count(&system)
            + tools
                .iter()
                .map(|t| {
                    counter.count(&t.name)
                        + counter.count(&t.description)
                        + counter.count(&t.parameters.to_string())
                })
                .sum::<u64>();
        let chars = (system.len()
            + tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum::<usize>()) as u64;
        FixedPart {
            system,
            tools,
            tokens,
            chars,
        }
    }

    async fn run_policy(
        &self,
        session_id: &str,
        mode: PermissionMode,
        sink: &mut dyn EventSink,
    ) -> Result<RunPolicy, StoreError> {
        let mut granted = Vec::new();
        for text in self.inner.store.grants(session_id).await? {
            match text.parse::<Rule>() {
                Ok(rule) => granted.push(rule),
                Err(e) => sink.emit(Event::Notice {
                    message: format!("ignoring a stored approval of this session: {e}"),
                }),
            }
        }
        Ok(RunPolicy {
            mode,
            permissions: self.inner.permissions.clone(),
            granted: std::sync::Mutex::new(granted),
            approvals: self.inner.config.approvals.clone(),
            project_rules: self.inner.project_rules.clone(),
        })
    }

    /// Create the session, or load and repair the one to resume: the
    /// model's view is the latest compaction's summary and what follows it.
    async fn open_session(&self, request: &RunRequest) -> Result<Opened, StoreError> {
        let store = &self.inner.store;
        match &request.resume {
            None => {
                let info = store
                    .create_session(NewSession {
                        workspace: self.inner.workspace.display().to_string(),
                        title: title_of(&request.prompt),
                        model: self.provider().model().to_string(),
                    })
                    .await?;
                Ok(Opened {
                    id: info.id,
                    messages: Vec::new(),
                    seqs: Vec::new(),
                    resumed: false,
                    earlier_requests: Vec::new(),
                })
            }
            Some(id) => {
                let info = store.get_session(id).await?;
                let stored = store.messages(&info.id).await?;
                let earlier_requests = compaction::user_requests(&stored);
                let (view, seqs) = self.model_view(&info.id, stored).await?;
                let repaired = repair_history(view);
                // Results made up for the last message's dangling calls are
                // stored too, so the transcript says what happened (earlier
                // ones are rebuilt the same way on every load).
                let last_assistant = repaired
                    .messages
                    .iter()
                    .rposition(|m| matches!(m, Message::Assistant(_)))
                    .unwrap_or(0);
                let mut seq_of: std::collections::HashMap<usize, u64> = Default::default();
                for (index, result) in &repaired.added {
                    if *index > last_assistant {
                        let seq = store
                            .append_message(&info.id, &Message::Tool(result.clone()))
                            .await?;
                        seq_of.insert(*index, seq);
                    }
                }
                let repaired_seqs = state::realign_seqs(&repaired, seqs, &seq_of);
                store.set_model(&info.id, self.provider().model()).await?;
                Ok(Opened {
                    id: info.id,
                    messages: repaired.messages,
                    seqs: repaired_seqs,
                    resumed: true,
                    earlier_requests,
                })
            }
        }
    }

    /// What the model sees of stored messages: after a compaction, its
    /// summary and the messages after it.
    async fn model_view(
        &self,
        id: &str,
        stored: Vec<Message>,
    ) -> Result<(Vec<Message>, Vec<Option<u64>>), StoreError> {
        let compactions = self.inner.store.compactions(id).await?;
        match compactions.last() {
            Some(c) if (c.upto_seq as usize) <= stored.len() => {
                let mut messages = vec![c.summary.clone()];
                let mut seqs = vec![None];
                for (i, m) in stored.into_iter().enumerate().skip(c.upto_seq as usize) {
                    messages.push(m);
                    seqs.push(Some(i as u64 + 1));
                }
                Ok((messages, seqs))
            }
            _ => {
                let seqs = (1..=stored.len() as u64).map(Some).collect();
                Ok((stored, seqs))
            }
        }
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

    /// One model call, retried while nothing has been streamed yet.
    async fn model_turn(
        &self,
        session_id: &str,
        req: &ModelRequest,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
        st: &mut RunState,
    ) -> Result<AssistantMessage, TurnFailure> {
        let cfg = &self.inner.config;
        let mut attempt = 0u32;
        loop {
            let mut asm = AssistantAssembler::default();
            let began = std::time::Instant::now();
            let result = self.stream_once(req, cancel, sink, &mut asm).await;
            let err = match result {
                Ok(()) => {
                    let answer = asm.finish();
                    let usage = answer.usage.unwrap_or_default();
                    self.record_call(session_id, CallKind::Turn, usage, true, began, sink, st)
                        .await;
                    return Ok(answer);
                }
                Err(e) => e,
            };
            let partial = asm.partial();
            let usage = partial.usage.unwrap_or_default();
            if err.kind == ProviderErrorKind::Cancelled || cancel.is_cancelled() {
                self.record_call(session_id, CallKind::Turn, usage, false, began, sink, st)
                    .await;
                return Err(TurnFailure::Cancelled(partial));
            }
            if !(err.is_retryable() && asm.is_empty() && attempt < cfg.provider_retries) {
                self.record_call(session_id, CallKind::Turn, usage, false, began, sink, st)
                    .await;
                return Err(TurnFailure::Provider(err, partial));
            }
            self.record_call(session_id, CallKind::Retry, usage, false, began, sink, st)
                .await;
            attempt += 1;
            let delay = backoff(cfg.retry_base_delay, attempt, err.retry_after);
            sink.emit(Event::Retry {
                attempt,
                max_retries: cfg.provider_retries,
                delay_ms: delay.as_millis() as u64,
                error: err.to_string(),
            });
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = cancel.cancelled() => return Err(TurnFailure::Cancelled(AssistantMessage::default())),
            }
        }
    }

    async fn stream_once(
        &self,
        req: &ModelRequest,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
        asm: &mut AssistantAssembler,
    ) -> Result<(), ProviderError> {
        let cancelled = || ProviderError::new(ProviderErrorKind::Cancelled, "cancelled");
        let provider = self.provider();
        let mut stream = tokio::select! {
            s = provider.stream(req, cancel) => s?,
            _ = cancel.cancelled() => return Err(cancelled()),
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                n = stream.next() => n,
            };
            let Some(chunk) = next else { return Ok(()) };
            let chunk = chunk?;
            match &chunk {
                crate::schema::StreamChunk::TextDelta(t) if !t.is_empty() => {
                    sink.emit(Event::TextDelta { text: t.clone() })
                }
                crate::schema::StreamChunk::ReasoningDelta(t) if !t.is_empty() => {
                    sink.emit(Event::ReasoningDelta { text: t.clone() })
                }
                _ => {}
            }
            if asm.push(chunk) {
                return Ok(());
            }
        }
    }

    /// Run one turn's calls concurrently through the gate. Each result is
    /// stored as it finishes; the returned results keep call order.
    async fn run_tools(
        &self,
        session_id: &str,
        calls: Vec<ToolCall>,
        policy: &Arc<RunPolicy>,
        note: Option<String>,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
    ) -> (Vec<(ToolResult, Option<u64>)>, Option<StoreError>) {
        enum Msg {
            Event(Event),
            Done(usize, crate::dispatch::GateOutcome),
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        for call in &calls {
            sink.emit(Event::ToolStarted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        for (index, call) in calls.iter().enumerate() {
            let gate = self.inner.gate.clone();
            let ctx = ToolContext {
                workspace: self.inner.workspace.clone(),
                session_id: session_id.to_string(),
                call_id: call.id.clone(),
                cancel: cancel.clone(),
                store: self.inner.store.clone(),
                sandbox: Default::default(),
                read_roots: Vec::new(),
            };
            let call = call.clone();
            let tx = tx.clone();
            let policy = policy.clone();
            let events_tx = tx.clone();
            let events: GateEvents = Arc::new(move |e| {
                let _ = events_tx.send(Msg::Event(e));
            });
            tokio::spawn(async move {
                let outcome = gate.run(&call, ctx, &policy, &events).await;
                let _ = tx.send(Msg::Done(index, outcome));
            });
        }
        drop(tx);
        let mut slots: Vec<Option<(ToolResult, Option<u64>)>> = vec![None; calls.len()];
        let mut fault = None;
        while let Some(msg) = rx.recv().await {
            let (index, outcome) = match msg {
                Msg::Event(e) => {
                    sink.emit(e);
                    continue;
                }
                Msg::Done(index, outcome) => (index, outcome),
            };
            let mut r = outcome.result;
            if let Some(n) = &note {
                r.output.push_str("\n\n");
                r.output.push_str(n);
            }
            sink.emit(Event::ToolFinished {
                call_id: r.call_id.clone(),
                name: r.name.clone(),
                duration_ms: outcome.duration.as_millis() as u64,
                is_error: r.is_error,
                output_preview: preview(&r.output, 4, 300),
            });
            let mut seq = None;
            if fault.is_none() {
                match self
                    .commit(session_id, &Message::Tool(r.clone()), sink)
                    .await
                {
                    Ok(s) => seq = Some(s),
                    Err(e) => fault = Some(e),
                }
            }
            slots[index] = Some((r, seq));
        }
        let results = slots
            .into_iter()
            .zip(calls)
            .map(|(slot, call)| {
                slot.unwrap_or_else(|| {
                    let lost = ToolResult {
                        call_id: call.id,
                        name: call.name,
                        output: "error: the harness lost this call's result".to_string(),
                        is_error: true,
                    };
                    (lost, None)
                })
            })
            .collect();
        (results, fault)
    }
}

/// Delay before retry `attempt` (1-based): the service's wish when it gave
/// one (capped at a minute), else exponential from `base` with ±25% jitter.
fn backoff(base: Duration, attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(Duration::from_secs(60));
    }
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(10));
    let capped = exp.min(Duration::from_secs(30));
    let jitter = 0.75 + fastrand::f64() * 0.5;
    capped.mul_f64(jitter)
}

/// A model's title answer made fit: one line, no quotes, at most 80 chars.
fn clean_title(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let t = line
        .trim_start_matches(|c: char| c == '#' || c == '*' || c.is_whitespace())
        .trim_start_matches("Title:")
        .trim()
        .trim_matches(|c: char| c == '"' || c == '\'' || c == '`' || c == '*')
        .trim_end_matches('.')
        .trim();
    (!t.is_empty()).then(|| t.chars().take(80).collect())
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
    fn backoff_doubles_with_jitter_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        for attempt in 1..5u32 {
            let d = backoff(base, attempt, None).as_millis() as f64;
            let nominal = 100.0 * f64::from(1u32 << (attempt - 1));
            assert!(d >= nominal * 0.74 && d <= nominal * 1.26, "{attempt}: {d}");
        }
        assert_eq!(
            backoff(base, 1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert!(backoff(Duration::from_secs(10), 9, None) <= Duration::from_secs(38));
    }

    #[test]
    fn model_titles_are_cleaned_to_one_plain_line() {
        assert_eq!(
            clean_title("\n\"Fix the failing test.\"\nmore").as_deref(),
            Some("Fix the failing test")
        );
        assert_eq!(
            clean_title("Title: Refactor parser").as_deref(),
            Some("Refactor parser")
        );
        assert_eq!(clean_title("  \n "), None);
    }

    #[test]
    fn titles_come_from_the_first_non_empty_line() {
        assert_eq!(title_of("\n  fix the test \nmore"), "fix the test");
        assert_eq!(title_of(&"x".repeat(100)).chars().count(), 80);
    }
}
