//! `AgentEngineBuilder` and the engine's settings: `EngineConfig` as the
//! caller gives it, split at the build between the permissions, the gate's
//! limits and [`LoopConfig`].

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::guard::LoopGuardConfig;
use super::hooks::SessionHooks;
use super::subagents::{SubAgents, SubagentConfig};
use super::{AgentEngine, EngineError, Inner};
use crate::approval::{Approvals, ProjectRules};
use crate::compaction::CompactionConfig;
use crate::gate::{CallHook, Gate, GateLimits};
use crate::lifecycle::SessionHook;
use crate::permission::{PermissionMode, Permissions};
use crate::profile::{Lever, Profile};
use crate::provider::Provider;
use crate::rewind::Checkpointer;
use crate::store::SessionStore;
use crate::tool::{LateTools, OutputSpill, Tool};

/// Loop settings, all with defaults.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Retries of a failed model call before the run stops (default 4).
    pub provider_retries: u32,
    /// First retry delay; doubles each time, with jitter (default 1 s).
    pub retry_base_delay: Duration,
    pub limits: GateLimits,
    /// Modes, rules and the sandbox's settings (default mode: `default`).
    pub permissions: Permissions,
    /// Who answers approval requests (default: nobody, so they are refused).
    pub approvals: Approvals,
    /// Turns, tokens, dollars and wall time a run may spend.
    pub budget: crate::budget::Budget,
    pub loop_guard: LoopGuardConfig,
    pub compaction: CompactionConfig,
    /// Extra text at the end of the system prompt (long-term memory).
    pub system_note: Option<String>,
    /// The user's own instructions file (`$REIN_HOME/AGENTS.md`), read
    /// before the project's.
    pub global_instructions: Option<PathBuf>,
    /// Bytes of instructions a run takes in, all files together.
    pub instructions_cap: usize,
    /// What the model is told and how much it is helped (default full).
    pub profile: Profile,
    /// Levers of the profile switched off (to measure what each brings).
    pub without: Vec<Lever>,
    /// The front end's commands named in what the model is told.
    pub front_end: crate::front_end::FrontEndCommands,
    /// The candidates lever's caps and where its scratch copies go.
    pub candidates: CandidatesConfig,
}

/// The folder of rein's state where scratch copies are made
/// (`$REIN_HOME/scratch`): a copy there may be written when it is a
/// call's workspace.
pub const SCRATCH_FOLDER: &str = "scratch";

/// The caps of the candidates lever (see `engine/run/candidates.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct CandidatesConfig {
    /// Most alternative fixes tried in one run (default 3; 0: none).
    pub max: u32,
    /// Most time all of them may take together (default 180 s).
    pub time: Duration,
    /// The folder scratch copies are made in: rein's own state, never
    /// the workspace. `None`: no candidates (nowhere to try them).
    pub scratch_root: Option<PathBuf>,
}

impl Default for CandidatesConfig {
    fn default() -> Self {
        CandidatesConfig {
            max: 3,
            time: Duration::from_secs(180),
            scratch_root: None,
        }
    }
}

impl EngineConfig {
    /// Whether the run gives `lever`: its profile does and it is not
    /// switched off.
    pub fn helps(&self, lever: Lever) -> bool {
        self.profile.helps(lever, &self.without)
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            provider_retries: 4,
            retry_base_delay: Duration::from_secs(1),
            limits: GateLimits::default(),
            permissions: Permissions::new(PermissionMode::Default),
            approvals: Approvals::Refuse,
            budget: crate::budget::Budget::default(),
            loop_guard: LoopGuardConfig::default(),
            compaction: CompactionConfig::default(),
            system_note: None,
            global_instructions: None,
            instructions_cap: crate::instructions::DEFAULT_CAP,
            profile: Profile::Full,
            without: Vec::new(),
            front_end: Default::default(),
            candidates: CandidatesConfig::default(),
        }
    }
}

/// What the loop reads of [`EngineConfig`] once the engine is built: all
/// of it but the permissions (the engine keeps them) and the limits of
/// tool calls (the gate keeps them), so each is kept once.
#[derive(Debug, Clone)]
pub(super) struct LoopConfig {
    pub provider_retries: u32,
    pub retry_base_delay: Duration,
    pub approvals: Approvals,
    pub budget: crate::budget::Budget,
    pub loop_guard: LoopGuardConfig,
    pub compaction: CompactionConfig,
    pub system_note: Option<String>,
    pub global_instructions: Option<PathBuf>,
    pub instructions_cap: usize,
    pub profile: Profile,
    pub without: Vec<Lever>,
    pub front_end: crate::front_end::FrontEndCommands,
    pub candidates: CandidatesConfig,
}

impl LoopConfig {
    /// `config` in its three parts: the loop's settings, the permissions
    /// and the gate's limits.
    fn split(config: EngineConfig) -> (LoopConfig, Permissions, GateLimits) {
        let EngineConfig {
            provider_retries,
            retry_base_delay,
            limits,
            permissions,
            approvals,
            budget,
            loop_guard,
            compaction,
            system_note,
            global_instructions,
            instructions_cap,
            profile,
            without,
            front_end,
            candidates,
        } = config;
        let config = LoopConfig {
            provider_retries,
            retry_base_delay,
            approvals,
            budget,
            loop_guard,
            compaction,
            system_note,
            global_instructions,
            instructions_cap,
            profile,
            without,
            front_end,
            candidates,
        };
        (config, permissions, limits)
    }

