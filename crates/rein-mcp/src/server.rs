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
use tokio::io::BufReader;

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

    /// The server's tools this configuration offers, as the server
    /// describes them (within the startup timeout).
    async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let listed =
            tokio::time::timeout(self.config.startup_timeout(), self.service.list_all_tools())
                .await
                .map_err(|_| McpError::StartupTimeout {
                    server: self.config.name.clone(),
                    secs: self.config.startup_timeout().as_secs(),
                })?
                .map_err(|e| self.protocol(format!("listing its tools failed: {e}")))?;
        Ok(listed
            .into_iter()
            .filter(|t| self.config.offers(&t.name))
            .collect())
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

/// Start every enabled server and read its tool list, all side by side,
/// then name their tools `mcp__SERVER__TOOL` (in configuration order, so
/// a repeated name always goes to the same tool). A server that fails is
/// reported, not fatal: the others' tools stay.
pub async fn start_all(
    configs: Vec<McpServerConfig>,
    workspace: &Path,
    base_env: &[(OsString, OsString)],
) -> (Vec<Arc<McpServer>>, Vec<McpTool>, Vec<McpError>) {
    let handles: Vec<_> = configs
        .into_iter()
        .filter(|c| c.enabled)
        .map(|c| {
            let (name, ws, env) = (c.name.clone(), workspace.to_path_buf(), base_env.to_vec());
            let task = tokio::spawn(async move {
                let server = McpServer::start(c, &ws, &env).await?;
                let listed = server.list_tools().await?;
                Ok::<_, McpError>((server, listed))
            });
            (name, task)
        })
        .collect();
    let (mut servers, mut tools, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    let mut taken = Vec::new();
    for (name, task) in handles {
        match task.await {
            Ok(Ok((server, listed))) => {
                for t in &listed {
                    let tool = McpTool::new(server.clone(), t, &taken);
                    taken.push(tool.exposed().to_string());
                    tools.push(tool);
                }
                servers.push(server);
            }
            Ok(Err(e)) => errors.push(e),
            Err(e) => errors.push(McpError::Protocol {
                server: name,
                message: format!("starting it failed inside rein: {e}"),
            }),
        }
    }
    (servers, tools, errors)
}

/// Most bytes of stderr read as one line; the rest of a longer line is
/// dropped (a server writing without newlines must not fill memory).
const STDERR_LINE_CAP: usize = 4096;

/// Keep the last lines of a server's stderr, each cut to 300 characters,
/// reading at most [`STDERR_LINE_CAP`] bytes of any one line.
async fn keep_tail<R>(stderr: R, lines: Arc<Mutex<VecDeque<String>>>)
where
    R: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut reader = BufReader::new(stderr);
    let mut buf = [0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let push = |line: &mut Vec<u8>| {
        let text: String = String::from_utf8_lossy(line).chars().take(300).collect();
        line.clear();
        let mut l = lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if l.len() == STDERR_LINES {
            l.pop_front();
        }
        l.push_back(text);
    };
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            break;
        }
        for &b in &buf[..n] {
            if b == b'\n' {
                push(&mut line);
            } else if line.len() < STDERR_LINE_CAP {
                line.push(b);
            }
        }
    }
    if !line.is_empty() {
        push(&mut line);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Megabytes without a newline become one line of 300 characters; the
    /// lines after it are kept, the oldest dropped past the limit.
    #[tokio::test]
    async fn the_stderr_tail_is_bounded() {
        let mut input = vec![b'e'; 5_000_000];
        for i in 0..30 {
            input.extend_from_slice(format!("\nline {i}").as_bytes());
        }
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        keep_tail(&input[..], lines.clone()).await;
        {
            let kept = lines.lock().unwrap();
            assert_eq!(kept.len(), STDERR_LINES);
            assert_eq!(kept.back().map(String::as_str), Some("line 29"));
            assert!(kept.iter().all(|l| l.len() <= 300));
        }
        let mut one = Arc::new(Mutex::new(VecDeque::new()));
        keep_tail(&vec![b'x'; 1_000_000][..], one.clone()).await;
        let one = Arc::get_mut(&mut one).unwrap().get_mut().unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].len(), 300);
    }
}
