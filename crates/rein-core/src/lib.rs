//! rein-core: the agent loop and the shapes everything else plugs into.
//! No HTTP, no database, no terminal: those live in the crates above.

pub mod agents;
pub mod approval;
pub mod assemble;
pub mod command_files;
pub mod commands;
pub mod compaction;
pub mod context;
pub mod engine;
pub mod event;
pub mod front_end;
pub mod frontmatter;
pub mod gate;
pub mod glob;
pub mod history;
pub mod host_process;
pub mod in_memory_store;
pub mod instructions;
pub mod lifecycle;
pub mod limits;
pub mod locks;
pub mod memory;
pub mod permission;
pub mod private_fs;
pub mod profile;
pub mod provider;
pub mod rewind;
pub mod schema;
pub mod schema_check;
pub mod store;
pub mod text;
pub mod time;
pub mod tokens;
pub mod tool;

pub use approval::{
    ApprovalDecision, ApprovalReply, ApprovalRequest, ApprovalScope, Approvals, Approver,
    ProjectRules, ProjectRulesError,
};
pub use assemble::AssistantAssembler;
pub use engine::{
    AgentEngine, AgentEngineBuilder, AgentTag, ChildPolicy, EngineConfig, EngineError, FixedTokens,
    RunControl, RunOutcome, RunRequest, RunStream, SubagentConfig, TitleError,
    title_of as prompt_title,
};
pub use event::{Event, EventSink, FnSink, NullSink, RefusedCall, StopReason};
pub use front_end::FrontEndCommands;
pub use gate::{
    AfterCall, CallEffects, CallHook, Gate, GateEvents, GateLimits, HookRun, HookVerdict,
    PermissionAnswer, Refusal, RunPolicy, ToolRegistry, no_events,
};
pub use in_memory_store::InMemorySessionStore;
pub use lifecycle::{
    CompactTrigger, EndReason, MomentReply, NotificationKind, SessionHook, SessionMoment,
    StartSource,
};
pub use limits::CommandLimits;
pub use memory::{
    Added, Denial, EditScope, LongTermMemory, MemoryChange, MemoryEntry, MemoryError, MemoryOrigin,
    NewMemory,
};
pub use permission::{
    Assessment, ParseModeError, ParseRuleError, PermissionMode, Permissions, ReadFence, Risk, Rule,
    RuleProblem, Rules, SandboxMode, SandboxPolicy, SubjectKind, Verdict,
};
pub use profile::{Lever, Profile};
pub use provider::{
    Capabilities, ChunkStream, ModelRequest, Provider, ProviderError, ProviderErrorKind, ToolChoice,
};
pub use schema::{
    AssistantMessage, ContentPart, FinishReason, Image, Message, ModelProgress, ReasoningBlock,
    Role, StreamChunk, Todo, TodoStatus, ToolCall, ToolResult, ToolSpec, Usage,
};
pub use store::{CompactionRecord, NewSession, SessionInfo, SessionStore, StoreError};
pub use tokens::{CalibratedEstimator, CallKind, LedgerEntry, LedgerTotals, Pricing, TokenCounter};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    LateTools, OutputSpill, PathLock, SessionHandle, SpillError, Tool, ToolAccess, ToolContext,
    ToolError, ToolOutput,
};
