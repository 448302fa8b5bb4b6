//! The user's hooks, in the shape of Claude Code's `hooks` block of
//! settings.json, so a team's hook scripts run unchanged:
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
//!   "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}
//! ```
//!
//! rein runs `PreToolUse`, `PostToolUse` and `PostToolUseFailure` hooks, at
//! the gate's one hook point, so no tool (built-in or MCP) can pass by
//! them. After a call, exit 2's stderr, a `decision: "block"`'s `reason`
//! and `additionalContext` are added to the call's result for the model. A matcher is a tool name, names
//! joined by `|`, a regular expression, or `*` (empty: every tool); Claude's
//! tool names match rein's (`Bash` is `bash`, `Edit` is `edit_file`...).
//! Matching hooks run side by side, each with the event JSON on stdin
//! (`session_id`, `transcript_path` (null: sessions are in SQLite), `cwd`, `permission_mode`,
//! `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`) and a
//! timeout (60 s by default). Exit 0 goes on (its stdout JSON is read when
//! there is one: `hookSpecificOutput.permissionDecision` allow, deny or
//! ask, `updatedInput`, `decision: "block"`, `continue: false`); exit 2
//! blocks, its stderr given to the model; any other exit, a crash or a
//! timeout is a warning to the user and the call goes on, unless the hook
//! says `"fail_closed": true`. Hooks of other events are named as not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use rein_core::{AfterCall, CallHook, HookRun, HookVerdict, ToolCall, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A hook's time when it does not set one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Most bytes of a hook's stdout or stderr read.
const MAX_OUTPUT: u64 = 64 * 1024;

