//! Where sessions are kept ([`StoreChoice`], [`open_store`]) and which of
//! them a run continues ([`resume_target`]).

use std::path::Path;
use std::sync::Arc;

use anyhow::anyhow;
use rein_core::SessionStore;
use rein_store::SqliteStore;

use crate::config::Config;
use crate::exit::Failure;
use crate::setup::settings::Resume;

/// Where sessions and memories are kept, as the user said it: `store` in
/// their config.toml, then `REIN_STORE`, then `--store` (a project's
/// `store` never counts, trusted or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// The SQLite files under the rein home: the default, or `sqlite`.
    Sqlite,
    /// A PostgreSQL database shared by several processes, by its
    /// connection string.
    Postgres(String),
}

impl StoreChoice {
    /// The choice `cfg` holds. Anything but `sqlite` or a PostgreSQL
    /// connection string is refused (never echoed: it may hold a password).
    pub fn of(cfg: &Config) -> anyhow::Result<StoreChoice> {
        match cfg.store.as_deref().map(str::trim) {
            None | Some("" | "sqlite") => Ok(StoreChoice::Sqlite),
            Some(url) if is_postgres(url) => Ok(StoreChoice::Postgres(url.to_string())),
            Some(_) => Err(anyhow::anyhow!(
                "the store (--store, REIN_STORE or `store` in config.toml) is neither `sqlite` \
                 nor a PostgreSQL connection string (postgres://… or host=… dbname=…)"
            )),
        }
    }
}

/// The session store `cfg` chooses ([`StoreChoice`]), with at most
/// `connections` to PostgreSQL (0 is read as 1). The PostgreSQL store is returned again for
/// what only it can do (leases).
pub async fn open_store(
    cfg: &Config,
    connections: usize,
) -> Result<(Arc<dyn SessionStore>, Option<rein_store::PgStore>), crate::exit::Failure> {
    match StoreChoice::of(cfg).map_err(Failure::usage)? {
        StoreChoice::Postgres(url) => {
            let options = rein_store::PgOptions {
                max_connections: connections,
            };
            let store = rein_store::PgStore::connect_with(&url, options)
                .await
                .map_err(|e| Failure::usage(anyhow!("store: {e}")))?;
            Ok((Arc::new(store.clone()), Some(store)))
        }
        StoreChoice::Sqlite => Ok((open_sqlite(cfg)?, None)),
    }
}

/// Whether `url` names a PostgreSQL database: a `postgres://` URL or
/// libpq's `key=value` form.
fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://")
        || url.starts_with("postgresql://")
        || url
            .split_whitespace()
            .any(|kv| kv.starts_with("host=") || kv.starts_with("dbname="))
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
