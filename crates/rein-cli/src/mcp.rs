//! The user's MCP servers for one run: started side by side in the
//! background (never holding up the first request), their tools handed to
//! the engine as they become ready and whenever a server's list changes,
//! and each server that fails, or is started once more because its first
//! start took too long, told in one line (the run goes on without it).

use std::path::Path;
use std::sync::Arc;

use rein_core::AgentEngine;
use rein_mcp::{Launch, LazyTools, McpHub, ServerReport, ServerStatus};

use crate::config::ToolSearchSetting;

/// Context windows assumed when the provider does not say.
const DEFAULT_WINDOW: u64 = 128_000;

/// When the run's MCP tools are offered through `tool_search`: as the
/// config says; `auto` when their schemas would take more than a tenth of
/// the model's context window.
pub fn lazy_tools(cfg: &Config, engine: &AgentEngine) -> LazyTools {
    match cfg.mcp_tool_search {
        ToolSearchSetting::Always => LazyTools::Always,
        ToolSearchSetting::Never => LazyTools::Never,
        ToolSearchSetting::Auto => {
            let window = engine
                .provider()
                .capabilities()
                .context_window
                .unwrap_or(DEFAULT_WINDOW);
            LazyTools::Above((window / 10) as usize)
        }
    }
}

pub(crate) mod browser;
mod plugins;
pub mod project;

use crate::config::Config;

/// Start the enabled servers, if any, in the background: the user's own
/// and the project's approved ones; the notes say what is not started.
pub fn start(cfg: &Config, workspace: &Path) -> (Option<Arc<McpHub>>, Vec<String>) {
    let (approved, mut notes) =
        project::approved_only(&cfg.home, workspace, &cfg.project_mcp_servers);
    notes.splice(0..0, cfg.mcp_notes.iter().cloned());
    let servers: Vec<_> = cfg.mcp_servers.iter().cloned().chain(approved).collect();
    if !servers.iter().any(|s| s.enabled) {
        return (None, notes);
    }
    (Some(McpHub::start(servers, launch(cfg, workspace))), notes)
}

/// What servers start from: the project, the names `env_allow` adds to
/// the scrubbed environment,
/// `$REIN_HOME/logs/mcp/` for their stderr and the OAuth tokens of
/// `rein mcp login`.
pub(crate) fn launch(cfg: &Config, workspace: &Path) -> Launch {
    Launch {
        workspace: workspace.to_path_buf(),
        env_allow: cfg.permissions.env_allow.clone(),
        log_dir: Some(cfg.home.join("logs").join("mcp")),
        auth_dir: Some(auth_dir(cfg)),
        browser: Some(browser::handle()),
        asker: Default::default(),
    }
}

/// Where OAuth tokens are kept: `$REIN_HOME/mcp-auth/`, a file per URL.
pub(crate) fn auth_dir(cfg: &Config) -> std::path::PathBuf {
    cfg.home.join("mcp-auth")
}

/// Keep `engine`'s MCP tools in step with the hub's (from the next turn
/// after each change) until the hub is gone; `note` hears once of each
/// server that failed.
pub fn follow(
    hub: &Arc<McpHub>,
    engine: &AgentEngine,
    lazy: LazyTools,
    note: impl Fn(String) + Send + 'static,
) {
    // What is offered now (`tool_search` at once when MCP tools are
    // lazy) is in the gate before the first turn: the task below may run
    // only after it.
    engine.replace_tools(McpHub::names, hub.offered(lazy));
    let (hub, engine) = (Arc::downgrade(hub), engine.clone());
    let Some(mut changes) = hub.upgrade().map(|h| h.changes()) else {
        return;
    };
    tokio::spawn(async move {
        let (mut told, mut retried) = (Vec::new(), Vec::new());
        loop {
            let Some(hub) = hub.upgrade() else { return };
            engine.replace_tools(McpHub::names, hub.offered(lazy));
            for report in hub.reports() {
                let (list, line) = match report.status {
                    ServerStatus::Failed => (&mut told, failure_line(&report)),
                    // Its first start took too long: started once more.
                    ServerStatus::Starting if report.error.is_some() => {
                        (&mut retried, retry_line(&report))
                    }
                    _ => continue,
                };
                if !list.contains(&report.server) {
                    note(line);
                    list.push(report.server);
                }
            }
            drop(hub);
            if changes.changed().await.is_err() {
                return;
            }
        }
    });
}

/// "MCP server `x`: why; its tools are not offered".
fn failure_line(report: &ServerReport) -> String {
    format!(
        "MCP server `{}`: {}; its tools are not offered",
        report.server,
        why(report)
    )
}

/// "MCP server `x`: why; starting it once more".
fn retry_line(report: &ServerReport) -> String {
    format!(
        "MCP server `{}`: {}; starting it once more",
        report.server,
        why(report)
    )
}

/// Why a server failed, without the "MCP server `x`: " its errors start
/// with.
pub(crate) fn why(report: &ServerReport) -> &str {
    let error = report.error.as_deref().unwrap_or("it failed");
    let named = format!("MCP server `{}`: ", report.server);
    error.strip_prefix(named.as_str()).unwrap_or(error)
}

/// `/mcp` in the app: a line per server.
pub fn status_lines(hub: &McpHub) -> Vec<String> {
    hub.reports().iter().map(|r| describe(r, false)).collect()
}

/// One server's line (or JSON object).
pub(crate) fn describe(report: &ServerReport, json: bool) -> String {
    if json {
        return serde_json::to_string(report).unwrap_or_default();
    }
    let name = &report.server;
    let restarted = if report.restarts > 0 {
        " (restarted once)"
    } else {
        ""
    };
    match report.status {
        ServerStatus::Starting => format!("{name}: starting"),
        ServerStatus::Failed => format!("{name}: not running: {}", why(report)),
        ServerStatus::Ready => format!(
            "{name}: {} tools{restarted}: {}",
            report.tools.len(),
            report.tools.join(", ")
        ),
    }
}
