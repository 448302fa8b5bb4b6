//! A prompt made ready to send, the same way in every front end (`rein
//! exec`, the app, `rein acp`, `rein serve`), once step 1 of
//! [`super::prompt`] has expanded its command:
//!
//! 1. the command's run scope ([`command_scope`]): its `allowed-tools`
//!    (the only tools offered; pre-approved when the command is the
//!    user's or a trusted project's) and its `model`, for its one run
//!    ([`RunScope`]): never for the session's other prompts;
//! 2. its `` !`cmd` `` lines run and its `@path` files read through the
//!    session's gate, within that scope ([`super::command_context`]);
//! 3. the skills and resources the text names attached
//!    ([`super::prompt::Attachments`]).
//!
//! What is left out is a note; a refused context line or a model that
//! cannot be had refuses the whole prompt with one line.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rein_core::commands::CustomCommand;
use rein_core::{Provider, RunScope};
use rein_tools::claude_names;

use super::command_context::{self, ContextRefused, LiveRun};
use super::prompt::{Expanded, Prompts};
use crate::config::Config;

/// A prompt ready for its run: the text to send, what the run alone may
/// do, and what to tell the user.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    pub text: String,
    pub scope: RunScope,
    pub notes: Vec<String>,
    /// The session made for the command's calls when the prompt had none
    /// yet (so hooks and approvals saw its id): the run continues it.
    pub session: Option<String>,
}

/// Why a prepared prompt is not sent.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// A context line was refused; the notes said before it.
    #[error("{0}")]
    Context(ContextRefused, Vec<String>),
    #[error("the command `{command}` runs on the model `{model}`, which cannot be used: {why}")]
    Model {
        command: String,
        model: String,
        why: String,
    },
    #[error("cannot start a session for the command `{command}`: {why}")]
    Session { command: String, why: String },
}

/// Builds the provider a command's `model` names, each model once per
/// session (an embedded model is loaded once).
#[derive(Clone)]
pub struct CommandModels {
    cfg: Arc<Config>,
    built: Arc<Mutex<HashMap<String, Arc<dyn Provider>>>>,
}

impl CommandModels {
    pub fn new(cfg: &Config) -> CommandModels {
        CommandModels {
            cfg: Arc::new(cfg.clone()),
            built: Arc::default(),
        }
    }

    /// The provider `name` chooses (`MODEL` or `PROVIDER:MODEL`), as
    /// `/model NAME` chooses it.
    fn get(&self, name: &str) -> anyhow::Result<Arc<dyn Provider>> {
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = built.get(name) {
            return Ok(p.clone());
        }
        let provider = crate::providers::build_named(&self.cfg, name)?;
        built.insert(name.to_string(), provider.clone());
        Ok(provider)
    }
}

/// What a command's frontmatter sets for its run: the tools it offers,
/// the rules it pre-approves (its notes say what it could not), and its
/// model. Where a person can answer (`shows_writes`), a command that
/// shows its writes first (`/init`) gets its pre-approved writes as ask
/// rules instead: the approval shows the diff, in every mode.
pub fn command_scope(
    command: &CustomCommand,
    models: &CommandModels,
    shows_writes: bool,
) -> Result<(RunScope, Vec<String>), PrepareError> {
    let tools = (!command.allowed_tools.is_empty()).then(|| {
        let mut names: Vec<String> = command
            .allowed_tools
            .iter()
            .map(|t| claude_names::rein_name(t))
            .collect();
        names.dedup();
        names.into()
    });
    let (mut allow, notes) = command_context::pre_approvals(command);
    let mut ask = Vec::new();
    if shows_writes && command.shows_writes_first() {
        let writers = [
            claude_names::rein_name("Write"),
            claude_names::rein_name("Edit"),
        ];
        (ask, allow) = allow.into_iter().partition(|r| writers.contains(&r.tool));
    }
    let provider = match &command.model {
        Some(model) => Some(models.get(model).map_err(|e| PrepareError::Model {
            command: command.name.clone(),
            model: model.clone(),
            why: format!("{e:#}"),
        })?),
        None => None,
    };
    let scope = RunScope {
        tools,
        allow,
        ask,
        provider,
        answer_schema: None,
    };
    Ok((scope, notes))
}

impl PrepareError {
    /// What was noted before the prompt was refused.
    pub fn notes(&self) -> &[String] {
        match self {
            PrepareError::Context(_, notes) => notes,
            _ => &[],
        }
    }
}

impl Prompts {
    /// Steps 1 to 3 above for `expanded`, in the session `run` names.
    pub async fn prepare(
        &self,
        expanded: &Expanded,
        run: &LiveRun<'_>,
    ) -> Result<Prepared, PrepareError> {
        let mut notes = expanded.notes.clone();
        let mut session = None;
        let (scope, text) = match &expanded.command {
            Some(command) => {
                let (scope, more) = command_scope(command, &self.models, self.shows_writes)?;
                notes.extend(more);
                // The calls of a prompt with no session yet are a new
                // session's: it is made first, so they have its id.
                let calls = command_context::makes_calls(command, &expanded.text);
                if calls && run.session_id.is_none() {
                    let made = run.engine.start_session(&expanded.text).await;
                    session = Some(made.map_err(|e| PrepareError::Session {
                        command: command.name.clone(),
                        why: e.to_string(),
                    })?);
                }
                let run = LiveRun {
                    session_id: session.as_deref().or(run.session_id),
                    events: run.events.clone(),
                    cancel: run.cancel.clone(),
                    ..*run
                };
                let brought = command_context::bring_in(command, &expanded.text, &run, &scope);
                let (text, more) = match brought.await {
                    Ok(brought) => brought,
                    Err(refused) => return Err(PrepareError::Context(refused, notes)),
                };
                notes.extend(more);
                (scope, text)
            }
            None => (RunScope::default(), expanded.text.clone()),
        };
        let (text, more) = self.attachments.attach(&text).await;
        notes.extend(more);
        Ok(Prepared {
            text,
            scope,
            notes,
            session,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn built_in(name: &str) -> CustomCommand {
        let mut commands = rein_core::commands::Commands::default();
        commands.add_built_in();
        commands.get(name).unwrap().clone()
    }

    fn rules(rules: &[rein_core::Rule]) -> Vec<String> {
        rules.iter().map(|r| r.to_string()).collect()
    }

    #[test]
    fn init_asks_before_writing_agents_md_where_a_person_answers_and_not_headless() {
        let dir = tempfile::tempdir().unwrap();
        let models = CommandModels::new(&Config::defaults(dir.path().to_path_buf()));
        let init = built_in("init");
        let (app, _) = command_scope(&init, &models, true).unwrap();
        assert_eq!(
            rules(&app.ask),
            ["write_file(AGENTS.md)", "edit_file(AGENTS.md)"]
        );
        assert!(!rules(&app.allow).iter().any(|r| r.contains("AGENTS.md")));
        let (headless, _) = command_scope(&init, &models, false).unwrap();
        assert!(headless.ask.is_empty());
        assert!(rules(&headless.allow).contains(&"write_file(AGENTS.md)".to_string()));
        // A user's own init.md pre-approves as written.
        let mut own = init.clone();
        own.path = dir.path().join("init.md");
        assert!(command_scope(&own, &models, true).unwrap().0.ask.is_empty());
    }
}
