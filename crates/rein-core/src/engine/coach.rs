//! The coach: the harness help a small model gets, behind the profile
//! (see [`crate::profile`]). A run whose profile gives neither a required
//! first call nor nudges has no coach. The coach requires a tool call on
//! the first turn of a task in a workspace with files, watches what the
//! run's calls did, and when an answer would end the run it may nudge the
//! model instead ([`nudges`]), then requires the next turn to act on it.
//! It also keeps the run's check ([`check`]): what to run after a change,
//! and the failures handed back; and holds answers to questions to the
//! run's tool output ([`evidence`]).

use std::path::{Path, PathBuf};

use super::builder::LoopConfig;
use super::run::Finished;
use crate::gate::Gate;
use crate::profile::Lever;
use crate::provider::ToolChoice;
use crate::schema::{ToolCall, ToolSpec};
use crate::tool::ToolAccess;

mod asked;
pub(super) mod candidates;
pub(super) mod check;
mod evidence;
mod nudges;

use asked::Snapshot;
use check::Check;
use evidence::{Evidence, Question};
use nudges::{Looked, NextTurn};

/// One run's coach.
pub(super) struct Coach {
    workspace: PathBuf,
    /// The first turn must call a tool (the profile asks for it and the
    /// workspace has files to look at).
    first_call: bool,
    /// Answers that would end the run may get a nudge.
    nudges: bool,
    /// What the run's calls did, for the nudges.
    looked: Looked,
    /// The check after a change, when the profile gives it.
    check: Option<Check>,
    /// A question's evidence, when the profile gives it and the request
    /// is a question.
    evidence: Option<Evidence>,
}

/// What came of running the check.
#[derive(Debug)]
pub(super) enum CheckRun {
    /// The gate did not let it run (the mode refuses commands, a rule, a
    /// hook): why.
    Refused(String),
    /// It ran: its output, ending with its exit code.
    Ran(String),
}

/// What a turn's request must ask of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TurnRule {
    pub tool_choice: ToolChoice,
    /// Offer only the tools that change files.
    pub edits_only: bool,
}

impl TurnRule {
    /// A turn nobody coaches.
    pub const FREE: TurnRule = TurnRule {
        tool_choice: ToolChoice::Auto,
        edits_only: false,
    };
}

impl Coach {
    /// The coach of a run on `prompt` (`has_files`: the workspace has
    /// something to look at); None when the profile gives no coaching.
    /// `agents`: the project's instructions (AGENTS.md), where a test
    /// command may be named.
    pub fn for_run(
        config: &LoopConfig,
        workspace: &Path,
        prompt: &str,
        agents: &str,
        has_files: bool,
    ) -> Option<Coach> {
        let first_call = config.helps(Lever::FirstCall) && has_files;
        let nudges = config.helps(Lever::Nudge);
        // With nowhere to make scratch copies (an engine built without
        // one), the lever is off.
        let candidates = config.helps(Lever::Candidates)
            && config.candidates.max > 0
            && config.candidates.scratch_root.is_some();
        if let (true, Some(root)) = (candidates, &config.candidates.scratch_root) {
            // Copies a crashed run left behind go now, not only when the
            // next candidates are tried.
            super::scratch::sweep(root);
        }
        let check = config.helps(Lever::Check).then(|| Check {
            command: check::named_check(prompt, agents, workspace),
            change_asked: nudges::asks_for_change(prompt),
            candidates,
            ..Check::default()
        });
        // A question with no files to look in ("what is 2 + 3?") is the
        // model's to answer.
        let evidence = match config.helps(Lever::Evidence) && has_files {
            true => Question::of(prompt, nudges::asks_for_change(prompt)).map(Evidence::new),
            false => None,
        };
        if !first_call && !nudges && check.is_none() && evidence.is_none() {
            return None;
        }
        // A request for a change keeps the workspace as it was, for the
        // nudge when the run would end with nothing changed.
        let mut looked = Looked::default();
        if nudges && nudges::asks_for_change(prompt) {
            looked.change_asked = Some(Snapshot::take(workspace));
            looked.asked_for = asked::missing_names(prompt, workspace);
            looked.rename = asked::Rename::of(prompt);
        }
        Some(Coach {
            workspace: workspace.to_path_buf(),
            first_call,
            nudges,
            looked,
            check,
            evidence,
        })
    }

    /// What turn `turn` must do. The first turn looks before it answers;
    /// the turn after a nudge acts on it (measured: nudged, the 1.5B model
    /// answered "I will edit calc.py" and stopped); a nudge to make a
    /// change offers only the tools that make one, for that turn.
    pub fn rule_for(&mut self, turn: u32) -> TurnRule {
        let first = self.first_call && turn == 1;
        let next = std::mem::take(&mut self.looked.next);
        TurnRule {
            tool_choice: match first || next != NextTurn::Free {
                true => ToolChoice::Required,
                false => ToolChoice::Auto,
            },
            edits_only: next == NextTurn::Edit,
        }
    }

