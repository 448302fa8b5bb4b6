//! The user's MCP servers for one run: started side by side in the
//! background (never holding up the first request), their tools handed to
//! the engine as they become ready and whenever a server's list changes,
//! and each server that fails told in one line (the run goes on without
//! it).

use std::path::Path;
use std::sync::Arc;

use rein_core::AgentEngine;
use rein_mcp::{Launch, McpHub, ServerReport, ServerStatus};

use crate::cli::McpCommand;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

/// Start the enabled servers, if any, in the background.
pub fn start(cfg: &Config, workspace: &Path) -> Option<Arc<McpHub>> {
    if !cfg.mcp_servers.iter().any(|s| s.enabled) {
        return None;
    }
    Some(McpHub::start(
        cfg.mcp_servers.clone(),
        launch(cfg, workspace),
    ))
}

/// What servers start from: the workspace, the scrubbed environment, and
/// `$REIN_HOME/logs/mcp/` for their stderr.
fn launch(cfg: &Config, workspace: &Path) -> Launch {
    Launch {
        workspace: workspace.to_path_buf(),
        env: server_env(cfg),
        log_dir: Some(cfg.home.join("logs").join("mcp")),
    }
}

/// Keep `engine`'s MCP tools in step with the hub's (from the next turn
/// after each change) until the hub is gone; `note` hears once of each
/// server that failed.
pub fn follow(hub: &Arc<McpHub>, engine: &AgentEngine, note: impl Fn(String) + Send + 'static) {
    let (hub, engine) = (Arc::downgrade(hub), engine.clone());
    let Some(mut changes) = hub.upgrade().map(|h| h.changes()) else {
        return;
    };
    tokio::spawn(async move {
        let mut told: Vec<String> = Vec::new();
        loop {
            let Some(hub) = hub.upgrade() else { return };
            engine.replace_tools(McpHub::names, hub.tools());
            for report in hub.reports() {
                if report.status == ServerStatus::Failed && !told.contains(&report.server) {
                    note(failure_line(&report));
                    told.push(report.server);
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

/// Why a server failed, without the "MCP server `x`: " its errors start
/// with.
fn why(report: &ServerReport) -> &str {
    let error = report.error.as_deref().unwrap_or("it failed");
    let named = format!("MCP server `{}`: ", report.server);
    error.strip_prefix(named.as_str()).unwrap_or(error)
}

/// `/mcp` in the app: a line per server.
pub fn status_lines(hub: &McpHub) -> Vec<String> {
    hub.reports().iter().map(|r| describe(r, false)).collect()
}

/// What a server's environment starts from: the variables shell commands
/// get (the session basics and toolchain settings, plus `env_allow`),
/// never rein's keys; each server's own `env` comes on top.
fn server_env(cfg: &Config) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os()
        .filter(|(k, _)| rein_tools::sandbox::env::passes(k, &cfg.permissions.env_allow))
        .collect()
}

/// `rein mcp list`: each configured server started as a run would start
/// it, with the tools it offers (or why it could not start). Exit 0 when
/// every enabled server started, 1 when one did not.
pub async fn run(cmd: McpCommand) -> Result<i32, Failure> {
    let McpCommand::List { json, workspace } = cmd;
    let workspace = crate::exec::resolve_workspace(workspace.as_deref())?;
    let trusted = crate::trust::command::trusted_for_run(&workspace, false)?;
    let (cfg, _) = Config::load(&workspace, trusted).map_err(Failure::usage)?;
    if cfg.mcp_servers.is_empty() {
        if !json {
            out("no MCP servers configured ([mcp_servers.NAME] in $REIN_HOME/config.toml)");
        }
        return Ok(COMPLETED);
    }
    for server in cfg.mcp_servers.iter().filter(|s| !s.enabled) {
        out(&describe_disabled(&server.name, json));
    }
    let Some(hub) = start(&cfg, &workspace) else {
        return Ok(COMPLETED);
    };
    // All started side by side, as a run starts them.
    hub.settled().await;
    let reports = hub.reports();
    for report in &reports {
        out(&describe(report, json));
    }
    let failed = reports.iter().any(|r| r.status != ServerStatus::Ready);
    Ok(if failed {
        crate::exit::HARNESS_ERROR
    } else {
        COMPLETED
    })
}

fn describe_disabled(name: &str, json: bool) -> String {
    if json {
        serde_json::json!({"server": name, "status": "disabled", "tools": [], "error": null})
            .to_string()
    } else {
        format!("{name}: disabled")
    }
}

/// One server's line (or JSON object).
fn describe(report: &ServerReport, json: bool) -> String {
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
