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
//! (empty: every one). Tool events match the tool's name (Claude's names
//! match rein's: `Bash` is `bash`, `Edit` is `edit_file`...); the others
//! match the start's source, the compaction's trigger, the agent's type,
//! the notification's type or the end's reason, and `UserPromptSubmit` and
//! `Stop` take no matcher. Matching hooks run side by side, each with the
//! event JSON on stdin (`session_id`, `transcript_path` (null: sessions are
//! in SQLite), `cwd`, `permission_mode`, `hook_event_name`, `agent_id` in a
//! sub-agent, and the event's own fields) and a timeout (60 s by default).
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
use std::path::{Path, PathBuf};

use rein_core::HookRun;
use rein_core::host_process::HostLaunch;
use serde::Deserialize;
use serde_json::{Value, json};

mod process;
mod session;
mod tool;

use process::{Ran, one_line, run_handler};

/// The events rein runs hooks for.
pub const EVENTS: [&str; 13] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "Notification",
    "SessionEnd",
];

/// One `{"type": "command", ...}` handler.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Handler {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub command: String,
    /// Seconds.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Block the call when the hook itself fails.
    #[serde(default)]
    pub fail_closed: bool,
}

#[derive(Debug, Deserialize)]
struct Group {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<Handler>,
}

/// One hook: its event, matcher, handler and the file it came from.
#[derive(Debug, Clone)]
pub struct HookEntry {
    pub event: String,
    pub matcher: String,
    pub handler: Handler,
    pub file: PathBuf,
}

/// The hooks of the run's settings files, and what could not be used.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    pub entries: Vec<HookEntry>,
    pub notes: Vec<String>,
}

impl HookSet {
    /// Add the `hooks` block of settings file `file` (the JSON value).
    pub fn add_block(&mut self, block: &Value, file: &Path) {
        let groups: BTreeMap<String, Vec<Group>> = match serde_json::from_value(block.clone()) {
            Ok(g) => g,
            Err(e) => {
                self.notes.push(format!(
                    "{}: the hooks block cannot be read: {e}",
                    file.display()
                ));
                return;
            }
        };
        for (event, groups) in groups {
            let count: usize = groups.iter().map(|g| g.hooks.len()).sum();
            if !EVENTS.contains(&event.as_str()) {
                self.notes.push(format!(
                    "{}: {count} hook(s) for `{event}` are not run: rein knows no such event \
                     (it runs {})",
                    file.display(),
                    EVENTS.join(", ")
                ));
                continue;
            }
            for group in groups {
                let matcher = group.matcher.unwrap_or_default();
                if let Err(e) = Matcher::new(&matcher) {
                    self.notes.push(format!(
                        "{}: {event} matcher `{matcher}` is not a valid pattern ({e}); its hooks \
                         are not run",
                        file.display()
                    ));
                    continue;
                }
                for handler in group.hooks {
                    if handler.kind != "command" || handler.command.trim().is_empty() {
                        self.notes.push(format!(
                            "{}: a {event} hook of type `{}` without a command is not run",
                            file.display(),
                            handler.kind
                        ));
                        continue;
                    }
                    self.entries.push(HookEntry {
                        event: event.clone(),
                        matcher: matcher.clone(),
                        handler,
                        file: file.to_path_buf(),
                    });
                }
            }
        }
    }
}

/// Which tools a matcher takes.
pub(super) enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

impl Matcher {
    pub(super) fn new(text: &str) -> Result<Matcher, regex::Error> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher::All);
        }
        if t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(t.split('|').map(str::to_string).collect()));
        }
        regex::Regex::new(&format!("^(?:{t})$")).map(Matcher::Pattern)
    }

    /// Whether the tool `name` (rein's name, or its Claude name) matches.
    pub(super) fn takes(&self, name: &str) -> bool {
        let names = [name, claude_name(name)];
        match self {
            Matcher::All => true,
            Matcher::Names(list) => list.iter().any(|n| names.contains(&n.as_str())),
            Matcher::Pattern(re) => names.iter().any(|n| re.is_match(n)),
        }
    }
}

/// Claude Code's name for a rein tool, so its matchers match.
fn claude_name(name: &str) -> &str {
    match name {
        "bash" => "Bash",
        "edit_file" => "Edit",
        "write_file" => "Write",
        "read_file" => "Read",
        "grep" => "Grep",
        "glob" => "Glob",
        other => other,
    }
}

/// The user's hooks of a run, by event: given to the engine as its
/// [`rein_core::CallHook`] (tool events) and its
/// [`rein_core::SessionHook`] (the others).
pub struct UserHooks {
    by_event: BTreeMap<String, Vec<(Matcher, Handler)>>,
    /// Names of rein's variables hooks get besides the allowlist.
    env_allow: Vec<String>,
}

