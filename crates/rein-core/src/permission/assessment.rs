//! What a tool says about a call (its [`Assessment`]) and what the
//! permission check answers (its [`Verdict`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{PermissionMode, Rule};

/// How dangerous a call is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    #[default]
    Low,
    High,
}

/// How rule patterns of a tool's subjects are matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubjectKind {
    /// Shell commands: `*` matches anything.
    #[default]
    Command,
    /// Paths relative to the workspace (absolute when outside).
    Path,
}

/// What a tool says about one call before it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assessment {
    /// What `Tool(pattern)` rules are matched against: each simple command
    /// of a shell line, the path a file tool touches. Every subject must be
    /// allowed for the call to be allowed.
    pub subjects: Vec<String>,
    pub kind: SubjectKind,
    /// Absolute paths the call reads.
    pub reads: Vec<PathBuf>,
    /// Absolute paths the call writes.
    pub writes: Vec<PathBuf>,
    /// The test command the call runs, when it runs tests (the task
    /// ledger keeps the last test run's result).
    pub test_command: Option<String>,
    pub risk: Risk,
    /// Why the risk is what it is, for people and the model.
    pub reasons: Vec<String>,
    /// What the call does, for an approval prompt: the parsed command, the
    /// file and the change.
    pub summary: String,
    /// The call could not be analysed (say, a shell line that does not
    /// parse): no allow rule can cover it.
    pub opaque: bool,
    /// The call would run without the sandbox its mode requires.
    pub unsandboxed: bool,
    /// The call runs inside its mode's sandbox (a shell command), which in
    /// plan mode is read-only and offline: what lets plan mode run it
    /// without asking. Any other call that is not read-only (an MCP tool's)
    /// asks in plan mode as in default mode, so plan is never looser.
    pub in_sandbox: bool,
    /// The call reaches past this project and this session (a global
    /// memory enters every later project's prompt): it needs the user's
    /// approval in every mode, bypass and plan included, unless a rule
    /// naming its subjects precisely allows it. `reasons` say why.
    pub needs_user: bool,
}

/// The gate's answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Someone must approve it first.
    Ask {
        /// Why it needs approval.
        why: String,
        /// Precise rules that would allow it (one per subject not allowed).
        suggested_rules: Vec<Rule>,
        /// A mode under which it would run without asking, if any.
        suggested_mode: Option<PermissionMode>,
    },
    Deny {
        why: String,
    },
}
