//! A custom command's live parts, brought in before its message is sent
//! (between step 1 and step 2 of [`super::prompt`]), the way Claude Code
//! runs them:
//!
//! - each `` !`cmd` `` context line runs as a `bash` call through the
//!   session's gate ([`AgentEngine::run_call_for_user`]): the mode, the
//!   rules, the hooks and the sandbox hold as for the model's own calls,
//!   and its output (bounded as any bash result) takes the markup's place.
//!   A line the gate refuses (a headless run that cannot ask, plan mode, a
//!   deny rule) fails the whole message with one line;
//! - each `@path` is read by `read_file` through the same gate (confined
//!   to the workspace, bounded) and goes after the message; one that
//!   cannot be read is a note.
//!
//! A project's command in a folder the user has not trusted runs nothing:
//! its `` !`…` `` lines stay as the repository wrote them (so the model and
//! the user see what was asked, and anything the model then runs is its
//! own call, asked about as usual), with a note.

use rein_core::commands::CustomCommand;
use rein_core::commands::markup::{self, Part};
use rein_core::{AgentEngine, PermissionMode, Rule, RunScope, ToolCall};
use rein_core::{GateEvents, GateOutcome};
use rein_tools::claude_names;
use tokio_util::sync::CancellationToken;

/// The last line of a bash result whose program exited with 0.
const CLEAN_EXIT: &str = "[exit code: 0]";

/// Most `@path` files one message attaches.
const MOST_FILES: usize = 10;

/// Where a command's live parts run: the engine of the prompt's session.
pub struct LiveRun<'a> {
    pub engine: &'a AgentEngine,
    /// The session the message goes to; None: a new one.
    pub session_id: Option<&'a str>,
    pub mode: PermissionMode,
    /// Where the gate's events go (an approval asked, a refusal).
    pub events: GateEvents,
    pub cancel: CancellationToken,
}

/// Whether bringing in `command`'s live parts (its text `text`, expanded)
/// makes calls through the gate: a `!` line that runs (the command is
/// trusted) or an `@path` file.
pub fn makes_calls(command: &CustomCommand, text: &str) -> bool {
    let runs = command.trusted
        && markup::parts(text)
            .iter()
            .any(|p| matches!(p, Part::Shell(_)));
    runs || !markup::file_references(text).is_empty()
}

/// A context line the gate refused: the message is not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the command `{command}` was not sent: its context line `{line}` was refused: {why}")]
pub struct ContextRefused {
    pub command: String,
    pub line: String,
    pub why: String,
}

/// The message `text` (command `command`, expanded) with its context
/// lines' output in place and its files after it, and a note for each
/// thing left out. The calls run within the command's `scope` (its
/// tools, its pre-approvals).
pub async fn bring_in(
    command: &CustomCommand,
    text: &str,
    run: &LiveRun<'_>,
    scope: &RunScope,
) -> Result<(String, Vec<String>), ContextRefused> {
    let mut notes = Vec::new();
    let parts = markup::parts(text);
    let has_lines = parts.iter().any(|p| matches!(p, Part::Shell(_)));
    let mut out = String::with_capacity(text.len());
    if has_lines && !command.trusted {
        notes.push(format!(
            "the command `{}` is this folder's and the folder is not trusted: its `!` context \
             lines were not run",
            command.name
        ));
        out.push_str(text);
    } else {
        for (n, part) in parts.iter().enumerate() {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Shell(line) => {
                    let args = serde_json::json!({ "command": line });
                    let outcome = call(run, scope, n, "bash", &args).await;
                    if outcome.effects.access.is_none() {
                        return Err(ContextRefused {
                            command: command.name.clone(),
                            line: line.to_string(),
                            why: first_line(&outcome.result.output),
                        });
                    }
                    // A clean exit needs no saying in the message.
                    let output = outcome.result.output.trim_end();
                    let output = output.strip_suffix(CLEAN_EXIT).unwrap_or(output);
                    out.push_str(output.trim_end());
                }
            }
        }
    }
    // Files the command's own text names: never words a `!` line's output
    // happened to hold (a `git log` line's `@user`).
    let written: String = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(*t),
            Part::Shell(_) => None,
        })
        .collect::<Vec<_>>()
        .join(" ");
    let mut attached = Vec::new();
    // Call ids go on after the `!` lines', so no two calls share one.
    let first_id = parts.len();
    for path in markup::file_references(&written)
        .into_iter()
        .take(MOST_FILES)
    {
        let args = serde_json::json!({ "path": path });
        let n = first_id + attached.len() + notes.len();
        let outcome = call(run, scope, n, "read_file", &args).await;
        match outcome.result.is_error {
            false => attached.push(format!(
                "[file {path}]\n{}\n[end of file]",
                outcome.result.output.trim_end()
            )),
            true => notes.push(format!(
                "@{path} was not attached: {}",
                first_line(&outcome.result.output)
            )),
        }
    }
    if !attached.is_empty() {
        out = format!("{out}\n\n{}", attached.join("\n\n"));
    }
    Ok((out, notes))
}

