//! What a run's engine is built from: the profile, the tools (built-in,
//! memory, MCP, skills), the user's hooks, limits, permissions, compaction
//! and spill, all from the layered config. Shared by `rein exec` and the
//! app.

use std::path::Path;
use std::sync::Arc;

use rein_core::{AgentEngine, Lever, PermissionMode, Permissions, Profile};

use crate::config::Config;
use crate::permissions::ProjectRulesFile;

/// What a run adds to the built-in tools: long-term memory, the MCP
/// servers, the skills.
pub struct RunExtras<'a> {
    pub memory: &'a crate::memory::RunMemory,
    pub mcp: Option<&'a Arc<rein_mcp::McpHub>>,
    pub skills: &'a Arc<rein_tools::skills::Skills>,
    /// The user's hooks (every profile: no tool passes by them).
    pub hooks: &'a rein_tools::user_hooks::HookSet,
    /// The sub-agents the `task` tool can start.
    pub agents: &'a rein_core::agents::AgentCatalog,
    /// The language servers, when `[lsp]` turns them on.
    pub lsp: Option<&'a Arc<rein_tools::lsp::Servers>>,
}

/// What a run adds to the built-in tools, loaded for one workspace, and
/// the notes the user should see about it (servers not started, skills
/// over budget, hooks or agents skipped). `rein exec` and `rein acp` load
/// it the same way.
pub struct LoadedExtras {
    pub memory: crate::memory::RunMemory,
    pub mcp: Option<Arc<rein_mcp::McpHub>>,
    pub skills: Arc<rein_tools::skills::Skills>,
    pub hooks: rein_tools::user_hooks::HookSet,
    pub agents: rein_core::agents::AgentCatalog,
    /// The language servers (their status is the app's `/lsp`).
    pub lsp: Option<Arc<rein_tools::lsp::Servers>>,
    /// One line each, without a `note:` prefix.
    pub notes: Vec<String>,
}

impl LoadedExtras {
    /// Memory, MCP servers (started in the background), skills, hooks and
    /// sub-agents of `workspace` under `cfg`.
    pub async fn load(
        cfg: &Config,
        workspace: &Path,
        provider: &dyn rein_core::Provider,
    ) -> LoadedExtras {
        let memory = crate::memory::for_run(cfg, workspace).await;
        let (mcp, mut notes) = mcp_servers(cfg, workspace, provider);
        let skills = crate::skills::for_run(cfg, workspace);
        let budget_note =
            crate::skills::prompt_section(&skills, provider.capabilities().context_window).1;
        notes.extend(skills.warnings.iter().cloned().chain(budget_note));
        let hooks = crate::hooks::load(cfg, workspace);
        notes.extend(hooks.notes.iter().cloned());
        let agents = agents(cfg, workspace);
        notes.extend(agents.warnings.iter().cloned());
        LoadedExtras {
            memory,
            mcp,
            skills,
            hooks,
            agents,
            lsp: lsp_servers(cfg),
            notes,
        }
    }

    /// The borrowed view [`engine_builder`] takes.
    pub fn extras(&self) -> RunExtras<'_> {
        RunExtras {
            memory: &self.memory,
            mcp: self.mcp.as_ref(),
            skills: &self.skills,
            hooks: &self.hooks,
            agents: &self.agents,
            lsp: self.lsp.as_ref(),
        }
    }
}

/// The models agent definitions name, made from the user's providers
/// (the same way `--model` and `/model` read a name).
struct ConfigModels(Config);

impl rein_core::agents::ModelSource for ConfigModels {
    fn provider_for(
        &self,
        model: &str,
    ) -> Result<Arc<dyn rein_core::Provider>, rein_core::agents::ModelUnavailable> {
        let mut c = self.0.clone();
        let (provider, m) = crate::providers::model_choice(&c, model);
        if provider.is_some() {
            c.provider = provider;
            c.model = None;
        }
        if m.is_some() {
            c.model = m;
        }
        crate::providers::build(&c)
            .map_err(|e| rein_core::agents::ModelUnavailable(format!("{e:#}")))
    }
}

/// A checkpointer that says why there are no checkpoints.
struct Unavailable(String);

#[async_trait::async_trait]
impl rein_core::rewind::Checkpointer for Unavailable {
    async fn before_prompt(
        &self,
        _session_id: &str,
        _seq: u64,
        _prompt: &str,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        Err(rein_core::rewind::CheckpointFailure(self.0.clone()))
    }