    /// Note what a round of calls did (`wrote`: a call that changes files
    /// succeeded).
    pub fn observe(&mut self, calls: &[ToolCall], finished: &[Finished], wrote: bool) {
        self.looked.wrote |= wrote;
        // A refusal is the user's decision, not a failed call to retry.
        self.looked.last_round_denied = finished.iter().any(|f| f.effects.denied);
        self.looked.last_round_failed = !finished.is_empty()
            && finished
                .iter()
                .all(|f| f.result.is_error && !f.effects.denied);
        if let Some(check) = &mut self.check {
            check.dirty |= wrote;
        }
        for f in finished.iter().filter(|f| !f.result.is_error) {
            let Some(call) = calls.iter().find(|c| c.id == f.result.call_id) else {
                continue;
            };
            self.looked.saw(&call.arguments);
            self.looked.listed(&f.result.output);
            if let Some(ev) = &mut self.evidence {
                let output = evidence::without_echo(&f.result.output, &call.arguments);
                ev.saw(call.name == "bash", &output);
            }
            if let (Some(check), Some(command)) = (&mut self.check, command_of(call)) {
                check.saw_run(&command, &f.result.output);
            }
        }
    }

    /// The check to run now, if one is due: the answer would end a run
    /// whose files changed since the check last ran.
    pub fn check_due(&self) -> Option<String> {
        self.check.as_ref()?.due().map(String::from)
    }

    /// Files changed since the check last ran (or since the start).
    pub fn changed_since_check(&self) -> bool {
        self.check.as_ref().is_some_and(|c| c.dirty)
    }

    /// Note what came of running `command`; the text to hand the model
    /// when it failed (the next turn must then call a tool).
    pub fn checked(&mut self, run: &CheckRun) -> Option<String> {
        let check = self.check.as_mut()?;
        check.dirty = false;
        check.runs += 1;
        let command = check.command.clone().unwrap_or_default();
        check.last_failure = None;
        match run {
            CheckRun::Refused(_) => {
                check.refused = true;
                None
            }
            CheckRun::Ran(output) if check::passed(output) => None,
            CheckRun::Ran(output) => {
                check.failures += 1;
                check.last_failure = Some(output.clone());
                if !check.hands_back() {
                    return None;
                }
                self.looked.next = NextTurn::Call;
                Some(check::feedback(&command, output))
            }
        }
    }

    /// The check's command and its last failing output, when the
    /// candidates are due (see [`Check::candidates_due`]).
    pub fn candidates_due(&self) -> Option<(String, String)> {
        let (command, output) = self.check.as_ref()?.candidates_due()?;
        Some((command.to_string(), output.to_string()))
    }

    /// Note that the candidates were tried; `won`: one passed the check
    /// and is applied, so the workspace passes it now.
    pub fn candidates_tried(&mut self, won: bool) {
        if let Some(check) = &mut self.check {
            check.candidates_tried = true;
            if won {
                check.dirty = false;
                check.last_failure = None;
            }
        }
    }

    /// The nudge for `answer`, which would end the run, if it needs one
    /// (each kind once a run); the next turn must then act on it.
    /// An answer to a question whose values no tool showed gets one
    /// nudge to look them up (after the other kinds).
    pub fn nudge(&mut self, answer: &str) -> Option<String> {
        if self.nudges
            && let Some((kind, text)) = nudges::nudge(answer, &self.looked, &self.workspace)
        {
            self.looked.nudged.push(kind);
            self.looked.next = nudges::next_turn(kind, answer, &self.looked, &self.workspace);
            if let (nudges::NudgeKind::RenameLeftovers, Some(rename)) = (kind, &self.looked.rename)
            {
                self.looked.rename_left = Some(rename.leftovers(&self.workspace).1);
            }
            return Some(text);
        }
        let text = self.evidence.as_mut()?.unsupported(answer)?;
        self.looked.next = NextTurn::Call;
        Some(text)
    }
}

/// The command line of a `bash` call.
fn command_of(call: &ToolCall) -> Option<String> {
    if call.name != "bash" {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    args.get("command")?.as_str().map(String::from)
}

/// Keep only the tools that change files ([`ToolAccess::Write`], as
/// `gate` knows them) in `tools`, returning the whole list to put back;
/// `None` (nothing narrowed) when none of them is there.
pub(super) fn narrow_to_edits(tools: &mut Vec<ToolSpec>, gate: &Gate) -> Option<Vec<ToolSpec>> {
    let edits = |t: &ToolSpec| gate.access(&t.name) == Some(ToolAccess::Write);
    if !tools.iter().any(edits) {
        return None;
    }
    let all = tools.clone();
    tools.retain(edits);
    Some(all)
}
