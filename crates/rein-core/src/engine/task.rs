//! The `task` tool: the model hands a piece of work to a sub-agent, a
//! child engine ([`AgentEngine::child`]) with its own context and session
//! and at most its parent's permissions. The child's final answer, and
//! only it, is the call's result; its events reach the parent's front end
//! nested in [`Event::Subagent`]; its cost is added to the parent's ledger.
//! A child spends from its parent's run ([`super::budget`]): at most what
//! that run has left, charged to it as it is spent. Several calls run side
//! by side, each within a deadline; children running in one run's tree,
//! foreground and background, count against one cap, and a call over it
//! is refused; a child cannot start children of its own.

use std::collections::HashMap;
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use super::*;
use crate::agents::{AgentCatalog, AgentDef};
use crate::tool::{ToolAccess, ToolError, ToolOutput};

mod background;

pub(crate) use background::{Background, ControlTool};

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

/// The `task` tool of one engine.
pub(crate) struct TaskTool {
    /// The parent engine (weak: the engine holds this tool).
    parent: Weak<Inner>,
    config: SubagentConfig,
    /// The accounts of this engine's runs under way, by session: their
    /// children spend from them.
    runs: std::sync::Mutex<HashMap<String, Weak<budget::Budget>>>,
    /// What each finished call's sub-agent spent, by call id, until the
    /// parent's loop adds it to its run.
    spent: Arc<std::sync::Mutex<HashMap<String, LedgerEntry>>>,
    started: AtomicU64,
    /// The sub-agents started with `background: true`.
    pub background: Arc<Background>,
}

impl TaskTool {
    pub fn new(parent: Weak<Inner>, config: SubagentConfig) -> TaskTool {
        TaskTool {
            parent,
            runs: Default::default(),
            config,
            spent: Default::default(),
            started: AtomicU64::new(0),
            background: Default::default(),
        }
    }

    /// Most children running at once in one run's tree.
    pub fn max_children(&self) -> usize {
        self.config.max_parallel.max(1)
    }

    /// A run of `session` is under way, spending from `account`.
    pub fn enter_run(&self, session: &str, account: &Arc<budget::Budget>) {
        self.runs_map()
            .insert(session.to_string(), Arc::downgrade(account));
    }

