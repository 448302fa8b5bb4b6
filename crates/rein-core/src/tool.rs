//! The `Tool` trait, and what a tool gets when it runs.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::gate::Refusal;
use crate::permission::{Assessment, SandboxPolicy};
use crate::schema::Todo;
use crate::store::{SessionStore, StoreError};

/// What a tool does to the world; plan mode and permissions decide on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ToolAccess {
    /// Only reads (files, search).
    Read,
    /// Changes files.
    Write,
    /// Runs programs.
    Execute,
}

/// A lock a call needs on one canonical path for its whole run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathLock {
    Read(PathBuf),
    Write(PathBuf),
}

impl PathLock {
    pub fn path(&self) -> &PathBuf {
        match self {
            PathLock::Read(p) | PathLock::Write(p) => p,
        }
    }
}

/// Everything a running tool may use.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root, canonical.
    pub workspace: PathBuf,
    pub session_id: String,
    pub call_id: String,
    /// Fires when the run is cancelled or the call timed out.
    pub cancel: CancellationToken,
    /// What the tool may keep in its session (the todo list).
    pub session: SessionHandle,
    /// The sandbox a tool that runs programs must apply (set by the gate
    /// from the run's permission mode).
    pub sandbox: SandboxPolicy,
    /// Folders outside the workspace that reading tools may open: where
    /// this session's big tool outputs are saved.
    pub read_roots: Vec<PathBuf>,
    /// Where the call's own events go (a sub-agent's run, nested in its
    /// parent's); None: nowhere.
    pub events: Option<crate::gate::GateEvents>,
}

/// The part of its session a running tool may change: the todo list.
/// Tools get this, not the [`SessionStore`]; core's own gate and task tool
/// reach the store behind it (to keep approvals and sub-agents' spending).
#[derive(Clone)]
pub struct SessionHandle {
    store: Arc<dyn SessionStore>,
    id: String,
}

impl SessionHandle {
    /// The session `id` of `store`.
    pub fn new(store: Arc<dyn SessionStore>, id: impl Into<String>) -> SessionHandle {
        SessionHandle {
            store,
            id: id.into(),
        }
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Replace the session's todo list.
    pub async fn set_todos(&self, todos: &[Todo]) -> Result<(), StoreError> {
        self.store.set_todos(&self.id, todos).await
    }

    /// The store itself, for core's own tools and gate.
    pub(crate) fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }
}

/// What the model is told to do with a saved output when nobody named the
/// tools that read it.
pub const GENERIC_READING_HINT: &str = "read it in parts or search it with the file tools";

/// Saves tool outputs too big for the context, so that the model can read
/// them in pieces later.
pub trait OutputSpill: Send + Sync {
    /// The folder this session's outputs go to.
    fn dir(&self, session_id: &str) -> PathBuf;

    /// Save one call's whole output; returns the file's path.
    fn save(&self, session_id: &str, call_id: &str, content: &str) -> Result<PathBuf, SpillError>;

    /// What the model is told to do with a saved output, after its path.
    /// Whoever picks the tools knows their names; core does not.
    fn reading_hint(&self) -> String {
        GENERIC_READING_HINT.to_string()
    }
}

/// Tools that may arrive after the engine was built: an MCP server still
/// starting offers its tools when it is ready. A call naming a tool the
/// gate does not have asks here before it fails as unknown, so a call to
/// a tool of a server that is still starting waits for it (bounded by the
/// source) instead of failing.
#[async_trait]
pub trait LateTools: Send + Sync {
    /// The tool `name`, once whatever would offer it is ready; `None` at
    /// once when nothing pending could offer it.
    async fn wait_for(&self, name: &str) -> Option<Arc<dyn Tool>>;
}

/// Why a big output could not be saved (the model then gets it cut).
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    #[error("cannot create the folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot save the output to {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a successful tool call returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// The observation the model sees.
    pub content: String,
    /// The call ran but failed (a command's non-zero exit is not this; a
    /// cancelled command with partial output is).
    pub is_error: bool,
    /// Images for the model (the tool checked their type and size).
    pub images: Vec<crate::Image>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// Why a call produced no output. Every kind reaches the model as an error
/// observation (its text is what the model sees); the kinds say whose
/// doing it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The gate did not run the call.
    #[error("{0}")]
    Refused(Refusal),
    /// The call ran and failed in a way the model can act on: a missing
    /// file, a pattern that does not parse.
    #[error("{0}")]
    Failed(String),
    /// The harness failed around the call (a crashed tool, a closed
    /// pool): not the model's doing.
    #[error("{0}")]
    Fault(String),
}

impl ToolError {
    /// A failure the model can act on ([`ToolError::Failed`]).
    pub fn new(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }

    /// A fault of the harness ([`ToolError::Fault`]).
    pub fn fault(message: impl Into<String>) -> Self {
        ToolError::Fault(message.into())
    }

    /// The gate's refusal, if the call was refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            ToolError::Refused(r) => Some(r),
            _ => None,
        }
    }
}

impl From<Refusal> for ToolError {
    fn from(refusal: Refusal) -> ToolError {
        ToolError::Refused(refusal)
    }
}

/// A capability the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and argument schema shown to the model.
    fn spec(&self) -> crate::schema::ToolSpec;

    fn access(&self) -> ToolAccess;

    /// The path locks this call needs; taken by the gate before `call` and
    /// held until it returns. An error here is reported to the model.
    fn locks(&self, _args: &Value, _ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
        Ok(Vec::new())
    }

    /// The paths this call works in, as its arguments name them (relative
    /// to the workspace, or absolute): a call working in a folder below the
    /// workspace brings that folder's instructions with its result. The
    /// tool says; core reads no tool's arguments. Default: none.
    fn touches(&self, _args: &Value) -> Vec<PathBuf> {
        Vec::new()
    }

    /// What this call would do, for the permission check: the subjects rules
    /// match, the paths read and written, the risk. The default says only
    /// the raw arguments, which bare `Tool` rules and the mode decide on.
    fn assess(&self, args: &Value, _ctx: &ToolContext) -> Assessment {
        Assessment {
            summary: crate::text::preview(&args.to_string(), 5, 300),
            ..Assessment::default()
        }
    }

    /// How long this call may run, when the tool knows better than the
    /// engine's default (a shell command with its own timeout, say).
    fn timeout(&self, _args: &Value) -> Option<std::time::Duration> {
        None
    }

    /// Run the call with arguments already checked against the schema.
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError>;
}
