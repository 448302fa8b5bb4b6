//! The bounds the gate puts on calls: time, concurrency, output and
//! argument sizes, calls per turn.

use std::time::Duration;

/// Limits the gate enforces.
#[derive(Debug, Clone)]
pub struct GateLimits {
    pub tool_timeout: Duration,
    pub max_concurrent_tools: Option<usize>,
    /// Largest observation passed to the model, in bytes.
    pub max_output_bytes: usize,
    /// Outputs larger than this are saved to a file (when the engine has
    /// somewhere to save them) and the model gets a head/tail preview and
    /// the file's path instead.
    pub spill_bytes: usize,
    /// Most tool calls run from one model answer; the rest get an error
    /// observation and are not run.
    pub max_tool_calls_per_turn: usize,
    /// Largest raw arguments of one call, in bytes, checked before they are
    /// parsed (parsing multiplies their size in memory). The engine also
    /// stops reading a model's answer once one call's arguments pass it.
    pub max_argument_bytes: usize,
}

/// Default of [`GateLimits::max_tool_calls_per_turn`].
pub const DEFAULT_MAX_TOOL_CALLS_PER_TURN: usize = 32;
/// Default of [`GateLimits::max_argument_bytes`]: 16 MiB.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 16 * 1024 * 1024;

impl Default for GateLimits {
    fn default() -> Self {
        GateLimits {
            tool_timeout: Duration::from_secs(120),
            max_concurrent_tools: None,
            max_output_bytes: 64 * 1024,
            spill_bytes: 16 * 1024,
            max_tool_calls_per_turn: DEFAULT_MAX_TOOL_CALLS_PER_TURN,
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
        }
    }
}
