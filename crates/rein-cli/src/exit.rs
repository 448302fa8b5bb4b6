//! Exit codes: one per way a run can end, documented in the README.

use rein_core::StopReason;

pub const COMPLETED: i32 = 0;
/// The harness itself failed (session store, internal error).
pub const HARNESS_ERROR: i32 = 1;
/// Bad usage or configuration: unknown flag or provider, bad config file,
/// missing workspace, unreadable script, unknown session.
pub const USAGE: i32 = 2;
pub const MAX_TURNS: i32 = 3;
pub const PROVIDER_ERROR: i32 = 4;
/// Cancelled by Ctrl-C / SIGTERM (128 + SIGINT, as shells do).
pub const CANCELLED: i32 = 130;

pub fn for_stop(reason: StopReason) -> i32 {
    match reason {
        StopReason::Completed => COMPLETED,
        StopReason::MaxTurns => MAX_TURNS,
        StopReason::Cancelled => CANCELLED,
        StopReason::ProviderError => PROVIDER_ERROR,
        _ => HARNESS_ERROR,
    }
}

/// An error that ends the command with a given exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code: USAGE,
            error: error.into(),
        }
    }

    pub fn harness(error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code: HARNESS_ERROR,
            error: error.into(),
        }
    }
}
