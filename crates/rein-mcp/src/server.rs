//! One running server: started as a child process, the MCP handshake
//! made, its tool list read; calls go through the same connection.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::config::McpServerConfig;
use crate::error::McpError;
use crate::tool::McpTool;

/// Lines of a server's stderr kept to explain a failure.
const STDERR_LINES: usize = 20;

/// A started server.
pub struct McpServer {
    config: McpServerConfig,
    service: RunningService<RoleClient, ()>,
    /// The last lines the server wrote on stderr.
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl McpServer {
    /// Start the server in `workspace` (unless it has its own `cwd`) and
    /// make the handshake, within the startup timeout. Its environment is
    /// `base_env` (the caller's scrubbed one: no keys or secrets of rein's)
    /// plus the server's own `env`; it dies with rein.
    pub async fn start(
        config: McpServerConfig,
        workspace: &Path,
        base_env: &[(OsString, OsString)],
    ) -> Result<Arc<McpServer>, McpError> {
        let mut cmd = tokio::process::Command::new(&config.command);
        cmd.args(&config.args)
            .env_clear()
            .envs(base_env.iter().cloned())
            .envs(&config.env)
            .current_dir(config.cwd.as_deref().unwrap_or(workspace))
            .kill_on_drop(true);
        // SAFETY: runs in the forked child before exec: one prctl call on
        // constant arguments.
        unsafe {
            cmd.pre_exec(|| {
                // Killed when rein goes away, even by SIGKILL.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| McpError::Spawn {
                server: config.name.clone(),
                command: config.command.clone(),
                source,
            })?;
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = stderr {
            tokio::spawn(keep_tail(stderr, lines.clone()));
        }
        let secs = config.startup_timeout().as_secs();
        let service =
            match tokio::time::timeout(config.startup_timeout(), ().serve(transport)).await {
                Ok(Ok(service)) => service,
                Ok(Err(e)) => {
                    return Err(McpError::Protocol {
                        server: config.name.clone(),
                        message: format!("the handshake failed: {e}{}", tail(&lines)),
                    });
                }
                Err(_) => {
                    return Err(McpError::StartupTimeout {
                        server: config.name.clone(),
                        secs,
                    });
                }
            };
        Ok(Arc::new(McpServer {
            config,
            service,
            stderr: lines,
        }))
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The server's tools this configuration offers, as rein tools named
    /// `mcp__SERVER__TOOL` (names in `taken` are not reused).
    pub async fn tools(
        self: &Arc<Self>,
        taken: &mut Vec<String>,
    ) -> Result<Vec<McpTool>, McpError> {
        let listed =
            tokio::time::timeout(self.config.startup_timeout(), self.service.list_all_tools())
                .await
                .map_err(|_| McpError::StartupTimeout {
                    server: self.config.name.clone(),
                    secs: self.config.startup_timeout().as_secs(),
                })?
                .map_err(|e| self.protocol(format!("listing its tools failed: {e}")))?;
        let mut tools = Vec::new();
        for t in listed.into_iter().filter(|t| self.config.offers(&t.name)) {
            let tool = McpTool::new(self.clone(), &t, taken);
            taken.push(tool.exposed().to_string());
            tools.push(tool);
        }
        Ok(tools)
    }

    /// Call the server's tool `name`.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        self.service.call_tool(params).await.map_err(|e| {
            self.protocol(format!(
                "calling `{name}` failed: {e}{}",
                tail(&self.stderr)
            ))
        })
    }

    fn protocol(&self, message: String) -> McpError {
        McpError::Protocol {
            server: self.config.name.clone(),
            message,
        }
    }
}

/// Start every enabled server, each on its own, and gather their tools.
/// A server that fails is reported, not fatal: the others' tools stay.
pub async fn start_all(
    configs: Vec<McpServerConfig>,
    workspace: &Path,
    base_env: &[(OsString, OsString)],
) -> (Vec<Arc<McpServer>>, Vec<McpTool>, Vec<McpError>) {
    let started = futures_join(configs.into_iter().filter(|c| c.enabled).map(|c| {
        let ws = workspace.to_path_buf();
        let env = base_env.to_vec();
        async move { McpServer::start(c, &ws, &env).await }
    }))
    .await;
    let (mut servers, mut tools, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    let mut taken = Vec::new();
    for s in started {
        match s {
            Ok(server) => match server.tools(&mut taken).await {
                Ok(t) => {
                    tools.extend(t);
                    servers.push(server);
                }
                Err(e) => errors.push(e),
            },
            Err(e) => errors.push(e),
        }
    }
    (servers, tools, errors)
}

/// Run the futures concurrently and collect their outputs in order.
async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        if let Ok(v) = h.await {
            out.push(v);
        }
    }
    out
}

/// Keep the last lines of a server's stderr.
async fn keep_tail(stderr: tokio::process::ChildStderr, lines: Arc<Mutex<VecDeque<String>>>) {
    let mut reader = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = reader.next_line().await {
        let mut l = lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if l.len() == STDERR_LINES {
            l.pop_front();
        }
        l.push_back(line.chars().take(300).collect());
    }
}

/// "; it said: ..." with the server's last stderr lines, if any.
fn tail(lines: &Mutex<VecDeque<String>>) -> String {
    let l = lines
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if l.is_empty() {
        String::new()
    } else {
        format!(
            "; it said: {}",
            l.iter().cloned().collect::<Vec<_>>().join(" | ")
        )
    }
}
