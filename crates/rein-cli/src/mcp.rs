//! The user's MCP servers for one run: started side by side before the
//! first turn, their tools handed to the engine, the ones that fail
//! reported in a line each (the run goes on without them).

use std::path::Path;
use std::sync::Arc;

use rein_core::Tool;
use rein_mcp::McpServer;

use crate::cli::McpCommand;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

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
    let env = server_env(cfg);
    let (servers, tools, errors) =
        rein_mcp::start_all(cfg.mcp_servers.clone(), workspace, &env).await;
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
    // All started side by side, as a run starts them.
    let (servers, tools, errors) =
        rein_mcp::start_all(cfg.mcp_servers.clone(), &workspace, &server_env(&cfg)).await;
    drop(servers);
    let mut failed = false;
    for server in &cfg.mcp_servers {
        let error = errors
            .iter()
            .find(|e| e.server() == server.name)
            .map(ToString::to_string);
        let names: Vec<&str> = tools
            .iter()
            .filter(|t| t.server_name() == server.name)
            .map(|t| t.exposed())
            .collect();
        failed |= error.is_some();
        out(&describe(server, &names, error.as_deref(), json));
    }
    Ok(if failed {
        crate::exit::HARNESS_ERROR
    } else {
        COMPLETED
    })
}

/// One server's line (or JSON object).
fn describe(
    server: &rein_mcp::McpServerConfig,
    tools: &[&str],
    error: Option<&str>,
    json: bool,
) -> String {
    let name = &server.name;
    if json {
        return serde_json::json!({
            "server": name, "enabled": server.enabled, "tools": tools, "error": error,
        })
        .to_string();
    }
    match (server.enabled, error) {
        (false, _) => format!("{name}: disabled"),
        (true, Some(e)) => format!("{name}: not started: {e}"),
        (true, None) => format!("{name}: {} tools: {}", tools.len(), tools.join(", ")),
    }
}
