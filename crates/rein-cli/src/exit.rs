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
/// The token budget (`--max-tokens`) was used up.
pub const MAX_TOKENS: i32 = 5;
/// The cost budget (`--max-cost`) was used up.
pub const MAX_COST: i32 = 6;
/// The time budget (`--max-wall-time`) ran out.
pub const MAX_WALL_TIME: i32 = 7;
/// The loop guard stopped a model that repeated itself.
pub const REPETITION: i32 = 8;
/// The model answered, but the gate refused some of the calls it asked
/// for (an approval nobody could give headless, a deny rule): the answer
/// may claim what was never done.
pub const REFUSED: i32 = 9;
/// A hook of the user's stopped the run (refused the prompt, said
/// `continue: false`, or denied a call with `interrupt`).
pub const HOOK_STOPPED: i32 = 10;
/// `rein review --fail-on`: a finding at that severity or worse.
pub const FINDINGS: i32 = 11;
/// `--output-schema`: the answer did not meet the schema, even when the
/// model was asked once more.
pub const SCHEMA_MISMATCH: i32 = 12;
/// Cancelled by Ctrl-C / SIGTERM (128 + SIGINT, as shells do).
pub const CANCELLED: i32 = 130;

/// The exit code of a run that ended with `outcome`.
pub fn for_outcome(outcome: &rein_core::RunOutcome) -> i32 {
    if outcome.reason == StopReason::Completed && !outcome.refused.is_empty() {
        return REFUSED;
    }
    for_stop(outcome.reason)
}

pub fn for_stop(reason: StopReason) -> i32 {
    match reason {
        StopReason::Completed => COMPLETED,
        StopReason::MaxTurns => MAX_TURNS,
        StopReason::Cancelled => CANCELLED,
        StopReason::ProviderError => PROVIDER_ERROR,
        StopReason::MaxTokens => MAX_TOKENS,
        StopReason::MaxCost => MAX_COST,
        StopReason::MaxWallTime => MAX_WALL_TIME,
        StopReason::Repetition => REPETITION,
        StopReason::HookStopped => HOOK_STOPPED,
        StopReason::UsageError => USAGE,
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
