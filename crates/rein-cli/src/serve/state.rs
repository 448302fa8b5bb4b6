//! What `rein serve` holds across requests: the engine host, the
//! workspaces root, the sessions being served, the request guard, and the
//! leases that keep a session driven by one server at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rein_core::{BudgetCap, NewSession, PermissionMode, SessionInfo};

use super::auth::Guard;
use super::events::EventWriter;
use super::feed::EventFeed;
use super::http::Failure;
use super::leases::Leases;
use super::served::Served;
use crate::hosting::{Host, HostError};

/// The server's state, shared by every connection.
pub struct Server {
    pub host: Host,
    /// Canonical: every session's workspace is a folder right under it.
    pub root: PathBuf,
    pub guard: Guard,
    /// Whether sessions may be switched to bypass (`rein serve --mode
    /// bypass` only).
    pub bypass_allowed: bool,
    pub leases: Option<Leases>,
    /// Every session's stored events, as this server streams them.
    pub feed: Arc<EventFeed>,
    /// Fires when the server shuts down (event streams end).
    pub closing: tokio_util::sync::CancellationToken,
    sessions: Mutex<HashMap<String, Arc<Served>>>,
    /// One session opened at a time, so two requests never build two
    /// engines for one session.
    opening: tokio::sync::Mutex<()>,
}

/// `POST /sessions`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// A folder name under the root (made when missing); default: a new
    /// folder of its own.
    pub workspace: Option<String>,
    pub title: Option<String>,
    pub mode: Option<String>,
    #[serde(default)]
    pub budget: BudgetBody,
}

/// A session's limits as a client asks for them (`None`: the config's).
/// They only lower the workspace's own ([`rein_core::Budget::tightened_by`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetBody {
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time_secs: Option<u64>,
}

impl BudgetBody {
    /// The limits asked for, checked.
    pub fn cap(&self) -> Result<BudgetCap, HostError> {
        let cap = BudgetCap {
            max_turns: self.max_turns,
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
            max_wall_time: self.max_wall_time_secs.map(std::time::Duration::from_secs),
        };
        cap.validate()
            .map_err(|e| HostError::Usage(format!("{} {e}", e.limit().key())))?;
        Ok(cap)
    }
}

impl Server {
    pub fn new(
        host: Host,
        root: PathBuf,
        guard: Guard,
        bypass_allowed: bool,
        leases: Option<Leases>,
        feed: Arc<EventFeed>,
    ) -> Server {
        Server {
            host,
            root,
            guard,
            bypass_allowed,
            leases,
            feed,
            closing: tokio_util::sync::CancellationToken::new(),
            sessions: Mutex::new(HashMap::new()),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// The session `id` if this server serves it now.
    pub fn served_now(&self, id: &str) -> Option<Arc<Served>> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.get(id).cloned()
    }

    pub fn all_served(&self) -> Vec<Arc<Served>> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.values().cloned().collect()
    }

    /// A new session in its workspace under the root.
    pub async fn create(&self, body: CreateSession) -> Result<Arc<Served>, Failure> {
        let mode = self.mode(body.mode.as_deref())?;
        let name = match body.workspace {
            Some(name) => name,
            None => format!("w-{:016x}", fastrand::u64(..)),
        };
        let workspace = self.workspace(&name)?;
        let mut cfg = self.host.config(&workspace)?;
        cfg.budget = cfg.budget.tightened_by(&body.budget.cap()?);
        let model = self.host.provider(&cfg)?.model().to_string();
        let info = self
            .host
            .store()
            .create_session(NewSession {
                workspace: workspace.display().to_string(),
                title: body.title.unwrap_or_default(),
                model,
                parent_id: None,
            })
            .await?;
        let _opening = self.opening.lock().await;
        let hosted = self.host.engine(&workspace, cfg).await?;
        let served = Arc::new(self.served(info.id.clone(), hosted));
        if let Some(mode) = mode {
            served.set_mode(mode);
            // Every server's prompts start in it.
            if let Some(leases) = &self.leases {
                leases
                    .store
                    .set_session_mode(&served.id, &mode.to_string())
                    .await?;
            }
        }
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(info.id, served.clone());
        Ok(served)
    }