    /// The run of `session` that spent from `account` ended.
    pub fn leave_run(&self, session: &str, account: &Arc<budget::Budget>) {
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
    fn account_of(&self, parent: &AgentEngine, session: &str) -> Arc<budget::Budget> {
        let found = self.runs_map().get(session).and_then(Weak::upgrade);
        found.unwrap_or_else(|| parent.open_account())
    }

    fn runs_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Weak<budget::Budget>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the sub-agent of call `call_id` of `session` spent, once
    /// (None for other calls).
    pub fn take_spent(&self, session: &str, call_id: &str) -> Option<LedgerEntry> {
        self.spent_map().remove(&spent_key(session, call_id))
    }

    /// What `session`'s background sub-agents that ended since the last
    /// call spent.
    pub fn take_background_spent(&self, session: &str) -> Vec<LedgerEntry> {
        let prefix = format!("bg:{session}:");
        let mut map = self.spent_map();
        let keys: Vec<String> = map
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        keys.iter().filter_map(|k| map.remove(k)).collect()
    }

    fn spent_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, LedgerEntry>> {
        self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The model `agent` asks for, if it can have it; else a note saying
    /// why it runs on its parent's.
    fn model_of(&self, agent: &AgentDef) -> (Option<super::child::ChildModel>, Option<String>) {
        let Some(model) = agent.model.as_deref() else {
            return (None, None);
        };
        if crate::agents::CLAUDE_ALIASES.contains(&model) {
            return (
                None,
                Some(format!(
                    "`model: {model}` is a Claude Code alias; ran on the parent's model"
                )),
            );
        }
        match self.config.models.as_ref().map(|m| m.provider_for(model)) {
            Some(Ok(p)) => (Some(super::child::ChildModel(p)), None),
            Some(Err(e)) => (
                None,
                Some(format!(
                    "model `{model}` unavailable ({e}); ran on the parent's model"
                )),
            ),
            None => (
                None,
                Some(format!(
                    "model `{model}` cannot be chosen here; ran on the parent's model"
                )),
            ),
        }
    }

    /// The child engine for `agent`, narrowed from the parent, and a note
    /// when it does not run on the model it asks for.
    fn child_of(
        &self,
        parent: &AgentEngine,
        agent: &AgentDef,
        launch: &Launch,
        account: Arc<budget::Budget>,
    ) -> (AgentEngine, Option<String>) {
        let (model, note) = self.model_of(agent);
        let description = &launch.description;
        let instructions = format!(
            "{}\n{}\n\nYour task: {description}\nWhen it is done, answer with your report: it is \
             all the agent that asked will see.",
            crate::agents::marker(&agent.name),
            agent.prompt.trim()
        );
        let policy = ChildPolicy {
            mode: agent.mode,
            tools: agent.tools.clone(),
            denied_tools: agent.disallowed_tools.clone(),
            max_turns: agent.max_turns,
            agent: Some(AgentTag {
                id: launch.id.clone(),
                kind: agent.name.clone(),
                parent_session: Some(launch.parent_session.clone()),
            }),
            instructions: Some(instructions),
            deadline: Some(self.config.deadline),
            // Nobody watches a background child: what needs an approval
            // is refused.
            refuse_approvals: launch.background,
            model,
            workspace: launch.worktree.as_ref().map(|w| w.path.clone()),
        };
        (parent.child_spending_from(policy, Some(account)), note)
    }

    /// A worktree for the sub-agent, when it runs isolated.
    async fn isolate(
        &self,
        parent: &AgentEngine,
        id: &str,
    ) -> Result<crate::agents::Worktree, ToolError> {
        let Some(worktrees) = self.config.worktrees.clone() else {
            return Err(ToolError::new(
                "isolation: worktree is not available here (rein makes worktrees only in a \
                 folder the user trusts: `rein trust`)",
            ));
        };
        let (workspace, id) = (parent.workspace().to_path_buf(), id.to_string());
        tokio::task::spawn_blocking(move || worktrees.create(&workspace, &id))
            .await
            .map_err(|e| ToolError::new(format!("making the worktree failed: {e}")))?
            .map_err(|e| ToolError::new(format!("cannot run the sub-agent in a worktree: {e}")))
    }
}

/// One sub-agent about to start.
pub(crate) struct Launch {
    pub id: String,
    pub description: String,
    pub background: bool,
    /// The session whose call starts it.
    pub parent_session: String,
    /// Where it works when isolated.
    pub worktree: Option<crate::agents::Worktree>,
}

/// Close a sub-agent's worktree; what the parent is told about it.
fn close_worktree(
    worktrees: Option<&Arc<dyn crate::agents::Worktrees>>,
    workspace: &std::path::Path,
    wt: &crate::agents::Worktree,
) -> String {
    use crate::agents::WorktreeEnd;
    let Some(worktrees) = worktrees else {
        return String::new();
    };
    match worktrees.finish(workspace, wt) {
        Ok(WorktreeEnd::Removed { commits: 0 }) => {
            "it changed nothing (its worktree is removed)".into()
        }
        Ok(WorktreeEnd::Removed { commits }) => format!(
            "its {commits} commit(s) are on branch {} (its worktree is removed)",
            wt.branch
        ),
        Ok(WorktreeEnd::Kept { changed, commits }) => format!(
            "its changes are in the worktree {} on branch {} ({changed} uncommitted file(s), \
             {commits} commit(s)); `rein worktrees` lists it",
            wt.path.display(),
            wt.branch
        ),
        Err(e) => format!(
            "its worktree {} could not be closed: {e}",
            wt.path.display()
        ),
    }
}

#[async_trait::async_trait]
impl Tool for TaskTool {
    fn spec(&self) -> crate::ToolSpec {
        let names = self.config.catalog.names();
        let list: String = self
            .config
            .catalog
            .agents
            .iter()
            .map(|a| {
                format!(
                    "\n- {}: {}",
                    a.name,
                    crate::text::one_line(&a.description, 300)
                )
            })
            .collect();
        crate::ToolSpec {
            name: TOOL_NAME.into(),
            description: format!(
                "Hand a self-contained piece of work to a sub-agent with a fresh context. It \
                 sees only your prompt, so say everything it needs; its final report is the \
                 result. Several calls in one turn run side by side. Agents:{list}"
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "enum": names, "description": "which agent (default general)"},
                    "description": {"type": "string", "description": "the task in 3 to 6 words"},
                    "prompt": {"type": "string", "description": "everything the sub-agent needs to do the task"},
                    "isolation": {"type": "string", "enum": ["worktree"], "description": "run it in a git worktree of its own, on a new branch, so its changes do not touch yours"},
                    "background": {"type": "boolean", "description": "return at once with its id and go on; get its report with task_wait (it cannot ask the user for approvals)"}
                },
                "required": ["description", "prompt"]
            }),
        }
    }

    /// The call itself changes nothing: the sub-agent's own calls pass its
    /// own gate.
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn timeout(&self, _args: &Value) -> Option<Duration> {
        // The child's own deadline ends it cleanly between turns; this is
        // the backstop for a turn that hangs.
        let d = self.config.deadline;
        Some(d + d.min(Duration::from_secs(30)))
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = args["agent"].as_str().unwrap_or("general");
        let description = args["description"].as_str().unwrap_or("").to_string();
        let prompt = args["prompt"].as_str().unwrap_or("").to_string();
        let Some(agent) = self.config.catalog.get(name).cloned() else {
            let names = self.config.catalog.names();
            return Err(ToolError::new(format!(
                "there is no agent `{name}`; the agents are: {}",
                names.join(", ")
            )));
        };
        let Some(inner) = self.parent.upgrade() else {
            return Err(ToolError::new(
                "the engine that would run the sub-agent is gone",
            ));
        };
        let parent = AgentEngine { inner };
        let account = self.account_of(&parent, &ctx.session_id);
        if let Some(reason) = account.exceeded() {
            return Err(ToolError::new(format!(
                "no sub-agent started: this run's budget is used up ({})",
                reason.as_str()
            )));
        }
        let slot = account.admit_child().map_err(|full| {
            ToolError::new(format!(
                "no sub-agent started: {} sub-agents are already running in this run (foreground \
                 and background together), the most at once; wait for one to finish (task_wait) \
                 or do this part yourself",
                full.cap
            ))
        })?;
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        // Unique in this engine; short enough for the model to repeat.
        let id = format!("agent-{}", n + 1);
        let isolated = agent.worktree || args["isolation"] == "worktree";
        let launch = Launch {
            worktree: match isolated {
                true => Some(self.isolate(&parent, &id).await?),
                false => None,
            },
            id: id.clone(),
            description: description.clone(),
            background: args["background"].as_bool().unwrap_or(false),
            parent_session: ctx.session_id.clone(),
        };
        let (child, note) = self.child_of(&parent, &agent, &launch, account);
        let began = std::time::Instant::now();
        let workspace = parent.workspace().to_path_buf();
        if launch.background {
            // Its slot is held until it ends.
            return Ok(self.start_background(
                (child, note, slot),
                (agent, &launch, workspace),
                prompt,
                &ctx,
            ));
        }
        let mut sink = NestingSink {
            events: ctx.events.clone(),
            agent_id: id.clone(),
            agent: agent.name.clone(),
            description: description.clone(),
            call_id: ctx.call_id.clone(),
        };
        let outcome = child
            .run(RunRequest::new(prompt), ctx.cancel.child_token(), &mut sink)
            .await;
        drop(slot);
        self.note_spent(&child, &ctx, &outcome, began).await;
        let closed = launch
            .worktree
            .as_ref()
            .map(|wt| close_worktree(self.config.worktrees.as_ref(), &workspace, wt));
        let notes = join_notes(note, closed);
        report(&agent, &outcome, notes.as_deref())
    }
}

