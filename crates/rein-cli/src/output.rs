//! Writing to stdout and stderr without ever panicking (a closed pipe is
//! not a crash), and the human-readable progress of `rein exec`.

use std::io::Write;

use rein_core::{Event, Message, PermissionMode, StopReason};

/// Whether stdout and stderr are terminals (asked once).
fn terminals() -> (bool, bool) {
    use std::io::IsTerminal;
    static TERMINALS: std::sync::OnceLock<(bool, bool)> = std::sync::OnceLock::new();
    *TERMINALS.get_or_init(|| {
        (
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        )
    })
}

/// Write a line to stdout. On a terminal, text from models, files and
/// commands cannot drive it: escape sequences are removed (piped, the
/// text goes out exactly as it is).
pub fn out(line: &str) {
    let line = if terminals().0 {
        rein_tui::cells::sanitize(line)
    } else {
        std::borrow::Cow::Borrowed(line)
    };
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Write a line to stderr; failures are ignored.
pub fn err(line: &str) {
    let line = if terminals().1 {
        rein_tui::cells::sanitize(line)
    } else {
        std::borrow::Cow::Borrowed(line)
    };
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// One line, at most `max` characters, for progress output.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// Calls refused because they needed an approval nobody could give; told
/// to the user at the end with what would allow them.
#[derive(Default)]
pub struct Refusals {
    items: Vec<(String, String, String)>,
    rules: Vec<rein_core::Rule>,
    modes: Vec<PermissionMode>,
}

impl Refusals {
    pub fn note(&mut self, event: &Event) {
        if let Event::PermissionDenied {
            tool,
            summary,
            why,
            needed_approval: true,
            suggested_rules,
            suggested_mode,
            ..
        } = event
        {
            self.items
                .push((tool.clone(), one_line(summary, 100), one_line(why, 160)));
            for r in suggested_rules {
                if !self.rules.contains(r) {
                    self.rules.push(r.clone());
                }
            }
            if let Some(m) = suggested_mode
                && !self.modes.contains(m)
            {
                self.modes.push(*m);
            }
        }
    }

    /// The report on stderr, if anything was refused.
    pub fn report(&self) {
        if self.items.is_empty() {
            return;
        }
        let n = self.items.len();
        err(&format!(
            "{n} call{} needed approval, which rein exec cannot ask for, and did not run:",
            if n == 1 { "" } else { "s" }
        ));
        for (tool, summary, why) in &self.items {
            err(&format!("  {tool}: {summary} ({why})"));
        }
        let mut fixes = Vec::new();
        // The least permissive mode that covers them all.
        if let Some(mode) = self.modes.iter().max_by_key(|m| match m {
            PermissionMode::AcceptEdits => 1,
            _ => 2,
        }) {
            fixes.push(format!("run with --mode {mode}"));
        }
        if !self.rules.is_empty() {
            let quoted: Vec<String> = self
                .rules
                .iter()
                .map(|r| format!("{:?}", r.to_string()))
                .collect();
            fixes.push(format!(
                "allow exactly these with \"permissions\": {{\"allow\": [{}]}} in $REIN_HOME/settings.json, or in .rein/settings.json of a trusted folder (`rein trust`)",
                quoted.join(", ")
            ));
        }
        if fixes.is_empty() {
            err("  nothing but an interactive approval can allow these");
        } else {
            err(&format!("to allow: {}", fixes.join(", or ")));
        }
    }
}

/// The transient line showing a local model's progress: what it is doing,
/// how long the request has taken, and how to stop it.
pub fn progress_line(progress: &rein_core::ModelProgress) -> String {
    format!(
        "… {} · {} s · Ctrl-C to interrupt",
        progress.describe(),
        progress.elapsed_ms() / 1000
    )
}

/// A sub-agent's start, calls and end, one line each.
fn subagent_line(agent: &str, description: &str, event: &Event) {
    match event {
        Event::RunStarted { session_id, .. } => err(&format!(
            "→ sub-agent {agent}: {} (session {session_id})",
            one_line(description, 120)
        )),
        Event::ToolStarted { name, .. } => err(&format!("  {agent} › {name}")),
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
    /// A progress line is on stderr's last line (a terminal) and must be
    /// erased before anything else is written.
    progress_shown: bool,
    /// Calls the gate refused: their refusal line says it all, their
    /// `tool_finished` is not printed too.
    refused_calls: Vec<String>,
    /// The answer is the caller's to show (`rein review`): not printed.
    pub keep_answer: bool,
}

impl HumanOutput {
    pub fn show(&mut self, event: &Event) {
        if let Event::ModelProgress { progress } = event {
            // Only a terminal gets the line rewritten in place; a log
            // would fill with them.
            if terminals().1 {
                let line = one_line(&progress_line(progress), 120);
                let _ = write!(std::io::stderr().lock(), "\r\x1b[2K{line}");
                self.progress_shown = true;
            }
            return;
        }
        if std::mem::take(&mut self.progress_shown) {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
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
                let mode = match profile {
                    rein_core::Profile::Full => format!(" · {mode} mode"),
                    small => format!(" · {mode} mode · {small} profile"),
                };
                err(&format!(
                    "rein · {verb} {session_id} · {provider}/{model} · {workspace}{mode}"
                ));
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
                name, arguments, ..
            } => err(&format!(
                "▸ {name} {}",
                one_line(&rein_tui::cells::call_summary(name, arguments), 100)
            )),
            Event::ToolFinished { call_id, .. } if self.refused_calls.contains(call_id) => {}
            Event::ToolFinished {
                name,
                duration_ms,
                is_error,
                output_preview,
                ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                err(&format!(
                    "  {mark} {name} ({duration_ms} ms) {}",
                    one_line(output_preview, 100)
                ));
            }
            Event::PermissionDenied {
                call_id, tool, why, ..
            } => {
                self.refused_calls.push(call_id.clone());
                err(&format!("  ⊘ {tool} refused: {}", one_line(why, 200)));
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
