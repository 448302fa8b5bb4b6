//! Writing to stdout and stderr without ever panicking (a closed pipe is
//! not a crash), and the human-readable progress of `rein exec`.

use std::io::Write;

use rein_core::{Event, Message, StopReason};

/// Write a line to stdout; a closed pipe is ignored.
pub fn out(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Write a line to stderr; failures are ignored.
pub fn err(line: &str) {
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

/// Prints a run's progress on stderr and its answer on stdout.
#[derive(Default)]
pub struct HumanOutput {
    pub session_id: Option<String>,
}

impl HumanOutput {
    pub fn show(&mut self, event: &Event) {
        match event {
            Event::RunStarted {
                session_id,
                provider,
                model,
                workspace,
                resumed,
                plan,
            } => {
                self.session_id = Some(session_id.clone());
                let verb = if *resumed { "resumed" } else { "session" };
                let mode = if *plan { " · plan mode" } else { "" };
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
            Event::ToolStarted {
                name, arguments, ..
            } => err(&format!("▸ {name} {}", one_line(arguments, 100))),
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
            Event::Retry {
                attempt,
                max_retries,
                delay_ms,
                error,
            } => err(&format!(
                "  retrying in {:.1} s (attempt {attempt} of {max_retries}): {}",
                *delay_ms as f64 / 1000.0,
                one_line(error, 160)
            )),
            Event::Stopped {
                reason,
                turns,
                usage,
                final_text,
                error,
            } => {
                if *reason == StopReason::Completed {
                    out(final_text.trim_end());
                }
                let tokens = format!(
                    "{turns} turn{} · {} input / {} output tokens",
                    if *turns == 1 { "" } else { "s" },
                    usage.input_tokens,
                    usage.output_tokens
                );
                let id = self.session_id.as_deref().unwrap_or("-");
                match reason {
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
            _ => {}
        }
    }
}
