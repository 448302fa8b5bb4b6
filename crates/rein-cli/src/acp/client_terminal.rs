//! `bash` through the editor's terminal: when the client offers
//! `terminal`, a session's commands run in a terminal the editor creates
//! and shows live in the call, and the sandbox stays rein's.
//!
//! Only the transport changes, as for the file tools ([`super::client_fs`]):
//! the tool has the built-in's spec, access, permission facts, locks and
//! timeout, so the gate (rules, approvals, plan mode, the command's
//! assessment) decides exactly as on the built-in, and the command waits
//! for one of the same slots. What the editor is asked to run is not the
//! command but `rein sandbox-run` (this executable) with a spec rein wrote
//! ([`crate::sandbox_run`]): the sandbox kind rein chose, the policy, the
//! script, the timeout and the environment rein's bash tool would hand the
//! command, computed here. The wrapper drops the editor's environment (its
//! API keys) before anything else and applies Landlock, the rlimits and the
//! cgroup in the command's process as the bash tool does; the request's
//! own `env` is empty.
//!
//! For one call: the spec is written and the git metadata recorded, then
//! `terminal/create`; the call's update embeds the terminal; then
//! `terminal/wait_for_exit` (bounded by the timeout and a grace, then
//! `terminal/kill`), `terminal/output`, and `terminal/release` always (on
//! cancel too). The git metadata is checked again here, in case the
//! wrapper was killed before its own check. The observation has the bash
//! tool's format. When the editor cannot create the terminal, the command
//! runs in rein's own sandbox and the observation says so. Sub-agents'
//! calls run in rein's sandbox too: the editor knows none of their ids.

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest, SessionNotification,
    SessionUpdate, Terminal, TerminalExitStatus, TerminalId, TerminalOutputRequest,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WaitForTerminalExitRequest,
};
use agent_client_protocol::{Client, JsonRpcRequest};
use async_trait::async_trait;
use rein_core::{
    Assessment, PathLock, PermissionMode, SandboxMode, Tool, ToolAccess, ToolContext, ToolError,
    ToolOutput, ToolSpec,
};
use rein_tools::Bash;
use rein_tools::bash::{self, Admission, Admitted, Ending};
use rein_tools::sandbox::{self, SandboxKind, gitmeta};
use serde_json::Value;
use tokio::time::Instant;

use crate::sandbox_run::{self, Spec};

/// How long past the command's timeout the editor's terminal may take to
/// end before rein kills it (within the gate's own margin).
const GRACE: Duration = Duration::from_secs(2);
/// How long rein waits for the editor to kill, report or release.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// The calls whose output an editor terminal shows: the update at their
/// end keeps the terminal rather than replacing it with the text.
#[derive(Debug, Default)]
pub struct TerminalCalls(Mutex<HashSet<String>>);

impl TerminalCalls {
    fn insert(&self, call_id: &str) {
        self.lock().insert(call_id.to_string());
    }

