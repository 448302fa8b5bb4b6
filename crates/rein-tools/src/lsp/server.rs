//! One running language server: started in rein's sandbox (read-only,
//! no network: a server that runs the project's code, as some do for build
//! scripts or plugins, runs it there) or, where no sandbox exists, as a
//! host process (neutral folder, scrubbed environment, its own process
//! group). Then the handshake, documents kept in sync by full text, and
//! the diagnostics that follow a change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use lsp_types::Diagnostic;
use rein_core::{SandboxMode, SandboxPolicy};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use super::languages::ServerSpec;
use super::rpc::{Connection, RpcError};
use crate::sandbox::{self, SandboxKind};

/// The CPU time a server may spend in all (its rlimit in the sandbox).
const SERVER_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// Why a server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServerError {
    #[error("{0}: not found on PATH")]
    NotFound(String),
    #[error("could not start {0}")]
    Start(String),
    #[error(transparent)]
    Rpc(#[from] RpcError),
}

/// How servers are started.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The sandbox they run in (`None`: a host process).
    pub kind: SandboxKind,
    /// Its policy; made read-only and offline here.
    pub policy: SandboxPolicy,
}

/// A document the server has open.
struct Open {
    version: i32,
    text: String,
}

/// A server that answered the handshake.
pub struct LanguageServer {
    spec: ServerSpec,
    conn: Arc<Connection>,
    child: Child,
    _after: Option<sandbox::After>,
    /// Each open document: its version and the text last sent.
    versions: tokio::sync::Mutex<HashMap<PathBuf, Open>>,
}

