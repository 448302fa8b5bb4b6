//! One prompt preparation for every front end (`rein exec`, the app,
//! `rein acp`, `rein serve`). A prompt is prepared in two steps:
//!
//! 1. [`CommandSet::expand`]: text starting with `/NAME` (a command name:
//!    letters, digits, `-`, `_`, `:`) is a custom command. A known one is
//!    expanded with what followed its name; an unknown one is refused.
//!    Trust rules come with the commands ([`rein_core::commands`]): a
//!    project's command in an untrusted folder chooses no model and its
//!    own `@server:uri` mentions come out escaped.
//!
//!    Between the steps, a command's `` !`cmd` `` context lines run and its
//!    `@path` files are read through the session's gate
//!    ([`super::command_context`]).
//! 2. [`Attachments::attach`]: the skills the text names (`$name`) and the
//!    MCP resources it names (`@server:uri`) go after it; a `$name` that
//!    is no skill and a resource that cannot be read are notes, not
//!    failures (each front end shows its notes as it shows the others).
//!
//! A command's `model` and `allowed-tools` (which narrows the tools and,
//! for a trusted command, pre-approves them) hold for its one run, never
//! for the session's other prompts ([`super::prepare`]).

use std::path::Path;
use std::sync::Arc;

use rein_core::commands::{Commands, CustomCommand};
use rein_mcp::McpHub;
use rein_tools::skills::Skills;

use crate::config::Config;

/// Why a prompt was refused before it reached the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("the prompt is empty")]
    Empty,
    #[error("no command named `{name}`: {known}")]
    UnknownCommand { name: String, known: String },
    #[error("the command `{0}` is empty")]
    EmptyCommand(String),
}

/// A prompt after step 1: its text, and the command it came from.
#[derive(Debug, Clone)]
pub struct Expanded {
    pub text: String,
    pub command: Option<CustomCommand>,
    /// When a command was named: what discovering the commands found
    /// wrong (one line each, without a `note:` prefix).
    pub notes: Vec<String>,
}

/// The custom commands of one workspace, for step 1.
#[derive(Debug, Clone)]
pub struct CommandSet {
    found: Commands,
}

impl CommandSet {
    /// The commands of `workspace` (`.rein/commands/`, `.claude/commands/`)
    /// and the user's (`$REIN_HOME/commands/`), then the enabled plugins';
    /// rein's own slash commands
    /// keep their names. In a folder the user has not trusted, the
    /// project's choose no model and name no MCP resources.
    pub fn discover(cfg: &Config, workspace: &Path) -> CommandSet {
        let reserved: Vec<&str> = rein_tui::complete::SLASH_COMMANDS
            .iter()
            .map(|(name, _)| name.trim_start_matches('/'))
            .collect();
        let user = cfg.home.join("commands");
        let front_end = super::engine::front_end_commands();
        let mut found =
            Commands::discover(workspace, Some(&user), &reserved, cfg.trusted, &front_end);
        crate::plugin::load::add_commands(&mut found, &cfg.home, &reserved, &front_end);
        found.add_built_in();
        CommandSet { found }
    }

    /// What discovering the commands found wrong (one line each).
    pub fn warnings(&self) -> &[String] {
        &self.found.warnings
    }

    pub fn commands(&self) -> &[CustomCommand] {
        &self.found.commands
    }

    /// Step 1 for typed text: `/NAME ARGS` expanded, anything else as it is.
    pub fn expand(&self, text: &str) -> Result<Expanded, PromptError> {
        if text.trim().is_empty() {
            return Err(PromptError::Empty);
        }
        match slash_command(text) {
            Some((name, args)) => self.expand_named(name, args),
            None => Ok(Expanded {
                text: text.to_string(),
                command: None,
                notes: Vec::new(),
            }),
        }
    }

    /// Step 1 for a command chosen by name (`rein exec --command NAME`).
    pub fn expand_named(&self, name: &str, args: &str) -> Result<Expanded, PromptError> {
        let name = name.trim_start_matches('/');
        let Some(command) = self.found.get(name) else {
            let known: Vec<&str> = self
                .found
                .commands
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            let known = if known.is_empty() {
                "none here (.rein/commands/NAME.md, .claude/commands/NAME.md or \
                 $REIN_HOME/commands/NAME.md)"
                    .to_string()
            } else {
                known.join(", ")
            };
            return Err(PromptError::UnknownCommand {
                name: name.to_string(),
                known,
            });
        };
        let text = command.expand(args);
        if text.trim().is_empty() {
            return Err(PromptError::EmptyCommand(name.to_string()));
        }
        Ok(Expanded {
            text,
            command: Some(command.clone()),
            notes: self.found.warnings.clone(),
        })
    }
}

