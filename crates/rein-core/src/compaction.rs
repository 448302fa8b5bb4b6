//! Compaction: when the history outgrows the context, older turns are
//! replaced by a model-written summary plus a task ledger the harness keeps
//! itself, and the last turns stay verbatim. The pure parts live here; the
//! engine runs the model call and stores the record.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::provider::ModelRequest;
use crate::schema::{ContentPart, Message, Todo, TodoStatus};
use crate::text::truncate_middle;

/// Every summary message starts with this line, so it is never taken for a
/// user's request.
pub const SUMMARY_MARKER: &str = "[rein: earlier conversation compacted]";

/// When and how to compact.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    /// Compact when the estimated context passes this share of the window.
    pub threshold: f64,
    /// Assistant turns (with their tool results) kept verbatim.
    pub keep_turns: usize,
    /// Tool outputs in kept turns longer than this are cut (head and tail)
    /// when compaction has to fall back to dropping turns.
    pub fallback_output_bytes: usize,
    pub enabled: bool,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            threshold: 0.8,
            keep_turns: 3,
            fallback_output_bytes: 4 * 1024,
            enabled: true,
        }
    }
}

/// Why a compaction happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The estimated context crossed the threshold.
    Threshold,
    /// The provider said the request is larger than the context window.
    ContextLengthExceeded,
    /// Asked for (`rein compact`).
    Manual,
}

/// What the harness itself knows about the task, kept outside the
/// transcript so that no summary can lose it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskLedger {
    /// The user's latest instruction, verbatim.
    pub latest_instruction: String,
    /// Earlier user requests, oldest first (already handled).
    pub earlier_requests: Vec<String>,
    pub todos: Vec<Todo>,
    /// Files changed through tools: path -> last known state.
    pub files: BTreeMap<String, String>,
    /// The last test-like command and its outcome.
    pub last_test: Option<String>,
}

impl TaskLedger {
    pub fn render(&self) -> String {
        let mut s = String::from("## Task ledger (kept by rein, always current)\n");
        s.push_str("Latest user instruction (verbatim):\n");
        for line in self.latest_instruction.lines() {
            s.push_str("> ");
            s.push_str(line);
            s.push('\n');
        }
        s.push_str("\nTodo list:\n");
        if self.todos.is_empty() {
            s.push_str("- (none)\n");
        }
        for t in &self.todos {
            let mark = match t.status {
                TodoStatus::Completed => "x",
                TodoStatus::InProgress => "~",
                TodoStatus::Cancelled => "-",
                TodoStatus::Pending => " ",
            };
            s.push_str(&format!("- [{mark}] {} ({})\n", t.content, t.id));
        }
        s.push_str("\nFiles changed:\n");
        if self.files.is_empty() {
            s.push_str("- (none)\n");
        }
        for (path, state) in &self.files {
            s.push_str(&format!("- {path}: {state}\n"));
        }
        if let Some(t) = &self.last_test {
            s.push_str("\nLast test run:\n");
            s.push_str(t.trim_end());
            s.push('\n');
        }
        if !self.earlier_requests.is_empty() {
            s.push_str("\nEarlier user requests (history: already handled, do not redo them):\n");
            for r in &self.earlier_requests {
                s.push_str(&format!("- {}\n", crate::text::preview(r, 3, 300)));
            }
        }
        s
    }
}

/// Whether `m` is a summary written by a compaction.
pub fn is_summary(m: &Message) -> bool {
    matches!(m, Message::User { content, .. } if content.starts_with(SUMMARY_MARKER))
}

/// The user's own requests in `messages`: summaries and what rein wrote
/// in the user's place (nudges, hooks' context, all `[rein] ...`)
/// excluded.
pub fn user_requests(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| !is_summary(m))
        .filter_map(|m| match m {
            Message::User { content, .. } if !crate::is_harness_note(content) => {
                Some(content.clone())
            }
            _ => None,
        })
        .collect()
}

/// Where the kept part starts: at the assistant message that opens the
/// `keep`-th last turn, so every kept tool result keeps its call. None when
/// there is nothing older to compact.
pub fn split_point(messages: &[Message], keep: usize) -> Option<usize> {
    let assistants: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::Assistant(_)))
        .map(|(i, _)| i)
        .collect();
    let cut = if assistants.len() > keep {
        assistants[assistants.len() - keep.max(1)]
    } else {
        return None;
    };
    // Something besides an earlier summary must lie before the cut.
    let older = &messages[..cut];
    if older.iter().all(is_summary) {
        None
    } else {
        Some(cut)
    }
}