/// One call of `tool` with `args` through the session's gate.
async fn call(
    run: &LiveRun<'_>,
    scope: &RunScope,
    n: usize,
    tool: &str,
    args: &serde_json::Value,
) -> GateOutcome {
    let call = ToolCall {
        id: format!("command-context-{n}"),
        name: tool.to_string(),
        arguments: args.to_string(),
    };
    run.engine
        .run_call_for_user(
            run.session_id,
            run.mode,
            scope,
            &call,
            run.events.clone(),
            run.cancel.clone(),
        )
        .await
}

/// The first sentence of a result: what the user needs of a refusal
/// written for the model (which goes on to advise it).
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let line = line.trim().trim_start_matches("error: ");
    match line.split_once(". ") {
        Some((sentence, _)) => format!("{sentence}."),
        None => line.to_string(),
    }
}

/// The allow rules a command's `allowed-tools` adds for its run, and a
/// note for each entry left out. Only the user's own commands and a
/// trusted project's pre-approve (an untrusted one's list still narrows
/// what the model is offered, which grants nothing). An allow rule never
/// passes a deny rule, a protected path or what the mode refuses.
pub fn pre_approvals(command: &CustomCommand) -> (Vec<Rule>, Vec<String>) {
    if command.allowed_tools.is_empty() {
        return (Vec::new(), Vec::new());
    }
    if !command.trusted {
        let note = format!(
            "the command `{}` is this folder's and the folder is not trusted: its \
             `allowed-tools` pre-approves nothing",
            command.name
        );
        return (Vec::new(), vec![note]);
    }
    let mut rules = Vec::new();
    let mut notes = Vec::new();
    for entry in &command.allowed_tools {
        let texts = match claude_names::rein_rules(entry) {
            Ok(texts) => texts,
            Err(why) => {
                notes.push(format!(
                    "the command `{}`: {why}; it pre-approves nothing",
                    command.name
                ));
                continue;
            }
        };
        for text in texts {
            match text.parse::<Rule>() {
                Ok(rule) => rules.push(rule),
                Err(e) => notes.push(format!(
                    "the command `{}`: `{entry}` pre-approves nothing: {e}",
                    command.name
                )),
            }
        }
    }
    (rules, notes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::path::PathBuf;

    use super::*;

    fn command(body: &str, allowed: &[&str], trusted: bool) -> CustomCommand {
        CustomCommand {
            name: "c".into(),
            path: PathBuf::new(),
            description: None,
            argument_hint: None,
            model: None,
            allowed_tools: allowed.iter().map(|s| s.to_string()).collect(),
            body: body.into(),
            trusted,
        }
    }

    #[test]
    fn only_a_trusted_commands_allowed_tools_become_allow_rules() {
        let c = command("Go.", &["Bash(git diff:*)", "Read"], true);
        let (rules, notes) = pre_approvals(&c);
        let rules: Vec<String> = rules.iter().map(ToString::to_string).collect();
        assert_eq!(rules, ["bash(git diff)", "bash(git diff *)", "read_file"]);
        assert!(notes.is_empty());
        let (rules, notes) = pre_approvals(&CustomCommand {
            trusted: false,
            ..c
        });
        assert!(rules.is_empty());
        assert!(notes[0].contains("pre-approves nothing"), "{notes:?}");
    }
}