/// `/NAME ARGS` split, when `text` starts with a command name; a path
/// such as `/usr/bin/env` is not one.
fn slash_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let is_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'));
    is_name.then_some((name, args))
}

/// What step 2 attaches from: the run's skills and MCP servers.
#[derive(Clone)]
pub struct Attachments {
    pub skills: Arc<Skills>,
    pub mcp: Option<Arc<McpHub>>,
}

impl Attachments {
    /// Step 2: the skills (`$name`), then the resources (`@server:uri`);
    /// and the notes of both (a `$name` that is no skill, a resource that
    /// could not be read). Both are found in `text` alone, never in what
    /// the other attached: a skill's body (a project's, a plugin's) naming
    /// `@server:uri` reads no resource the user did not name, and a
    /// resource naming `$skill` attaches nothing.
    pub async fn attach(&self, text: &str) -> (String, Vec<String>) {
        let (with_skills, mut notes) = self.attach_skills(text);
        let (with_resources, more) = self.attach_resources(text).await;
        notes.extend(more);
        // Each keeps `text` as it is and adds after it.
        let skills = with_skills.strip_prefix(text).unwrap_or_default();
        let resources = with_resources.strip_prefix(text).unwrap_or_default();
        (format!("{text}{skills}{resources}"), notes)
    }

    /// The skills `text` names as `$name`, after it, and a note for each
    /// name that is no skill.
    pub fn attach_skills(&self, text: &str) -> (String, Vec<String>) {
        self.skills.attach_mentions(text)
    }

    /// The resources `text` names as `@server:uri`, after it, and a note
    /// for each that could not be read.
    pub async fn attach_resources(&self, text: &str) -> (String, Vec<String>) {
        match &self.mcp {
            Some(hub) => hub.attach_mentions(text).await,
            None => (text.to_string(), Vec::new()),
        }
    }
}

/// How one session's prompts are prepared (both steps, and what
/// [`super::prepare`] adds between them).
#[derive(Clone)]
pub struct Prompts {
    pub commands: CommandSet,
    pub attachments: Attachments,
    /// The models commands name, built once each.
    pub models: super::prepare::CommandModels,
    /// A person answers approvals here (the app, an editor): `/init`'s
    /// write of AGENTS.md asks first, showing the diff.
    pub shows_writes: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn set(dir: &Path, trusted: bool) -> CommandSet {
        let mut cfg = Config::defaults(dir.join("home"));
        cfg.trusted = trusted;
        CommandSet::discover(&cfg, dir)
    }

    fn command(dir: &Path, name: &str, text: &str) {
        let path = dir.join(".rein/commands").join(format!("{name}.md"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_known_command_expands_an_unknown_is_refused_and_a_path_is_plain_text() {
        let dir = tempfile::tempdir().unwrap();
        command(dir.path(), "greet", "Say hello to $1.\n");
        let set = set(dir.path(), false);
        let e = set.expand("/greet Ada").unwrap();
        assert_eq!(e.text, "Say hello to Ada.");
        assert_eq!(e.command.unwrap().name, "greet");
        assert_eq!(
            set.expand("/nope x").unwrap_err().to_string(),
            "no command named `nope`: greet, init, review"
        );
        let plain = set.expand("/usr/bin/env is missing").unwrap();
        assert_eq!(plain.text, "/usr/bin/env is missing");
        assert!(plain.command.is_none());
        assert_eq!(set.expand("  ").unwrap_err(), PromptError::Empty);
    }

    #[tokio::test]
    async fn attaching_names_a_dollar_name_that_is_no_skill_in_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join(".rein/skills/greeter");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: greeter\ndescription: Greets\n---\nBe warm.\n",
        )
        .unwrap();
        let attachments = Attachments {
            skills: Arc::new(Skills::discover(dir.path(), None, true)),
            mcp: None,
        };
        let (text, notes) = attachments
            .attach("use $greeter, not $greter or $PATH")
            .await;
        assert!(text.contains("Be warm."), "{text}");
        assert_eq!(
            notes,
            ["no skill named `greter`, so `$greter` attached nothing; the skills are: greeter"]
        );
    }
}