impl TaskTool {
    /// Record what the sub-agent spent in the parent's ledger, and keep it
    /// for the parent's run totals.
    async fn note_spent(
        &self,
        child: &AgentEngine,
        ctx: &ToolContext,
        outcome: &RunOutcome,
        began: std::time::Instant,
    ) {
        let entry = spent_entry(child.provider().as_ref(), outcome, began);
        let _ = ctx.store.add_ledger(&ctx.session_id, &entry).await;
        self.spent_map()
            .insert(spent_key(&ctx.session_id, &ctx.call_id), entry);
    }

    /// Start `child` in the background; the result says how to follow it.
    fn start_background(
        &self,
        (child, note, slot): (AgentEngine, Option<String>, budget::ChildSlot),
        (agent, launch, workspace): (AgentDef, &Launch, std::path::PathBuf),
        prompt: String,
        ctx: &ToolContext,
    ) -> ToolOutput {
        let provider = child.provider();
        let spent = self.spent.clone();
        let (store, session) = (ctx.store.clone(), ctx.session_id.clone());
        let id = launch.id.as_str();
        let key = format!("bg:{session}:{id}");
        let began = std::time::Instant::now();
        let def = agent.clone();
        let worktrees = self.config.worktrees.clone();
        let worktree = launch.worktree.clone();
        let finish = move |outcome: RunOutcome| {
            drop(slot);
            let closed = worktree
                .as_ref()
                .map(|wt| close_worktree(worktrees.as_ref(), &workspace, wt));
            let note = join_notes(note, closed);
            let entry = spent_entry(provider.as_ref(), &outcome, began);
            spent
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, entry.clone());
            tokio::spawn(async move {
                let _ = store.add_ledger(&session, &entry).await;
            });
            report(&def, &outcome, note.as_deref())
        };
        self.background.start(
            child,
            prompt,
            (id, &agent.name, &launch.description),
            ctx,
            finish,
        );
        ToolOutput::ok(format!(
            "started sub-agent {id} ({}) in the background; get its report with task_wait, \
             stop it with task_cancel. Your run does not end before it does.",
            agent.name
        ))
    }
}

