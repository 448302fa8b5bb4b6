//! Settings of the local provider.

use std::path::PathBuf;

/// How to load and run a local GGUF model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Context window in tokens (default 8192), capped by what the model
    /// was trained on.
    pub context_size: u32,
    /// Threads for generation and prompt evaluation (default: the physical
    /// cores this process may use).
    pub threads: Option<usize>,
    /// Sampling temperature; 0 (the default) is greedy.
    pub temperature: f32,
    /// Seed of the sampler when the temperature is above 0 (default 42).
    pub seed: u32,
    /// Most tokens generated for one answer (default 2048); a request's own
    /// `max_output_tokens` lowers it.
    pub max_output_tokens: u32,
    /// Constrain tool calls with a grammar once the model opens one
    /// (default true).
    pub grammar: bool,
    /// Give each round of tool results to the model as one user message
    /// ("The read_file call returned: ... Now answer my question in plain
    /// text, unless you need to call another tool first.") instead of the
    /// template's `tool` messages. Default true: on Qwen2.5-Coder-0.5B the
    /// template's own format almost never got an answer out of the model
    /// (it called tools again), this one did (see tests/local_model.rs,
    /// `measure_tool_results_modes`).
    pub tool_results_as_user: bool,
}

impl Default for LocalConfig {
    fn default() -> Self {
        LocalConfig {
            model_path: PathBuf::new(),
            context_size: 8192,
            threads: None,
            temperature: 0.0,
            seed: 42,
            max_output_tokens: 2048,
            grammar: true,
            tool_results_as_user: true,
        }
    }
}
