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
use crate::run_setup::LoadedExtras;

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

/// The longest wall-time budget a session may ask for: a year.
const MAX_WALL_TIME_SECS: u64 = 31_536_000;

/// Limits one session's runs may not pass (`None`: the config's).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time_secs: Option<u64>,
}

impl Budget {
    /// Each limit of `self` over `cfg`'s, never looser than `cfg`'s own.
    pub fn apply(&self, cfg: &mut Config) -> Result<(), HostError> {
        fn tighter<T: PartialOrd + Copy>(asked: Option<T>, set: Option<T>) -> Option<T> {
            match (asked, set) {
                (Some(a), Some(s)) if s < a => Some(s),
                (Some(a), _) => Some(a),
                (None, s) => s,
            }
        }
        if self.max_turns == Some(0)
            || self.max_tokens == Some(0)
            || self.max_wall_time_secs == Some(0)
        {
            return Err(HostError::Usage("budget limits must be at least 1".into()));
        }
        if self
            .max_wall_time_secs
            .is_some_and(|s| s > MAX_WALL_TIME_SECS)
        {
            return Err(HostError::Usage(format!(
                "max_wall_time_secs must be at most {MAX_WALL_TIME_SECS} (a year)"
            )));
        }
        if let Some(c) = self.max_cost_usd
            && !(c > 0.0 && c.is_finite())
        {
            return Err(HostError::Usage(format!(
                "max_cost_usd must be a positive number of dollars, got {c}"
            )));
        }
        if let Some(t) = self.max_turns {
            cfg.max_turns = cfg.max_turns.min(t);
        }
        cfg.max_tokens = tighter(self.max_tokens, cfg.max_tokens);
        cfg.max_cost_usd = tighter(self.max_cost_usd, cfg.max_cost_usd);
        let asked = self.max_wall_time_secs.map(std::time::Duration::from_secs);
        cfg.max_wall_time = tighter(asked, cfg.max_wall_time);
        Ok(())
    }
}

/// A session's engine and what it was built from.
pub struct Hosted {
    pub engine: AgentEngine,
    /// The config the engine was built from (custom commands, limits).
    pub cfg: Config,
    pub mode: PermissionMode,
    /// Kept alive for the engine's MCP servers and tools.
    _extras: LoadedExtras,
}

/// Makes engines for the sessions of one process.
pub struct Host {
    models: ModelArgs,
    /// The mode sessions start in, over each workspace's config.
    mode: Option<PermissionMode>,
    store: Arc<dyn SessionStore>,
    /// Providers by what chose them.
    providers: Mutex<HashMap<String, Arc<dyn Provider>>>,
}

impl Host {
    pub fn new(
        models: ModelArgs,
        mode: Option<PermissionMode>,
        store: Arc<dyn SessionStore>,
    ) -> Host {
        Host {
            models,
            mode,
            store,
            providers: Mutex::new(HashMap::new()),
        }
    }

    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// The config of `workspace` (trusted or not, as the user said), with
    /// the model flags over it.
    pub fn config(&self, workspace: &Path) -> Result<Config, HostError> {
        let trusted = crate::trust::command::trusted_for_run(workspace, false)
            .map_err(|f| HostError::Internal(format!("{:#}", f.error)))?;
        let (cfg, _) = crate::exec::load_config(workspace, self.models.clone(), trusted)
            .map_err(|f| HostError::Usage(format!("{:#}", f.error)))?;
        Ok(cfg)
    }

    /// The engine of a session in `workspace` under `cfg`: approvals go
    /// out as events, the model's provider is shared.
    pub async fn engine(&self, workspace: &Path, cfg: Config) -> Result<Hosted, HostError> {
        cfg.validate()
            .map_err(|e| HostError::Usage(format!("{e:#}")))?;
        let mode = self.mode.or(cfg.permissions.mode).unwrap_or_default();
        let provider = self.provider(&cfg)?;
        let extras = LoadedExtras::load(&cfg, workspace, provider.as_ref()).await;
        for note in &extras.notes {
            crate::output::err(&format!("note: {note}"));
        }
        let engine = crate::run_setup::engine_builder(
            &cfg,
            workspace,
            mode,
            provider,
            self.store.clone(),
            &extras.extras(),
        )
        .approvals(Approvals::Events)
        .build()
        .map_err(|e| HostError::Internal(format!("cannot start the engine: {e}")))?;
        if let Some(hub) = &extras.mcp {
            let lazy = crate::mcp::lazy_tools(&cfg, &engine);
            crate::mcp::follow(hub, &engine, lazy, |line| {
                crate::output::err(&format!("note: {line}"));
            });
        }
        Ok(Hosted {
            engine,
            cfg,
            mode,
            _extras: extras,
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

/// Where sessions are kept: a PostgreSQL database (`url`, from `--store`
/// or `REIN_STORE`) shared by several processes, else the SQLite file
/// under the rein home. The PostgreSQL store is returned again for what
/// only it can do (leases).
pub async fn open_store(
    cfg: &Config,
    url: Option<&str>,
    connections: usize,
) -> Result<(Arc<dyn SessionStore>, Option<rein_store::PgStore>), crate::exit::Failure> {
    use anyhow::anyhow;
    let env = std::env::var("REIN_STORE").ok();
    match url.or(env.as_deref()).filter(|u| !u.trim().is_empty()) {
        Some(url) if is_postgres(url) => {
            if connections == 0 {
                return Err(crate::exit::Failure::usage(anyhow!(
                    "--store-connections must be at least 1"
                )));
            }
            let options = rein_store::PgOptions {
                max_connections: connections,
            };
            let store = rein_store::PgStore::connect_with(url, options)
                .await
                .map_err(|e| crate::exit::Failure::usage(anyhow!("--store: {e}")))?;
            Ok((Arc::new(store.clone()), Some(store)))
        }
        Some(_) => Err(crate::exit::Failure::usage(anyhow!(
            "--store (or REIN_STORE) is not a PostgreSQL connection string \
             (postgres://… or host=… dbname=…); leave it out for the SQLite file"
        ))),
        None => Ok((crate::exec::open_store(cfg)?, None)),
    }
}

/// The PostgreSQL database `REIN_STORE` names, if it names one.
pub fn postgres_from_env() -> Option<String> {
    std::env::var("REIN_STORE").ok().filter(|u| is_postgres(u))
}

/// Whether `url` names a PostgreSQL database: a `postgres://` URL or
/// libpq's `key=value` form.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://")
        || url.starts_with("postgresql://")
        || url
            .split_whitespace()
            .any(|kv| kv.starts_with("host=") || kv.starts_with("dbname="))
}
