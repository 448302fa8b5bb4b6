//! rein-core: the agent loop and the shapes everything else plugs into.
//! No HTTP, no database, no terminal: those live in the crates above.
//!
//! Core decides; it does not speak HTTP, touch the network, or draw. It
//! knows no tool by name and no front end's commands: tools say what they
//! do ([`ToolAccess`], [`Tool::assess`], [`Tool::touches`]) and the front
//! end says its words ([`FrontEndCommands`]).
//!
//! # Layout
//!
//! Each type has one public path. The types every user needs are at the
//! crate root (their modules are private); the modules that stay public
//! hold things a front end reaches for by topic.
//!
//! **The loop**
//! - `engine`: [`AgentEngine`], its builder and settings, one run as a list
//!   of steps; the `task` tool's sub-agents.
//! - `event`: [`Event`], the one stream every front end reads, and
//!   [`StopReason`].
//! - `assemble`: builds the [`AssistantMessage`] from a provider's chunks.
//! - [`context`]: the system prompt; [`instructions`]: the `AGENTS.md`
//!   files a run follows; [`compaction`]: summarising old turns.
//! - [`history`]: repairing a stored conversation before it is sent.
//!
//! **Tool calls**
//! - `tool`: the [`Tool`] trait and what a running tool gets
//!   ([`ToolContext`], [`SessionHandle`]).
//! - `gate`: the [`ToolRegistry`] and the one pipeline every call passes
//!   (plan mode, permissions, hooks, approval, locks, time and output
//!   bounds); what the model is told of a refused call is a [`Refusal`];
//!   [`schema_check`] checks arguments against a tool's schema.
//! - `permission`: modes, rules and the verdict; `approval`: who answers
//!   when the gate must ask; [`glob`]: the rules' pattern language.
//! - [`locks`]: path read/write locks; `limits`: what one command may use.
//! - `lifecycle`: hooks at a session's moments (start, prompt, stop…).
//!
//! **Data and the services behind traits**
//! - `schema`: [`Message`], [`ToolCall`], [`ToolResult`], [`ToolSpec`],
//!   [`Usage`]: the conversation every crate shares.
//! - `provider`: the [`Provider`] trait every model backend implements.
//! - `store`: the [`SessionStore`] trait; `in_memory_store`: one that
//!   lives as long as the process.
//! - [`memory`]: long-term memory; [`rewind`]: workspace checkpoints.
//! - `tokens`: token counting, prices and the spending ledger;
//!   `budget`: the [`Budget`] a run may spend (turns, tokens, dollars,
//!   wall time), validated once and only ever tightened.
//!
//! **What the user writes, read from files**
//! - [`agents`]: sub-agent definitions; [`commands`]: custom commands;
//!   [`frontmatter`]: the block both start with.
//! - `profile`: how much a run tells and helps a model (small or full).
//! - `front_end`: the front end's commands core's messages name.
//!
//! **Helpers**
//! - [`host_process`]: the one way rein starts a process on the host;
//!   [`command_files`]: the workspace files a command names.
//! - [`private_fs`]: files only the user may read; [`text`]: bounded and
//!   terminal-safe text; [`time`]: wall-clock helpers.
//!
//! # Where to add
//!
//! - **A tool**: implement [`Tool`] in rein-tools (or behind MCP in
//!   rein-mcp); say its [`ToolAccess`], and what a call reads, writes and
//!   touches in [`Tool::assess`] and [`Tool::touches`]. Hand it to
//!   [`AgentEngineBuilder::tool`].
//! - **A provider**: implement [`Provider`] in rein-providers; map its
//!   failures to [`ProviderErrorKind`] so the loop knows what to retry.
//! - **A hook point**: a tool-call moment is a [`CallHook`] method, run
//!   inside the gate; a session moment is a [`SessionMoment`] the engine
//!   fires in its run steps.
//! - **A front end**: consume [`Event`]s from [`AgentEngine::run_stream`]
//!   and answer through [`Approver`] and [`RunControl`]; give the engine
//!   your commands with [`AgentEngineBuilder::front_end`].

