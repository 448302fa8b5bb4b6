//! The config file as written (`config.toml`, the user's and the
//! project's): its keys and sections. Unknown keys are errors. What the
//! layers make of them is [`super::Config`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Result, anyhow};
use serde::Deserialize;

/// One config file as written. Unknown keys are errors, so typos surface.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub provider: Option<String>,
    /// Where sessions (and memories) are kept: a PostgreSQL connection
    /// string, or `sqlite` for the file under the home (the default). The
    /// user's files only: a project's is ignored.
    pub store: Option<String>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub tool_timeout_secs: Option<u64>,
    pub max_concurrent_tools: Option<usize>,
    /// Most tool calls run from one model answer (default 32).
    pub max_tool_calls_per_turn: Option<usize>,
    pub provider_retries: Option<u32>,
    pub stream_idle_timeout_secs: Option<u64>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time_secs: Option<u64>,
    pub compaction: Option<CompactionSection>,
    pub loop_guard: Option<LoopGuardSection>,
    pub replay: Option<ReplaySection>,
    pub local: Option<LocalSection>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSection>,
    pub permissions: Option<crate::permissions::PermissionsSection>,
    pub sandbox: Option<crate::sandbox_config::SandboxSection>,
    pub tui: Option<TuiSection>,
    /// `[mcp_servers.NAME]`: MCP servers whose tools are offered (read
    /// from the user's own config only).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, rein_mcp::McpServerConfig>,
    /// `auto` (default), `always` or `never`: whether the model gets
    /// `tool_search` instead of every MCP tool's schema.
    pub mcp_tool_search: Option<ToolSearchSetting>,
    /// Checkpoint the workspace for `rein rewind` (default true).
    pub checkpoints: Option<bool>,
    /// `[web_search]`: the search service (the user's config only).
    pub web_search: Option<super::web_search::WebSearchSection>,
    /// `[lsp]`: language servers checking edited files.
    pub lsp: Option<super::lsp::LspSection>,
    /// `[candidates]`: the small profile's alternative fixes.
    pub candidates: Option<super::candidates::CandidatesSection>,
}

/// When MCP tools are offered lazily, through `tool_search`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearchSetting {
    /// When their schemas would take more than a tenth of the context
    /// window.
    #[default]
    Auto,
    Always,
    Never,
}

/// `[tui]`: the interactive app.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiSection {
    /// Draw on the alternate screen (the terminal's scrollback keeps
    /// nothing of the session; the screen is given back as it was on exit).
    pub alternate_screen: Option<bool>,
    /// Seconds the app waits for you after a run before it tells the
    /// `Notification` hooks (`idle_prompt`); default 60.
    pub idle_notify_secs: Option<u64>,
    /// A command that writes the status line (the session's state as
    /// JSON on its stdin, its first line shown).
    pub status_command: Option<String>,
    /// It runs at most once per this many milliseconds (default 1000).
    pub status_refresh_ms: Option<u64>,
    /// It is killed after this many milliseconds (default 2000).
    pub status_timeout_ms: Option<u64>,
}

/// `[providers.NAME]`: an HTTP model endpoint.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderSection {
    /// `openai`, `openai-responses` or `anthropic`.
    pub kind: Option<String>,
    pub base_url: Option<String>,
    /// Environment variable holding the key; `""` for servers without one.
    pub api_key_env: Option<String>,
    pub model: Option<String>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u32>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

impl ProviderSection {
    /// Fields set in `other` replace ours; headers merge.
    pub fn merge_from(&mut self, other: ProviderSection) {
        macro_rules! take {
            ($($f:ident),*) => {$(if other.$f.is_some() { self.$f = other.$f; })*};
        }
        take!(
            kind,
            base_url,
            api_key_env,
            model,
            context_window,
            max_output_tokens
        );
        self.headers.extend(other.headers);
    }
}

/// `[compaction]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSection {
    pub enabled: Option<bool>,
    /// Share of the context window that triggers compaction (0.1 to 0.95).
    pub threshold: Option<f64>,
    /// Assistant turns kept verbatim.
    pub keep_turns: Option<usize>,
}

/// `[loop_guard]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopGuardSection {
    /// Identical calls in a row before a reminder (0: off).
    pub repeat_limit: Option<u32>,
    /// Tool turns without progress before a reminder (0: off).
    pub no_progress_turns: Option<u32>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySection {
    /// Script path; relative paths are relative to the config file's folder.
    pub script: Option<PathBuf>,
}

/// `[local]`: the embedded local model.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// GGUF file; relative paths are relative to the config file's folder.
    pub model_path: Option<PathBuf>,
    /// Context window in tokens.
    pub context_size: Option<u32>,
    /// CPU threads (default: all cores).
    pub threads: Option<usize>,
    /// Constrain the output to valid tool calls with a grammar.
    pub grammar: Option<bool>,
    /// Send tool results back as user messages (for chat templates without
    /// a tool role).
    pub tool_results_as_user: Option<bool>,
}

impl LocalSection {
    /// Fields set in `other` replace ours.
    pub(super) fn merge_from(&mut self, other: LocalSection) {
        macro_rules! take {
            ($($f:ident),*) => {$(if other.$f.is_some() { self.$f = other.$f; })*};
        }
        take!(
            model_path,
            context_size,
            threads,
            grammar,
            tool_results_as_user
        );
    }
}

impl ConfigFile {
    /// The limits this file sets (`None`: not set here).
    pub fn budget_cap(&self) -> rein_core::BudgetCap {
        rein_core::BudgetCap {
            max_turns: self.max_turns,
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
            max_wall_time: self.max_wall_time_secs.map(Duration::from_secs),
        }
    }
}

pub(super) fn read_file(path: &Path) -> Result<Option<(ConfigFile, String)>> {
    let Some(text) = crate::settings_file::read_text(path, "config")? else {
        return Ok(None);
    };
    let file: ConfigFile = toml::from_str(&text).map_err(|e| {
        let msg = e.message().to_string();
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        anyhow!("invalid config {}{at}: {msg}", path.display())
    })?;
    Ok(Some((file, text)))
}
