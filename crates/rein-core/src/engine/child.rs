//! Child engines: a sub-task (a sub-agent) runs on an engine made from its
//! parent's, with a policy that can only narrow what the parent may do.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use super::budget::Budget;
use super::subagents::PARENT_ONLY;
use super::{AgentEngine, Inner};
use crate::approval::Approvals;
use crate::permission::PermissionMode;
use crate::provider::Provider;

/// The model a child runs on, when not its parent's.
#[derive(Clone)]
pub struct ChildModel(pub Arc<dyn Provider>);

impl std::fmt::Debug for ChildModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ChildModel({})", self.0.model())
    }
}

/// What a child engine may do. Whatever it asks for, it never gets more
/// than its parent: a looser mode is lowered to the parent's, tools the
/// parent lacks are not there, a higher turn limit is cut to the parent's.
#[derive(Debug, Clone, Default)]
pub struct ChildPolicy {
    /// Its permission mode, and the loosest any of its runs may use
    /// (default, and at most: the parent's mode, the one its runs start
    /// in).
    pub mode: Option<PermissionMode>,
    /// The only tools it may use, by name (default: all of the parent's,
    /// those still arriving included).
    pub tools: Option<Vec<String>>,
    /// Tools it may not use.
    pub denied_tools: Vec<String>,
    /// Most model calls in one of its runs.
    pub max_turns: Option<u32>,
    /// Who it is, as hooks are told (`agent_id`, `agent_type`).
    pub agent: Option<AgentTag>,
    /// Its own instructions, at the end of its system prompt (in place of
    /// the parent's note).
    pub instructions: Option<String>,
    /// Longest one of its runs may take (at most the parent's).
    pub deadline: Option<std::time::Duration>,
    /// Nobody can answer its approval questions (a background child):
    /// what needs one is refused.
    pub refuse_approvals: bool,
    /// Its model (default: the parent's).
    pub model: Option<ChildModel>,
    /// The folder it works in (default: the parent's workspace), such as
    /// a git worktree of it.
    pub workspace: Option<PathBuf>,
}

/// A sub-agent's identity, as hooks are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTag {
    /// Unique per child (`agent_id`).
    pub id: String,
    /// Its definition's name (`agent_type`, the matcher of `SubagentStart`
    /// and `SubagentStop` hooks).
    pub kind: String,
    /// The session that started it: its sessions link there.
    pub parent_session: Option<String>,
}

impl AgentEngine {
    /// An engine for a sub-task: the same provider, session store,
    /// workspace, hooks, limits and path locks as this one, the same rules
    /// (deny and ask rules keep applying), and at most this engine's mode,
    /// tools and turns. Its runs are sessions of their own.
    pub fn child(&self, policy: ChildPolicy) -> AgentEngine {
        self.child_spending_from(policy, None)
    }

    /// [`AgentEngine::child`], whose runs spend from `account` (the
    /// account of the run that starts it): they get at most what that run
    /// has left, and what they spend is charged to it as they spend it.
    pub(super) fn child_spending_from(
        &self,
        policy: ChildPolicy,
        account: Option<Arc<Budget>>,
    ) -> AgentEngine {
        let inner = &self.inner;
        let ceiling = inner.permissions.mode.at_most(self.mode_ceiling());
        let mode = policy.mode.unwrap_or(ceiling).at_most(ceiling);
        let mut permissions = (*inner.permissions).clone();
        permissions.mode = mode;
        let mut config = inner.config.clone();
        config.budget = config.budget.tightened_by(&crate::budget::BudgetCap {
            max_turns: policy.max_turns,
            max_wall_time: policy.deadline,
            ..Default::default()
        });
        if policy.refuse_approvals {
            config.approvals = Approvals::Refuse;
        }
        if let Some(text) = policy.instructions {
            config.system_note = Some(text);
        }
        // A child cannot start children of its own (depth 1), nor follow
        // its parent's background ones.
        let (only, denied) = (policy.tools.clone(), policy.denied_tools.clone());
        let keep = move |t: &str| {
            !PARENT_ONLY.contains(&t)
                && only
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|n| n == t))
                && !denied.iter().any(|n| n == t)
        };
        let gate = self.gate().for_child(Arc::new(keep));
        let workspace = policy
            .workspace
            .clone()
            .unwrap_or_else(|| inner.workspace.clone());
        let hooks = inner.hooks.for_child(
            workspace.clone(),
            policy.agent.clone(),
            !matches!(config.approvals, Approvals::Refuse),
        );
        AgentEngine {
            inner: Arc::new(Inner {
                provider: RwLock::new(
                    policy
                        .model
                        .clone()
                        .map_or_else(|| self.provider(), |m| m.0),
                ),
                store: inner.store.clone(),
                gate: RwLock::new(Arc::new(gate)),
                workspace,
                config,
                permissions: Arc::new(permissions),
                project_rules: inner.project_rules.clone(),
                mode_ceiling: Some(mode),
                agent: policy.agent.clone(),
                hooks,
                subagents: None,
                spends_from: account,
                checkpointer: None,
                sizes: Default::default(),
                estimator: Default::default(),
            }),
        }
    }

    /// The loosest mode a run of this engine may use: any for an engine
    /// built directly, its own for a child.
    fn mode_ceiling(&self) -> PermissionMode {
        self.inner.mode_ceiling.unwrap_or(PermissionMode::Bypass)
    }

    /// `mode`, lowered to what this engine may use.
    pub(super) fn capped(&self, mode: PermissionMode) -> PermissionMode {
        mode.at_most(self.mode_ceiling())
    }
}
