//! Sub-agents: the model hands a piece of work to a sub-agent through the
//! `task` tool ([`task_tool`]), a child engine ([`AgentEngine::child`])
//! with its own context and session and at most its parent's permissions.
//! The child's final answer, and only it, is the call's result; its events
//! reach the parent's front end nested in [`Event::Subagent`]; its cost is
//! added to the parent's ledger. A child spends from its parent's run
//! ([`super::budget`]): at most what that run has left, charged to it as
//! it is spent. Several calls run side by side, each within a deadline;
//! children running in one run's tree, foreground and background, count
//! against one cap, and a call over it is refused; a child cannot start
//! children of its own.
//!
//! [`SubAgents`] owns what the children of one engine share: the
//! accounts of the runs under way, what finished children spent until
//! their parent's run counts it, and the background children.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::budget::Budget;
use super::run::{RunCtx, Stop};
use super::state::Conversation;
use super::{AgentEngine, Inner};
use crate::agents::AgentCatalog;
use crate::event::{Event, StopReason};
use crate::schema::Message;
use crate::tokens::LedgerEntry;
use crate::tool::Tool;

mod background;
mod report;
mod task_tool;

use background::{Background, ControlTool};
use task_tool::TaskTool;

/// The tool's name.
pub const TOOL_NAME: &str = "task";

/// The tools only a parent has: starting sub-agents and following them.
pub(crate) const PARENT_ONLY: [&str; 5] = [
    TOOL_NAME,
    "task_status",
    "task_wait",
    "task_cancel",
    "task_steer",
];

/// How sub-agents run.
#[derive(Clone)]
pub struct SubagentConfig {
    /// The agents the model may start.
    pub catalog: AgentCatalog,
    /// Most sub-agents running at once in one run's tree, foreground and
    /// background together (default 8); a `task` call over it is refused.
    pub max_parallel: usize,
    /// Longest one sub-agent may run (default 10 minutes).
    pub deadline: Duration,
    /// Makes the providers of the models definitions name (None: every
    /// sub-agent runs on its parent's model).
    pub models: Option<Arc<dyn crate::agents::ModelSource>>,
    /// Makes git worktrees for isolated sub-agents (None: isolation is
    /// refused).
    pub worktrees: Option<Arc<dyn crate::agents::Worktrees>>,
}

impl Default for SubagentConfig {
    fn default() -> Self {
        SubagentConfig {
            catalog: AgentCatalog::built_in(),
            max_parallel: 8,
            deadline: Duration::from_secs(600),
            models: None,
            worktrees: None,
        }
    }
}

/// The sub-agents of one engine.
pub(crate) struct SubAgents {
    /// The parent engine (weak: the engine holds its sub-agents).
    parent: Weak<Inner>,
    config: SubagentConfig,
    /// The accounts of this engine's runs under way, by session: their
    /// children spend from them.
    runs: Mutex<HashMap<String, Weak<Budget>>>,
    /// What each finished call's sub-agent spent, by call id, until the
    /// parent's loop adds it to its run.
    spent: Arc<Mutex<HashMap<String, LedgerEntry>>>,
    /// How many were started (their ids count up).
    started: AtomicU64,
    /// The sub-agents started with `background: true`.
    background: Arc<Background>,
    /// The front end's commands the model is pointed to.
    front_end: crate::front_end::FrontEndCommands,
}

impl SubAgents {
    pub fn new(
        parent: Weak<Inner>,
        config: SubagentConfig,
        front_end: crate::front_end::FrontEndCommands,
    ) -> SubAgents {
        SubAgents {
            parent,
            front_end,
            runs: Default::default(),
            config,
            spent: Default::default(),
            started: AtomicU64::new(0),
            background: Default::default(),
        }
    }

    /// The tools that start and follow sub-agents.
    pub fn tools(self: &Arc<Self>) -> Vec<Arc<dyn Tool>> {
        let mut tools = vec![Arc::new(TaskTool(self.clone())) as Arc<dyn Tool>];
        tools.extend(ControlTool::all(&self.background));
        tools
    }

    /// The engine whose children these are, while it lives.
    fn parent(&self) -> Option<AgentEngine> {
        self.parent.upgrade().map(|inner| AgentEngine { inner })
    }

    /// Most children running at once in one run's tree.
    pub fn max_children(&self) -> usize {
        self.config.max_parallel.max(1)
    }

    /// A run of `session` is under way, spending from `account`.
    pub fn enter_run(&self, session: &str, account: &Arc<Budget>) {
        self.runs_map()
            .insert(session.to_string(), Arc::downgrade(account));
    }

    /// The run of `session` that spent from `account` ended: no sub-agent
    /// outlives the run that started it.
    pub fn leave_run(&self, session: &str, account: &Arc<Budget>) {
        self.background.cancel_session(session);
        let mut runs = self.runs_map();
        if runs
            .get(session)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(account)))
        {
            runs.remove(session);
        }
    }

    /// The account of `session`'s run under way; a fresh one with the
    /// parent's limits when none is (a call made outside a run).
    fn account_of(&self, parent: &AgentEngine, session: &str) -> Arc<Budget> {
        let found = self.runs_map().get(session).and_then(Weak::upgrade);
        found.unwrap_or_else(|| parent.open_account())
    }

    fn runs_map(&self) -> MutexGuard<'_, HashMap<String, Weak<Budget>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the sub-agent of call `call_id` of `session` spent, once
    /// (None for other calls).
    pub fn take_spent(&self, session: &str, call_id: &str) -> Option<LedgerEntry> {
        self.spent_map()
            .remove(&report::spent_key(session, call_id))
    }

    /// What `session`'s background sub-agents that ended since the last
    /// call spent.
    fn take_background_spent(&self, session: &str) -> Vec<LedgerEntry> {
        let prefix = format!("bg:{session}:");
        let mut map = self.spent_map();
        let keys: Vec<String> = map
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        keys.iter().filter_map(|k| map.remove(k)).collect()
    }

    fn spent_map(&self) -> MutexGuard<'_, HashMap<String, LedgerEntry>> {
        self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pass on what this session's background sub-agents did since the
    /// last turn (their events, what they spent).
    pub fn news(&self, ctx: &mut RunCtx<'_>) {
        for event in self.background.take_events(&ctx.session_id) {
            ctx.emit(event);
        }
        for entry in self.take_background_spent(&ctx.session_id) {
            ctx.st.totals.add(&entry);
        }
    }

    /// When the model would end the run while background sub-agents it
    /// started have not reported: wait for them (or the run's cancel),
    /// hand the model their reports, and go on (true).
    pub async fn await_background(
        &self,
        ctx: &mut RunCtx<'_>,
        conv: &mut Conversation,
    ) -> Result<bool, Stop> {
        let ids = self.background.unreported(&ctx.session_id);
        if ids.is_empty() {
            return Ok(false);
        }
        ctx.emit(Event::Notice {
            message: format!(
                "waiting for {} background sub-agent(s) before the run ends: {}",
                ids.len(),
                ids.join(", ")
            ),
        });
        let mut reports = Vec::new();
        for id in &ids {
            let report = match self.background.wait(id, ctx.cancel).await {
                Ok(Ok(out)) => out.content,
                Ok(Err(e)) => format!("error: {e}"),
                Err(_) => return Err(Stop::new(StopReason::Cancelled)),
            };
            reports.push(format!("Sub-agent {id}:\n{report}"));
        }
        self.news(ctx);
        let text = format!(
            "[rein] Background sub-agents you started have finished.\n\n{}",
            reports.join("\n\n")
        );
        ctx.commit_to(conv, Message::user(text)).await?;
        Ok(true)
    }
}
