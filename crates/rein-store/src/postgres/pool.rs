//! A small pool of PostgreSQL connections.
//!
//! A transaction needs a connection of its own, so concurrent operations
//! each borrow one: at most `max` are open at once, idle ones are kept for
//! the next operation, and a connection the server closed is dropped on
//! return and replaced by a fresh one later. Operations run on the
//! PostgreSQL thread ([`runtime`](super::runtime)), where the connections'
//! own tasks run too. A connection returned in the middle of a transaction
//! (its operation failed or panicked) is safe to reuse: tokio-postgres
//! queues a `ROLLBACK` when a transaction is dropped, and the connection
//! answers queries in order.
//!
//! Each connection keeps the statements prepared on it: tokio-postgres
//! prepares a `&str` query anew on every call (a round trip of its own and
//! a parse on the server), which under load cost as much as the work.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::error::PgFail;
use super::url::{Target, TlsMode};
use rein_core::StoreError;

/// Connections to one server, shared by clones of a store.
#[derive(Clone)]
pub(crate) struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    target: Target,
    /// The TLS connector, when the target may use TLS.
    tls: Option<MakeRustlsConnect>,
    /// Last returned is first reused (LIFO): the busiest connections stay
    /// warm and their statements prepared.
    idle: Mutex<Vec<Idle>>,
    permits: Arc<Semaphore>,
}

/// The statements prepared on one connection, by their SQL text. Only
/// `'static` text is cached, so the set is bounded by the program's SQL.
type Prepared = HashMap<&'static str, Statement>;

/// A connection waiting in the pool, with what was prepared on it.
struct Idle {
    client: Client,
    prepared: Prepared,
}

/// A borrowed connection; goes back to the pool when dropped.
pub(crate) struct Conn {
    client: Option<Client>,
    prepared: Prepared,
    inner: Arc<Inner>,
    _permit: OwnedSemaphorePermit,
}

impl Pool {
    /// A pool of at most `max` connections to `target` (none opened yet).
    pub(crate) fn new(target: Target, max: usize) -> Result<Pool, StoreError> {
        let tls = match target.tls {
            TlsMode::Disable => None,
            TlsMode::Prefer | TlsMode::Require => Some(tls_connector(target.root_cert.as_deref())?),
        };
        Ok(Pool {
            inner: Arc::new(Inner {
                target,
                tls,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(max.max(1))),
            }),
        })
    }

    /// The server this pool connects to.
    pub(crate) fn target(&self) -> &Target {
        &self.inner.target
    }

    /// Run `f` with a connection of this pool, on the PostgreSQL thread
    /// (see [`runtime`](super::runtime) for why), and give back its result.
    ///
    /// With a `limit`, the operation (waiting for a connection included)
    /// is given up there, on that thread: a caller that stops waiting
    /// does not stop the operation, so a deadline must live with it.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        context: &'static str,
        limit: Option<Duration>,
        f: F,
    ) -> Result<T, E>
    where
        F: FnOnce(Conn) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: From<PgFail> + Send + 'static,
    {
        let pool = self.clone();
        super::runtime::run(async move {
            let work = async {
                let conn = pool.get(context).await.map_err(E::from)?;
                f(conn).await
            };
            let Some(limit) = limit else {
                return work.await;
            };
            match tokio::time::timeout(limit, work).await {
                Ok(result) => result,
                Err(_) => Err(E::from(PgFail::Store(StoreError::Locked(format!(
                    "{context} took longer than {} ms",
                    limit.as_millis()
                ))))),
            }
        })
        .await
    }

    /// A connection: an idle one, or a new one when none is idle. Waits
    /// while `max` are in use.
    async fn get(&self, context: &'static str) -> Result<Conn, PgFail> {
        let permit = Arc::clone(&self.inner.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Other("the PostgreSQL pool was shut down".into()))?;
        let reused = {
            let mut idle = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            idle.retain(|c| !c.client.is_closed());
            idle.pop()
        };
        let (client, prepared) = match reused {
            Some(Idle { client, prepared }) => (client, prepared),
            None => (self.open(context).await?, Prepared::new()),
        };
        Ok(Conn {
            client: Some(client),
            prepared,
            inner: Arc::clone(&self.inner),
            _permit: permit,
        })
    }

    /// Open a new connection; its I/O runs on a task of its own until the
    /// client is dropped or the server closes it.
    async fn open(&self, context: &'static str) -> Result<Client, PgFail> {
        let config = &self.inner.target.config;
        let connect_error = |source| PgFail::Connect { context, source };
        match &self.inner.tls {
            None => {
                let (client, connection) = config.connect(NoTls).await.map_err(connect_error)?;
                tokio::spawn(async move {
                    // An error here is a closed connection: the client sees
                    // it as `is_closed` and the pool drops it.
                    let _ = connection.await;
                });
                Ok(client)
            }
            Some(tls) => {
                let (client, connection) =
                    config.connect(tls.clone()).await.map_err(connect_error)?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            }
        }
    }
}

