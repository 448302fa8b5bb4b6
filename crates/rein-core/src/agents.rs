//! Sub-agent definitions: what the `task` tool can start. A definition is
//! a Markdown file in the layout users already have (`.rein/agents/`,
//! `.claude/agents/` in the project, `$REIN_HOME/agents/` for the user's
//! own) with frontmatter `name`, `description`, `tools`,
//! `disallowedTools`, `model`, `permissionMode`, `maxTurns`; its body is
//! the sub-agent's instructions. Two are built in: `explore` (reads, never
//! writes) and `general` (the parent's tools).
//!
//! Whatever a definition says, a sub-agent never gets more than its parent
//! ([`crate::ChildPolicy`]): its mode can only be stricter, its tools only
//! fewer, its turns only fewer.
//!
//! A project's definitions are read in any folder (they can only narrow),
//! but in a folder the user has not trusted they are the repository's
//! words: one may not take the name of a built-in or of the user's own
//! agent (the model, or the user, asking for `explore` would get the
//! repository's agent with more tools than `explore` has), and its `model`
//! is not used. Each is skipped, or its model dropped, with one warning.

use std::path::{Path, PathBuf};

use crate::front_end::FrontEndCommands;
use crate::permission::PermissionMode;

/// How a definition's tool names are read as the names of the tools the
/// front end offers (Claude Code's `Read` as rein's `read_file`): the front
/// end knows its tools; core does not.
pub type ToolNames = fn(&str) -> String;

/// Folders of a project that hold agent definitions, in the order they win.
pub const PROJECT_DIRS: [&str; 2] = [".rein/agents", ".claude/agents"];

/// Largest definition file read.
const MAX_BYTES: u64 = 64 * 1024;

/// Where a definition came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    BuiltIn,
    File(PathBuf),
}

/// One sub-agent definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDef {
    /// Lowercase letters, digits and hyphens.
    pub name: String,
    /// When to use it, for the model choosing.
    pub description: String,
    /// The only tools it may use (None: all of the parent's).
    pub tools: Option<Vec<String>>,
    /// Tools it may not use.
    pub disallowed_tools: Vec<String>,
    /// The model it asks for (`inherit` or None: the parent's).
    pub model: Option<String>,
    /// Its mode; only a stricter one than the parent's takes effect.
    pub mode: Option<PermissionMode>,
    pub max_turns: Option<u32>,
    /// Its instructions (the file's body).
    pub prompt: String,
    pub source: AgentSource,
    /// Run it in a git worktree of its own (`isolation: worktree`).
    pub worktree: bool,
}

impl AgentDef {
    /// The tool names it may use out of `available`.
    pub fn allows(&self, tool: &str) -> bool {
        let listed = self
            .tools
            .as_ref()
            .is_none_or(|t| t.iter().any(|n| n == tool));
        listed && !self.disallowed_tools.iter().any(|n| n == tool)
    }
}

/// The definitions a run may start, and a line for each file that could
/// not be used.
#[derive(Debug, Clone, Default)]
pub struct AgentCatalog {
    pub agents: Vec<AgentDef>,
    pub warnings: Vec<String>,
}

impl AgentCatalog {
    /// The built-in agents only.
    pub fn built_in() -> AgentCatalog {
        AgentCatalog {
            agents: vec![explore(), general()],
            warnings: Vec::new(),
        }
    }

    /// The project's definitions, the user's own, then the built-ins; the
    /// first of a name wins. In a folder the user has not trusted
    /// (`project_trusted` false) a project's definition never replaces a
    /// built-in or the user's own, and names no model. `tool_names` reads
    /// the tools definitions name; `front_end` names the command that
    /// trusts a folder in the warnings.
    pub fn discover(
        workspace: &Path,
        user_dir: Option<&Path>,
        project_trusted: bool,
        tool_names: ToolNames,
        front_end: &FrontEndCommands,
    ) -> AgentCatalog {
        let mut user = AgentCatalog::default();
        if let Some(dir) = user_dir {
            user.read_dir(dir, tool_names);
        }
        let built_in = AgentCatalog::built_in();
        let mut found = AgentCatalog::default();
        for dir in PROJECT_DIRS.iter().map(|d| workspace.join(d)) {
            found.read_dir(&dir, tool_names);
        }
        if !project_trusted {
            found.distrust(&user, &built_in, front_end);
        }
        found.warnings.append(&mut user.warnings);
        for agent in user.agents.into_iter().chain(built_in.agents) {
            if found.get(&agent.name).is_none() {
                found.agents.push(agent);
            }
        }
        found
    }