    /// The served session `id`, opened from the store when this server
    /// has not served it yet (its workspace must be under the root).
    pub async fn session(&self, id: &str) -> Result<Arc<Served>, Failure> {
        if let Some(s) = self.served_now(id) {
            return Ok(s);
        }
        let info = self.stored(id).await?;
        let _opening = self.opening.lock().await;
        if let Some(s) = self.served_now(id) {
            return Ok(s);
        }
        let workspace = PathBuf::from(&info.workspace);
        // Stored by an older server, or the folder changed since.
        Self::fit(&workspace)?;
        let cfg = self.host.config(&workspace)?;
        let hosted = self.host.engine(&workspace, cfg).await?;
        let served = Arc::new(self.served(info.id.clone(), hosted));
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(info.id, served.clone());
        Ok(served)
    }

    /// A session served here, its events written to the store.
    fn served(&self, id: String, hosted: crate::hosting::Hosted) -> Served {
        let events = EventWriter::start(self.feed.clone(), id.clone());
        Served::new(id, hosted, events)
    }

    /// The stored session `id` (the whole id, in a workspace of this
    /// root).
    pub async fn stored(&self, id: &str) -> Result<SessionInfo, Failure> {
        let info = self.host.store().get_session(id).await?;
        if info.id != id || !self.under_root(Path::new(&info.workspace)) {
            return Err(Failure::not_found(format!("session {id} not found")));
        }
        Ok(info)
    }

    /// The sessions of this root, newest first.
    pub async fn list(&self, limit: usize) -> Result<Vec<SessionInfo>, Failure> {
        let all = self.host.store().list_sessions(None, usize::MAX).await?;
        Ok(all
            .into_iter()
            .filter(|s| self.under_root(Path::new(&s.workspace)))
            .take(limit)
            .collect())
    }

    /// Stop serving `id` and delete it from the store (its folder stays).
    pub async fn delete(&self, id: &str) -> Result<(), Failure> {
        let info = self.stored(id).await?;
        let served = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(s) = served {
            s.cancel();
            s.idle().await;
        }
        self.host.store().delete_session(id).await?;
        // Its hook transcript and checkpoints go with it, as with `rein
        // sessions delete`.
        if let Ok(home) = crate::config::rein_home() {
            crate::sessions::forget_files(&home, &info);
        }
        Ok(())
    }

    /// A mode a client asked for; bypass only when the server runs in it.
    pub fn mode(&self, asked: Option<&str>) -> Result<Option<PermissionMode>, Failure> {
        let Some(text) = asked else { return Ok(None) };
        let mode = text
            .parse::<PermissionMode>()
            .map_err(|e| Failure::bad_request(format!("mode: {e}")))?;
        if mode == PermissionMode::Bypass && !self.bypass_allowed {
            return Err(Failure::bad_request(
                "mode bypass is refused: the server was not started with --mode bypass",
            ));
        }
        Ok(Some(mode))
    }

    /// The folder `name` right under the root, made when missing. A name
    /// with a separator, one starting with a dot (`.git`, `.rein`, `.ssh`:
    /// the root is often the home), or one that resolves outside the root
    /// (a symlink) or into a folder no session may work in is refused.
    fn workspace(&self, name: &str) -> Result<PathBuf, Failure> {
        let valid = !name.is_empty()
            && name.len() <= 100
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(Failure::bad_request(format!(
                "workspace `{name}` is not a folder name (letters, digits, `-`, `_`, `.`)"
            )));
        }
        if name.starts_with('.') {
            return Err(Failure::bad_request(format!(
                "workspace `{name}` starts with a dot: hidden folders (`.git`, `.rein`, `.ssh`, \
                 ...) are never a session's workspace"
            )));
        }
        let path = self.root.join(name);
        if let Err(e) = std::fs::create_dir(&path)
            && e.kind() != std::io::ErrorKind::AlreadyExists
        {
            return Err(Failure::internal(format!(
                "cannot create {}: {e}",
                path.display()
            )));
        }
        let canonical = std::fs::canonicalize(&path)
            .map_err(|e| Failure::internal(format!("cannot open {}: {e}", path.display())))?;
        if canonical.parent() != Some(self.root.as_path()) || !canonical.is_dir() {
            return Err(Failure::bad_request(format!(
                "workspace `{name}` leads outside the server's root"
            )));
        }
        Self::fit(&canonical)?;
        Ok(canonical)
    }

    /// `workspace` (canonical) unless no session may work there (see
    /// [`crate::setup::workspace`]).
    fn fit(workspace: &Path) -> Result<(), Failure> {
        match crate::setup::workspace::unfit(workspace, workspace) {
            Some(why) => Err(Failure::bad_request(why)),
            None => Ok(()),
        }
    }

    fn under_root(&self, workspace: &Path) -> bool {
        workspace.parent() == Some(self.root.as_path())
    }
}