/// Where a finished call's spending waits for its run: call ids repeat
/// from one session to another, so the session is part of the key.
fn spent_key(session: &str, call_id: &str) -> String {
    format!("{session}\u{0}{call_id}")
}

/// Two optional notes as one.
fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if !b.is_empty() => Some(format!("{a} · {b}")),
        (a, Some(b)) if !b.is_empty() => a.or(Some(b)),
        (a, _) => a,
    }
}

/// One ledger entry for a sub-agent's whole run.
fn spent_entry(
    provider: &dyn Provider,
    outcome: &RunOutcome,
    began: std::time::Instant,
) -> LedgerEntry {
    let totals = &outcome.totals;
    LedgerEntry {
        kind: CallKind::Subagent,
        provider: provider.name().to_string(),
        model: provider.model().to_string(),
        usage: Usage {
            input_tokens: totals.input_tokens,
            output_tokens: totals.output_tokens,
            cached_input_tokens: totals.cached_input_tokens,
            reasoning_tokens: totals.reasoning_tokens,
        },
        cost_usd: (totals.unpriced_calls == 0).then_some(totals.known_cost_usd),
        ok: outcome.reason == StopReason::Completed,
        duration_ms: began.elapsed().as_millis() as u64,
        at: crate::time::now_millis(),
    }
}

/// The call's result: the child's final answer (and a line naming its
/// session), or why it stopped.
fn report(
    agent: &AgentDef,
    outcome: &RunOutcome,
    note: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    let session = outcome.session_id.as_deref().unwrap_or("none");
    let note = note.map(|n| format!(" · {n}")).unwrap_or_default();
    let footer = format!(
        "[sub-agent {} · session {session} · {} turns{note}]",
        agent.name, outcome.turns
    );
    if outcome.reason == StopReason::Completed {
        return Ok(ToolOutput::ok(format!(
            "{}\n\n{footer}",
            outcome.final_text.trim()
        )));
    }
    let why = outcome
        .error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    let last = match outcome.final_text.trim() {
        "" => String::new(),
        t => format!("\nIts last words: {}", crate::text::preview(t, 20, 2000)),
    };
    Ok(ToolOutput::error(format!(
        "the sub-agent stopped before it finished ({}{why}){last}\n\n{footer}",
        outcome.reason.as_str()
    )))
}

/// Passes a child's events to the parent's, each nested in
/// [`Event::Subagent`].
struct NestingSink {
    events: Option<crate::gate::GateEvents>,
    agent_id: String,
    agent: String,
    description: String,
    call_id: String,
}

impl EventSink for NestingSink {
    fn emit(&mut self, event: Event) {
        if let Some(events) = &self.events {
            events(Event::Subagent {
                agent_id: self.agent_id.clone(),
                agent: self.agent.clone(),
                description: self.description.clone(),
                call_id: self.call_id.clone(),
                event: Box::new(event),
            });
        }
    }
}

impl AgentEngine {
    /// Pass on what this session's background sub-agents did since the
    /// last turn (their events, what they spent).
    pub(super) fn background_news(&self, ctx: &mut RunCtx<'_>) {
        let Some(task) = &self.inner.task else { return };
        for event in task.background.take_events(&ctx.session_id) {
            ctx.emit(event);
        }
        for entry in task.take_background_spent(&ctx.session_id) {
            ctx.st.totals.add(&entry);
        }
    }

    /// When the model would end the run while background sub-agents it
    /// started have not reported: wait for them (or the run's cancel),
    /// hand the model their reports, and go on (true).
    pub(super) async fn await_background(
        &self,
        ctx: &mut RunCtx<'_>,
        conv: &mut state::Conversation,
    ) -> Result<bool, run::Stop> {
        let Some(task) = self.inner.task.clone() else {
            return Ok(false);
        };
        let ids = task.background.unreported(&ctx.session_id);
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
            let report = match task.background.wait(id, ctx.cancel).await {
                Ok(Ok(out)) => out.content,
                Ok(Err(e)) => format!("error: {e}"),
                Err(_) => return Err(run::Stop::new(StopReason::Cancelled)),
            };
            reports.push(format!("Sub-agent {id}:\n{report}"));
        }
        self.background_news(ctx);
        let text = format!(
            "[rein] Background sub-agents you started have finished.\n\n{}",
            reports.join("\n\n")
        );
        self.commit_to(ctx, conv, Message::user(text)).await?;
        Ok(true)
    }
}
