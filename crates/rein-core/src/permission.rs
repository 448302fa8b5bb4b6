//! Permission modes and rules: what the gate decides before a tool runs.
//!
//! A tool describes a call in an [`Assessment`] (the subjects rules match,
//! the paths it reads and writes, its risk); [`Permissions::decide`] turns
//! that, the rules and the mode into a [`Verdict`]. Order: secret reads and
//! plan mode first, then deny rules (deny always wins), protected paths, ask
//! rules, allow rules, and finally the mode's default. High-risk calls ask
//! even when the mode would allow them.

use std::fmt;
use std::path::{Path, PathBuf};
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

    /// The refusal a call to a tool this mode does not offer gets.
    pub fn not_offered(self, tool: &str) -> String {
        format!(
            "`{tool}` changes files, and plan mode is read-only, so it is not available. \
             Finish the plan; the user switches modes to carry it out."
        )
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

impl FromStr for PermissionMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == wanted || (wanted == "acceptedits" && *m == PermissionMode::AcceptEdits))
            .ok_or_else(|| {
                format!(
                    "unknown permission mode `{s}`: expected one of default, accept-edits, plan, auto, bypass"
                )
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
    /// Whether commands may use the network.
    pub network: bool,
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
    /// Let shell commands use the network.
    pub network: bool,
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
    secret_cache: std::sync::OnceLock<Vec<PathBuf>>,
    state_cache: std::sync::OnceLock<Vec<PathBuf>>,
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

    fn resolve_secret_dirs(&self) -> Vec<PathBuf> {
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
    fn resolve_state_dirs(&self) -> Vec<PathBuf> {
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
            network: self.network && mode != PermissionMode::Plan,
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

    /// What no rule can allow: reading credentials, a tool the mode does
    /// not offer, a command plan mode cannot sandbox.
    fn refused_outright(
        &self,
        mode: PermissionMode,
        tool: &str,
        access: ToolAccess,
        a: &Assessment,
    ) -> Option<String> {
        let secrets = self.secret_cache.get_or_init(|| self.resolve_secret_dirs());
        for read in a.reads.iter().chain(&a.writes) {
            if let Some(dir) = never_read::secret_holding(secrets, read) {
                return Some(format!(
                    "{} is inside {}, which holds credentials and is never read",
                    read.display(),
                    dir.display()
                ));
            }
        }
        if !mode.offers(access) {
            return Some(mode.not_offered(tool));
        }
        if mode == PermissionMode::Plan && access == ToolAccess::Execute && a.unsandboxed {
            return Some(format!(
                "`{tool}` cannot run in plan mode here: no read-only sandbox is available on this \
                 machine"
            ));
        }
        None
    }

    /// A write into rein's own state (never, but inside a sub-agent's
    /// worktree that is the run's workspace), or into a protected path
    /// that no precise allow rule names.
    fn protected(
        &self,
        tool: &str,
        a: &Assessment,
        all_allow: &[Rule],
        workspace: &Path,
    ) -> Option<String> {
        let rel = |p: &Path| -> String {
            p.strip_prefix(workspace)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| p.to_string_lossy().into_owned())
        };
        let state = self.state_cache.get_or_init(|| self.resolve_state_dirs());
        let ws = normalise(workspace);
        for w in &a.writes {
            let w = normalise(w);
            if let Some(dir) = state.iter().find(|d| w.starts_with(d))
                && !(w.starts_with(&ws) && is_worktree_of(dir, &ws))
            {
                return Some(format!(
                    "{} is inside {}, rein's own state folder (REIN_HOME), which tools never \
                     change",
                    w.display(),
                    dir.display()
                ));
            }
        }
        if let Some(w) = a
            .writes
            .iter()
            .find(|w| self.run_files.contains(&normalise(w)))
        {
            return Some(format!(
                "{} is run on the host by a hook or an MCP server the user approved, so tools \
                 never change it (its approval covers its content)",
                rel(w)
            ));
        }
        for w in &a.writes {
            if let Some(why) = protected_write(w, workspace) {
                let r = rel(w);
                let explicitly_allowed = all_allow.iter().any(|rule| {
                    rule.pattern.is_some() && rule.matches(tool, &r, SubjectKind::Path)
                });
                if !explicitly_allowed {
                    return Some(format!(
                        "{r} is protected ({why}); a rule like `{}` allows it",
                        Rule::exact(tool, &r)
                    ));
                }
            }
        }
        None
    }

    /// Decide one call. `granted` are extra allow rules (approvals this
    /// session). `workspace` is canonical.
    pub fn decide(
        &self,
        mode: PermissionMode,
        tool: &str,
        access: ToolAccess,
        a: &Assessment,
        granted: &[Rule],
        workspace: &Path,
    ) -> Verdict {
        let deny = |why: String| Verdict::Deny { why };
        if let Some(why) = self.refused_outright(mode, tool, access, a) {
            return deny(why);
        }
        let subjects: Vec<&str> = if a.subjects.is_empty() {
            vec![""]
        } else {
            a.subjects.iter().map(String::as_str).collect()
        };
        let hit = |rules: &[Rule], subject: &str| -> Option<Rule> {
            rules
                .iter()
                .find(|r| {
                    if subject.is_empty() || a.opaque {
                        // Only a bare rule covers a call with nothing to match.
                        r.pattern.is_none() && r.matches_tool(tool)
                    } else {
                        r.matches(tool, subject, a.kind)
                    }
                })
                .cloned()
        };
        // Deny and ask rules see every subject, even those of an opaque call:
        // for them, matching too much is the safe side.
        let cautious_hit = |rules: &[Rule]| -> Option<(Rule, String)> {
            if let Some(r) = rules
                .iter()
                .find(|r| r.pattern.is_none() && r.matches_tool(tool))
            {
                return Some((r.clone(), format!("every `{tool}` call")));
            }
            a.subjects.iter().find_map(|s| {
                rules
                    .iter()
                    .find(|r| r.matches(tool, s, a.kind))
                    .map(|r| (r.clone(), format!("`{s}`")))
            })
        };
        if let Some((r, what)) = cautious_hit(&self.rules.deny) {
            return deny(format!("the rule `{r}` denies {what}"));
        }

        let all_allow: Vec<Rule> = self.rules.allow.iter().chain(granted).cloned().collect();
        if let Some(why) = self.protected(tool, a, &all_allow, workspace) {
            return deny(why);
        }

        let ask_hit = cautious_hit(&self.rules.ask).map(|(r, _)| r);
        let allowed: Vec<Option<Rule>> = subjects.iter().map(|s| hit(&all_allow, s)).collect();
        let all_allowed = allowed.iter().all(Option::is_some);
        // A call with nothing to match (an MCP tool) is named precisely by
        // a bare rule spelling the tool's whole name; otherwise only rules
        // with a pattern are precise.
        let names_it = |r: &Rule| {
            r.pattern.is_some() || (a.subjects.is_empty() && !a.opaque && r.tool == tool)
        };
        let specific = all_allowed && allowed.iter().flatten().all(names_it);

        let suggestion = |why: String, mode_fix: Option<PermissionMode>| {
            let rules = if a.opaque {
                Vec::new()
            } else {
                subjects
                    .iter()
                    .zip(&allowed)
                    .filter(|(s, r)| r.is_none() && !s.is_empty())
                    .map(|(s, _)| Rule::exact(tool, s))
                    .collect()
            };
            Verdict::Ask {
                why,
                suggested_rules: rules,
                suggested_mode: mode_fix,
            }
        };

        if a.needs_user && !specific {
            let why = match a.reasons.is_empty() {
                true => "this call needs the user's approval in every mode".to_string(),
                false => a.reasons.join("; "),
            };
            return suggestion(why, None);
        }
        if mode != PermissionMode::Bypass {
            if a.unsandboxed {
                return suggestion(
                    "no sandbox is available on this machine, so every command needs approval"
                        .to_string(),
                    None,
                );
            }
            if let Some(r) = ask_hit {
                return suggestion(format!("the rule `{r}` asks first"), None);
            }
            if a.risk == Risk::High && !specific {
                let mut why = "high risk".to_string();
                if !a.reasons.is_empty() {
                    why = format!("high risk: {}", a.reasons.join("; "));
                }
                return suggestion(why, None);
            }
        }
        if all_allowed {
            return Verdict::Allow;
        }
        let needs = |what: &str, fix: PermissionMode| {
            suggestion(format!("{what} need approval in `{mode}` mode"), Some(fix))
        };
        match (mode, access) {
            (PermissionMode::Bypass | PermissionMode::Auto, _) => Verdict::Allow,
            (_, ToolAccess::Read) => Verdict::Allow,
            (PermissionMode::Plan, ToolAccess::Execute) if a.in_sandbox => Verdict::Allow,
            (PermissionMode::AcceptEdits, ToolAccess::Write) => Verdict::Allow,
            (_, ToolAccess::Write) => needs("file changes", PermissionMode::AcceptEdits),
            (_, ToolAccess::Execute) => needs(
                "commands (and tools that are not read-only)",
                PermissionMode::Auto,
            ),
        }
    }
}

mod never_read;
mod protected;
mod rule;
pub use never_read::ReadFence;
pub use protected::normalise;
pub use protected::protected_write;
pub use rule::{Rule, Rules};

#[cfg(test)]
mod tests;

/// Whether `workspace` is a sub-agent's git worktree in rein's state
/// folder `state` (`state/worktrees/REPO/NAME`, or a folder in one): the
/// one part of that folder a run may write, when it is the run's
/// workspace.
fn is_worktree_of(state: &Path, workspace: &Path) -> bool {
    workspace
        .strip_prefix(state.join("worktrees"))
        .is_ok_and(|rel| rel.components().count() >= 2)
}
