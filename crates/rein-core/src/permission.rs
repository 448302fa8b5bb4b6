//! Permission modes and rules: what the gate decides before a tool runs.
//!
//! A tool describes a call in an [`Assessment`] (the subjects rules match,
//! the paths it reads and writes, its risk); [`Permissions::decide`] turns
//! that, the rules and the mode into a [`Verdict`]. Order: secret reads and
//! plan mode first, then deny rules (deny always wins), protected paths, ask
//! rules, allow rules, and finally the mode's default. High-risk calls ask
//! even when the mode would allow them.

use std::path::PathBuf;

/// Folders and files under the home directory that are never read: key
/// rings, cloud and cluster credentials, and the token stores of git
/// credential helpers, forges' command-line tools, package registries,
/// container registries and other agents. Refused to the file tools in
/// every mode and hidden from commands, even when the workspace holds them.
pub const SECRET_HOME_DIRS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".kube",
    ".netrc",
    ".pgpass",
    ".config/gcloud",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/glab-cli",
    ".docker/config.json",
    ".npmrc",
    ".pypirc",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".config/rclone",
    ".password-store",
    ".local/share/keyrings",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".config/github-copilot",
];

/// Everything the gate needs to decide.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    pub mode: PermissionMode,
    pub rules: Rules,
    /// What network shell commands get.
    pub network: NetworkAccess,
    /// Environment variables passed to commands besides the built-in
    /// allowlist.
    pub env_allow: Vec<String>,
    /// The harness's own state folder: hidden from commands, and file
    /// tools never write inside it, nor read there but this session's
    /// saved outputs (which matters when it lies inside the workspace; see
    /// [`ReadFence`]). Set it before the first decision: it is resolved
    /// once.
    pub state_dir: Option<PathBuf>,
    /// Extra folders commands may read (`sandbox.read_paths`).
    pub read_paths: Vec<PathBuf>,
    /// Resource limits of each command (`[sandbox]`).
    pub limits: crate::limits::CommandLimits,
    /// The user's home folder (for the secret folders); None disables that
    /// check. Set it before the first decision: the folders are resolved
    /// once.
    pub home: Option<PathBuf>,
    /// Files a hook or an MCP server of this run executes (canonical
    /// paths inside the workspace, see [`crate::command_files`]): no file
    /// tool writes them and commands see them read-only, as they do
    /// `.git/hooks`, so the model cannot rewrite what runs on the host.
    pub run_files: Vec<PathBuf>,
    pub(super) secret_cache: std::sync::OnceLock<Vec<PathBuf>>,
    pub(super) state_cache: std::sync::OnceLock<Vec<PathBuf>>,
}

impl Permissions {
    /// Defaults for this machine: home from `$HOME`.
    pub fn new(mode: PermissionMode) -> Permissions {
        Permissions {
            mode,
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            ..Default::default()
        }
    }

    /// The secret folders under home, as absolute paths: both as home is
    /// written and with symlinks resolved (a home reached through a symlink
    /// must not open a way around the check).
    pub fn secret_dirs(&self) -> Vec<PathBuf> {
        self.secret_cache
            .get_or_init(|| self.resolve_secret_dirs())
            .clone()
    }

    pub(super) fn resolve_secret_dirs(&self) -> Vec<PathBuf> {
        let Some(home) = &self.home else {
            return Vec::new();
        };
        let mut homes = vec![home.clone()];
        if let Ok(real) = std::fs::canonicalize(home)
            && real != *home
        {
            homes.push(real);
        }
        let mut dirs = Vec::new();
        for h in &homes {
            for d in SECRET_HOME_DIRS {
                let dir = h.join(d);
                if let Ok(real) = std::fs::canonicalize(&dir)
                    && !dirs.contains(&real)
                {
                    dirs.push(real);
                }
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
        }
        dirs
    }

    /// The state folder as written and with symlinks resolved (resolved
    /// once, at the first decision).
    pub(super) fn resolve_state_dirs(&self) -> Vec<PathBuf> {
        let Some(state) = &self.state_dir else {
            return Vec::new();
        };
        let mut dirs = vec![normalise(state)];
        if let Ok(real) = std::fs::canonicalize(state)
            && !dirs.contains(&real)
        {
            dirs.push(real);
        }
        dirs
    }

    /// The sandbox for tools that run programs in `mode`.
    pub fn sandbox(&self, mode: PermissionMode) -> SandboxPolicy {
        SandboxPolicy {
            mode: mode.sandbox(),
            // Plan mode has no side effects: a request that changes
            // something elsewhere would be one.
            network: if mode == PermissionMode::Plan {
                NetworkAccess::Off
            } else {
                self.network.clone()
            },
            env_allow: self.env_allow.clone(),
            read_only: self
                .state_dir
                .iter()
                .chain(&self.run_files)
                .cloned()
                .collect(),
            hidden: self.secret_dirs(),
            home: self.home.clone(),
            state_dir: self.state_dir.clone(),
            read_paths: self.read_paths.clone(),
            limits: self.limits,
        }
    }
}

mod assessment;
mod decide;
mod mode;
mod network;
mod never_read;
mod protected;
mod rule;
pub use assessment::{Assessment, Risk, SubjectKind, Verdict};
pub use mode::{ParseModeError, PermissionMode, SandboxMode, SandboxPolicy};
pub use network::{
    Decision as HostDecision, Host, HostError, HostPattern, HostPolicy, NetworkAccess, PRESETS,
    Target, is_public, parse_host, preset,
};
pub use never_read::ReadFence;
pub use protected::normalise;
pub use protected::protected_write;
pub use rule::{ParseRuleError, Rule, RuleProblem, Rules};

#[cfg(test)]
mod tests;