    async fn after_changes(
        &self,
        _session_id: &str,
        _writes: rein_core::rewind::RunWrites,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        Ok(())
    }
}

/// The engine's permission settings from the layered config.
pub fn permissions(cfg: &Config, mode: PermissionMode) -> Permissions {
    let mut p = Permissions::new(mode);
    p.rules = cfg.permissions.rules.clone();
    p.network = cfg.permissions.network.clone();
    p.env_allow = cfg.permissions.env_allow.clone();
    p.state_dir = Some(cfg.home.clone());
    p.read_paths = cfg.sandbox.read_paths.clone();
    p.limits = cfg.sandbox.limits;
    p
}

/// The sub-agents of a run here: the project's definitions, the user's
/// own (`$REIN_HOME/agents`), the built-ins, the enabled plugins'. A project's are read in any
/// folder (a definition can only narrow what its agent may do: its mode,
/// tools and turns are capped by the parent's); in a folder that is not
/// trusted none replaces a built-in or the user's own, and none chooses
/// its model.
pub fn agents(cfg: &Config, workspace: &Path) -> rein_core::agents::AgentCatalog {
    let user = cfg.home.join("agents");
    let tool_names = rein_tools::claude_names::rein_name;
    let mut found = rein_core::agents::AgentCatalog::discover(
        workspace,
        Some(&user),
        cfg.trusted,
        tool_names,
        &front_end_commands(),
    );
    crate::plugin::load::add_agents(&mut found, &cfg.home, tool_names);
    found
}

/// The commands of `rein` that rein-core's messages point the model and
/// the user to.
pub fn front_end_commands() -> rein_core::FrontEndCommands {
    rein_core::FrontEndCommands {
        trust: Some("`rein trust`".to_string()),
        worktrees: Some("`rein worktrees`".to_string()),
    }
}

