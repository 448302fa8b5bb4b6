//! Where sessions are kept ([`StoreChoice`], [`open_store`]) and which of
//! them a run continues ([`resume_target`]).

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use rein_core::SessionStore;
use rein_store::SqliteStore;

use crate::config::{Config, StoreChoice};
use crate::exit::Failure;
use crate::setup::settings::Resume;

/// The session store `cfg` chooses ([`StoreChoice`]), with at most
/// `connections` to PostgreSQL (0 is read as 1). The PostgreSQL store is returned again for
/// what only it can do (leases).
pub async fn open_store(
    cfg: &Config,
    connections: usize,
) -> Result<(Arc<dyn SessionStore>, Option<rein_store::PgStore>), crate::exit::Failure> {
    let opened = open_stores(cfg, connections).await?;
    Ok((opened.sessions, opened.pg))
}

/// The store `cfg` chooses, as each of its uses sees it.
pub struct Stores {
    pub sessions: Arc<dyn SessionStore>,
    /// The same store's session event logs.
    pub events: Arc<dyn rein_store::SessionEvents>,
    /// The same store when it is PostgreSQL (leases, notifications).
    pub pg: Option<rein_store::PgStore>,
}

/// [`open_store`], with the event logs (`rein serve`).
pub async fn open_stores(cfg: &Config, connections: usize) -> Result<Stores, Failure> {
    match StoreChoice::of(cfg).map_err(Failure::usage)? {
        StoreChoice::Postgres(url) => {
            let options = rein_store::PgOptions {
                max_connections: connections,
            };
            let store = rein_store::PgStore::connect_with(&url, options)
                .await
                .map_err(|e| Failure::usage(anyhow!("store: {e}")))?;
            Ok(Stores {
                sessions: Arc::new(store.clone()),
                events: Arc::new(store.clone()),
                pg: Some(store),
            })
        }
        StoreChoice::Sqlite => {
            let store = open_sqlite(cfg)?;
            Ok(Stores {
                sessions: store.clone(),
                events: store,
                pg: None,
            })
        }
    }
}

/// Open the SQLite session database under the configured home (see
/// [`open_store`] for the store the user chose).
pub fn open_sqlite(cfg: &Config) -> Result<Arc<SqliteStore>, Failure> {
    let path = cfg.sessions_db();
    SqliteStore::open(&path)
        .map(Arc::new)
        .map_err(|e| Failure::harness(anyhow!("{e}")))
}

/// The session a run continues, if any: [`Resume::Last`] is the newest
/// of `workspace`'s.
pub async fn resume_target(
    store: &dyn SessionStore,
    workspace: &Path,
    resume: &Resume,
) -> Result<Option<String>, Failure> {
    match resume {
        Resume::Fresh => Ok(None),
        Resume::Last => Ok(Some(
            latest_session(store, workspace, "--last: no session to resume").await?,
        )),
        Resume::Session(id) => Ok(Some(find_session(store, id, "--resume: ").await?)),
    }
}

/// The session an id or unique prefix names; unknown or ambiguous ids are
/// usage errors (`context` prefixes their message).
pub async fn find_session(
    store: &dyn SessionStore,
    id: &str,
    context: &str,
) -> Result<String, Failure> {
    match store.get_session(id).await {
        Ok(info) => Ok(info.id),
        Err(e @ (rein_core::StoreError::NotFound(_) | rein_core::StoreError::Ambiguous { .. })) => {
            Err(Failure::usage(anyhow!("{context}{e}")))
        }
        Err(other) => Err(Failure::harness(anyhow!("{other}"))),
    }
}

/// The newest session of `workspace`; none is a usage error saying `none`.
pub async fn latest_session(
    store: &dyn SessionStore,
    workspace: &Path,
    none: &str,
) -> Result<String, Failure> {
    let ws = workspace.display().to_string();
    let latest = store
        .list_sessions(Some(&ws), 1)
        .await
        .map_err(|e| Failure::harness(anyhow!("{e}")))?;
    match latest.into_iter().next() {
        Some(s) => Ok(s.id),
        None => Err(Failure::usage(anyhow!("{none} in {ws}"))),
    }
}
