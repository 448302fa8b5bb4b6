//! `rein exec`'s progress for people: the header, each call and its
//! result (named by its tool and target, since calls of one turn finish in
//! any order), notes, and the end; the answer on stdout.

use std::collections::HashMap;

use rein_core::{Event, Message, StopReason};

use super::header::{self, Part};
use super::live::{self, Doing};
use super::{Refusals, err, one_line, out};

/// At most this many characters of a call's target on a line.
const TARGET_CHARS: usize = 80;

/// The tool and target of a call, as shown: `read_file a.txt`.
fn call_label(name: &str, arguments: &str) -> String {
    let summary = one_line(
        &rein_tui::summary::call_summary(name, arguments),
        TARGET_CHARS,
    );
    if summary.is_empty() {
        name.to_string()
    } else {
        format!("{name} {summary}")
    }
}

/// A sub-agent's start, calls and end, one line each.
fn subagent_line(agent: &str, description: &str, event: &Event) {
    match event {
        Event::RunStarted { session_id, .. } => err(&format!(
            "→ sub-agent {agent}: {} (session {session_id})",
            one_line(description, 120)
        )),
        Event::ToolStarted {
            name, arguments, ..
        } => err(&format!("  {agent} › {}", call_label(name, arguments))),
        Event::Stopped { reason, turns, .. } => err(&format!(
            "← sub-agent {agent}: {} after {turns} turn{}",
            reason.as_str(),
            if *turns == 1 { "" } else { "s" }
        )),
        _ => {}
    }
}

/// Prints a run's progress on stderr and its answer on stdout.
#[derive(Default)]
pub struct HumanOutput {
    pub session_id: Option<String>,
    pub refusals: Refusals,
    /// The tool and target of each call started, by call id.
    calls: HashMap<String, String>,
    /// Calls the gate refused: their refusal line says it all, their
    /// `tool_finished` is not printed too.
    refused_calls: Vec<String>,
    /// The answer is the caller's to show (`rein review`): not printed.
    pub keep_answer: bool,
}

impl HumanOutput {
    pub fn show(&mut self, event: &Event) {
        if self.live(event) {
            return;
        }
        self.refusals.note(event);
        match event {
            Event::RunStarted {
                session_id,
                provider,
                model,
                workspace,
                resumed,
                mode,
                profile,
                ..
            } => {
                self.session_id = Some(session_id.clone());
                let verb = if *resumed { "resumed" } else { "session" };
                let mut parts = vec![
                    Part::word("rein".into()),
                    Part::word(format!("{verb} {session_id}")),
                    Part::word(format!("{provider}/{model}")),
                    Part::path(workspace.clone()),
                    Part::word(format!("{mode} mode")),
                ];
                if *profile != rein_core::Profile::Full {
                    parts.push(Part::word(format!("{profile} profile")));
                }
                for line in header::lines(&parts, super::stderr_width()) {
                    err(&line);
                }
            }
            Event::MessageCommitted {
                message: Message::Assistant(a),
                ..
            } if a.has_tool_calls() => {
                let text = a.text();
                if !text.trim().is_empty() {
                    err(text.trim_end());
                }
            }
            // The command, the path or the pattern, as the app shows it.
            Event::ToolStarted {
                call_id,
                name,
                arguments,
            } => {
                let label = call_label(name, arguments);
                err(&format!("▸ {label}"));
                self.calls.insert(call_id.clone(), label);
            }
            Event::ToolFinished { call_id, .. } if self.refused_calls.contains(call_id) => {}
            Event::ToolFinished {
                call_id,
                name,
                duration_ms,
                is_error,
                output_preview,
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                let label = self.calls.remove(call_id);
                err(&format!(
                    "  {mark} {} ({duration_ms} ms) {}",
                    label.as_deref().unwrap_or(name),
                    one_line(output_preview, 100)
                ));
            }
            Event::PermissionDenied {
                call_id, tool, why, ..
            } => {
                self.refused_calls.push(call_id.clone());
                let label = self.calls.remove(call_id);
                err(&format!(
                    "  ⊘ {} refused: {}",
                    label.as_deref().unwrap_or(tool),
                    one_line(why, 200)
                ));
            }
            Event::Notice { message } => err(&format!("note: {}", one_line(message, 300))),
            Event::Retry {
                attempt,
                max_retries,
                delay_ms,
                error,
                discarded,
            } => err(&format!(
                "  {}retrying in {:.1} s (attempt {attempt} of {max_retries}): {}",
                if *discarded {
                    "partial answer discarded; "
                } else {
                    ""
                },
                *delay_ms as f64 / 1000.0,
                one_line(error, 160)
            )),
            Event::Stopped {
                reason,
                turns,
                usage,
                final_text,
                error,
                totals,
                refused,
            } => self.stopped(*reason, (*turns, usage, totals), final_text, error, refused),
            Event::Subagent {
                agent,
                description,
                event,
                ..
            } => subagent_line(agent, description, event),
            _ => {}
        }
    }

    /// Keep the live line in step with what the model is doing; true for
    /// the events that only move it.
    fn live(&mut self, event: &Event) -> bool {
        match event {
            Event::ModelProgress { progress } => live::model_doing(Doing::Local(*progress)),
            Event::TextDelta { .. } => live::model_doing(Doing::Answering),
            Event::ReasoningDelta { .. } => live::model_doing(Doing::Thinking),
            Event::TurnStarted { .. } => live::model_started(),
            Event::MessageCommitted {
                message: Message::Assistant(_),
                ..
            }
            | Event::Stopped { .. } => {
                live::model_done();
                return false;
            }
            _ => return false,
        }
        true
    }

    /// The run's end: the answer on stdout, the totals and how it ended on
    /// stderr.
    fn stopped(
        &mut self,
        reason: StopReason,
        (turns, usage, totals): (u32, &rein_core::Usage, &rein_core::LedgerTotals),
        final_text: &str,
        error: &Option<String>,
        refused: &[rein_core::RefusedCall],
    ) {
        if reason == StopReason::Completed && !self.keep_answer {
            out(final_text.trim_end());
        }
        self.refusals.report();
        let mut tokens = format!(
            "{turns} turn{} · {} input / {} output tokens",
            if turns == 1 { "" } else { "s" },
            usage.input_tokens,
            usage.output_tokens
        );
        if totals.calls > 0 {
            tokens.push_str(&format!(" · {}", totals.cost_text()));
        }
        let id = self.session_id.as_deref().unwrap_or("-");
        match reason {
            StopReason::Completed if !refused.is_empty() => err(&format!(
                "done, but {} call{} refused (exit {}) · {tokens} · session {id}",
                refused.len(),
                if refused.len() == 1 { " was" } else { "s were" },
                crate::exit::REFUSED
            )),
            StopReason::Completed => err(&format!("done · {tokens} · session {id}")),
            other => {
                let why = match error {
                    Some(e) => format!(": {}", one_line(e, 300)),
                    None => String::new(),
                };
                err(&format!("stopped ({}){why} · {tokens}", other.as_str()));
                if self.session_id.is_some() {
                    err(&format!("continue with: rein exec --resume {id} \"…\""));
                }
            }
        }
    }
}
