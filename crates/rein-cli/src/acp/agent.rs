//! What `rein acp` keeps between requests: the client's capabilities, the
//! open sessions, the model providers built so far; and how a session is
//! opened for `session/new` and `session/load` (with the file tools going
//! through the editor when it offers its file system, and bash through its
//! terminal when it offers one).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ClientCapabilities, McpServer};
use agent_client_protocol::{Client, Error as AcpError};
use rein_core::{NewSession, SessionStore};

use super::client_fs::{self, Through};
use super::client_terminal;
use super::session::{AcpSession, Opening, internal, invalid};
use crate::hosting::{Host, HostError};

/// The state shared by every handler of one connection.
pub struct AcpAgent {
    /// Engines, configs and the shared providers and store.
    host: Host,
    /// What the client offered in `initialize` (nothing until it did).
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
}

/// Which stored session a client opens.
pub enum Target<'a> {
    New,
    Load(&'a str),
}

impl AcpAgent {
    pub fn new(host: Host) -> AcpAgent {
        AcpAgent {
            host,
            client: Mutex::new(ClientCapabilities::default()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Keep what the client offered in `initialize`, for the sessions it
    /// opens after.
    pub fn set_client(&self, capabilities: ClientCapabilities) {
        *self.client.lock().unwrap_or_else(|p| p.into_inner()) = capabilities;
    }

    /// Which file operations go through the client.
    fn through(&self) -> Through {
        Through::offered(&self.client.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether the client offered its terminal.
    fn offers_terminal(&self) -> bool {
        self.client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .terminal
    }

    /// An open session by its id.
    pub fn session(&self, id: &str) -> Result<Arc<AcpSession>, AcpError> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions
            .get(id)
            .cloned()
            .ok_or_else(|| invalid(format!("no open session {id}: create or load it first")))
    }

    /// Open a session in `cwd`: a new stored one, or the stored `id` (which
    /// must have run in the same folder). The client's MCP servers are
    /// added to the workspace's own; `client` serves the file tools when
    /// it offered its file system, and runs bash when it offered its
    /// terminal.
    pub async fn open(
        &self,
        cwd: &Path,
        mcp: &[McpServer],
        target: Target<'_>,
        client: &ConnectionTo<Client>,
    ) -> Result<Arc<AcpSession>, AcpError> {
        if !cwd.is_absolute() {
            return Err(invalid(format!(
                "cwd {} is not an absolute path",
                cwd.display()
            )));
        }
        let workspace = crate::setup::workspace::session_workspace(Some(cwd)).map_err(failure)?;
        let mut cfg = self.host.config(&workspace).map_err(host_error)?;
        cfg.mcp_servers.extend(super::mcp::servers(mcp)?);
        let model = self
            .host
            .provider(&cfg)
            .map_err(host_error)?
            .model()
            .to_string();
        let id = stored_session(self.host.store().as_ref(), &workspace, &model, target).await?;
        let hosted = self
            .host
            .engine(&workspace, cfg)
            .await
            .map_err(host_error)?;
        let caps = self
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        super::elicit::install(hosted.mcp(), &caps, &id, client);
        let client_writes = client_fs::install(&hosted.engine, self.through(), &id, client);
        let terminal_calls =
            client_terminal::install(&hosted.engine, self.offers_terminal(), &id, client);
        let session = Arc::new(AcpSession::new(Opening {
            id: id.clone(),
            workspace,
            hosted,
            client_writes,
            terminal_calls,
        }));
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.insert(id, session.clone());
        Ok(session)
    }
}

/// The id of the stored session to open: a new one, or `id` when it ran
/// in `workspace`.
async fn stored_session(
    store: &dyn SessionStore,
    workspace: &Path,
    model: &str,
    target: Target<'_>,
) -> Result<String, AcpError> {
    let ws = workspace.display().to_string();
    match target {
        Target::New => {
            let info = store
                .create_session(NewSession {
                    workspace: ws,
                    title: String::new(),
                    model: model.to_string(),
                    parent_id: None,
                })
                .await
                .map_err(internal)?;
            Ok(info.id)
        }
        Target::Load(id) => {
            let info = store.get_session(id).await.map_err(|e| match e {
                rein_core::StoreError::NotFound(_) | rein_core::StoreError::Ambiguous { .. } => {
                    invalid(e.to_string())
                }
                other => internal(other),
            })?;
            // A prefix is not an id: the client names the session it was given.
            if info.id != id {
                return Err(invalid(format!("session {id} not found")));
            }
            if info.workspace != ws {
                return Err(invalid(format!(
                    "session {id} ran in {}, not in {ws}",
                    info.workspace
                )));
            }
            Ok(info.id)
        }
    }
}

/// An engine that could not be made, as a JSON-RPC error.
fn host_error(e: HostError) -> AcpError {
    match e {
        HostError::Usage(m) => invalid(m),
        HostError::Internal(m) => internal(m),
    }
}

/// A command-line failure as a JSON-RPC error (its one line).
fn failure(f: crate::exit::Failure) -> AcpError {
    invalid(format!("{:#}", f.error))
}