/// The older part as plain text for the summariser, at most `max_bytes`
/// (big tool outputs are cut first, then the middle of the whole).
pub fn transcript(messages: &[Message], max_bytes: usize) -> String {
    let mut s = String::new();
    for m in messages {
        match m {
            Message::System { .. } => {}
            Message::User { content, .. } if is_summary(m) => {
                s.push_str("PREVIOUS SUMMARY:\n");
                s.push_str(content);
                s.push_str("\n\n");
            }
            Message::User { content, .. } => {
                s.push_str("USER:\n");
                s.push_str(content);
                s.push_str("\n\n");
            }
            Message::Assistant(a) => {
                for p in &a.content {
                    match p {
                        ContentPart::Text { text } if !text.trim().is_empty() => {
                            s.push_str("ASSISTANT:\n");
                            s.push_str(text.trim());
                            s.push_str("\n\n");
                        }
                        ContentPart::ToolCall(c) => {
                            s.push_str(&format!(
                                "TOOL CALL {}: {}\n\n",
                                c.name,
                                truncate_middle(&c.arguments, 1500)
                            ));
                        }
                        _ => {}
                    }
                }
            }
            Message::Tool(r) => {
                let status = if r.is_error { " (error)" } else { "" };
                s.push_str(&format!(
                    "RESULT of {}{status}:\n{}\n\n",
                    r.name,
                    truncate_middle(&r.output, 2000)
                ));
            }
        }
    }
    truncate_middle(&s, max_bytes)
}

/// The instructions of the summarising call.
pub const SUMMARY_SYSTEM: &str = "You summarise the earlier part of a coding agent's session \
so that the agent can continue the task without it. Write only the summary, in this exact \
structure, with concrete names, paths, commands and numbers:\n\
## Goal\n## Current state\n## Decisions\n## Files touched\n## Commands and tests run (with results)\n\
## Open problems\n## Next step\n\
Keep what is still needed to finish the task; drop chatter. If a previous summary is given, \
merge it with the newer events.";

/// The request that asks the model for a summary.
pub fn summary_request(transcript: &str, max_output_tokens: u32) -> ModelRequest {
    ModelRequest {
        temperature: None,
        system: SUMMARY_SYSTEM.to_string(),
        messages: vec![Message::user(format!(
            "Summarise this earlier part of the session:\n\n{transcript}"
        ))],
        tools: Vec::new(),
        max_output_tokens: Some(max_output_tokens),
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    }
}

/// Why a compaction has no summary (the turns are then dropped instead).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SummaryError {
    #[error("the summary came back empty")]
    Empty,
    #[error("the summary is too big ({bytes} bytes, limit {limit})")]
    TooBig { bytes: usize, limit: usize },
    #[error("the summary is malformed")]
    Malformed,
    #[error("the summary call failed: {0}")]
    CallFailed(#[from] crate::provider::ProviderError),
}

/// A usable summary, or why not.
pub fn check_summary(text: &str, max_bytes: usize) -> Result<String, SummaryError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(SummaryError::Empty);
    }
    if t.len() > max_bytes {
        return Err(SummaryError::TooBig {
            bytes: t.len(),
            limit: max_bytes,
        });
    }
    if t.len() < 20 || !t.chars().any(char::is_alphanumeric) {
        return Err(SummaryError::Malformed);
    }
    Ok(t.to_string())
}

/// The message that stands for the compacted turns.
pub fn summary_message(
    summary: Result<&str, &str>,
    ledger: &TaskLedger,
    replaced: usize,
) -> Message {
    let mut s = format!("{SUMMARY_MARKER}\n");
    match summary {
        Ok(text) => {
            s.push_str(&format!(
                "{replaced} earlier messages were replaced by this summary.\n\n## Summary\n"
            ));
            s.push_str(text);
            s.push_str("\n\n");
        }
        Err(why) => {
            s.push_str(&format!(
                "{replaced} earlier messages were dropped without a summary ({why}).\n\n"
            ));
        }
    }
    s.push_str(&ledger.render());
    s.push_str("\nContinue the task from here.");
    Message::user(s)
}

/// Cut tool outputs longer than `max_bytes` to their head and tail, and
/// drop their images (the text still names each one).
pub fn shrink_tool_outputs(messages: &mut [Message], max_bytes: usize) -> usize {
    let mut n = 0;
    for m in messages {
        let Message::Tool(r) = m else { continue };
        let long = r.output.len() > max_bytes;
        if long {
            r.output = truncate_middle(&r.output, max_bytes);
        }
        if long || !r.images.is_empty() {
            r.images.clear();
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests;