pub mod agents;
mod approval;
mod assemble;
mod budget;
pub mod command_files;
pub mod commands;
pub mod compaction;
pub mod context;
mod engine;
mod event;
mod front_end;
pub mod frontmatter;
mod gate;
pub mod glob;
pub mod history;
pub mod host_process;
mod in_memory_store;
pub mod instructions;
mod lifecycle;
mod limits;
pub mod locks;
pub mod memory;
mod permission;
pub mod private_fs;
mod profile;
mod provider;
pub mod request_size;
pub mod rewind;
mod schema;
pub mod schema_check;
pub mod skill_mentions;
mod store;
pub mod text;
pub mod time;
mod tokens;
mod tool;

pub use approval::{
    ApprovalDecision, ApprovalReply, ApprovalRequest, ApprovalScope, Approvals, Approver,
    ProjectRules, ProjectRulesError,
};
pub use assemble::AssistantAssembler;
pub use budget::{Budget, BudgetCap, BudgetError, BudgetLimit, MAX_WALL_TIME};
pub use engine::{
    AgentEngine, AgentEngineBuilder, AgentTag, CandidatesConfig, ChildPolicy, ContextSize,
    EngineConfig, EngineError, FixedTokens, LoopGuardConfig, RunControl, RunOutcome, RunRequest,
    RunScope, RunStream, SCRATCH_FOLDER, SubagentConfig, TitleError, title_of as prompt_title,
};
pub use event::{Event, EventSink, FnSink, NullSink, RefusedCall, StopReason};
pub use front_end::FrontEndCommands;
pub use gate::{
    AfterCall, CallEffects, CallHook, DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_TOOL_CALLS_PER_TURN,
    Gate, GateEvents, GateLimits, GateOutcome, HookRun, HookVerdict, INVALID_ARGUMENTS, NOT_JSON,
    PermissionAnswer, Refusal, RunPolicy, ToolRegistry, UNKNOWN_TOOL, no_events,
};
pub use in_memory_store::{InMemorySessionStore, new_session_id, resolve_prefix};
pub use lifecycle::{
    CompactTrigger, EndReason, MomentReply, NotificationKind, SessionHook, SessionMoment,
    StartSource,
};
pub use limits::{CommandLimits, human_bytes};
pub use permission::{
    Assessment, ParseModeError, ParseRuleError, PermissionMode, Permissions, ReadFence, Risk, Rule,
    RuleProblem, Rules, SandboxMode, SandboxPolicy, SubjectKind, Verdict, normalise,
    protected_write,
};
pub use permission::{
    Host, HostDecision, HostError, HostPattern, HostPolicy, NetworkAccess, PRESETS, Target,
    is_public, parse_host, preset,
};
pub use profile::{Lever, Profile};
pub use provider::{
    Capabilities, ChunkStream, ModelRequest, Provider, ProviderError, ProviderErrorKind, ToolChoice,
};
pub use request_size::{Measured, RequestSize, SizeBasis};
pub use schema::{
    AssistantMessage, ContentPart, FinishReason, HARNESS_NOTE, Image, Message, ModelProgress,
    ReasoningBlock, Role, StreamChunk, Todo, TodoStatus, ToolCall, ToolResult, ToolSpec, Usage,
    is_harness_note,
};
pub use store::{
    AMBIGUOUS_SHOWN, CompactionRecord, NewSession, SessionInfo, SessionStore, StoreError,
};
pub use tokens::{
    CalibratedEstimator, CallKind, ExactOnDemand, LedgerEntry, LedgerTotals, Pricing, TokenCounter,
    count_message,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    GENERIC_READING_HINT, LateTools, OutputSpill, PathLock, SessionHandle, SpillError, Tool,
    ToolAccess, ToolContext, ToolError, ToolOutput,
};
