//! Engines for sessions a long-lived process serves (`rein serve`): each
//! session's workspace has its own config, tools and engine; the model
//! providers are shared (an embedded model is loaded once), and so is the
//! session store.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rein_core::{AgentEngine, Approvals, PermissionMode, Provider, SessionStore};

use crate::cli::ModelArgs;
use crate::config::Config;
use crate::setup::engine::LoadedExtras;
use crate::setup::prompt::Prompts;
use crate::setup::session::{Opening, Session};

/// Why a session's engine could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The workspace, its config or the model choice is wrong (the
    /// client's to fix).
    #[error("{0}")]
    Usage(String),
    /// Something of this machine failed.
    #[error("{0}")]
    Internal(String),
}

/// A session's engine and what it was built from.
pub struct Hosted {
    pub engine: AgentEngine,
    pub mode: PermissionMode,
    /// How the session's prompts are prepared (`/command`, `$skill`,
    /// `@server:uri`).
    pub prompts: Prompts,
    /// Makes each run's telemetry observer, when telemetry is on.
    observers: Option<rein_telemetry::Observers>,
    /// Kept alive for the engine's MCP servers and tools.
    extras: LoadedExtras,
    /// What the user should hear of the session's tools (MCP servers not
    /// started, failed, or started once more), now and later.
    pub notes: Notes,
}

/// Notes of a hosted session: each written to the process's stderr, and
/// kept until the front end takes them ([`Notes::forward`]), then handed
/// to it as they come (`rein serve` makes them events of the session, so
/// its clients see them).
#[derive(Clone, Default)]
pub struct Notes(Arc<Mutex<NotesState>>);

type Forward = Box<dyn Fn(String) + Send>;

#[derive(Default)]
struct NotesState {
    kept: Vec<String>,
    to: Option<Forward>,
}

impl Notes {
    fn say(&self, line: String) {
        crate::output::err(&format!("note: {line}"));
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &state.to {
            Some(to) => to(line),
            None => state.kept.push(line),
        }
    }

    /// Hand `to` the notes kept so far, then each later one.
    pub fn forward(&self, to: impl Fn(String) + Send + 'static) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for line in state.kept.drain(..) {
            to(line);
        }
        state.to = Some(Box::new(to));
    }
}

impl Hosted {
    /// The session's MCP servers, when it has any.
    pub fn mcp(&self) -> Option<&std::sync::Arc<rein_mcp::McpHub>> {
        self.extras.mcp.as_ref()
    }

    /// A telemetry observer for one run, when telemetry is on.
    pub fn observer(&self) -> Option<rein_telemetry::RunObserver> {
        self.observers.as_ref().map(|o| o.observer())
    }
}

/// Makes engines for the sessions of one process.
pub struct Host {
    models: ModelArgs,
    /// The mode sessions start in, over each workspace's config.
    mode: Option<PermissionMode>,
    store: Arc<dyn SessionStore>,
    /// The process's `store` setting, over each workspace's: memories go
    /// where the sessions went.
    store_setting: Option<String>,
    /// Providers by what chose them.
    providers: Mutex<HashMap<String, Arc<dyn Provider>>>,
    /// Given to each session's engine, for its runs' telemetry.
    observers: Option<rein_telemetry::Observers>,
}

impl Host {
    /// `store` is the store the process's `store` setting chose.
    pub fn new(
        models: ModelArgs,
        mode: Option<PermissionMode>,
        store: Arc<dyn SessionStore>,
        store_setting: Option<String>,
    ) -> Host {
        Host {
            models,
            mode,
            store,
            store_setting,
            providers: Mutex::new(HashMap::new()),
            observers: None,
        }
    }

    /// Sessions whose runs are observed by telemetry (`rein acp --otel`).
    pub fn observed(mut self, observers: Option<rein_telemetry::Observers>) -> Host {
        self.observers = observers;
        self
    }

    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// The config of `workspace` (trusted or not, as the user said), with
    /// the model flags over it.
    pub fn config(&self, workspace: &Path) -> Result<Config, HostError> {
        let trusted = crate::trust_cmd::trusted_for_run(workspace, false)
            .map_err(|f| HostError::Internal(format!("{:#}", f.error)))?;
        let (mut cfg, _) =
            crate::setup::settings::load_config(workspace, self.models.clone(), trusted)
                .map_err(|f| HostError::Usage(format!("{:#}", f.error)))?;
        cfg.store = self.store_setting.clone();
        Ok(cfg)
    }

    /// The engine of a session in `workspace` under `cfg`: approvals go
    /// out as events, the model's provider is shared.
    pub async fn engine(&self, workspace: &Path, cfg: Config) -> Result<Hosted, HostError> {
        cfg.validate()
            .map_err(|e| HostError::Usage(format!("{e:#}")))?;
        let mode = crate::setup::settings::mode_over(self.mode, &cfg);
        let provider = self.provider(&cfg)?;
        let opening = Opening {
            cfg: &cfg,
            workspace,
            mode,
            provider,
            store: self.store.clone(),
            approvals: Approvals::Events,
        };
        let notes = Notes::default();
        let later = notes.clone();
        let opened = Session::open(opening, move |line| later.say(line)).await;
        let Session {
            engine,
            prompts,
            extras,
        } = opened.map_err(|e| HostError::Internal(format!("{e:#}")))?;
        for note in &extras.notes {
            notes.say(note.clone());
        }
        Ok(Hosted {
            engine,
            mode,
            prompts,
            observers: self.observers.clone(),
            extras,
            notes,
        })
    }

    /// The provider `cfg` chooses, built once per choice.
    pub fn provider(&self, cfg: &Config) -> Result<Arc<dyn Provider>, HostError> {
        let key = format!(
            "{:?}|{:?}|{:?}|{:?}",
            cfg.provider, cfg.model, cfg.local.model_path, cfg.replay_script
        );
        let mut providers = self.providers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = providers.get(&key) {
            return Ok(p.clone());
        }
        let built = crate::providers::build(cfg).map_err(|e| HostError::Usage(format!("{e:#}")))?;
        providers.insert(key, built.clone());
        Ok(built)
    }
}