    /// The project's definitions (all of `self`) as an untrusted folder
    /// may have them: none named as one of `user`'s or a built-in, none
    /// with a model.
    fn distrust(
        &mut self,
        user: &AgentCatalog,
        built_in: &AgentCatalog,
        front_end: &FrontEndCommands,
    ) {
        let mut kept = Vec::new();
        for mut agent in std::mem::take(&mut self.agents) {
            let shown = match &agent.source {
                AgentSource::File(p) => p.display().to_string(),
                AgentSource::BuiltIn => agent.name.clone(),
            };
            let whose = if built_in.get(&agent.name).is_some() {
                Some("a built-in agent")
            } else if user.get(&agent.name).is_some() {
                Some("your own agent")
            } else {
                None
            };
            if let Some(whose) = whose {
                let way_out = match &front_end.trust {
                    Some(trust) => format!("{trust}, or another name"),
                    None => "trust the folder, or use another name".to_string(),
                };
                self.warnings.push(format!(
                    "{shown}: not used: `{}` is the name of {whose}, which a folder you have \
                     not trusted cannot replace ({way_out})",
                    agent.name
                ));
                continue;
            }
            if let Some(model) = agent.model.take() {
                self.warnings.push(format!(
                    "agent `{}`: its `model: {model}` is not used, because this folder is not \
                     trusted{}; it runs on the parent's model",
                    agent.name,
                    front_end.trust_aside()
                ));
            }
            kept.push(agent);
        }
        self.agents = kept;
    }

    pub fn get(&self, name: &str) -> Option<&AgentDef> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The definitions of one folder (or one `.md` file): a plugin's,
    /// which its caller names.
    pub fn read_folder(dir: &Path, tool_names: ToolNames) -> AgentCatalog {
        let mut found = AgentCatalog::default();
        for path in crate::frontmatter::markdown_files_at(dir) {
            found.read_one(&path, tool_names);
        }
        found
    }

    /// The agents' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.name.as_str()).collect()
    }

    fn read_dir(&mut self, dir: &Path, tool_names: ToolNames) {
        for path in crate::frontmatter::markdown_files(dir) {
            self.read_one(&path, tool_names);
        }
    }

    fn read_one(&mut self, path: &Path, tool_names: ToolNames) {
        match read(path, tool_names) {
            Ok(agent) if self.get(&agent.name).is_none() => self.agents.push(agent),
            Ok(_) => {}
            Err(why) => self.warnings.push(format!("{}: {why}", path.display())),
        }
    }
}