/// The workspace files the run's hooks and MCP servers (the user's own
/// and the project's approved ones) execute: no tool may change them.
fn run_files(
    cfg: &Config,
    workspace: &Path,
    hooks: &rein_tools::user_hooks::HookSet,
) -> Vec<std::path::PathBuf> {
    use rein_core::command_files::{files_of_argv, files_of_shell};
    let mut files = Vec::new();
    for entry in &hooks.entries {
        files.extend(files_of_shell(&entry.handler.command, workspace).files);
    }
    let approvals = crate::mcp::project::Approvals::load(&cfg.home).ok();
    let project = cfg
        .project_mcp_servers
        .iter()
        .map(|s| &s.config)
        .filter(|c| approvals.as_ref().is_some_and(|a| a.approved(workspace, c)));
    for server in cfg.mcp_servers.iter().chain(project).filter(|s| s.enabled) {
        if let rein_mcp::McpTransport::Stdio { command, args, .. } = &server.transport {
            let argv: Vec<String> = std::iter::once(command.clone())
                .chain(args.iter().cloned())
                .collect();
            files.extend(files_of_argv(&argv, workspace).files);
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The language servers of diagnostics after edits and the `lsp` tool,
/// when `[lsp]` turns them on (see [`crate::config::lsp`]); they run in
/// the plan-mode sandbox: read-only, offline. Made once per session, so
/// the engine and the app's `/lsp` see the same servers.
fn lsp_servers(cfg: &Config) -> Option<Arc<rein_tools::lsp::Servers>> {
    if !cfg.lsp.on() {
        return None;
    }
    let settings = rein_tools::lsp::LspSettings {
        servers: cfg.lsp.servers.clone(),
        warnings: cfg.lsp.warnings,
        ..Default::default()
    };
    let launch = rein_tools::lsp::Launch {
        kind: rein_tools::sandbox::available(),
        policy: permissions(cfg, PermissionMode::Plan).sandbox(PermissionMode::Plan),
    };
    Some(Arc::new(rein_tools::lsp::Servers::new(settings, launch)))
}

/// Diagnostics after edits, in either profile when `[lsp]` is on (the
/// small one keeps its six tools: no `lsp` tool).
fn with_diagnostics(
    builder: rein_core::AgentEngineBuilder,
    extras: &RunExtras<'_>,
) -> rein_core::AgentEngineBuilder {
    match extras.lsp {
        Some(servers) => builder.hook(Arc::new(rein_tools::lsp::Diagnostics::over(
            servers.clone(),
        ))),
        None => builder,
    }
}

/// `web_search`, when the user's config names a backend that works
/// (checked by `Config::validate` before any engine is built).
fn web_search_tool(cfg: &Config) -> Vec<Arc<dyn rein_core::Tool>> {
    match cfg.web_search_backend() {
        Ok(Some(backend)) => vec![Arc::new(rein_tools::WebSearch::new(backend))],
        _ => Vec::new(),
    }
}

/// Two pieces of the system prompt's end, either possibly empty.
fn join_notes(a: &str, b: &str) -> String {
    match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{}\n\n{}", a.trim_end(), b),
    }
}

/// The engine every interactive or headless run uses: built-in tools,
/// memory, limits, permissions, compaction and spill from the config.
pub fn engine_builder(
    cfg: &Config,
    workspace: &Path,
    mode: PermissionMode,
    provider: Arc<dyn rein_core::Provider>,
    store: Arc<dyn rein_core::SessionStore>,
    extras: &RunExtras<'_>,
) -> rein_core::AgentEngineBuilder {
    let profile = profile_for(cfg, provider.as_ref());
    let provider_window = provider.capabilities().context_window;
    let mut builder = AgentEngine::builder(provider, store.clone())
        .workspace(workspace)
        .front_end(front_end_commands())
        .profile(profile)
        .without(&cfg.without)
        .candidates(cfg.candidates.resolve(&cfg.home));
    let gives = |lever: Lever| profile.helps(lever, &cfg.without);
    // Six tools, no memory, for a small model: every token of the request
    // is prompt time.
    builder = if gives(Lever::Tools) {
        builder.tools(rein_tools::small_model_tools(gives(Lever::Hints)))
    } else {
        let (skills_text, _) = crate::skills::prompt_section(extras.skills, provider_window);
        let mut builder = builder
            .tools(rein_tools::builtin_tools())
            .tool(Arc::new(rein_tools::WebFetch::new(
                cfg.permissions.web.clone(),
            )))
            .tools(web_search_tool(cfg))
            .tools(extras.memory.tools.clone())
            .system_note(join_notes(&extras.memory.note, &skills_text));
        if !extras.skills.skills.is_empty() {
            builder = builder.tool(Arc::new(rein_tools::skills::SkillTool::new(
                extras.skills.clone(),
            )));
        }
        if let Some(servers) = extras.lsp {
            builder = builder.tool(Arc::new(rein_tools::lsp::LspTool::new(servers.clone())));
        }
        if let Some(hook) =
            rein_tools::skills::UntrustedScripts::for_skills(extras.skills, workspace)
        {
            builder = builder.hook(Arc::new(hook));
        }
        builder = builder.subagents(rein_core::SubagentConfig {
            catalog: extras.agents.clone(),
            models: Some(Arc::new(ConfigModels(cfg.clone()))),
            // Making a worktree runs git's checkout, which a repository's
            // own config can hook commands into: only in a trusted folder.
            worktrees: cfg.trusted.then(|| {
                Arc::new(rein_tools::worktrees::GitWorktrees::new(
                    cfg.home.join("worktrees"),
                )) as Arc<dyn rein_core::agents::Worktrees>
            }),
            ..Default::default()
        });
        // The servers' tools come as each server is ready; a call to one
        // still starting waits for it.
        match extras.mcp {
            Some(hub) => builder.late_tools(hub.clone() as Arc<dyn rein_core::LateTools>),
            None => builder,
        }
    };
    builder = with_diagnostics(builder, extras);
    if let Some(hooks) = rein_tools::user_hooks::UserHooks::new(extras.hooks) {
        let transcripts = rein_tools::user_hooks::Transcripts::new(store.clone(), &cfg.home);
        let hooks = Arc::new(
            hooks
                .with_env_allow(cfg.permissions.env_allow.clone())
                .with_transcripts(transcripts),
        );
        builder = builder.hook(hooks.clone()).session_hook(hooks);
    }
    if cfg.checkpoints {
        // A workspace that cannot be checkpointed (git missing, an
        // unwritable home) runs without rewind: the run says so at its
        // first prompt.
        match crate::rewind::SessionCheckpoints::open(&cfg.home, workspace) {
            Ok(c) => {
                let checkpointer = crate::rewind::index::Checkpointer::new(c);
                builder = builder.checkpointer(Arc::new(checkpointer));
            }
            Err(e) => builder = builder.checkpointer(Arc::new(Unavailable(e.to_string()))),
        }
    }
    if gives(Lever::ReadFirst) {
        builder = builder.hook(Arc::new(rein_tools::ReadBeforeOverwrite::new(workspace)));
    }
    builder = builder
        .budget(cfg.budget)
        .tool_timeout(cfg.tool_timeout)
        .provider_retries(cfg.provider_retries)
        .permissions({
            let mut p = permissions(cfg, mode);
            p.run_files = run_files(cfg, workspace, extras.hooks);
            p
        })
        .compaction(cfg.compaction.clone())
        .loop_guard(cfg.loop_guard.clone())
        .output_spill(Arc::new(
            rein_store::FileSpill::new(&cfg.home).with_reading_hint(
                "read parts of it with read_file (offset, limit) or search it with grep",
            ),
        ))
        .project_rules(Arc::new(ProjectRulesFile::for_run(
            &cfg.home,
            workspace,
            cfg.trusted,
        )))
        .global_instructions(global_instructions(cfg));
    if let Some(n) = cfg.max_tool_calls_per_turn {
        builder = builder.max_tool_calls_per_turn(n);
    }
    if let Some(n) = cfg.max_concurrent_tools {
        builder = builder.max_concurrent_tools(n);
    }
    builder
}

/// The user's own instructions file.
pub fn global_instructions(cfg: &Config) -> std::path::PathBuf {
    cfg.home.join("AGENTS.md")
}

/// The run's MCP servers, started in the background; none when there are
/// none, or when the profile offers its six tools only (then the note
/// says how to have them).
pub fn mcp_servers(
    cfg: &Config,
    workspace: &Path,
    provider: &dyn rein_core::Provider,
) -> (Option<Arc<rein_mcp::McpHub>>, Vec<String>) {
    if let Some(why) = mcp_not_started(cfg, provider) {
        return (None, vec![why]);
    }
    crate::mcp::start(cfg, workspace)
}

/// The app's `/lsp`: a line per language server, from the servers' own
/// record, or why there are none.
pub fn lsp_status(
    cfg: &Config,
    workspace: &Path,
    servers: Option<&Arc<rein_tools::lsp::Servers>>,
) -> Vec<String> {
    match servers {
        Some(s) => {
            let lines: Vec<String> = s.status().iter().map(|x| x.line(workspace)).collect();
            if lines.is_empty() {
                return vec!["no language server configured or found on PATH".into()];
            }
            lines
        }
        None if !cfg.lsp.on() => vec![
            "language servers are off (`[lsp] enabled = true` in config.toml turns them on)".into(),
        ],
        None => vec![
            "language servers are not started: the small profile offers six tools \
             (`--profile full` runs them)"
                .into(),
        ],
    }
}

/// Why configured MCP servers are not started (the small profile offers
/// its six tools only), when they are not: the note at start and what
/// the app's `/mcp` says.
pub fn mcp_not_started(cfg: &Config, provider: &dyn rein_core::Provider) -> Option<String> {
    let profile = profile_for(cfg, provider);
    if !profile.helps(Lever::Tools, &cfg.without) {
        return None;
    }
    let configured =
        cfg.mcp_servers.iter().filter(|s| s.enabled).count() + cfg.project_mcp_servers.len();
    (configured > 0).then(|| {
        let servers = if configured == 1 {
            "server is"
        } else {
            "servers are"
        };
        format!(
            "{configured} MCP {servers} configured but not started: the small profile offers six \
             tools (`--profile full` offers every tool, MCP servers' included)"
        )
    })
}

/// Embedded models at most this large (the file) get the small profile
/// by default: the two offered are 0.5B and 1.5B, a 3B Q4 file is ~2 GB.
const SMALL_MODEL_FILE: u64 = 3 * 1024 * 1024 * 1024;

/// The profile of a run: `--profile`, else small for an embedded model
/// whose file is small, else full.
pub fn profile_for(cfg: &Config, provider: &dyn rein_core::Provider) -> Profile {
    if let Some(p) = cfg.profile {
        return p;
    }
    if provider.name() != "local" {
        return Profile::Full;
    }
    let (path, _) = crate::providers::local_model_path(cfg);
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > SMALL_MODEL_FILE => Profile::Full,
        _ => Profile::Small,
    }
}