impl LanguageServer {
    /// Start `spec` for the project at `root` (canonical) and shake hands
    /// within `handshake`.
    pub async fn start(
        spec: &ServerSpec,
        root: &Path,
        launch: &Launch,
        handshake: Duration,
    ) -> Result<Self, ServerError> {
        let program = super::languages::find_program(&spec.command[0])
            .ok_or_else(|| ServerError::NotFound(spec.command[0].clone()))?;
        let (mut cmd, after) = command(spec, &program, root, launch)?;
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| ServerError::Start(format!("{}: {e}", spec.command[0])))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ServerError::Start("no pipes to the server".into()));
        };
        let conn = Connection::start(stdout, stdin);
        let server = LanguageServer {
            spec: spec.clone(),
            conn,
            child,
            _after: after,
            versions: tokio::sync::Mutex::new(HashMap::new()),
        };
        let options = super::languages::handshake_options(spec, &program);
        server.initialize(root, options, handshake).await?;
        Ok(server)
    }

    async fn initialize(
        &self,
        root: &Path,
        options: Option<Value>,
        timeout: Duration,
    ) -> Result<(), ServerError> {
        let root_uri = uri(root);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let params = json!({
            // The server may live in another PID namespace: no parent to
            // watch.
            "processId": Value::Null,
            "rootUri": root_uri,
            "workspaceFolders": [{"uri": root_uri, "name": name}],
            "capabilities": {
                "textDocument": {
                    "synchronization": {"dynamicRegistration": false},
                    "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "hover": {"contentFormat": ["markdown", "plaintext"]}
                },
                "workspace": {"configuration": true, "workspaceFolders": true}
            },
            "initializationOptions": options.unwrap_or(Value::Null),
            "clientInfo": {"name": "rein", "version": env!("CARGO_PKG_VERSION")}
        });
        self.conn.request("initialize", params, timeout).await?;
        self.conn.notify("initialized", json!({})).await?;
        Ok(())
    }

    /// The server's name, as configured.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Whether it still runs.
    pub fn is_alive(&self) -> bool {
        self.conn.is_open()
    }

    /// Send `text` as the document at `path` (opened the first time);
    /// what it had published for it before, and the publication count to
    /// wait past.
    pub async fn sync(&self, path: &Path, text: &str) -> Result<(Vec<Diagnostic>, u64), RpcError> {
        let uri = uri(path);
        let before = self.conn.published(&uri);
        let mut versions = self.versions.lock().await;
        match versions.get_mut(path) {
            Some(open) => {
                open.version += 1;
                open.text = text.to_string();
                self.conn
                    .notify(
                        "textDocument/didChange",
                        json!({
                            "textDocument": {"uri": uri, "version": open.version},
                            "contentChanges": [{"text": text}]
                        }),
                    )
                    .await?;
            }
            None => {
                versions.insert(
                    path.to_path_buf(),
                    Open {
                        version: 1,
                        text: text.to_string(),
                    },
                );
                self.conn
                    .notify(
                        "textDocument/didOpen",
                        json!({"textDocument": {
                            "uri": uri, "languageId": self.spec.language_id, "version": 1, "text": text
                        }}),
                    )
                    .await?;
            }
        }
        Ok((before.items, before.count))
    }

    /// The open documents whose file no longer holds the text last sent
    /// (a command changed them), at most `limit`.
    pub async fn changed_on_disk(&self, limit: usize) -> Vec<PathBuf> {
        let versions = self.versions.lock().await;
        versions
            .iter()
            .filter(|(path, open)| std::fs::read_to_string(path).is_ok_and(|now| now != open.text))
            .map(|(path, _)| path.clone())
            .take(limit)
            .collect()
    }

    /// The diagnostics of `path` published after the `past`-th one, once
    /// no new one came for `settle`; `None` when none came within `cap`.
    pub async fn diagnostics(
        &self,
        path: &Path,
        past: u64,
        settle: Duration,
        cap: Duration,
    ) -> Option<Vec<Diagnostic>> {
        let uri = uri(path);
        let deadline = Instant::now() + cap;
        let mut rx = self.conn.watch();
        while self.conn.published(&uri).count <= past {
            if !self.conn.is_open() {
                return None;
            }
            tokio::select! {
                r = rx.changed() => r.ok()?,
                () = tokio::time::sleep_until(deadline) => return None,
            }
        }
        loop {
            let count = self.conn.published(&uri).count;
            let until = deadline.min(Instant::now() + settle);
            tokio::select! {
                r = rx.changed() => if r.is_err() { break },
                () = tokio::time::sleep_until(until) => break,
            }
            if self.conn.published(&uri).count == count && Instant::now() >= until {
                break;
            }
        }
        Some(self.conn.published(&uri).items)
    }

    /// A request of the tool's (definition, references...).
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        self.conn.request(method, params, timeout).await
    }

    /// Ask it to exit, then make sure it did.
    pub async fn shutdown(mut self) {
        let quick = Duration::from_secs(2);
        if self
            .conn
            .request("shutdown", Value::Null, quick)
            .await
            .is_ok()
        {
            let _ = self.conn.notify("exit", Value::Null).await;
        }
        let _ = tokio::time::timeout(quick, self.child.wait()).await;
        let _ = self.child.start_kill();
    }
}

/// `file://` URI of a path.
pub fn uri(path: &Path) -> String {
    reqwest::Url::from_file_path(path)
        .map(|u| u.to_string())
        .unwrap_or_else(|()| format!("file://{}", path.display()))
}

/// The process of a server: in the sandbox, read-only and offline, its
/// own installation readable; else a host process.
fn command(
    spec: &ServerSpec,
    program: &Path,
    root: &Path,
    launch: &Launch,
) -> Result<(Command, Option<sandbox::After>), ServerError> {
    if launch.kind == SandboxKind::None {
        let host = rein_core::host_process::HostLaunch::for_project(root);
        let mut cmd = Command::from(host.command(program));
        cmd.args(&spec.command[1..]);
        return Ok((cmd, None));
    }
    let mut policy = launch.policy.clone();
    policy.mode = SandboxMode::ReadOnly;
    policy.network = rein_core::NetworkAccess::Off;
    policy
        .read_paths
        .push(super::languages::installation(program));
    let script = std::iter::once(program.to_string_lossy().into_owned())
        .chain(spec.command[1..].iter().cloned())
        .map(|w| shell_word(&w))
        .collect::<Vec<_>>()
        .join(" ");
    let prepared = sandbox::prepare(
        launch.kind,
        &policy,
        root,
        &format!("exec {script}"),
        SERVER_LIFETIME,
    )
    .map_err(|e| ServerError::Start(e.to_string()))?;
    Ok((prepared.cmd, Some(prepared.after)))
}

/// `word` quoted for bash.
fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\\''"))
}