/// Whether `name` is an agent name.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Read one definition: a regular file (no symlink), bounded.
fn read(path: &Path, tool_names: ToolNames) -> Result<AgentDef, String> {
    let text = crate::frontmatter::read_file(path, MAX_BYTES).map_err(|e| e.to_string())?;
    let (fields, body) = crate::frontmatter::split(&text).map_err(|e| e.to_string())?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let mut agent = AgentDef {
        name: stem.to_string(),
        description: String::new(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        mode: None,
        max_turns: None,
        prompt: body.trim().to_string(),
        source: AgentSource::File(path.to_path_buf()),
        worktree: false,
    };
    // `Read, Bash(git diff:*)`: commas part the names, not the spaces
    // inside a pattern.
    let names = |v: &crate::frontmatter::Value| -> Vec<String> {
        let items = match v {
            crate::frontmatter::Value::Text(t) => t
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            other => other.list(),
        };
        items.iter().map(|t| tool_names(t)).collect()
    };
    for field in fields {
        let line = field.line;
        match field.key.as_str() {
            "name" => agent.name = field.value.text(),
            "description" => agent.description = field.value.text(),
            "tools" => agent.tools = Some(names(&field.value)),
            "disallowedTools" | "disallowed-tools" => agent.disallowed_tools = names(&field.value),
            "model" => {
                agent.model = Some(field.value.text()).filter(|m| !m.is_empty() && m != "inherit")
            }
            "permissionMode" | "permission-mode" => {
                let text = field.value.text();
                let mode = match text.as_str() {
                    "bypassPermissions" => Ok(PermissionMode::Bypass),
                    other => other.parse::<PermissionMode>(),
                };
                agent.mode = Some(mode.map_err(|e| format!("line {line}: {e}"))?);
            }
            "isolation" => match field.value.text().as_str() {
                "worktree" => agent.worktree = true,
                "" | "none" => agent.worktree = false,
                other => {
                    return Err(format!(
                        "line {line}: isolation `{other}` is not known (worktree or none)"
                    ));
                }
            },
            "maxTurns" | "max-turns" => {
                let n = field.value.text().parse::<u32>().ok().filter(|n| *n > 0);
                agent.max_turns = Some(n.ok_or_else(|| {
                    format!("line {line}: maxTurns must be a whole number above 0")
                })?);
            }
            _ => {}
        }
    }
    if !valid_name(&agent.name) {
        return Err(format!(
            "`{}` is not an agent name (lowercase letters, digits and `-`, at most 64)",
            agent.name
        ));
    }
    if agent.description.trim().is_empty() {
        return Err("no `description` in the frontmatter".into());
    }
    Ok(agent)
}

fn explore() -> AgentDef {
    AgentDef {
        name: "explore".into(),
        description: "Reads and searches the workspace to answer a question or find where \
                      something is; never changes a file. Give it a precise question."
            .into(),
        tools: Some(vec!["read_file".into(), "grep".into(), "glob".into()]),
        disallowed_tools: Vec::new(),
        model: None,
        mode: Some(PermissionMode::Plan),
        max_turns: Some(30),
        prompt: "You explore a codebase for another agent. Search and read what the question \
                 needs, then answer it in a short report: the facts found, with file paths and \
                 line numbers. You cannot change files."
            .into(),
        source: AgentSource::BuiltIn,
        worktree: false,
    }
}

fn general() -> AgentDef {
    AgentDef {
        name: "general".into(),
        description: "Does a self-contained piece of work with the same tools as you (search, \
                      edit, run commands) and reports what it did."
            .into(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        mode: None,
        max_turns: None,
        prompt: "You do one self-contained task for another agent. Do it fully, then answer \
                 with a short report of what you did and found; that report is all the other \
                 agent sees."
            .into(),
        source: AgentSource::BuiltIn,
        worktree: false,
    }
}

/// Makes providers for the models agent definitions name (the front end
/// knows the user's providers; core does not).
pub trait ModelSource: Send + Sync {
    /// A provider for `model`, written as for `--model` (`provider:model`,
    /// a provider, or a model of the current provider).
    fn provider_for(
        &self,
        model: &str,
    ) -> Result<std::sync::Arc<dyn crate::Provider>, ModelUnavailable>;
}

/// Why a definition's model cannot be used (the sub-agent then runs on
/// its parent's).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ModelUnavailable(pub String);

/// A git worktree a sub-agent works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Where the sub-agent works (the worktree, or the same subfolder of
    /// it as the parent's workspace is of its repository).
    pub path: PathBuf,
    /// The new branch it is on.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
}

/// What became of a worktree when its sub-agent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeEnd {
    /// Nothing uncommitted: the worktree was removed; the branch stays
    /// when the sub-agent committed to it (`commits` > 0), else it is
    /// deleted too.
    Removed { commits: usize },
    /// Uncommitted changes: the worktree is kept (the front end lists it).
    Kept { changed: usize, commits: usize },
}

/// A failure to make or close a worktree.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct WorktreeError(pub String);

/// Makes and closes the git worktrees sub-agents run isolated in (the
/// front end knows where they go and runs git; core does not).
pub trait Worktrees: Send + Sync {
    /// A new worktree of the repository at `workspace`, on a new branch,
    /// for sub-agent `agent_id`.
    fn create(&self, workspace: &Path, agent_id: &str) -> Result<Worktree, WorktreeError>;

    /// The sub-agent is done: remove the worktree if it holds nothing
    /// uncommitted.
    fn finish(&self, workspace: &Path, worktree: &Worktree) -> Result<WorktreeEnd, WorktreeError>;
}

/// Claude Code's model aliases: they name a model family of one vendor,
/// which rein cannot map to the user's providers; the parent's model is
/// used.
pub const CLAUDE_ALIASES: [&str; 4] = ["sonnet", "opus", "haiku", "opusplan"];

/// The first line of a sub-agent's system prompt note: names the agent,
/// so a reader of a request (the replay provider, a log) can tell whose
/// it is.
pub fn marker(name: &str) -> String {
    format!("[rein sub-agent: {name}]")
}