impl UserHooks {
    /// None when there is no hook at all.
    pub fn new(set: &HookSet) -> Option<UserHooks> {
        let mut by_event: BTreeMap<String, Vec<(Matcher, Handler)>> = BTreeMap::new();
        for e in &set.entries {
            if let Ok(m) = Matcher::new(&e.matcher) {
                by_event
                    .entry(e.event.clone())
                    .or_default()
                    .push((m, e.handler.clone()));
            }
        }
        (!by_event.is_empty()).then_some(UserHooks {
            by_event,
            env_allow: Vec::new(),
        })
    }

    /// Pass these variables of rein's to hooks too (the user's
    /// `env_allow`); the others of the allowlist's reach them anyway.
    pub fn with_env_allow(mut self, names: Vec<String>) -> UserHooks {
        self.env_allow = names;
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
    fn has(&self, event: &str) -> bool {
        self.by_event.get(event).is_some_and(|h| !h.is_empty())
    }

    /// Run the handlers of `event` whose matcher takes `subject` (every
    /// one when None), side by side, with `input` on stdin.
    async fn run(
        &self,
        event: &str,
        subject: Option<&str>,
        input: &Value,
        project: &Path,
    ) -> Vec<(Handler, Ran)> {
        let Some(hooks) = self.by_event.get(event) else {
            return Vec::new();
        };
        let launch = self.launch(project);
        let launch = &launch;
        let runs = hooks
            .iter()
            .filter(|(m, _)| subject.is_none_or(|s| m.takes(s)))
            .map(|(_, h)| async move { (h.clone(), run_handler(h, input, launch).await) });
        futures_util::future::join_all(runs).await
    }
}

/// The fields every hook's event JSON has.
fn event_json(event: &str, run: &HookRun) -> Value {
    let mut input = json!({
        "session_id": run.session_id,
        // Sessions live in SQLite (`rein sessions show ID --json`): there
        // is no transcript file to point at.
        "transcript_path": Value::Null,
        "cwd": run.workspace,
        "permission_mode": run.mode.to_string(),
        "hook_event_name": event,
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
mod tests {
    use super::*;
    use rein_core::HookVerdict;
    use tool::verdict;

    fn handler(command: &str) -> Handler {
        Handler {
            kind: "command".into(),
            command: command.into(),
            timeout: Some(5),
            fail_closed: false,
        }
    }

    #[test]
    fn matchers_take_names_lists_patterns_and_claudes_names() {
        assert!(Matcher::new("").unwrap().takes("bash"));
        assert!(Matcher::new("*").unwrap().takes("edit_file"));
        let m = Matcher::new("Bash|Edit").unwrap();
        assert!(m.takes("bash") && m.takes("edit_file") && !m.takes("read_file"));
        let m = Matcher::new("mcp__github__.*").unwrap();
        assert!(m.takes("mcp__github__get_issue") && !m.takes("mcp__db__query"));
        assert!(Matcher::new("(").is_err());
    }

    #[test]
    fn a_block_with_unknown_events_and_bad_matchers_is_named() {
        let mut set = HookSet::default();
        let block = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
            "TeammateIdle": [{"hooks": [{"type": "command", "command": "true"}]}],
            "PostToolUse": [{"matcher": "(", "hooks": []}]
        });
        set.add_block(&block, Path::new("settings.json"));
        assert_eq!(set.entries.len(), 2);
        assert_eq!(set.notes.len(), 2, "{:?}", set.notes);
        assert!(
            set.notes
                .iter()
                .any(|n| n.contains("1 hook(s) for `TeammateIdle` are not run")),
            "{:?}",
            set.notes
        );
    }

    #[tokio::test]
    async fn exit_codes_and_json_decide_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"tool_name": "bash", "tool_input": {"command": "rm -rf /"}});
        let run = |cmd: &str| {
            let h = handler(cmd);
            let input = input.clone();
            let launch = HostLaunch::for_project(dir.path());
            async move { verdict(&h, &run_handler(&h, &input, &launch).await) }
        };
        assert_eq!(
            run("cat >/dev/null; echo 'no rm here' >&2; exit 2").await,
            HookVerdict::Veto("no rm here".into())
        );
        // The event reaches the hook on stdin.
        assert_eq!(
            run(r#"grep -q '"rm -rf /"' && echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"seen"}}'"#).await,
            HookVerdict::Veto("seen".into())
        );
        assert_eq!(
            run(r#"echo '{"hookSpecificOutput":{"updatedInput":{"command":"ls"}}}'"#).await,
            HookVerdict::Rewrite(json!({"command": "ls"}))
        );
        assert_eq!(
            run(r#"echo '{"decision":"approve"}'"#).await,
            HookVerdict::Allow
        );
        assert_eq!(run("echo junk not json").await, HookVerdict::Continue);
        let HookVerdict::Warn(w) = run("echo oops >&2; exit 1").await else {
            panic!("a failed hook warns");
        };
        assert!(w.contains("exit 1: oops"), "{w}");
        let mut slow = handler("sleep 5");
        slow.timeout = Some(1);
        slow.fail_closed = true;
        let ran = run_handler(&slow, &input, &HostLaunch::for_project(dir.path())).await;
        let HookVerdict::Veto(why) = verdict(&slow, &ran) else {
            panic!("a fail-closed hook that times out blocks");
        };
        assert!(why.contains("timed out after 1 s"), "{why}");
    }

    fn hooks(block: Value) -> UserHooks {
        let mut set = HookSet::default();
        set.add_block(&block, Path::new("settings.json"));
        assert!(set.notes.is_empty(), "{:?}", set.notes);
        UserHooks::new(&set).unwrap()
    }

    fn run_in(dir: &Path) -> HookRun {
        HookRun {
            session_id: "s1".into(),
            workspace: dir.to_path_buf(),
            mode: rein_core::PermissionMode::Default,
            agent_id: Some("agent-7".into()),
            user_can_answer: true,
        }
    }

    fn command(cmd: &str) -> Value {
        json!([{"hooks": [{"type": "command", "command": cmd, "timeout": 5}]}])
    }

    #[tokio::test]
    async fn session_hooks_answers_become_context_blocks_halts_and_notices() {
        use rein_core::{SessionHook, SessionMoment, StartSource};
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path());
        let prompt = SessionMoment::UserPromptSubmit {
            prompt: "my password",
        };
        let start = SessionMoment::SessionStart {
            source: StartSource::Startup,
            model: "m",
        };
        // The event reaches the hook on stdin, with the agent's id.
        let h = hooks(json!({"UserPromptSubmit": command(
            r#"input=$(cat); echo "$input" | grep -q '"agent_id":"agent-7"' && echo "$input" | grep -q password && { echo 'no passwords' >&2; exit 2; }; echo fine"#
        )}));
        let r = h.at(&prompt, &run).await;
        assert_eq!(r.block.as_deref(), Some("no passwords"), "{r:?}");
        let r = h
            .at(&SessionMoment::UserPromptSubmit { prompt: "hello" }, &run)
            .await;
        assert_eq!((r.block, r.context), (None, vec!["fine".to_string()]));

        // Exit 2 cannot block a start: it is shown. Plain output is context.
        let h = hooks(json!({"SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo codename BLUEBIRD"}]},
            {"matcher": "resume", "hooks": [{"type": "command", "command": "echo never"}]},
            {"hooks": [{"type": "command", "command": "echo cannot >&2; exit 2"}]}
        ]}));
        let r = h.at(&start, &run).await;
        assert_eq!(r.context, ["codename BLUEBIRD"]);
        assert_eq!(r.block, None);
        assert!(r.notices[0].contains("cannot"), "{r:?}");

        // JSON: a message for the user, context, and a stop.
        let h = hooks(json!({"Stop": command(
            r#"echo '{"continue": false, "stopReason": "out of budget", "systemMessage": "heads up", "hookSpecificOutput": {"additionalContext": "ctx"}}'"#
        )}));
        let stop = SessionMoment::Stop {
            last_message: "done",
            stop_hook_active: false,
        };
        let r = h.at(&stop, &run).await;
        assert_eq!(r.halt.as_deref(), Some("out of budget"));
        assert_eq!(r.notices, ["heads up"]);
        assert_eq!(r.context, ["ctx"]);

        // A Stop hook's block carries its reason; junk output is nothing;
        // a crash is a notice.
        let h = hooks(json!({"Stop": [{"hooks": [
            {"type": "command", "command": r#"echo '{"decision": "block", "reason": "tests fail"}'"#},
            {"type": "command", "command": "echo junk {"},
            {"type": "command", "command": "kill -9 $$"}
        ]}]}));
        let r = h.at(&stop, &run).await;
        assert_eq!(r.block.as_deref(), Some("tests fail"));
        assert!(r.context.is_empty());
        assert!(r.notices[0].contains("killed by a signal"), "{r:?}");

        // A prompt hook that fails closed refuses the prompt.
        let h = hooks(json!({"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "exit 3", "fail_closed": true}
        ]}]}));
        let r = h.at(&prompt, &run).await;
        assert!(r.block.unwrap().contains("fails closed"));
    }

    #[tokio::test]
    async fn permission_request_hooks_allow_deny_and_interrupt() {
        use rein_core::{CallHook, PermissionAnswer, ToolCall};
        let dir = tempfile::tempdir().unwrap();
        let run = run_in(dir.path());
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let args = json!({"command": "touch made.txt"});
        let answer = |cmd: &str| {
            let h = hooks(json!({"PermissionRequest": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": cmd}
            ]}]}));
            let (call, args, run) = (call.clone(), args.clone(), run.clone());
            async move { h.permission_request(&call, &args, "writes", &run).await }
        };
        assert_eq!(
            answer(r#"grep -q made.txt && echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'"#).await,
            Some(PermissionAnswer::Allow)
        );
        assert_eq!(
            answer(r#"echo '{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"not today","interrupt":true}}}'"#).await,
            Some(PermissionAnswer::Deny { message: "not today".into(), interrupt: true })
        );
        assert_eq!(
            answer("echo nope >&2; exit 2").await,
            Some(PermissionAnswer::Deny {
                message: "nope".into(),
                interrupt: false
            })
        );
        assert_eq!(answer("true").await, None);
    }

    #[tokio::test]
    async fn a_hook_that_writes_before_it_reads_a_big_input_does_not_deadlock() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = handler("head -c 200000 /dev/zero | tr '\\0' y; wc -c >&2");
        h.timeout = Some(20);
        // An input bigger than a pipe holds (a big file's tool_input).
        let input = json!({"tool_input": {"content": "z".repeat(300_000)}});
        let started = std::time::Instant::now();
        let ran = run_handler(&h, &input, &HostLaunch::for_project(dir.path())).await;
        let Ran::Exited {
            code,
            stdout,
            stderr,
        } = &ran
        else {
            panic!("{ran:?}");
        };
        assert_eq!(*code, Some(0));
        assert_eq!(stdout.len(), 64 * 1024);
        assert!(
            stderr.trim().parse::<usize>().unwrap() > 300_000,
            "{stderr}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_hook_flooding_its_output_is_read_to_its_end_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let h = handler(
            "head -c 3000000 /dev/zero | tr '\\0' x >&2; head -c 3000000 /dev/zero; exit 2",
        );
        let ran = run_handler(&h, &json!({}), &HostLaunch::for_project(dir.path())).await;
        let Ran::Exited { code, stderr, .. } = &ran else {
            panic!("{ran:?}");
        };
        assert_eq!(*code, Some(2));
        assert_eq!(stderr.len(), 64 * 1024);
    }

    #[tokio::test]
    async fn a_call_waiting_for_the_user_is_a_notification_but_not_headless() {
        use rein_core::{CallHook, ToolCall};
        let dir = tempfile::tempdir().unwrap();
        let h = hooks(
            json!({"Notification": [{"matcher": "permission_prompt", "hooks": [
                {"type": "command", "command": "cat > \"$REIN_PROJECT_DIR/notified.json\""}
            ]}]}),
        );
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let args = json!({"command": "make"});
        let mut run = run_in(dir.path());
        run.user_can_answer = false;
        assert_eq!(
            h.permission_request(&call, &args, "runs make", &run).await,
            None
        );
        run.user_can_answer = true;
        assert_eq!(
            h.permission_request(&call, &args, "runs make", &run).await,
            None
        );
        // It runs in the background: wait for it.
        let file = dir.path().join("notified.json");
        for _ in 0..100 {
            if std::fs::read_to_string(&file).is_ok_and(|t| t.ends_with('}')) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let seen: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(seen["notification_type"], "permission_prompt");
        assert_eq!(
            seen["message"],
            "rein needs your permission to use bash (runs make)"
        );
        // Only the second call told it: a headless run cannot be answered.
        std::fs::remove_file(&file).unwrap();
        run.user_can_answer = false;
        h.permission_request(&call, &args, "runs make", &run).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!file.exists());
    }

    /// Whether process `pid` is gone (or a zombie not reaped yet).
    fn gone(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
    }

    #[tokio::test]
    async fn a_hook_that_times_out_takes_its_background_grandchild_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut h = handler(r#"sleep 300 & echo $! > "$REIN_PROJECT_DIR/pid"; sleep 30"#);
        h.timeout = Some(1);
        let ran = run_handler(&h, &json!({}), &HostLaunch::for_project(dir.path())).await;
        assert!(
            matches!(&ran, Ran::Failed(why) if why.contains("timed out")),
            "{ran:?}"
        );
        let pid: u32 = std::fs::read_to_string(dir.path().join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        for _ in 0..100 {
            if gone(pid) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the hook's background sleep {pid} outlived it");
    }
}
