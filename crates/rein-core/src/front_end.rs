//! The front end's own commands that core's messages point to: how the
//! user trusts a folder, where kept worktrees are listed. Core names no
//! command of any front end; the one that builds the engine says them
//! (`rein trust` and `rein worktrees` for the `rein` command).

/// Commands of the front end named in what core tells the model and the
/// user; `None`: the message names none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontEndCommands {
    /// How the user trusts the workspace folder (`` `rein trust` ``).
    pub trust: Option<String>,
    /// How the user lists the worktrees sub-agents left behind
    /// (`` `rein worktrees` ``).
    pub worktrees: Option<String>,
}

impl FrontEndCommands {
    /// ` (TRUST)` after a sentence saying a folder is not trusted; empty
    /// when there is no such command.
    pub fn trust_aside(&self) -> String {
        self.trust
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default()
    }
}
