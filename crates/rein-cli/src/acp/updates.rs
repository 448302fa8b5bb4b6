//! rein's events as ACP `session/update`s: answer and reasoning text as
//! chunks, each tool call as a `tool_call` then `tool_call_update`s (a
//! diff for the file tools, the command for bash, the output when it
//! ends), the todo list as the plan, mode changes, notices.
//!
//! [`Updates`] keeps what a call's later updates need from its start: the
//! file it changes and that file's text before the change.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, Diff, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use rein_core::{Event, Message, Todo, TodoStatus};

use super::client_terminal::TerminalCalls;
use serde_json::Value;

/// Largest file whose text goes into a diff (a bigger one is named, not
/// shown).
const MAX_DIFF_FILE: u64 = 1024 * 1024;
/// Largest tool output shown in a call's update.
const MAX_OUTPUT: usize = 64 * 1024;

/// Turns one session's events into updates.
#[derive(Debug)]
pub struct Updates {
    workspace: PathBuf,
    /// Events of a run now (files are read for diffs), not of a stored
    /// transcript.
    live: bool,
    /// The file-changing calls under way: their file and its text before.
    edits: HashMap<String, FileChange>,
    /// Ended calls whose last content is their diff: the full output that
    /// follows does not replace it.
    diffed: HashSet<String>,
    /// Writes go through the editor ([`super::client_fs`]): the disk does
    /// not show the change, so it is not read after the call (the tool
    /// shows the diff it made itself).
    client_writes: bool,
    /// The calls an editor terminal shows ([`super::client_terminal`]):
    /// their output is not sent again as text, so the terminal stays.
    terminals: Option<Arc<TerminalCalls>>,
}

/// A call that changes a file.
#[derive(Debug, Clone)]
struct FileChange {
    path: PathBuf,
    /// None: the file did not exist (or could not be read).
    before: Option<String>,
}

impl Updates {
    /// For the events of runs as they happen.
    pub fn new(workspace: &Path) -> Updates {
        Updates {
            workspace: workspace.to_path_buf(),
            live: true,
            edits: HashMap::new(),
            diffed: HashSet::new(),
            client_writes: false,
            terminals: None,
        }
    }

    /// Whether the session's writes go through the editor.
    pub fn writes_through_client(mut self, yes: bool) -> Updates {
        self.client_writes = yes;
        self
    }

    /// The calls shown in the editor's terminal, when bash runs there.
    pub fn terminals(mut self, calls: Option<Arc<TerminalCalls>>) -> Updates {
        self.terminals = calls;
        self
    }

    /// For a stored transcript: the files are not read (they have changed
    /// since), a change is shown as the call asked for it.
    pub fn replaying(workspace: &Path) -> Updates {
        Updates {
            live: false,
            ..Updates::new(workspace)
        }
    }

