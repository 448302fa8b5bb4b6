//! One server's settings, in the shape of Codex's `[mcp_servers.NAME]`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// `[mcp_servers.NAME]`: how to start a server and which of its tools to
/// offer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name (the table's key): the `SERVER` of
    /// `mcp__SERVER__TOOL`.
    #[serde(skip)]
    pub name: String,
    /// The program to run (looked up on `PATH`).
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the server, on top of rein's own environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The server's working directory (default: the workspace).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// How long the handshake and the tool list may take (default 10 s).
    #[serde(default = "default_startup")]
    pub startup_timeout_sec: u64,
    /// How long one call may take (default: rein's tool timeout).
    #[serde(default)]
    pub tool_timeout_sec: Option<u64>,
    /// `false` keeps the server configured but not started.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Only these tools (by the server's names) are offered.
    #[serde(default)]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools (by the server's names) are never offered.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
}

fn default_startup() -> u64 {
    10
}

fn yes() -> bool {
    true
}

impl McpServerConfig {
    pub fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.startup_timeout_sec.max(1))
    }

    pub fn tool_timeout(&self) -> Option<Duration> {
        self.tool_timeout_sec.map(|s| Duration::from_secs(s.max(1)))
    }

    /// Whether the server's tool `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        let listed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == name));
        listed && !self.disabled_tools.iter().any(|t| t == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_with_defaults_and_unknown_keys_are_refused() {
        let c: McpServerConfig = toml_like(r#"{"command": "srv", "args": ["-v"]}"#);
        assert_eq!(c.startup_timeout(), Duration::from_secs(10));
        assert!(c.enabled && c.offers("anything"));
        let c: McpServerConfig = toml_like(
            r#"{"command": "srv", "enabled_tools": ["a", "b"], "disabled_tools": ["b"]}"#,
        );
        assert!(c.offers("a") && !c.offers("b") && !c.offers("c"));
        assert!(
            serde_json::from_str::<McpServerConfig>(r#"{"command": "x", "comand": 1}"#).is_err()
        );
    }

    fn toml_like(json: &str) -> McpServerConfig {
        serde_json::from_str(json).unwrap()
    }
}
