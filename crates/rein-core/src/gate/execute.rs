//! The last two steps of a call: reserve (a place in the tool pool and the
//! path locks the call needs) and execute (the tool in its own task, bounded
//! by the run's cancel and the call's timeout).

use std::time::Duration;

use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinError;

use super::registry::Registered;
use super::{Gate, Refusal};
use crate::locks::LockGuard;
use crate::tool::{ToolContext, ToolError, ToolOutput};

/// How long a cancelled or timed-out tool gets to return what it has.
const GRACE: Duration = Duration::from_secs(3);

/// What a call holds while it runs; released when it returns.
pub(super) struct Reserved {
    _permit: Option<OwnedSemaphorePermit>,
    _locks: LockGuard,
}

impl Gate {
    /// Wait for a place in the tool pool, then for the call's path locks;
    /// a cancel while waiting refuses the call.
    pub(super) async fn reserve(
        &self,
        entry: &Registered,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Reserved, ToolError> {
        let cancel = &ctx.cancel;
        let permit = match &self.semaphore {
            Some(sem) => Some(tokio::select! {
                p = sem.clone().acquire_owned() => p.map_err(|_| ToolError::fault("tool pool closed"))?,
                _ = cancel.cancelled() => return Err(Refusal::CancelledBeforeStart.into()),
            }),
            None => None,
        };
        let wanted = entry.tool.locks(args, ctx)?;
        let locks = tokio::select! {
            g = self.locks.acquire(wanted) => g,
            _ = cancel.cancelled() => return Err(Refusal::CancelledBeforeStart.into()),
        };
        Ok(Reserved {
            _permit: permit,
            _locks: locks,
        })
    }

    /// Run the tool in its own task. A cancel or a timeout stops it: it
    /// gets a grace period to return what it has, which the model sees
    /// with why it stopped.
    pub(super) async fn execute(
        &self,
        name: &str,
        entry: &Registered,
        args: Value,
        ctx: ToolContext,
        reserved: Reserved,
    ) -> Result<ToolOutput, ToolError> {
        let _reserved = reserved;
        let cancel = ctx.cancel.clone();
        // The tool sees its own token: cancelled on run cancel or timeout.
        let tool_cancel = cancel.child_token();
        let tool_ctx = ToolContext {
            cancel: tool_cancel.clone(),
            ..ctx
        };
        let timeout = entry
            .tool
            .timeout(&args)
            .unwrap_or(self.limits.tool_timeout);
        let tool = entry.tool.clone();
        let mut handle = tokio::spawn(async move { tool.call(args, tool_ctx).await });
        // Biased: a tool that returns because it saw the cancel must still be
        // reported as cancelled, not as finished.
        let stopped_why = tokio::select! {
            biased;
            _ = cancel.cancelled() => "cancelled by the user".to_string(),
            _ = tokio::time::sleep(timeout) => format!("timed out after {}", human_secs(timeout)),
            joined = &mut handle => return flatten(name, joined),
        };
        tool_cancel.cancel();
        match tokio::time::timeout(GRACE, &mut handle).await {
            Ok(joined) => {
                let partial = flatten(name, joined)
                    .map(|o| o.content)
                    .unwrap_or_else(|e| e.to_string());
                Ok(ToolOutput::error(format!(
                    "error: `{name}` {stopped_why}.\n{partial}"
                )))
            }
            Err(_) => {
                handle.abort();
                Err(ToolError::new(format!("`{name}` {stopped_why}")))
            }
        }
    }
}

fn human_secs(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// What the tool's task returned; a panic or an abort is the tool's fault.
fn flatten(
    name: &str,
    joined: Result<Result<ToolOutput, ToolError>, JoinError>,
) -> Result<ToolOutput, ToolError> {
    match joined {
        Ok(r) => r,
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(ToolError::fault(format!(
                "the tool `{name}` crashed ({msg}). This is a fault in the tool, not in your \
                 call; try another way."
            )))
        }
        Err(_) => Err(ToolError::fault(format!("the tool `{name}` was stopped"))),
    }
}
