//! What `rein acp` keeps between requests: the client's capabilities, the
//! open sessions, the model providers built so far; and how a session is
//! opened for `session/new` and `session/load` (with the file tools going
//! through the editor when it offers its file system).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ClientCapabilities, McpServer};
use agent_client_protocol::{Client, Error as AcpError};
use rein_core::{Approvals, NewSession, PermissionMode, Provider, SessionStore};

use super::client_fs::{self, Through};
use super::session::{AcpSession, Opening, internal, invalid};
use crate::cli::ModelArgs;
use crate::config::Config;
use crate::run_setup::LoadedExtras;

/// The state shared by every handler of one connection.
pub struct AcpAgent {
    models: ModelArgs,
    /// `--mode`, over each workspace's configured mode.
    mode: Option<PermissionMode>,
    /// What the client offered in `initialize` (nothing until it did).
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// Providers by what chose them: sessions on the same model share one
    /// (an embedded model is loaded once).
    providers: Mutex<HashMap<String, Arc<dyn Provider>>>,
}

/// Which stored session a client opens.
pub enum Target<'a> {
    New,
    Load(&'a str),
}

impl AcpAgent {
    pub fn new(models: ModelArgs, mode: Option<PermissionMode>) -> AcpAgent {
        AcpAgent {
            models,
            mode,
            client: Mutex::new(ClientCapabilities::default()),
            sessions: Mutex::new(HashMap::new()),
            providers: Mutex::new(HashMap::new()),
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
    /// it offered its file system.
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
        let workspace = crate::exec::resolve_workspace(Some(cwd)).map_err(failure)?;
        let trusted = crate::trust::command::trusted_for_run(&workspace, false).map_err(failure)?;
        let (mut cfg, _) =
            crate::exec::load_config(&workspace, self.models.clone(), trusted).map_err(failure)?;
        cfg.mcp_servers.extend(super::mcp::servers(mcp)?);
        cfg.validate().map_err(|e| invalid(format!("{e:#}")))?;
        let mode = self.mode.or(cfg.permissions.mode).unwrap_or_default();
        let provider = self.provider(&cfg)?;
        let store = crate::exec::open_store(&cfg).map_err(failure)?;
        let id = stored_session(store.as_ref(), &workspace, provider.model(), target).await?;
        let extras = LoadedExtras::load(&cfg, &workspace, provider.as_ref()).await;
        for note in &extras.notes {
            crate::output::err(&format!("note: {note}"));
        }
        let engine = crate::run_setup::engine_builder(
            &cfg,
            &workspace,
            mode,
            provider,
            store,
            &extras.extras(),
        )
        .approvals(Approvals::Events)
        .build()
        .map_err(|e| internal(format!("cannot start the engine: {e}")))?;
        if let Some(hub) = &extras.mcp {
            let lazy = crate::mcp::lazy_tools(&cfg, &engine);
            crate::mcp::follow(hub, &engine, lazy, |line| {
                crate::output::err(&format!("note: {line}"));
            });
        }
        let client_writes = client_fs::install(&engine, self.through(), &id, client);
        let session = Arc::new(AcpSession::new(Opening {
            id: id.clone(),
            workspace,
            engine,
            cfg,
            extras,
            mode,
            client_writes,
        }));
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.insert(id, session.clone());
        Ok(session)
    }

    /// The provider `cfg` chooses, built once per choice.
    fn provider(&self, cfg: &Config) -> Result<Arc<dyn Provider>, AcpError> {
        let key = format!(
            "{:?}|{:?}|{:?}|{:?}",
            cfg.provider, cfg.model, cfg.local.model_path, cfg.replay_script
        );
        let mut providers = self.providers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = providers.get(&key) {
            return Ok(p.clone());
        }
        let built = crate::providers::build(cfg).map_err(|e| invalid(format!("{e:#}")))?;
        providers.insert(key, built.clone());
        Ok(built)
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

/// A command-line failure as a JSON-RPC error (its one line).
fn failure(f: crate::exit::Failure) -> AcpError {
    invalid(format!("{:#}", f.error))
}
