//! The user's MCP servers for one run: started side by side before the
//! first turn, their tools handed to the engine, the ones that fail
//! reported in a line each (the run goes on without them).

use std::path::Path;
use std::sync::Arc;

use rein_core::Tool;
use rein_mcp::McpServer;

use crate::config::Config;

/// The servers of a run; they stop when this is dropped.
#[derive(Default)]
pub struct McpSession {
    _servers: Vec<Arc<McpServer>>,
    /// Their tools, as `mcp__SERVER__TOOL`.
    pub tools: Vec<Arc<dyn Tool>>,
}

/// Start the configured servers; the notes say which could not be used.
pub async fn start(cfg: &Config, workspace: &Path) -> (McpSession, Vec<String>) {
    if cfg.mcp_servers.is_empty() {
        return (McpSession::default(), Vec::new());
    }
    let (servers, tools, errors) = rein_mcp::start_all(cfg.mcp_servers.clone(), workspace).await;
    let notes = errors
        .iter()
        .map(|e| format!("{e}; its tools are not offered"))
        .collect();
    let session = McpSession {
        _servers: servers,
        tools: tools
            .into_iter()
            .map(|t| Arc::new(t) as Arc<dyn Tool>)
            .collect(),
    };
    (session, notes)
}
