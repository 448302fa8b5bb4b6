//! `AgentEngine`: the ReAct loop. One loop serves `run` (events into any
//! sink) and `run_stream` (events as a `Stream`).
//!
//! Layout:
//! - `builder`: [`EngineConfig`] and [`AgentEngineBuilder`]; the build
//!   splits the config between the permissions, the gate's limits and the
//!   loop's own settings.
//! - `run`: the run as a value (`RunLoop`), one method per step; `run/`
//!   holds its context, the model call and the tool round.
//! - `setup`: what a run starts from (the session, the gate's policy, the
//!   system prompt and tools a mode shows).
//! - Types that own their state: `hooks` (`SessionHooks`), `checkpoints`
//!   (`Checkpoints`), `coach` (`Coach`, behind the profile), `subagents`
//!   (`SubAgents` and the `task` tools), `budget` (accounts as a tree).
//! - `child` (child engines), `compact` and `side_calls` (model calls
//!   besides the turns), `guard` (the loop guard), `state` (the
//!   conversation and the task ledger's facts), `control` ([`RunControl`]).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

mod budget;
mod builder;
mod checkpoints;
mod child;
mod coach;
mod compact;
mod control;
mod guard;
mod hooks;
mod run;
mod scope;
mod scratch;
mod setup;
mod side_calls;
mod state;
mod subagents;
mod user_call;

pub use builder::{AgentEngineBuilder, CandidatesConfig, EngineConfig, SCRATCH_FOLDER};
pub use child::{AgentTag, ChildPolicy};
pub use control::RunControl;
pub use guard::LoopGuardConfig;
pub use scope::RunScope;
pub use setup::{ContextSize, FixedTokens};
pub use side_calls::TitleError;
pub use subagents::SubagentConfig;

use run::RunCtx;

use crate::approval::ProjectRules;
use crate::event::{Event, EventSink, NotingRefusals, RefusedCall, StopReason};
use crate::gate::Gate;
use crate::lifecycle::{EndReason, NotificationKind};
use crate::permission::{PermissionMode, Permissions};
use crate::provider::Provider;
use crate::rewind::Checkpointer;
use crate::schema::{ToolSpec, Usage};
use crate::store::SessionStore;
use crate::tokens::LedgerTotals;
use crate::tool::Tool;

/// A failure to build an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("workspace {path} does not exist or is not a directory")]
    Workspace { path: String },
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// The user's message. Empty with `resume` set: the session's run was
    /// interrupted (its process died) and goes on from the last stored
    /// message, with nothing new stored (see [`RunRequest::continuing`]).
    pub prompt: String,
    /// Images attached to the user's message (`rein exec --image`); a
    /// model whose provider does not take images refuses the run.
    pub images: Vec<crate::schema::Image>,
    /// Continue this session (id or unique prefix) instead of starting one.
    pub resume: Option<String>,
    /// The permission mode of this run (default: the engine's).
    pub mode: Option<PermissionMode>,
    /// A handle to steer the run while it goes on (queued messages, mode).
    pub control: Option<RunControl>,
    /// What this run alone narrows or loosens (a custom command's tools
    /// and model); the default: nothing.
    pub scope: RunScope,
}

impl RunRequest {
    pub fn new(prompt: impl Into<String>) -> Self {
        RunRequest {
            prompt: prompt.into(),
            ..Default::default()
        }
    }

    /// Go on with `session`'s interrupted run: no prompt is stored, the
    /// model answers from the last stored message (a prompt, or the
    /// results of its last calls).
    pub fn continuing(session: impl Into<String>) -> Self {
        RunRequest {
            resume: Some(session.into()),
            ..Default::default()
        }
    }

