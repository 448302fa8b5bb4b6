//! What the model reads of a command: its output bounded to head and tail,
//! the notes about it, and how it ended. One format, whoever ran it.

use std::process::ExitStatus;
use std::time::Duration;

use rein_core::ToolOutput;

use super::{Captured, HEAD_BYTES, TAIL_BYTES};

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited (its status, when known).
    Exited(Option<ExitStatus>),
    /// It was killed at its timeout.
    TimedOut(Duration),
    /// It was killed because the call was cancelled.
    Cancelled,
}

impl Ending {
    /// The line saying the command was stopped; `None` when it exited.
    pub fn note(&self) -> Option<String> {
        match self {
            Ending::Exited(_) => None,
            Ending::TimedOut(limit) => Some(format!(
                "[timed out after {} s; the command and its child processes were killed]",
                limit.as_secs()
            )),
            Ending::Cancelled => {
                Some("[cancelled; the command and its child processes were killed]".to_string())
            }
        }
    }
}

/// The observation of a command: `text` (its output as [`bounded`] gives
/// it), each note on a line of its own, then its exit status when it
/// exited. A stopped command is an error (its notes say why).
pub fn observation(
    text: String,
    notes: impl IntoIterator<Item = String>,
    ending: &Ending,
) -> ToolOutput {
    let mut text = text;
    for line in notes {
        text.push('\n');
        text.push_str(&line);
    }
    match ending {
        Ending::Exited(status) => {
            text.push('\n');
            text.push_str(&describe_status(*status));
            ToolOutput::ok(text)
        }
        Ending::TimedOut(_) | Ending::Cancelled => ToolOutput::error(text),
    }
}

/// `output` bounded as the bash tool bounds what it captures: its first
/// and last 16 KiB with a line saying what was cut between them, without
/// the last newline; `(no output)` when there is none.
pub fn bounded(output: &[u8]) -> String {
    let mut captured = Captured::new(HEAD_BYTES, TAIL_BYTES);
    captured.push(output);
    body(captured)
}

pub(super) fn body(captured: Captured) -> String {
    let text = captured.render();
    let trimmed = text.strip_suffix('\n').unwrap_or(&text);
    if trimmed.is_empty() {
        "(no output)".to_string()
    } else {
        trimmed.to_string()
    }
}

fn describe_status(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("[exit code: {code}]"),
            (None, Some(sig)) => format!("[killed by signal {sig}]"),
            (None, None) => "[exit status unknown]".to_string(),
        },
        None => "[exit status unknown]".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;

    use super::*;

    #[test]
    fn an_exited_command_ends_with_its_status_and_a_stopped_one_is_an_error() {
        let exited = Ending::Exited(Some(ExitStatus::from_raw(3 << 8)));
        let out = observation("hi".into(), ["[a note]".to_string()], &exited);
        assert_eq!(out.content, "hi\n[a note]\n[exit code: 3]");
        assert!(!out.is_error);
        let timed_out = Ending::TimedOut(Duration::from_secs(2));
        let out = observation(bounded(b""), timed_out.note(), &timed_out);
        assert_eq!(
            out.content,
            "(no output)\n[timed out after 2 s; the command and its child processes were killed]"
        );
        assert!(out.is_error);
    }
}