    /// The updates `event` makes (often none).
    pub fn of(&mut self, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::TextDelta { text } => vec![agent_text(text)],
            Event::ReasoningDelta { text } => vec![SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(ContentBlock::Text(TextContent::new(text.clone()))),
            )],
            Event::ToolStarted {
                call_id,
                name,
                arguments,
            } => vec![SessionUpdate::ToolCall(
                self.started(call_id, name, arguments),
            )],
            Event::ToolFinished {
                call_id,
                is_error,
                output_preview,
                ..
            } => vec![self.finished(call_id, *is_error, output_preview)],
            Event::MessageCommitted {
                message: Message::Tool(result),
                ..
            } => {
                if self.diffed.remove(&result.call_id)
                    || self.edits.contains_key(&result.call_id)
                    || self.in_terminal(&result.call_id)
                {
                    Vec::new()
                } else {
                    vec![output_update(&result.call_id, &result.output)]
                }
            }
            Event::PermissionDenied { call_id, why, .. } => {
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call_id.clone(),
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Failed)
                        .content(vec![text_content(&format!("refused: {why}"))]),
                ))]
            }
            Event::TodosUpdated { todos } => vec![plan(todos)],
            Event::ModeChanged { mode } => vec![SessionUpdate::CurrentModeUpdate(
                CurrentModeUpdate::new(mode.as_str()),
            )],
            Event::Notice { message } => vec![thought(&format!("[rein] {message}"))],
            Event::Retry {
                attempt,
                max_retries,
                error,
                discarded,
                ..
            } => {
                let dropped = if *discarded {
                    " (the partial answer above is dropped)"
                } else {
                    ""
                };
                vec![thought(&format!(
                    "[rein] the model call failed ({error}); retry {attempt} of {max_retries}{dropped}"
                ))]
            }
            Event::Compaction {
                replaced_messages, ..
            } => vec![thought(&format!(
                "[rein] compacted: {replaced_messages} older messages were summarised"
            ))],
            Event::Subagent {
                agent_id,
                agent,
                event,
                ..
            } => self.subagent(agent_id, agent, event),
            _ => Vec::new(),
        }
    }

    /// A call passed to the gate: shown in progress, with the diff it
    /// would make when it changes a file.
    fn started(&mut self, call_id: &str, name: &str, arguments: &str) -> ToolCall {
        let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
        let arg = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or("");
        let mut call = ToolCall::new(call_id.to_string(), title(name, &args))
            .kind(kind(name))
            .status(ToolCallStatus::InProgress)
            .raw_input(args.clone());
        let path = match name {
            "read_file" | "write_file" | "edit_file" => self.inside(arg("path")),
            _ => None,
        };
        if let Some(p) = &path {
            call = call.locations(vec![ToolCallLocation::new(p.clone())]);
        }
        match (name, path) {
            ("bash", _) => call = call.content(vec![text_content(&fenced("sh", arg("command")))]),
            ("write_file" | "edit_file", Some(path)) if !self.live => {
                // A stored call: the file has changed since; the change
                // is shown as the call asked for it.
                let (before, after) = match name {
                    "write_file" => (None, arg("content")),
                    _ => (Some(arg("old_string").to_string()), arg("new_string")),
                };
                call = call.content(vec![diff(&path, before, after.to_string())]);
            }
            ("write_file" | "edit_file", Some(path)) => {
                let before = read_text(&path);
                let after = match name {
                    "write_file" => Some(arg("content").to_string()),
                    _ => before.as_deref().and_then(|text| {
                        let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
                        replaced(text, arg("old_string"), arg("new_string"), all)
                    }),
                };
                if let Some(after) = after {
                    call = call.content(vec![diff(&path, before.clone(), after)]);
                }
                self.edits
                    .insert(call_id.to_string(), FileChange { path, before });
            }
            _ => {}
        }
        call
    }

    /// A call ended: its status, and the diff it made or its output.
    fn finished(&mut self, call_id: &str, is_error: bool, preview: &str) -> SessionUpdate {
        let status = if is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        let mut fields = ToolCallUpdateFields::new().status(status);
        match self.edits.remove(call_id) {
            // The diff shown stays: the tool showed the one it made, or
            // the one it was asked for at the start does.
            Some(_) if !is_error && self.client_writes => {
                self.diffed.insert(call_id.to_string());
            }
            Some(change) if !is_error => {
                if let Some(after) = read_text(&change.path) {
                    fields = fields.content(vec![diff(&change.path, change.before, after)]);
                }
                self.diffed.insert(call_id.to_string());
            }
            Some(_) => fields = fields.content(vec![text_content(preview)]),
            None => {}
        }
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call_id.to_string(), fields))
    }

    /// Whether an editor terminal showed `call_id`'s output.
    fn in_terminal(&self, call_id: &str) -> bool {
        self.terminals.as_ref().is_some_and(|t| t.take(call_id))
    }

    /// A sub-agent's tool calls, shown as calls of their own (ids made
    /// unique by the agent's), titled with the agent's name.
    fn subagent(&mut self, agent_id: &str, agent: &str, event: &Event) -> Vec<SessionUpdate> {
        let nested = |call_id: &str| format!("{agent_id}/{call_id}");
        match event {
            Event::ToolStarted {
                call_id,
                name,
                arguments,
            } => {
                let mut call = self.started(&nested(call_id), name, arguments);
                call.title = format!("[{agent}] {}", call.title);
                vec![SessionUpdate::ToolCall(call)]
            }
            Event::ToolFinished {
                call_id,
                is_error,
                output_preview,
                ..
            } => vec![self.finished(&nested(call_id), *is_error, output_preview)],
            Event::Subagent {
                agent_id: inner,
                agent,
                event,
                ..
            } => self.subagent(&format!("{agent_id}/{inner}"), agent, event),
            _ => Vec::new(),
        }
    }

    /// `path` resolved inside the workspace (symlinks followed); None when
    /// it is empty or leaves it. Only such files are read for a diff.
    fn inside(&self, path: &str) -> Option<PathBuf> {
        rein_tools::workspace::resolve(&self.workspace, path).ok()
    }
}