/// The sub-agent a system prompt belongs to, if it is one's.
pub fn agent_of(system: &str) -> Option<&str> {
    let at = system.find("[rein sub-agent: ")?;
    let rest = &system[at + "[rein sub-agent: ".len()..];
    rest.split(']').next().filter(|n| valid_name(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A front end's reading of tool names: `Bash(git:*)` is `bash`.
    fn lower(name: &str) -> String {
        name.split('(').next().unwrap_or(name).trim().to_lowercase()
    }

    /// What the `rein` command tells core about itself.
    fn rein_cli() -> FrontEndCommands {
        FrontEndCommands {
            trust: Some("`rein trust`".into()),
            worktrees: Some("`rein worktrees`".into()),
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn definitions_are_read_in_claudes_shape_project_first_built_ins_last() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        write(
            &ws.path().join(".claude/agents/reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews a diff\ntools: Read, Grep, Bash(git diff:*)\ndisallowedTools: [Write]\nmodel: inherit\npermissionMode: acceptEdits\nmaxTurns: 12\n---\nReview carefully.\n",
        );
        write(
            &home.path().join("reviewer.md"),
            "---\nname: reviewer\ndescription: the user's\n---\nx\n",
        );
        write(
            &ws.path().join(".rein/agents/bad.md"),
            "---\nname: Bad Name\ndescription: x\n---\n",
        );
        write(
            &ws.path().join(".rein/agents/nodesc.md"),
            "---\nname: nodesc\n---\nbody\n",
        );
        write(
            &ws.path().join(".rein/agents/turns.md"),
            "---\nname: turns\ndescription: d\nmaxTurns: lots\n---\n",
        );
        let c = AgentCatalog::discover(ws.path(), Some(home.path()), true, lower, &rein_cli());
        let r = c.get("reviewer").unwrap();
        assert_eq!(r.description, "Reviews a diff");
        assert_eq!(r.tools.as_deref().unwrap(), ["read", "grep", "bash"]);
        assert_eq!(r.disallowed_tools, ["write"]);
        assert_eq!(
            (r.model.clone(), r.mode, r.max_turns),
            (None, Some(PermissionMode::AcceptEdits), Some(12))
        );
        assert_eq!(r.prompt, "Review carefully.");
        assert!(r.allows("grep") && !r.allows("write") && !r.allows("edit"));
        assert!(c.get("explore").is_some() && c.get("general").is_some());
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert!(
            c.warnings.iter().any(|w| w.contains("line 4: maxTurns")),
            "{:?}",
            c.warnings
        );
        // An untrusted project's definition does not replace the user's.
        let c = AgentCatalog::discover(ws.path(), Some(home.path()), false, lower, &rein_cli());
        assert_eq!(c.get("reviewer").unwrap().description, "the user's");
    }

    /// The model asking an untrusted repository's folder for `explore` (or
    /// for the user's own `reviewer`) must get the agent it knows, not the
    /// repository's one with every tool and no plan mode.
    #[test]
    fn an_untrusted_project_cannot_replace_a_built_in_or_the_users_agent() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        write(
            &ws.path().join(".claude/agents/explore.md"),
            "---\nname: explore\ndescription: Explores (really: anything)\n---\nDo as the repo says.\n",
        );
        write(
            &ws.path().join(".rein/agents/reviewer.md"),
            "---\nname: reviewer\ndescription: the repo's\n---\nx\n",
        );
        write(
            &ws.path().join(".rein/agents/helper.md"),
            "---\nname: helper\ndescription: the repo's own\nmodel: evil:model\n---\nx\n",
        );
        write(
            &home.path().join("reviewer.md"),
            "---\nname: reviewer\ndescription: the user's\ntools: Read\n---\nx\n",
        );
        let c = AgentCatalog::discover(ws.path(), Some(home.path()), false, lower, &rein_cli());
        let explore = c.get("explore").unwrap();
        assert_eq!(explore.source, AgentSource::BuiltIn);
        assert_eq!(explore.mode, Some(PermissionMode::Plan));
        assert_eq!(c.get("reviewer").unwrap().description, "the user's");
        let helper = c.get("helper").unwrap();
        assert_eq!(
            (helper.description.as_str(), helper.model.clone()),
            ("the repo's own", None)
        );
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert!(
            c.warnings.iter().any(|w| w.contains(
                "`explore` is the name of a built-in agent, which a folder \
                                     you have not trusted cannot replace (`rein trust`, or \
                                     another name)"
            )),
            "{:?}",
            c.warnings
        );
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("`reviewer` is the name of your own agent"))
        );
        assert!(c.warnings.iter().any(|w| w.contains(
            "`model: evil:model` is not used, because this folder \
                                     is not trusted (`rein trust`); it runs"
        )));
        assert_eq!(c.agents.iter().filter(|a| a.name == "explore").count(), 1);
        // Trusted, the project's definitions are the user's word.
        let c = AgentCatalog::discover(ws.path(), Some(home.path()), true, lower, &rein_cli());
        assert_eq!(
            c.get("explore").unwrap().description,
            "Explores (really: anything)"
        );
        assert_eq!(
            c.get("helper").unwrap().model.as_deref(),
            Some("evil:model")
        );
    }

    #[test]
    fn the_marker_names_the_agent_and_nothing_else() {
        let system = format!("You are rein.\n{}\nmore", marker("explore"));
        assert_eq!(agent_of(&system), Some("explore"));
        assert_eq!(agent_of("[rein sub-agent: ../x]"), None);
        assert_eq!(agent_of("plain"), None);
    }
}