    /// Whether `call_id` was shown in a terminal (forgotten once asked).
    pub fn take(&self, call_id: &str) -> bool {
        self.lock().remove(call_id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Put `bash` through the editor's terminal in `engine` when the client
/// offered it (and the engine offers bash); the calls it shows, else
/// `None`.
pub fn install(
    engine: &rein_core::AgentEngine,
    offered: bool,
    session: &str,
    client: &ConnectionTo<Client>,
) -> Option<Arc<TerminalCalls>> {
    let has_bash = engine
        .tool_specs(PermissionMode::Auto)
        .iter()
        .any(|s| s.name == "bash");
    if !offered || !has_bash {
        return None;
    }
    let shown = Arc::new(TerminalCalls::default());
    let tool = EditorBash {
        client: client.clone(),
        session: session.to_string(),
        shown: shown.clone(),
    };
    engine.replace_tools(|n| n == "bash", vec![Arc::new(tool)]);
    Some(shown)
}

/// `bash` through the editor's terminal.
struct EditorBash {
    client: ConnectionTo<Client>,
    /// The ACP session id.
    session: String,
    shown: Arc<TerminalCalls>,
}

#[async_trait]
impl Tool for EditorBash {
    fn spec(&self) -> ToolSpec {
        Bash.spec()
    }

    fn access(&self) -> ToolAccess {
        Bash.access()
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        Bash.assess(args, ctx)
    }

    fn locks(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
        Bash.locks(args, ctx)
    }

    fn timeout(&self, args: &Value) -> Option<Duration> {
        Bash.timeout(args)
    }

    async fn call(&self, raw: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        // A sub-agent's call: the editor could not show it.
        if ctx.session_id != self.session {
            return Bash.call(raw, ctx).await;
        }
        // 1. The arguments and a command slot, as the built-in takes them.
        let admitted = match bash::admit(raw, &ctx).await? {
            Admission::Admitted(a) => a,
            Admission::Stopped(output) => return Ok(output),
        };
        // 2. The terminal; when the editor cannot give one, rein's own run.
        let kind = sandbox::available();
        let started = match self.start(&admitted, &ctx, kind).await {
            Ok(started) => started,
            Err(why) => return fallback(admitted, &ctx, kind, &why).await,
        };
        // 3. Shown live in the call; waited for; read; released.
        self.show(&ctx.call_id, &started.lease.id);
        Ok(started.finish(&admitted, &ctx).await)
    }
}

/// A command started in the editor's terminal.
struct Started {
    lease: Lease,
    /// Its spec, kept until the end (its folder is removed then).
    _spec: sandbox_run::Written,
    /// The git metadata before it, in writable modes.
    git: Option<gitmeta::GitMeta>,
    started_at: Instant,
}

impl EditorBash {
    /// Write the spec, record the git metadata, ask for the terminal.
    async fn start(
        &self,
        admitted: &Admitted,
        ctx: &ToolContext,
        kind: SandboxKind,
    ) -> Result<Started, String> {
        // 1. The spec: everything rein decided, computed here.
        let spec = Spec {
            sandbox: kind,
            policy: ctx.sandbox.clone(),
            workspace: ctx.workspace.clone(),
            script: admitted.command.clone(),
            timeout_secs: admitted.limit.as_secs(),
            env: bash::command_env(kind, &ctx.sandbox),
            runtime_dir: std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
        };
        let written = spec.write().map_err(|e| e.to_string())?;
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find rein's own executable: {e}"))?;
        // 2. The git metadata, before the command can start.
        let git = record_git(ctx).await;
        // 3. The editor starts `rein sandbox-run` in the workspace.
        let request = CreateTerminalRequest::new(self.session.clone(), exe.display().to_string())
            .args(vec![
                "sandbox-run".into(),
                "--spec".into(),
                written.path.display().to_string(),
                "--sha256".into(),
                written.digest.clone(),
            ])
            .cwd(ctx.workspace.clone())
            .output_byte_limit((bash::HEAD_BYTES + bash::TAIL_BYTES) as u64);
        // Not abandoned on cancel: a terminal whose id rein never learnt
        // could not be killed. A cancel is seen as soon as it is created.
        let created = self.client.send_request(request).block_task().await;
        let id = created.map_err(|e| e.message)?.terminal_id;
        Ok(Started {
            lease: Lease::new(&self.client, &self.session, id),
            _spec: written,
            git,
            started_at: Instant::now(),
        })
    }

    /// Embed the terminal in the call's view.
    fn show(&self, call_id: &str, id: &TerminalId) {
        let content = vec![ToolCallContent::Terminal(Terminal::new(id.clone()))];
        let update = ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new().content(content),
        );
        let note =
            SessionNotification::new(self.session.clone(), SessionUpdate::ToolCallUpdate(update));
        // Only a view: a client gone away ends the run by itself.
        if self.client.send_notification(note).is_ok() {
            self.shown.insert(call_id);
        }
    }
}

impl Started {
    /// Wait for the command, read its output, release the terminal, check
    /// the git metadata: the observation.
    async fn finish(self, admitted: &Admitted, ctx: &ToolContext) -> ToolOutput {
        // 1. Its end: its own, the timeout's (killed), or a cancel.
        let waited = tokio::select! {
            exit = self.lease.wait() => Waited::Exited(exit),
            _ = tokio::time::sleep_until(admitted.deadline + GRACE) => Waited::Overdue,
            () = ctx.cancel.cancelled() => Waited::Cancelled,
        };
        if !matches!(waited, Waited::Exited(Ok(_))) {
            self.lease.kill().await;
        }
        // 2. Its output, then the terminal goes.
        let output = self.lease.output().await;
        self.lease.release().await;
        // 3. Git metadata it planted, if the wrapper could not undo it.
        let mut notes = Vec::new();
        notes.extend(restore_git(ctx, self.git).await);
        // 4. The bash tool's observation.
        let elapsed = self.started_at.elapsed();
        let ending = ending(waited, admitted.limit, elapsed, &mut notes);
        let text = match output {
            Ok((text, truncated)) => shown_output(&text, truncated),
            Err(why) => format!("(the editor did not give the output: {why})"),
        };
        bash::observation(text, notes, &ending)
    }
}

/// How waiting for the terminal ended.
enum Waited {
    Exited(Result<TerminalExitStatus, String>),
    /// Past the timeout and the grace: rein killed it.
    Overdue,
    Cancelled,
}

/// How the command ended, from what the terminal said (the notes get the
/// lines the terminal's output does not already hold).
fn ending(waited: Waited, limit: Duration, elapsed: Duration, notes: &mut Vec<String>) -> Ending {
    let exit = match waited {
        Waited::Exited(Ok(exit)) => exit,
        Waited::Exited(Err(why)) => {
            notes.push(format!("[the editor's terminal failed: {why}]"));
            return Ending::Exited(None);
        }
        Waited::Overdue => {
            let ending = Ending::TimedOut(limit);
            notes.extend(ending.note());
            notes.push("[the editor's terminal did not end in time; rein killed it]".into());
            return ending;
        }
        Waited::Cancelled => {
            notes.extend(Ending::Cancelled.note());
            return Ending::Cancelled;
        }
    };
    match (exit.exit_code, exit.signal) {
        // The wrapper's own timeout: its line is in the output.
        (Some(code), _) if code as i32 == sandbox_run::TIMED_OUT && elapsed >= limit => {
            Ending::TimedOut(limit)
        }
        (Some(code), _) => Ending::Exited(Some(ExitStatus::from_raw(((code & 0xff) as i32) << 8))),
        (None, Some(signal)) => {
            notes.push(format!("[the editor's terminal ended by {signal}]"));
            Ending::Exited(None)
        }
        (None, None) => Ending::Exited(None),
    }
}

/// The terminal's text bounded as the bash tool bounds output, with a line
/// first when the editor kept only its end.
fn shown_output(text: &str, truncated: bool) -> String {
    let body = bash::bounded(text.as_bytes());
    if !truncated {
        return body;
    }
    format!(
        "[... the start of the output was cut: the editor kept its last {} KiB ...]\n{body}",
        (bash::HEAD_BYTES + bash::TAIL_BYTES) / 1024
    )
}

/// Run the command in rein's own sandbox, saying why the terminal was not
/// used.
async fn fallback(
    admitted: Admitted,
    ctx: &ToolContext,
    kind: SandboxKind,
    why: &str,
) -> Result<ToolOutput, ToolError> {
    let mut output = bash::run_admitted(admitted, ctx, kind).await?;
    output.content = format!(
        "[the editor's terminal could not be used ({why}); the command ran in rein's own \
         sandbox]\n{}",
        output.content
    );
    Ok(output)
}

/// The workspace's git metadata, where the wrapper records it too.
async fn record_git(ctx: &ToolContext) -> Option<gitmeta::GitMeta> {
    if ctx.sandbox.mode != SandboxMode::WorkspaceWrite {
        return None;
    }
    let workspace = ctx.workspace.clone();
    tokio::task::spawn_blocking(move || gitmeta::scan(&workspace))
        .await
        .ok()
}

/// Undo what the command planted since `before`; the line saying what.
async fn restore_git(ctx: &ToolContext, before: Option<gitmeta::GitMeta>) -> Option<String> {
    let before = before?;
    let workspace = ctx.workspace.clone();
    tokio::task::spawn_blocking(move || gitmeta::restore(&workspace, &before))
        .await
        .ok()
        .flatten()
}

/// A terminal of the editor's; released when dropped (killed first) if it
/// was not released on the way.
struct Lease {
    client: ConnectionTo<Client>,
    session: String,
    id: TerminalId,
    released: bool,
}

impl Lease {
    fn new(client: &ConnectionTo<Client>, session: &str, id: TerminalId) -> Lease {
        Lease {
            client: client.clone(),
            session: session.to_string(),
            id,
            released: false,
        }
    }

    async fn wait(&self) -> Result<TerminalExitStatus, String> {
        let request = WaitForTerminalExitRequest::new(self.session.clone(), self.id.clone());
        let answer = self.client.send_request(request).block_task().await;
        answer.map(|a| a.exit_status).map_err(|e| e.message)
    }

    async fn kill(&self) {
        let request = KillTerminalRequest::new(self.session.clone(), self.id.clone());
        let _ = ask(&self.client, request).await;
    }

    /// Its text and whether the editor cut its start.
    async fn output(&self) -> Result<(String, bool), String> {
        let request = TerminalOutputRequest::new(self.session.clone(), self.id.clone());
        ask(&self.client, request)
            .await
            .map(|a| (a.output, a.truncated))
    }

    async fn release(mut self) {
        let request = ReleaseTerminalRequest::new(self.session.clone(), self.id.clone());
        let _ = ask(&self.client, request).await;
        self.released = true;
    }
}

impl Drop for Lease {
    /// A call abandoned on the way (the gate gave up on it) still kills and
    /// releases its terminal.
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let kill = KillTerminalRequest::new(self.session.clone(), self.id.clone());
        let release = ReleaseTerminalRequest::new(self.session.clone(), self.id.clone());
        runtime.spawn(async move {
            let _ = ask(&client, kill).await;
            let _ = ask(&client, release).await;
        });
    }
}

/// A request to the editor, answered within [`ANSWER_WITHIN`].
async fn ask<R>(client: &ConnectionTo<Client>, request: R) -> Result<R::Response, String>
where
    R: JsonRpcRequest,
    R::Response: Send + 'static,
{
    let sent = client.send_request(request).block_task();
    match tokio::time::timeout(ANSWER_WITHIN, sent).await {
        Ok(answer) => answer.map_err(|e| e.message),
        Err(_) => Err("the editor did not answer".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(code: u32) -> Waited {
        Waited::Exited(Ok(TerminalExitStatus::new().exit_code(code)))
    }

    #[test]
    fn the_wrapper_exit_codes_become_the_bash_tool_endings() {
        let limit = Duration::from_secs(2);
        let mut notes = Vec::new();
        let e = ending(exit(3), limit, Duration::from_secs(1), &mut notes);
        assert_eq!(e, Ending::Exited(Some(ExitStatus::from_raw(3 << 8))));
        // 124 is a timeout only once the time is up.
        let e = ending(exit(124), limit, Duration::from_secs(1), &mut notes);
        assert_eq!(e, Ending::Exited(Some(ExitStatus::from_raw(124 << 8))));
        let e = ending(exit(124), limit, Duration::from_secs(3), &mut notes);
        assert_eq!(e, Ending::TimedOut(limit));
        assert!(notes.is_empty(), "{notes:?}");
        let e = ending(Waited::Overdue, limit, Duration::from_secs(5), &mut notes);
        assert_eq!(e, Ending::TimedOut(limit));
        assert!(notes[0].starts_with("[timed out after 2 s"), "{notes:?}");
    }

    #[test]
    fn output_the_editor_cut_says_so_first() {
        assert_eq!(shown_output("hi\n", false), "hi");
        let cut = shown_output("tail\n", true);
        assert!(
            cut.starts_with("[... the start of the output was cut"),
            "{cut}"
        );
        assert!(cut.ends_with("\ntail"), "{cut}");
    }
}