/// The updates of a prompt's answer text.
pub fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text.to_string(),
    ))))
}

/// A line the user should see that is not the model's answer.
pub fn thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
        text.to_string(),
    ))))
}

/// The todo list as the client's plan.
pub fn plan(todos: &[Todo]) -> SessionUpdate {
    let entries = todos
        .iter()
        .filter(|t| t.status != TodoStatus::Cancelled)
        .map(|t| {
            let status = match t.status {
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            PlanEntry::new(t.content.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}

/// A finished call's full output (cut to [`MAX_OUTPUT`]).
pub fn output_update(call_id: &str, output: &str) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
        call_id.to_string(),
        ToolCallUpdateFields::new().content(vec![text_content(&fenced("", cut(output)))]),
    ))
}

/// What a tool does, as a tool-call kind (the client's icon).
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read_file" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "glob" | "grep" => ToolKind::Search,
        "todo_write" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A call's one-line title from its arguments.
pub fn title(tool: &str, args: &Value) -> String {
    let arg = |key: &str| args.get(key).and_then(Value::as_str).map(one_line);
    let described = match tool {
        "read_file" => arg("path").map(|p| format!("Read {p}")),
        "write_file" => arg("path").map(|p| format!("Write {p}")),
        "edit_file" => arg("path").map(|p| format!("Edit {p}")),
        "bash" => arg("command").map(|c| format!("`{c}`")),
        "glob" => arg("pattern").map(|p| format!("Find {p}")),
        "grep" => arg("pattern").map(|p| format!("Search for {p}")),
        "todo_write" => Some("Update the plan".to_string()),
        _ => None,
    };
    described.unwrap_or_else(|| tool.to_string())
}

/// The first line of `text`, at most 120 characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(120).collect();
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::Content(agent_client_protocol::v1::schema::Content::new(
        ContentBlock::Text(TextContent::new(text.to_string())),
    ))
}

fn diff(path: &Path, before: Option<String>, after: String) -> ToolCallContent {
    ToolCallContent::Diff(Diff::new(path.to_path_buf(), after).old_text(before))
}

/// `text` in a Markdown code fence longer than any run of backticks in
/// it, so a tool's output cannot close the fence and be read as Markdown.
pub fn fenced(lang: &str, text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}", text.trim_end_matches('\n'))
}

/// At most [`MAX_OUTPUT`] bytes of `text`, cut on a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= MAX_OUTPUT {
        return text;
    }
    let mut end = MAX_OUTPUT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A regular file's text for a diff: never through a symlink, a FIFO or a
/// device, at most [`MAX_DIFF_FILE`] bytes; None otherwise.
fn read_text(path: &Path) -> Option<String> {
    rein_core::frontmatter::read_file(path, MAX_DIFF_FILE).ok()
}

/// `text` with `old` replaced by `new` (once, or everywhere with `all`),
/// as `edit_file` would; None when `old` is not in it.
fn replaced(text: &str, old: &str, new: &str, all: bool) -> Option<String> {
    if old.is_empty() || !text.contains(old) {
        return None;
    }
    Some(if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    })
}

#[cfg(test)]
mod tests;
