//! Running the coach's check after a change (the `check` lever): when an
//! answer would end a run whose files changed (or a run asked to change
//! them whose check never ran), the check the task or
//! project names runs as a `bash` call through the run's gate, under its
//! policy (mode, rules, hooks, sandbox), as any call of the model's would.
//!
//! Steps:
//! 1. Ask the coach whether a check is due.
//! 2. Run it through the gate (with a bounded timeout), forwarding the
//!    gate's events (an approval asked of the user) as they come.
//! 3. Refused (a mode that runs no commands, a deny rule, a hook): say so
//!    in a notice and let the run end. Passed: say so and let the run end.
//!    Failed: say so, and hand the output to the model as a message.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::{RunCtx, RunLoop, Stop};
use crate::engine::coach::{CheckRun, check};
use crate::event::Event;
use crate::gate::{GateEvents, GateOutcome};
use crate::schema::{Message, ToolCall};
use crate::tool::{SessionHandle, ToolContext};

impl RunLoop<'_> {
    /// Whether the answer that would end the run was sent back by a
    /// failing check (the output stored as a user message).
    pub(super) async fn checked(&mut self, ctx: &mut RunCtx<'_>) -> Result<bool, Stop> {
        let Some(command) = self.coach.as_ref().and_then(|c| c.check_due()) else {
            return Ok(false);
        };
        ctx.emit(Event::Notice {
            message: format!("checking the change: running `{command}`"),
        });
        let workspace = self.engine.inner.workspace.clone();
        let outcome = self
            .run_check(ctx, &command, &workspace, check::TIMEOUT_SECS)
            .await;
        // A call that never reached its tool was refused by the gate.
        let run = match outcome.effects.access {
            None => CheckRun::Refused(outcome.result.output),
            Some(_) => CheckRun::Ran(outcome.result.output),
        };
        let Some(coach) = &mut self.coach else {
            return Ok(false);
        };
        let feedback = coach.checked(&run);
        let message = match (&run, &feedback) {
            (CheckRun::Refused(why), _) => format!(
                "the check `{command}` was not run (commands are refused here): {}",
                first_line(why)
            ),
            (CheckRun::Ran(output), _) if check::passed(output) => {
                format!("the check `{command}` passed")
            }
            (CheckRun::Ran(output), Some(_)) => format!(
                "the check `{command}` failed ({}); its output goes back to the model",
                last_line(output)
            ),
            (CheckRun::Ran(output), None) => {
                format!("the check `{command}` failed ({})", last_line(output))
            }
        };
        ctx.emit(Event::Notice { message });
        let Some(text) = feedback else {
            return Ok(false);
        };
        ctx.commit_to(&mut self.conv, Message::user(text)).await?;
        Ok(true)
    }

    /// `command` as a `bash` call through the run's gate and policy, in
    /// `workspace` (the run's, or a scratch copy of it: the sandbox is
    /// rooted there), with a timeout of `timeout_secs`.
    pub(super) async fn run_check(
        &self,
        ctx: &mut RunCtx<'_>,
        command: &str,
        workspace: &Path,
        timeout_secs: u64,
    ) -> GateOutcome {
        let call = ToolCall {
            id: format!("rein-check-{}", ctx.st.turns),
            name: "bash".to_string(),
            arguments: serde_json::json!({
                "command": command,
                "timeout_secs": timeout_secs,
            })
            .to_string(),
        };
        self.run_call_in(ctx, call, workspace).await
    }

    /// `call` through the run's gate and policy in `workspace`, the
    /// gate's events forwarded as they come.
    pub(super) async fn run_call_in(
        &self,
        ctx: &mut RunCtx<'_>,
        call: ToolCall,
        workspace: &Path,
    ) -> GateOutcome {
        let engine = self.engine;
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        let events: GateEvents = Arc::new(move |e| {
            let _ = tx.send(e);
        });
        let tool_ctx = ToolContext {
            workspace: workspace.to_path_buf(),
            session_id: ctx.session_id.clone(),
            call_id: call.id.clone(),
            cancel: ctx.cancel.clone(),
            session: SessionHandle::new(engine.inner.store.clone(), &ctx.session_id),
            sandbox: Default::default(),
            read_roots: Vec::new(),
            events: Some(events.clone()),
        };
        let (call_id, name) = (call.id.clone(), call.name.clone());
        let gate = self.gate.clone();
        let policy = self.policy.clone();
        let task = tokio::spawn(async move { gate.run(&call, tool_ctx, &policy, &events).await });
        // The gate's events (an approval asked) reach the front end while
        // the call waits; the channel closes when the call is done.
        while let Some(event) = rx.recv().await {
            ctx.emit(event);
        }
        match task.await {
            Ok(outcome) => outcome,
            Err(e) => GateOutcome::refused(crate::schema::ToolResult {
                images: Vec::new(),
                call_id,
                name,
                output: format!("error: the call was lost: {e}"),
                is_error: true,
            }),
        }
    }
}

/// The last line of a command's output (its exit code), bounded.
fn last_line(output: &str) -> String {
    first_line(output.trim_end().lines().last().unwrap_or(""))
}

/// The first line of `text`, bounded.
pub(super) fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    crate::text::truncate_middle(line, 200)
}
