//! The `task` tool: a call starts one sub-agent of [`SubAgents`], in the
//! foreground (the call's result is its report) or in the background (the
//! call returns at once; [`super::background`] follows it).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::report::{NestingSink, close_worktree, join_notes, report, spent_entry, spent_key};
use super::{SubAgents, TOOL_NAME};
use crate::agents::{AgentDef, Worktree};
use crate::engine::budget::{Budget, ChildSlot};
use crate::engine::child::{AgentTag, ChildModel, ChildPolicy};
use crate::engine::{AgentEngine, RunOutcome, RunRequest};
use crate::tool::{Tool, ToolAccess, ToolContext, ToolError, ToolOutput};

/// The `task` tool of one engine.
pub(super) struct TaskTool(pub Arc<SubAgents>);

#[async_trait::async_trait]
impl Tool for TaskTool {
    fn spec(&self) -> crate::ToolSpec {
        let names = self.0.config.catalog.names();
        let list: String = self
            .0
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
        let d = self.0.config.deadline;
        Some(d + d.min(Duration::from_secs(30)))
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.launch(args, ctx).await
    }
}

impl SubAgents {
    /// Start the sub-agent a `task` call asks for; in the foreground, its
    /// report is the call's result.
    async fn launch(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
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
        let Some(parent) = self.parent() else {
            return Err(ToolError::new(
                "the engine that would run the sub-agent is gone",
            ));
        };
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
        let began = Instant::now();
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
        let closed = launch.worktree.as_ref().map(|wt| {
            let lister = self.front_end.worktrees.as_ref();
            close_worktree(self.config.worktrees.as_ref(), &workspace, wt, lister)
        });
        let notes = join_notes(note, closed);
        report(&agent, &outcome, notes.as_deref())
    }

    /// The model `agent` asks for, if it can have it; else a note saying
    /// why it runs on its parent's.
    fn model_of(&self, agent: &AgentDef) -> (Option<ChildModel>, Option<String>) {
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
            Some(Ok(p)) => (Some(ChildModel(p)), None),
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
        account: Arc<Budget>,
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
    async fn isolate(&self, parent: &AgentEngine, id: &str) -> Result<Worktree, ToolError> {
        let Some(worktrees) = self.config.worktrees.clone() else {
            let trust = self.front_end.trust.as_ref();
            return Err(ToolError::new(format!(
                "isolation: worktree is not available here (rein makes worktrees only in a \
                 folder the user trusts{})",
                trust.map(|c| format!(": {c}")).unwrap_or_default()
            )));
        };
        let (workspace, id) = (parent.workspace().to_path_buf(), id.to_string());
        tokio::task::spawn_blocking(move || worktrees.create(&workspace, &id))
            .await
            .map_err(|e| ToolError::new(format!("making the worktree failed: {e}")))?
            .map_err(|e| ToolError::new(format!("cannot run the sub-agent in a worktree: {e}")))
    }

    /// Record what the sub-agent spent in the parent's ledger, and keep it
    /// for the parent's run totals.
    async fn note_spent(
        &self,
        child: &AgentEngine,
        ctx: &ToolContext,
        outcome: &RunOutcome,
        began: Instant,
    ) {
        let entry = spent_entry(child.provider().as_ref(), outcome, began);
        let _ = ctx
            .session
            .store()
            .add_ledger(&ctx.session_id, &entry)
            .await;
        self.spent_map()
            .insert(spent_key(&ctx.session_id, &ctx.call_id), entry);
    }

    /// Start `child` in the background; the result says how to follow it.
    fn start_background(
        &self,
        (child, note, slot): (AgentEngine, Option<String>, ChildSlot),
        (agent, launch, workspace): (AgentDef, &Launch, PathBuf),
        prompt: String,
        ctx: &ToolContext,
    ) -> ToolOutput {
        let provider = child.provider();
        let spent = self.spent.clone();
        let (store, session) = (ctx.session.store().clone(), ctx.session_id.clone());
        let id = launch.id.as_str();
        let key = format!("bg:{session}:{id}");
        let began = Instant::now();
        let def = agent.clone();
        let worktrees = self.config.worktrees.clone();
        let lister = self.front_end.worktrees.clone();
        let worktree = launch.worktree.clone();
        let finish = move |outcome: RunOutcome| {
            drop(slot);
            let closed = worktree
                .as_ref()
                .map(|wt| close_worktree(worktrees.as_ref(), &workspace, wt, lister.as_ref()));
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

/// One sub-agent about to start.
struct Launch {
    pub id: String,
    pub description: String,
    pub background: bool,
    /// The session whose call starts it.
    pub parent_session: String,
    /// Where it works when isolated.
    pub worktree: Option<Worktree>,
}
