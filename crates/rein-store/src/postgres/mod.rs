//! PostgreSQL: the session store (and long-term memory) for several
//! machines sharing one database.
//!
//! [`PgStore`] is a [`SessionStore`](rein_core::SessionStore) with exactly
//! the behaviour of [`SqliteStore`](crate::SqliteStore): the same id
//! prefixes, errors and ordering, every method committed before it returns.
//! It adds session leases ([`Lease`]): one server drives a session at a
//! time, and another finds the sessions whose server stopped renewing
//! ([`PgStore::list_orphaned`]); a run's writes to a session are fenced
//! by its lease's token, so a holder that lost it stores nothing more
//! (see the `fence` module); and one connection per process that
//! listens for notifications ([`PgStore::listen`]). [`PgMemory`] is the long-term memory in
//! the same or another database.
//!
//! Connections come from a small pool; TLS is rustls with the system's
//! trust store, chosen by `sslmode` (see the `url` module).

mod controls;
mod error;
mod events;
mod fence;
mod heartbeat;
mod lease;
mod memory;
mod notify;
mod pool;
mod records;
mod root;
mod runtime;
mod schema;
mod sessions;
mod url;

use std::sync::Arc;
use std::time::Duration;

use rein_core::StoreError;

use error::PgFail;
use pool::{Conn, Pool};
use schema::{SESSIONS, migrate};

pub use controls::{
    CONTROL_LIFETIME, CONTROLS_CHANNEL, Control, ControlKind, Outcome, SETTLED_CHANNEL, Sent,
};
pub use heartbeat::Heartbeat;
pub use lease::{Lease, LeaseError, OrphanedSession};
pub use memory::{PG_MEMORY_SCHEMA_VERSION, PgMemory};
pub use notify::{Heard, LISTENER_NAME, Listener};
pub use root::RecordedRoot;
pub use url::password_spans;

/// The sessions schema version this build writes in PostgreSQL.
pub const PG_SCHEMA_VERSION: u32 = schema::SESSION_MIGRATIONS.len() as u32;

/// How a [`PgStore`] or [`PgMemory`] connects. Build with
/// `PgOptions { max_connections, ..Default::default() }`.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most connections open at once; more concurrent operations wait for
    /// one to be free. Default 4.
    pub max_connections: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions { max_connections: 4 }
    }
}

/// The session store in a PostgreSQL database. Cloning is cheap and shares
/// the connections.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// The leases this store holds, which fence its writes (see
    /// [`fence`]).
    fences: Arc<fence::Fences>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("server", &self.pool.target().shown)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connect to the database `url` names (`postgres://user:pw@host/db`
    /// or `host=... dbname=...`) and bring its schema up to date. A
    /// malformed URL, an unreachable server or a database of a newer rein
    /// fail here with a one-line error that never shows the password.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        Self::connect_with(url, PgOptions::default()).await
    }

    /// [`connect`](Self::connect) with explicit options.
    pub async fn connect_with(url: &str, options: PgOptions) -> Result<PgStore, StoreError> {
        let pool = Pool::new(url::parse(url)?, options.max_connections)?;
        let store = PgStore {
            pool,
            fences: Arc::default(),
        };
        store
            .run("connecting", |mut conn| async move {
                migrate(&mut conn, SESSIONS).await
            })
            .await?;
        Ok(store)
    }

    /// The server and database, as messages name them (no password).
    pub fn server(&self) -> &str {
        &self.pool.target().shown
    }

    /// Run `f` with a pooled connection on the PostgreSQL thread; its
    /// failure becomes a [`StoreError`] naming the server.
    async fn run<T, F, Fut>(&self, context: &'static str, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(Conn) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, PgFail>> + Send + 'static,
        T: Send + 'static,
    {
        self.run_within(context, None, f).await
    }

    /// [`run`](Self::run), given up after `limit` when there is one.
    async fn run_within<T, F, Fut>(
        &self,
        context: &'static str,
        limit: Option<Duration>,
        f: F,
    ) -> Result<T, StoreError>
    where
        F: FnOnce(Conn) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, PgFail>> + Send + 'static,
        T: Send + 'static,
    {
        self.pool
            .run(context, limit, f)
            .await
            .map_err(|e| e.into_store(self.pool.target()))
    }
}

/// How long a `Duration` is in (fractional) seconds, as PostgreSQL's
/// `make_interval` takes it.
fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}