/// A notification a listening connection received.
pub(crate) type Notified = tokio_postgres::Notification;

impl Pool {
    /// A connection of its own (outside the pool's count), named
    /// `application_name` on the server, whose notifications come out of
    /// the receiver; the receiver ends when the connection does.
    pub(crate) async fn open_listening(
        &self,
        application_name: &str,
    ) -> Result<(Client, tokio::sync::mpsc::UnboundedReceiver<Notified>), PgFail> {
        let mut config = self.inner.target.config.clone();
        config.application_name(application_name);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let connect_error = |source| PgFail::Connect {
            context: "listening for notifications",
            source,
        };
        let client = match &self.inner.tls {
            None => {
                let (client, connection) = config.connect(NoTls).await.map_err(connect_error)?;
                forward(connection, tx);
                client
            }
            Some(tls) => {
                let (client, connection) =
                    config.connect(tls.clone()).await.map_err(connect_error)?;
                forward(connection, tx);
                client
            }
        };
        Ok((client, rx))
    }
}

/// Drive `connection`, sending its notifications on until it ends.
fn forward<S, T>(
    mut connection: tokio_postgres::Connection<S, T>,
    tx: tokio::sync::mpsc::UnboundedSender<Notified>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(tokio_postgres::AsyncMessage::Notification(n))) => {
                    if tx.send(n).is_err() {
                        return;
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return,
            }
        }
    });
}

/// rustls on ring, the project's one TLS setup, trusting the system's
/// roots or only the authorities in `root_cert` (`sslrootcert`). The
/// certificate and the host name are always checked: `require` and
/// `verify-ca` are as strict as `verify-full`. Built per pool so no
/// process-wide provider has to be installed.
fn tls_connector(root_cert: Option<&Path>) -> Result<MakeRustlsConnect, StoreError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let failed =
        |e: rustls::Error| StoreError::Other(format!("cannot set up TLS for PostgreSQL: {e}"));
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(failed)?;
    let config = match root_cert {
        None => builder.with_platform_verifier().map_err(failed)?,
        Some(path) => builder.with_root_certificates(root_store(path)?),
    };
    Ok(MakeRustlsConnect::new(config.with_no_client_auth()))
}

/// The certificate authorities in the PEM file `path`.
fn root_store(path: &Path) -> Result<rustls::RootCertStore, StoreError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |why: String| StoreError::Other(format!("sslrootcert `{}`: {why}", path.display()));
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM certificate file ({e})")))?;
    if certs.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| bad(format!("a certificate cannot be used: {e}")))?;
    }
    Ok(roots)
}

impl Conn {
    /// `sql` prepared on this connection: the first use prepares it, later
    /// ones only bind and execute. A statement prepared here may be run in
    /// a transaction on the same connection.
    pub(crate) async fn prepared(
        &mut self,
        sql: &'static str,
    ) -> Result<Statement, tokio_postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.prepare(sql).await?;
        self.prepared.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;

    fn deref(&self) -> &Client {
        // Only `Drop` takes the client out.
        match &self.client {
            Some(client) => client,
            None => unreachable!("a pooled connection is used after it was returned"),
        }
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        match &mut self.client {
            Some(client) => client,
            None => unreachable!("a pooled connection is used after it was returned"),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(client) = self.client.take().filter(|c| !c.is_closed()) {
            self.inner
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(Idle {
                    client,
                    prepared: std::mem::take(&mut self.prepared),
                });
        }
    }
}
