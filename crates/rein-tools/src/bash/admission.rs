//! A bash call let in: its arguments checked and one of the process-wide
//! command slots held, so at most `max_concurrent` commands run at once,
//! whoever runs them (this process, or the editor's terminal for `rein
//! acp`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rein_core::{ToolContext, ToolError, ToolOutput};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::{Args, command_timeout};

/// A command that may run now.
pub struct Admitted {
    /// The command line, run with `bash -c`.
    pub command: String,
    /// How long it may run.
    pub limit: Duration,
    /// When its time is up: counted from the call, the wait for a slot
    /// included.
    pub deadline: Instant,
    /// The slot, given back when this is dropped.
    _slot: OwnedSemaphorePermit,
}

/// What came of asking to run a command.
pub enum Admission {
    Admitted(Admitted),
    /// It did not get a slot: cancelled, or timed out while waiting. The
    /// observation says which.
    Stopped(ToolOutput),
}

/// Check a bash call's arguments and wait for a command slot (or the
/// call's cancel, or its timeout).
pub async fn admit(args: Value, ctx: &ToolContext) -> Result<Admission, ToolError> {
    // 1. The arguments, as the schema told the model.
    let args: Args = crate::parse_args("bash", args)?;
    if args.command.trim().is_empty() {
        return Err(ToolError::new("the command is empty"));
    }
    // 2. The timeout counts from here, waiting for a slot included.
    let limit = command_timeout(args.timeout_secs);
    let deadline = Instant::now() + limit;
    // 3. One slot of the process-wide cap.
    let slots = slots(ctx.sandbox.limits.max_concurrent);
    let slot = tokio::select! {
        permit = slots.acquire_owned() => permit
            .map_err(|_| ToolError::new("the command slots were closed"))?,
        _ = ctx.cancel.cancelled() => {
            return Ok(Admission::Stopped(ToolOutput::error(
                "[cancelled while waiting for one of the running commands to finish]",
            )));
        }
        _ = tokio::time::sleep_until(deadline) => {
            return Ok(Admission::Stopped(ToolOutput::error(format!(
                "[timed out after {} s waiting for a command slot: {} commands were already \
                 running]",
                limit.as_secs(),
                ctx.sandbox.limits.max_concurrent.max(1)
            ))));
        }
    };
    Ok(Admission::Admitted(Admitted {
        command: args.command,
        limit,
        deadline,
        _slot: slot,
    }))
}

/// The process-wide semaphore of commands running at once, one per cap
/// (one configuration gives one cap; zero is read as one).
fn slots(cap: usize) -> Arc<Semaphore> {
    static SLOTS: Mutex<BTreeMap<usize, Arc<Semaphore>>> = Mutex::new(BTreeMap::new());
    let cap = cap.max(1);
    SLOTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(cap)
        .or_insert_with(|| Arc::new(Semaphore::new(cap)))
        .clone()
}
