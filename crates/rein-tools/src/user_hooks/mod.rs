//! The user's hooks, in the shape of Claude Code's `hooks` block of
//! settings.json, so a team's hook scripts run unchanged:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
//!   "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}
//! ```
//!
//! Every event of Claude Code's list runs:
//! - at the gate, for every tool (built-in, MCP, a sub-agent's):
//!   `PreToolUse`, `PermissionRequest` (when the user would be asked),
//!   `PostToolUse`, `PostToolUseFailure` ([`tool`]);
//! - at the session's moments: `SessionStart`, `UserPromptSubmit`,
//!   `Stop`, `PreCompact`, `PostCompact`, `SubagentStart`, `SubagentStop`,
//!   `Notification`, `SessionEnd` ([`session`]).
//!
//! A matcher is a name, names joined by `|`, a regular expression, or `*`
//! (empty: every one). Tool events match the tool's name, Claude's or
//! rein's (`Bash` and `bash`, `Edit` and `edit_file`...); the others
//! match the start's source, the compaction's trigger, the agent's type,
//! the notification's type or the end's reason, and `UserPromptSubmit` and
//! `Stop` take no matcher. Matching hooks run side by side, each with the
//! event JSON on stdin in Claude Code's words ([`crate::claude_names`]:
//! `session_id`, `transcript_path` ([`transcript`]: the session's
//! messages as a JSONL file in Claude's shape, written just before), `cwd`,
//! `permission_mode` (`default`, `acceptEdits`, `plan`,
//! `bypassPermissions`), `hook_event_name`, `agent_id` in a sub-agent, and
//! the event's own fields: `tool_name` and `tool_input` with Claude's tool
//! names and keys) and a timeout (60 s by default).
//! A hook runs on the host as every host process does
//! ([`rein_core::host_process`]): in an empty folder of rein's, not the
//! workspace (the project is `cwd` in its input and `$REIN_PROJECT_DIR` /
//! `$CLAUDE_PROJECT_DIR`), with a scrubbed environment (`env_allow` adds
//! names), and its background processes end with it.
//! Exit 0 goes on, its stdout JSON read when there is one; exit 2 blocks
//! (what blocking means is the event's); any other exit, a crash or a
//! timeout is a warning to the user and rein goes on, unless the hook says
//! `"fail_closed": true` (then a tool call, a prompt or an approval it was
//! asked about is refused).

use std::collections::BTreeMap;
use std::path::Path;

use rein_core::HookRun;
use rein_core::host_process::HostLaunch;
use serde_json::{Value, json};

use crate::claude_names::claude_mode;

mod event;
mod matcher;
mod process;
mod session;
mod settings;
mod tool;
mod transcript;

pub use event::{HookEvent, UnknownEvent};
use matcher::Matcher;
use process::{Ran, one_line, run_handler};
pub use settings::{Handler, HookEntry, HookSet};
pub use transcript::Transcripts;

/// The user's hooks of a run, by event: given to the engine as its
/// [`rein_core::CallHook`] (tool events) and its
/// [`rein_core::SessionHook`] (the others).
pub struct UserHooks {
    by_event: BTreeMap<HookEvent, Vec<(Matcher, Handler)>>,
    /// Names of rein's variables hooks get besides the allowlist.
    env_allow: Vec<String>,
    /// Where the session's transcript is written for `transcript_path`
    /// (None: it is null).
    transcripts: Option<Transcripts>,
}

impl UserHooks {
    /// None when there is no hook at all.
    pub fn new(set: &HookSet) -> Option<UserHooks> {
        let mut by_event: BTreeMap<HookEvent, Vec<(Matcher, Handler)>> = BTreeMap::new();
        for e in &set.entries {
            if let Ok(m) = Matcher::new(&e.matcher) {
                by_event
                    .entry(e.event)
                    .or_default()
                    .push((m, e.handler.clone()));
            }
        }
        (!by_event.is_empty()).then_some(UserHooks {
            by_event,
            env_allow: Vec::new(),
            transcripts: None,
        })
    }

    /// Pass these variables of rein's to hooks too (the user's
    /// `env_allow`); the others of the allowlist's reach them anyway.
    pub fn with_env_allow(mut self, names: Vec<String>) -> UserHooks {
        self.env_allow = names;
        self
    }

    /// Write each session's transcript for its hooks to read
    /// (`transcript_path`).
    pub fn with_transcripts(mut self, transcripts: Transcripts) -> UserHooks {
        self.transcripts = Some(transcripts);
        self
    }

    /// How a hook of the project at `project` starts.
    fn launch(&self, project: &Path) -> HostLaunch {
        HostLaunch {
            env_allow: self.env_allow.clone(),
            ..HostLaunch::for_project(project)
        }
    }

    /// Whether any hook is set for `event`.
    fn has(&self, event: HookEvent) -> bool {
        self.by_event.get(&event).is_some_and(|h| !h.is_empty())
    }

    /// Run the handlers of `event` whose matcher takes `subject` (every
    /// one when None), side by side, with `input` on stdin (and the
    /// session's transcript written for them first).
    async fn run(
        &self,
        event: HookEvent,
        subject: Option<&str>,
        input: &Value,
        project: &Path,
    ) -> Vec<(Handler, Ran)> {
        let Some(hooks) = self.by_event.get(&event) else {
            return Vec::new();
        };
        let matching: Vec<&Handler> = hooks
            .iter()
            .filter(|(m, _)| subject.is_none_or(|s| m.takes(s)))
            .map(|(_, h)| h)
            .collect();
        if matching.is_empty() {
            return Vec::new();
        }
        let input = &self.with_transcript(input).await;
        let launch = self.launch(project);
        let launch = &launch;
        let runs = matching
            .into_iter()
            .map(|h| async move { (h.clone(), run_handler(h, input, launch).await) });
        futures_util::future::join_all(runs).await
    }

    /// `input` with `transcript_path` naming the session's transcript,
    /// written now; as it is when there is none.
    async fn with_transcript(&self, input: &Value) -> Value {
        let mut input = input.clone();
        let session = input["session_id"].as_str().unwrap_or_default().to_string();
        if let Some(t) = &self.transcripts
            && let Some(path) = t.write(&session).await
        {
            input["transcript_path"] = json!(path);
        }
        input
    }
}

/// The fields every hook's event JSON has.
fn event_json(event: HookEvent, run: &HookRun) -> Value {
    let mut input = json!({
        "session_id": run.session_id,
        // Set when the hooks run, if rein writes transcripts.
        "transcript_path": Value::Null,
        "cwd": run.workspace,
        "permission_mode": claude_mode(run.mode),
        "hook_event_name": event.as_str(),
    });
    if let Some(id) = &run.agent_id {
        input["agent_id"] = json!(id);
    }
    input
}

/// A handler's command as messages name it.
fn short_name(handler: &Handler) -> String {
    one_line(&handler.command, 60)
}

#[cfg(test)]
mod tests;