    /// Whether this request goes on with an interrupted run.
    pub fn continues(&self) -> bool {
        self.prompt.is_empty() && self.resume.is_some()
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
    /// The calls the gate refused, in order.
    pub refused: Vec<RefusedCall>,
}

struct Inner {
    /// Swappable: `set_provider` takes effect at the next model call.
    provider: RwLock<Arc<dyn Provider>>,
    store: Arc<dyn SessionStore>,
    /// Swappable: `add_tools` takes effect at the next turn of every run.
    /// It keeps the limits of tool calls.
    gate: RwLock<Arc<Gate>>,
    workspace: PathBuf,
    /// The loop's settings (the permissions are below, the limits the
    /// gate's).
    config: builder::LoopConfig,
    /// The permission settings runs start from.
    permissions: Arc<Permissions>,
    project_rules: Option<Arc<dyn ProjectRules>>,
    /// The loosest mode a run may use (a child engine's); None: any.
    mode_ceiling: Option<PermissionMode>,
    /// The sub-agent this engine runs (a child engine's); None: the main
    /// agent.
    agent: Option<AgentTag>,
    /// The user's hooks at the session's moments.
    hooks: hooks::SessionHooks,
    /// The `task` tool's children, when sub-agents are on (never in a
    /// child).
    subagents: Option<Arc<subagents::SubAgents>>,
    /// The account of the run that started this engine (a child's): its
    /// runs spend from it ([`budget`]).
    spends_from: Option<Arc<budget::Budget>>,
    /// Takes the workspace's checkpoints (never in a child: its parent
    /// does).
    checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The provider's latest report of each session's request size, for
    /// the one accounting ([`crate::request_size`]).
    sizes: crate::request_size::Reports,
    /// The estimate for a provider without a tokenizer, calibrated on the
    /// usage it reports, kept across runs.
    estimator: Arc<crate::tokens::CalibratedEstimator>,
}

/// The agent loop. Cheap to clone; clones share tools, locks and store.
#[derive(Clone)]
pub struct AgentEngine {
    inner: Arc<Inner>,
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

    /// The gate the next tool call goes through.
    pub(crate) fn gate(&self) -> Arc<Gate> {
        match self.inner.gate.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Offer `tools` to the model from the next turn on, in every run of
    /// this engine and its clones (a tool with a name already there
    /// replaces it). Child engines made before keep their own tools.
    pub fn add_tools(&self, tools: Vec<Arc<dyn Tool>>) {
        let mut gate = match self.inner.gate.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *gate = Arc::new(gate.with_added(tools));
    }

    /// Offer `tools` instead of the tools `drop` names, from the next turn
    /// on (a server's tool list changed: its old tools go, the new come).
    pub fn replace_tools(&self, drop: impl Fn(&str) -> bool, tools: Vec<Arc<dyn Tool>>) {
        let mut gate = match self.inner.gate.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *gate = Arc::new(gate.with_replaced(drop, tools));
    }

    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// The tools offered to the model, as it would see them.
    pub fn tool_specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.gate().specs(mode)
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
        let mut noting = NotingRefusals {
            inner: sink,
            refused: Vec::new(),
        };
        let mut outcome = self.drive(request, &cancel, &mut noting).await;
        outcome.refused = noting.refused;
        if let Some(id) = &outcome.session_id {
            // For `sessions list`; the run's outcome does not depend on it.
            let _ = self.inner.store.set_last_stop(id, outcome.reason).await;
        }
        sink.emit(Event::Stopped {
            reason: outcome.reason,
            turns: outcome.turns,
            usage: outcome.usage,
            final_text: outcome.final_text.clone(),
            error: outcome.error.clone(),
            totals: outcome.totals.clone(),
            refused: outcome.refused.clone(),
        });
        outcome
    }

    /// `SessionEnd`: the front end is done with `session_id` (the app
    /// quits or clears, a headless run ends). Only for a session this
    /// engine ran; what the hooks say goes to `sink`.
    pub async fn end_session(&self, session_id: &str, reason: EndReason, sink: &mut dyn EventSink) {
        let cancel = CancellationToken::new();
        let store = self.inner.store.clone();
        let counter = self.token_counter();
        let mut ctx = RunCtx::new(session_id.to_string(), &cancel, sink, store, counter);
        let mode = self.inner.permissions.mode;
        self.inner.hooks.end(&mut ctx, reason, mode).await;
    }

    /// `Notification`: tell the user's hooks that the front end waits for
    /// them (the app, idle after a run). Nothing waits for the hooks.
    pub async fn notify(&self, session_id: &str, kind: NotificationKind, message: &str) {
        let mode = self.inner.permissions.mode;
        self.inner
            .hooks
            .notify(session_id, kind, message, mode)
            .await;
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
}

/// A session's title from its first prompt: the prompt's first non-blank
/// line, cut to 80 characters.
pub fn title_of(prompt: &str) -> String {
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
