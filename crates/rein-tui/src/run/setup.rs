//! What the `rein` command hands the app: the engine, the ways to build
//! providers, the MCP servers, skills, rewind, and the watchers of runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rein_core::{AgentEngine, PermissionMode};
use tokio::sync::mpsc;

pub use super::watch::{RunWatcher, WatchRuns};

/// Builds the provider `/model TEXT` names.
pub type ProviderFactory =
    Box<dyn Fn(&str) -> anyhow::Result<Arc<dyn rein_core::Provider>> + Send + Sync>;

/// What the `rein` command hands the app.
pub struct Setup {
    /// `$REIN_HOME`: input history and logs live here.
    pub home: PathBuf,
    /// The engine every run of the app uses (built with
    /// `Approvals::Events`, so approvals reach the modal); its workspace
    /// and session store are the app's.
    pub engine: AgentEngine,
    pub providers: ProviderFactory,
    /// What `/model` with no name lists besides the current model: the
    /// known local models and whether each is here.
    pub model_choices: Vec<String>,
    pub mode: PermissionMode,
    /// Continue this session at start.
    pub resume: Option<String>,
    /// Lines to show first (sandbox notes and the like).
    pub notices: Vec<String>,
    /// Draw on the alternate screen instead of inline.
    pub alternate_screen: bool,
    /// How long after a run the app waits for a key before it tells the
    /// `Notification` hooks it is idle.
    pub idle_notify: Duration,
    /// A first message, sent as the app opens (`rein "prompt"`).
    pub prompt: Option<String>,
    /// The MCP servers, when some are configured.
    pub mcp: Option<McpView>,
    /// Why configured servers were not started, for `/mcp` (none
    /// running).
    pub mcp_not_started: Option<String>,
    /// `/lsp`: a line per language server, made when asked.
    pub lsp_status: Option<super::servers::StatusLines>,
    /// The custom commands (`.rein/commands/`, `.claude/commands/`,
    /// `$REIN_HOME/commands/`), offered as `/NAME`.
    pub commands: Vec<rein_core::commands::CustomCommand>,
    /// Checks a custom command as every front end does (or refuses it).
    pub expand_command: Option<ExpandCommand>,
    /// Prepares each message as every front end does (its command's
    /// context lines and files, its scope, its skills and resources).
    pub prepare: Option<Prepare>,
    /// The skills (name, description) `/skills` lists.
    pub skills: Vec<(String, String)>,
    /// The installed plugins, one line each, as `/plugins` lists them.
    pub plugins: Vec<String>,
    /// The session's checkpoints and going back to one (none when
    /// checkpoints are off).
    pub rewind: Option<crate::rewind::RewindView>,
    /// Makes a watcher for each run the app starts (telemetry), when
    /// something watches runs.
    pub watch_runs: Option<WatchRuns>,
    /// Lines said while the app runs (telemetry's export failure),
    /// shown as notices as they come.
    pub notes: Option<mpsc::UnboundedReceiver<String>>,
    /// `[tui] status_command`: a command that writes the status line.
    pub status_command: Option<super::status_command::StatusCommand>,
}

/// What a custom command makes of its arguments (name, arguments), or
/// the one line saying why it cannot run.
pub type ExpandCommand = Arc<dyn Fn(&str, &str) -> Result<CommandText, String> + Send + Sync>;

/// A custom command expanded, before it is prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandText {
    pub text: String,
    /// It needs a run of its own: it runs context lines, attaches files,
    /// or sets its tools or model (so it cannot be queued into a run
    /// under way).
    pub own_run: bool,
}

/// One message to prepare, in the session it goes to.
pub struct PromptCall {
    /// As typed (`/NAME ARGS` for a custom command).
    pub text: String,
    /// None: a new session.
    pub session_id: Option<String>,
    pub mode: PermissionMode,
    /// Where the gate's events of the command's context lines go (an
    /// approval asked reaches the app's modal).
    pub events: rein_core::GateEvents,
    pub cancel: tokio_util::sync::CancellationToken,
}

/// A message ready for its run: the text, what its run alone may do, and
/// notes for the user.
pub struct PreparedPrompt {
    pub text: String,
    pub scope: rein_core::RunScope,
    pub notes: Vec<String>,
    /// A session made for the message's calls when there was none yet:
    /// the run continues it.
    pub session: Option<String>,
    /// Images the message attaches (image files it names).
    pub images: Vec<rein_core::Image>,
}

/// Prepares a message, or says in one line why it is not sent.
pub type Prepare =
    Arc<dyn Fn(PromptCall) -> McpFuture<Result<PreparedPrompt, String>> + Send + Sync>;

/// A future the MCP closures return.
pub type McpFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;
/// The text of a prompt command (`/mcp__...`, its arguments).
pub type McpPrompt = Arc<dyn Fn(String, String) -> McpFuture<Result<String, String>> + Send + Sync>;

/// The MCP servers as the app sees them: the command starts and follows
/// them; the app shows their status (`/mcp`) and what it says of them
/// later (a server that failed after the app opened), and sends servers'
/// prompts (`/mcp__server__prompt`); the resources a message names are
/// attached by [`Setup::prepare`].
pub struct McpView {
    /// A line per server: its status, tools, last error.
    pub status: Box<dyn Fn() -> Vec<String> + Send + Sync>,
    /// Notes that come while the app runs.
    pub notes: mpsc::UnboundedReceiver<String>,
    /// The text of a prompt command with its arguments.
    pub prompt: McpPrompt,
    /// The servers' forms, shown as they come.
    pub forms: mpsc::UnboundedReceiver<crate::form::FormRequest>,
}