    /// Whether the run gives `lever`: its profile does and it is not
    /// switched off.
    pub fn helps(&self, lever: Lever) -> bool {
        self.profile.helps(lever, &self.without)
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
    hooks: Vec<Arc<dyn CallHook>>,
    session_hook: Option<Arc<dyn SessionHook>>,
    subagents: Option<SubagentConfig>,
    checkpointer: Option<Arc<dyn Checkpointer>>,
    late: Option<Arc<dyn LateTools>>,
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

    /// Every limit of a run at once.
    pub fn budget(mut self, budget: crate::budget::Budget) -> Self {
        self.config.budget = budget;
        self
    }

    /// Token budget of a run (input + output over every call).
    pub fn max_tokens(mut self, n: u64) -> Self {
        self.config.budget.max_tokens = Some(n);
        self
    }

    /// Cost budget of a run in US dollars.
    pub fn max_cost_usd(mut self, usd: f64) -> Self {
        self.config.budget.max_cost_usd = Some(usd);
        self
    }

    /// Wall-clock budget of a run.
    pub fn max_wall_time(mut self, d: Duration) -> Self {
        self.config.budget.max_wall_time = Some(d);
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

    /// The request and help runs give the model (see [`Profile`]).
    /// Switch levers of the profile off (kept in [`Lever::ALL`]'s order,
    /// once each).
    pub fn without(mut self, levers: &[Lever]) -> Self {
        self.config.without.extend_from_slice(levers);
        self.config.without.sort();
        self.config.without.dedup();
        self
    }

    /// The candidates lever's caps and scratch folder.
    pub fn candidates(mut self, candidates: CandidatesConfig) -> Self {
        self.config.candidates = candidates;
        self
    }

    pub fn profile(mut self, profile: Profile) -> Self {
        self.config.profile = profile;
        self
    }

    /// The front end's commands the model may be pointed to (`rein trust`).
    pub fn front_end(mut self, commands: crate::front_end::FrontEndCommands) -> Self {
        self.config.front_end = commands;
        self
    }

    /// The user's own instructions file, read before the project's.
    pub fn global_instructions(mut self, path: impl Into<PathBuf>) -> Self {
        self.config.global_instructions = Some(path.into());
        self
    }

    /// Bytes of instructions a run takes in (default 32 KiB).
    pub fn instructions_cap(mut self, bytes: usize) -> Self {
        self.config.instructions_cap = bytes;
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

    /// Where tools that arrive after the build come from (MCP servers still
    /// starting): a call to one waits for it instead of failing.
    pub fn late_tools(mut self, late: Arc<dyn LateTools>) -> Self {
        self.late = Some(late);
        self
    }

    /// A hook every tool call passes in the gate (see [`CallHook`]).
    pub fn hook(mut self, hook: Arc<dyn CallHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Where "always for this project" approvals are written.
    /// Hooks run at the session's moments (start, prompt, stop,
    /// compaction, end...).
    pub fn session_hook(mut self, hook: Arc<dyn SessionHook>) -> Self {
        self.session_hook = Some(hook);
        self
    }

    /// Give the model the `task` tool: sub-agents from this catalog, with
    /// this cap and deadline.
    pub fn subagents(mut self, config: SubagentConfig) -> Self {
        self.subagents = Some(config);
        self
    }

    /// Take the workspace's checkpoints (for rewind) before each prompt
    /// and after each round of calls that may have changed files.
    pub fn checkpointer(mut self, c: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(c);
        self
    }

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
        self.config.budget.max_turns = n;
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

    /// Most tool calls run from one model answer (default 32, at least 1);
    /// the others get an error observation each and are not run.
    pub fn max_tool_calls_per_turn(mut self, n: usize) -> Self {
        self.config.limits.max_tool_calls_per_turn = n.max(1);
        self
    }

    /// Largest raw arguments of one tool call, in bytes (default 16 MiB).
    pub fn max_argument_bytes(mut self, n: usize) -> Self {
        self.config.limits.max_argument_bytes = n;
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
        // Permissions and limits move out of the config into the engine
        // and its gate, their only copies from here on.
        let (config, permissions, limits) = LoopConfig::split(self.config);
        let mut gate = Gate::new(self.tools, limits);
        if let Some(spill) = self.spill {
            gate = gate.with_spill(spill);
        }
        for hook in self.hooks {
            gate = gate.with_hook(hook);
        }
        if let Some(late) = self.late {
            gate = gate.with_late_tools(late);
        }
        let hooks = SessionHooks::new(
            self.session_hook,
            workspace.clone(),
            None,
            !matches!(config.approvals, Approvals::Refuse),
        );
        let (provider, store, project_rules, subagents, checkpointer) = (
            self.provider,
            self.store,
            self.project_rules,
            self.subagents,
            self.checkpointer,
        );
        // The task tool runs children of this very engine: it holds a
        // weak handle to it, made before the engine exists.
        let inner = Arc::new_cyclic(|me| {
            let subagents = subagents
                .map(|c| Arc::new(SubAgents::new(me.clone(), c, config.front_end.clone())));
            if let Some(s) = &subagents {
                gate = gate.with_added(s.tools());
            }
            Inner {
                provider: RwLock::new(provider),
                store,
                gate: RwLock::new(Arc::new(gate)),
                workspace,
                permissions: Arc::new(permissions),
                config,
                project_rules,
                mode_ceiling: None,
                agent: None,
                hooks,
                subagents,
                spends_from: None,
                checkpointer,
                sizes: Default::default(),
                estimator: Default::default(),
            }
        });
        Ok(AgentEngine { inner })
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
            hooks: Vec::new(),
            session_hook: None,
            subagents: None,
            checkpointer: None,
            late: None,
        }
    }
}