/// The events rein runs hooks for.
pub const RUN_EVENTS: [&str; 3] = ["PreToolUse", "PostToolUse", "PostToolUseFailure"];

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
            if !RUN_EVENTS.contains(&event.as_str()) {
                self.notes.push(format!(
                    "{}: {count} hook(s) for {event} are not run (rein runs {} hooks)",
                    file.display(),
                    RUN_EVENTS.join(", ")
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
enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

impl Matcher {
    fn new(text: &str) -> Result<Matcher, regex::Error> {
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
    fn takes(&self, name: &str) -> bool {
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

/// The user's tool hooks at the gate: `PreToolUse` before a call is
/// decided on, `PostToolUse` after one ran (`PostToolUseFailure` when it
/// failed).
pub struct ToolHooks {
    pre: Vec<(Matcher, Handler)>,
    post: Vec<(Matcher, Handler)>,
    post_failure: Vec<(Matcher, Handler)>,
}

impl ToolHooks {
    /// `None` when there is no tool hook.
    pub fn new(set: &HookSet) -> Option<ToolHooks> {
        let of = |event: &str| -> Vec<(Matcher, Handler)> {
            set.entries
                .iter()
                .filter(|e| e.event == event)
                .filter_map(|e| Some((Matcher::new(&e.matcher).ok()?, e.handler.clone())))
                .collect()
        };
        let hooks = ToolHooks {
            pre: of("PreToolUse"),
            post: of("PostToolUse"),
            post_failure: of("PostToolUseFailure"),
        };
        let any = !(hooks.pre.is_empty() && hooks.post.is_empty() && hooks.post_failure.is_empty());
        any.then_some(hooks)
    }
}

/// The event JSON every tool hook gets.
fn tool_event(event: &str, call: &ToolCall, args: &Value, run: &HookRun) -> Value {
    json!({
        "session_id": run.session_id,
        // Sessions live in SQLite (`rein sessions show ID --json`): there
        // is no transcript file to point at.
        "transcript_path": Value::Null,
        "cwd": run.workspace,
        "permission_mode": run.mode.to_string(),
        "hook_event_name": event,
        "tool_name": call.name,
        "tool_input": args,
        "tool_use_id": call.id,
    })
}

/// Run the handlers of `hooks` that take the call, side by side.
async fn run_matching(
    hooks: &[(Matcher, Handler)],
    call: &ToolCall,
    input: &Value,
    cwd: &Path,
) -> Vec<(Handler, Ran)> {
    let runs = hooks
        .iter()
        .filter(|(m, _)| m.takes(&call.name))
        .map(|(_, h)| async { (h.clone(), run_handler(h, input, cwd).await) });
    futures_util::future::join_all(runs).await
}

#[async_trait]
impl CallHook for ToolHooks {
    async fn before_call(&self, _call: &ToolCall, _args: &Value) -> HookVerdict {
        HookVerdict::Continue
    }

    async fn before_call_in(&self, call: &ToolCall, args: &Value, run: &HookRun) -> HookVerdict {
        if self.pre.is_empty() {
            return HookVerdict::Continue;
        }
        let input = tool_event("PreToolUse", call, args, run);
        let ran = run_matching(&self.pre, call, &input, &run.workspace).await;
        strongest(ran.iter().map(|(h, r)| verdict(h, r)).collect())
    }

    async fn after_call_in(
        &self,
        call: &ToolCall,
        args: &Value,
        output: &ToolOutput,
        run: &HookRun,
    ) -> AfterCall {
        let (event, hooks) = if output.is_error {
            ("PostToolUseFailure", &self.post_failure)
        } else {
            ("PostToolUse", &self.post)
        };
        if hooks.is_empty() {
            return AfterCall::Nothing;
        }
        let mut input = tool_event(event, call, args, run);
        input["tool_response"] = json!({"output": output.content, "is_error": output.is_error});
        let ran = run_matching(hooks, call, &input, &run.workspace).await;
        let (mut tell, mut warn) = (Vec::new(), Vec::new());
        for (handler, ran) in &ran {
            match after_verdict(handler, ran) {
                AfterCall::Tell(t) => tell.push(t),
                AfterCall::Warn(w) => warn.push(w),
                AfterCall::Nothing => {}
            }
        }
        if !tell.is_empty() {
            AfterCall::Tell(format!("[hook] {}", tell.join("\n[hook] ")))
        } else if !warn.is_empty() {
            AfterCall::Warn(warn.join("; "))
        } else {
            AfterCall::Nothing
        }
    }
}

/// What a PostToolUse handler's outcome adds: exit 2's stderr, or the
/// JSON's `reason` (with `decision: "block"`) and `additionalContext`, for
/// the model; a failure, for the user.
fn after_verdict(handler: &Handler, ran: &Ran) -> AfterCall {
    let name = one_line(&handler.command, 60);
    match ran {
        Ran::Failed(why) => AfterCall::Warn(format!("hook `{name}` failed: {why}")),
        Ran::Exited {
            code: Some(2),
            stderr,
            ..
        } => AfterCall::Tell(one_line(stderr, 2000)).non_empty(),
        Ran::Exited {
            code: Some(0),
            stdout,
            ..
        } => {
            let Ok(out) = serde_json::from_str::<Value>(stdout.trim()) else {
                return AfterCall::Nothing;
            };
            let mut parts = Vec::new();
            if out["decision"] == "block"
                && let Some(r) = out["reason"].as_str()
            {
                parts.push(one_line(r, 2000));
            }
            if let Some(c) = out["hookSpecificOutput"]["additionalContext"].as_str() {
                parts.push(one_line(c, 2000));
            }
            AfterCall::Tell(parts.join(" ")).non_empty()
        }
        Ran::Exited { code, stderr, .. } => AfterCall::Warn(format!(
            "hook `{name}` failed ({}): {}",
            code.map_or("a signal".to_string(), |c| format!("exit {c}")),
            one_line(stderr, 300)
        )),
    }
}

trait NonEmpty {
    fn non_empty(self) -> AfterCall;
}

impl NonEmpty for AfterCall {
    /// `Nothing` for a `Tell` with nothing to say.
    fn non_empty(self) -> AfterCall {
        match self {
            AfterCall::Tell(t) if t.trim().is_empty() => AfterCall::Nothing,
            other => other,
        }
    }
}

/// How a handler's process ended.
#[derive(Debug)]
enum Ran {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    Failed(String),
}

/// Run one handler: `sh -c COMMAND` in the workspace, the event on stdin.
async fn run_handler(handler: &Handler, input: &Value, cwd: &Path) -> Ran {
    let timeout = handler
        .timeout
        .map(|s| Duration::from_secs(s.max(1)))
        .unwrap_or(DEFAULT_TIMEOUT);
    let mut child = match tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&handler.command)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .env("REIN_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Ran::Failed(format!("cannot start: {e}")),
    };
    let body = input.to_string();
    let work = async {
        if let Some(mut stdin) = child.stdin.take() {
            // A hook that does not read its input must not hang rein.
            let _ = stdin.write_all(body.as_bytes()).await;
        }
        let (mut out, mut err) = (String::new(), String::new());
        if let Some(o) = child.stdout.take() {
            let _ = o.take(MAX_OUTPUT).read_to_string(&mut out).await;
        }
        if let Some(e) = child.stderr.take() {
            let _ = e.take(MAX_OUTPUT).read_to_string(&mut err).await;
        }
        let status = child.wait().await;
        (status, out, err)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((Ok(status), stdout, stderr)) => Ran::Exited {
            code: status.code(),
            stdout,
            stderr,
        },
        Ok((Err(e), _, _)) => Ran::Failed(e.to_string()),
        Err(_) => Ran::Failed(format!("timed out after {} s", timeout.as_secs())),
    }
}

/// What one handler's outcome means for the call.
fn verdict(handler: &Handler, ran: &Ran) -> HookVerdict {
    let name = one_line(&handler.command, 60);
    let failed = |why: String| {
        if handler.fail_closed {
            HookVerdict::Veto(format!("the hook `{name}` failed ({why}) and fails closed"))
        } else {
            HookVerdict::Warn(format!("hook `{name}` failed: {why}; the call went on"))
        }
    };
    let (code, stdout, stderr) = match ran {
        Ran::Failed(why) => return failed(why.clone()),
        Ran::Exited {
            code,
            stdout,
            stderr,
        } => (*code, stdout, stderr),
    };
    match code {
        Some(0) => from_json(stdout),
        Some(2) => HookVerdict::Veto(
            Some(one_line(stderr, 2000))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("blocked by the hook `{name}`")),
        ),
        Some(n) => failed(format!("exit {n}: {}", one_line(stderr, 300))),
        None => failed("killed by a signal".into()),
    }
}

/// A successful hook's stdout: JSON with a decision, or anything else (go
/// on).
fn from_json(stdout: &str) -> HookVerdict {
    let Ok(out) = serde_json::from_str::<Value>(stdout.trim()) else {
        return HookVerdict::Continue;
    };
    let text = |v: &Value| v.as_str().map(|s| one_line(s, 2000));
    let specific = &out["hookSpecificOutput"];
    let reason = text(&specific["permissionDecisionReason"])
        .or_else(|| text(&out["reason"]))
        .unwrap_or_else(|| "a hook decided so".into());
    if out["continue"] == Value::Bool(false) {
        let why = text(&out["stopReason"]).unwrap_or(reason);
        return HookVerdict::Veto(why);
    }
    match specific["permissionDecision"]
        .as_str()
        .or_else(|| out["decision"].as_str())
    {
        Some("deny" | "block") => return HookVerdict::Veto(reason),
        Some("ask") => return HookVerdict::Escalate(reason),
        _ => {}
    }
    if let Some(input) = specific.get("updatedInput").filter(|v| v.is_object()) {
        return HookVerdict::Rewrite(input.clone());
    }
    match specific["permissionDecision"]
        .as_str()
        .or_else(|| out["decision"].as_str())
    {
        Some("allow" | "approve") => HookVerdict::Allow,
        _ => HookVerdict::Continue,
    }
}

/// Several hooks' verdicts as one: a block wins, then a question, then a
/// rewrite, then an allow, then a warning.
fn strongest(verdicts: Vec<HookVerdict>) -> HookVerdict {
    let rank = |v: &HookVerdict| match v {
        HookVerdict::Veto(_) => 5,
        HookVerdict::Escalate(_) => 4,
        HookVerdict::Rewrite(_) => 3,
        HookVerdict::Allow => 2,
        HookVerdict::Warn(_) => 1,
        HookVerdict::Continue => 0,
    };
    verdicts
        .into_iter()
        .max_by_key(rank)
        .unwrap_or(HookVerdict::Continue)
}

fn one_line(text: &str, max: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .chars()
        .filter(|c| !c.is_control())
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_block_with_events_rein_does_not_run_is_named() {
        let mut set = HookSet::default();
        let block = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
            "PostToolUse": [{"matcher": "(", "hooks": []}]
        });
        set.add_block(&block, Path::new("settings.json"));
        assert_eq!(set.entries.len(), 1);
        assert_eq!(set.notes.len(), 2, "{:?}", set.notes);
        assert!(
            set.notes
                .iter()
                .any(|n| n.contains("1 hook(s) for Stop are not run"))
        );
    }

    #[tokio::test]
    async fn exit_codes_and_json_decide_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"tool_name": "bash", "tool_input": {"command": "rm -rf /"}});
        let run = |cmd: &str| {
            let h = handler(cmd);
            let input = input.clone();
            let cwd = dir.path().to_path_buf();
            async move { verdict(&h, &run_handler(&h, &input, &cwd).await) }
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
        let ran = run_handler(&slow, &input, dir.path()).await;
        let HookVerdict::Veto(why) = verdict(&slow, &ran) else {
            panic!("a fail-closed hook that times out blocks");
        };
        assert!(why.contains("timed out after 1 s"), "{why}");
    }
}
