//! Permission modes: how much the agent may do without asking, and the
//! sandbox each gives the programs it runs.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::tool::ToolAccess;

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reads run; edits and shell commands ask unless a rule allows them.
    #[default]
    Default,
    /// File edits inside the workspace run; shell commands ask.
    AcceptEdits,
    /// Read-only: no write tools, and the shell's whole filesystem is
    /// read-only.
    Plan,
    /// Everything runs without asking, inside the sandbox.
    Auto,
    /// No sandbox and no asking. Only by an explicit flag.
    Bypass,
}

impl PermissionMode {
    pub const ALL: [PermissionMode; 5] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::Auto,
        PermissionMode::Bypass,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Auto => "auto",
            PermissionMode::Bypass => "bypass",
        }
    }

    /// How loose a mode is: plan < default < accept-edits < auto < bypass.
    pub fn looseness(self) -> u8 {
        match self {
            PermissionMode::Plan => 0,
            PermissionMode::Default => 1,
            PermissionMode::AcceptEdits => 2,
            PermissionMode::Auto => 3,
            PermissionMode::Bypass => 4,
        }
    }

    /// This mode, or `ceiling` when this one is looser.
    pub fn at_most(self, ceiling: PermissionMode) -> PermissionMode {
        if self.looseness() > ceiling.looseness() {
            ceiling
        } else {
            self
        }
    }

    /// The next mode of the interactive cycle (bypass is never cycled to).
    pub fn cycle(self) -> PermissionMode {
        match self {
            PermissionMode::Default => PermissionMode::AcceptEdits,
            PermissionMode::AcceptEdits => PermissionMode::Plan,
            PermissionMode::Plan => PermissionMode::Auto,
            PermissionMode::Auto | PermissionMode::Bypass => PermissionMode::Default,
        }
    }

    /// Whether tools of `access` are offered to the model, and may run, in
    /// this mode: plan mode offers none that change files. The one place
    /// that rule is decided (the gate's tool list, its first check, and
    /// the permission decision all ask here).
    pub fn offers(self, access: ToolAccess) -> bool {
        !(self == PermissionMode::Plan && access == ToolAccess::Write)
    }

    /// The sandbox shell commands get in this mode.
    pub fn sandbox(self) -> SandboxMode {
        match self {
            PermissionMode::Bypass => SandboxMode::Off,
            PermissionMode::Plan => SandboxMode::ReadOnly,
            _ => SandboxMode::WorkspaceWrite,
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no permission mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{given}`: expected one of default, accept-edits, plan, auto, bypass"
)]
pub struct ParseModeError {
    /// The name as it was written.
    pub given: String,
}

impl FromStr for PermissionMode {
    type Err = ParseModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        PermissionMode::ALL
            .into_iter()
            .find(|m| {
                m.as_str() == wanted
                    || (wanted == "acceptedits" && *m == PermissionMode::AcceptEdits)
            })
            .ok_or_else(|| ParseModeError {
                given: s.to_string(),
            })
    }
}

/// What a shell command may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox at all (bypass mode).
    Off,
    /// Everything read-only except the workspace and a private /tmp.
    #[default]
    WorkspaceWrite,
    /// The whole filesystem read-only (plan mode); a private /tmp.
    ReadOnly,
}

/// The sandbox a tool that runs programs must apply. Serialisable: `rein
/// acp` hands it to the process that runs a command in the editor's
/// terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// What network commands get.
    pub network: super::NetworkAccess,
    /// Environment variables passed to commands besides the built-in
    /// allowlist (see the sandbox of the tools crate).
    pub env_allow: Vec<String>,
    /// Paths kept read-only even inside the workspace (besides `.git/hooks`
    /// and `.rein`, which the tool protects itself): the harness's own state
    /// and the files hooks and MCP servers run.
    pub read_only: Vec<PathBuf>,
    /// Folders and files hidden from commands entirely (credential
    /// stores), even inside the workspace.
    pub hidden: Vec<PathBuf>,
    /// The user's home folder, hidden from commands except the toolchain
    /// folders in it; `None`: `$HOME` of this process.
    pub home: Option<PathBuf>,
    /// The harness's state folder (`$REIN_HOME`), never visible to commands.
    pub state_dir: Option<PathBuf>,
    /// Folders the user made readable to commands although they lie in a
    /// hidden place (`sandbox.read_paths`).
    pub read_paths: Vec<PathBuf>,
    /// Resource limits of each command.
    pub limits: crate::limits::CommandLimits,
}
