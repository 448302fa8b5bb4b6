//! `rein serve`: one process serving many sessions over HTTP, with the
//! same engine and the same events as `rein exec --json`.
//!
//! - [`auth`]: the bearer token (made at first start, 0600) and the
//!   Origin and Host checks that keep web pages out.
//! - [`routes`]: the routes ([`openapi`] documents them), over [`http`]'s
//!   bodies and errors.
//! - [`state`]: the sessions served, each a [`served::Served`] whose
//!   [`events`] go to the store's event log; [`feed`] streams any
//!   session's log as Server-Sent Events from any server (on PostgreSQL
//!   following the others through `LISTEN`/`NOTIFY`).
//! - [`leases`]: one server at a time per session when several share a
//!   PostgreSQL store, and taking over the sessions of a server that died;
//!   [`control`]: approvals, cancel and mode sent to whichever server runs
//!   a session; [`root`]: the one root they all share.
//!
//! It listens on loopback unless told otherwise; another address needs
//! TLS (`--tls-cert`, `--tls-key`) or `--allow-insecure-remote`.

mod auth;
mod closing;
mod control;
mod events;
mod feed;
mod http;
mod leases;
mod openapi;
mod root;
mod routes;
mod served;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use rein_core::{PermissionMode, SessionStore};

use crate::cli::ServeArgs;
use crate::exit::{self, Failure};
use crate::hosting::Host;
use state::Server;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve until Ctrl-C or SIGTERM, then cancel the runs and stop.
pub async fn run(args: ServeArgs) -> Result<i32, Failure> {
    let tls = listen_policy(&args)?;
    let root = crate::setup::workspace::session_workspace(args.root.as_deref())?;
    let mode = crate::setup::settings::parse_mode(args.mode.as_deref())?;
    let (mut cfg, _) = crate::setup::settings::load_config(&root, args.models.clone(), false)?;
    if let Some(store) = &args.store {
        cfg.store = Some(store.clone());
    }
    // A malformed OTEL variable fails before anything is made or opened.
    let telemetry = crate::otel::start(args.otel)?;
    let token = auth::token(&auth::token_file(&cfg.home)).map_err(Failure::usage)?;
    let (store, leases, feed, _only_server) = open_store(&args, &cfg, &root).await?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Failure::usage(anyhow!("cannot listen on {}: {e}", args.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::harness(anyhow!("{e}")))?;
    let mut hosts = host_names(bound);
    if !hosts.is_empty() {
        hosts.extend(args.allow_host.iter().cloned());
    }
    let guard = auth::Guard::new(token, args.allow_origin.clone(), hosts);
    // Every run a hosted engine makes is observed (see `Hosted::observer`).
    let host = Host::new(args.models, mode, store, cfg.store.clone())
        .observed(telemetry.as_ref().map(|t| t.observers()));
    let server = Arc::new(Server::new(
        host,
        root.clone(),
        guard,
        mode == Some(PermissionMode::Bypass),
        leases,
        feed,
    ));
    control::listen(&server).map_err(Failure::harness)?;
    control::poll(server.clone());
    leases::watch_orphans(server.clone());
    let scheme = if tls.is_some() { "https" } else { "http" };
    // The one line a script waits for before it connects.
    crate::output::err(&format!(
        "rein serve: listening on {scheme}://{bound} for workspaces under {} (token in {})",
        root.display(),
        if std::env::var(auth::TOKEN_ENV).is_ok() {
            auth::TOKEN_ENV.to_string()
        } else {
            auth::token_file(&cfg.home).display().to_string()
        }
    ));
    if server.leases.is_none() {
        leases::resume_open_runs(&server).await;
    }
    accept(listener, server.clone(), tls).await;
    shut_down(&server).await;
    // What the runs left to send.
    crate::otel::finish(telemetry).await;
    Ok(exit::COMPLETED)
}

/// Refuse a non-loopback address without TLS unless told to; the TLS
/// acceptor when asked for.
fn listen_policy(args: &ServeArgs) -> Result<Option<tokio_rustls::TlsAcceptor>, Failure> {
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key).map_err(Failure::usage)?),
        _ => None,
    };
    if !args.listen.ip().is_loopback() && tls.is_none() && !args.allow_insecure_remote {
        return Err(Failure::usage(anyhow!(
            "--listen {} is reachable from other machines: give --tls-cert and --tls-key, \
             or --allow-insecure-remote to send the token in the clear",
            args.listen
        )));
    }
    Ok(tls)
}

fn tls_acceptor(
    cert: &std::path::Path,
    key: &std::path::Path,
) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("--tls-cert {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("--tls-cert {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("--tls-key {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("--tls-cert and --tls-key do not make a usable pair")?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The Host values a loopback server answers to (none checked when it
/// listens elsewhere: names are the operator's).
fn host_names(bound: SocketAddr) -> Vec<String> {
    if !bound.ip().is_loopback() {
        return Vec::new();
    }
    let port = bound.port();
    vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// SQLite under the home, or PostgreSQL with leases; the event feed on
/// the same store (on PostgreSQL listening for the other servers).
async fn open_store(
    args: &ServeArgs,
    cfg: &crate::config::Config,
    root: &std::path::Path,
) -> Result<
    (
        Arc<dyn SessionStore>,
        Option<leases::Leases>,
        Arc<feed::EventFeed>,
        Option<std::fs::File>,
    ),
    Failure,
> {
    let stores = crate::setup::store::open_stores(cfg, args.store_connections.get()).await?;
    let retention = rein_store::Retention {
        keep: args.events_kept,
        max_age: Duration::from_secs(args.events_max_age_secs),
    };
    let Some(pg) = stores.pg else {
        let only_server = one_server(&cfg.sessions_db())?;
        let feed = Arc::new(feed::EventFeed::new(stores.events, retention, None));
        return Ok((stores.sessions, None, feed, Some(only_server)));
    };
    root::check(root, &pg)
        .await
        .map_err(|e| Failure::usage(anyhow!("{e}")))?;
    let leases = leases::Leases::new(pg.clone(), Duration::from_secs(args.lease_secs));
    let board = Some((pg, leases.owner.clone()));
    let feed = Arc::new(feed::EventFeed::new(stores.events, retention, board));
    Ok((stores.sessions, Some(leases), feed, None))
}

/// On SQLite, the lock that makes this the only server on the session
/// database `db`, held until the process ends: a second one would take up
/// runs the first is driving (see [`leases::resume_open_runs`]).
/// PostgreSQL shares sessions between servers through leases instead.
fn one_server(db: &std::path::Path) -> Result<std::fs::File, Failure> {
    use std::os::fd::AsRawFd;
    // Beside the database, which is open already: its folder exists.
    let path = db.with_extension("serve-lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Failure::harness(anyhow!("cannot open {}: {e}", path.display())))?;
    // SAFETY: flock locks the open file description of a valid fd.
    let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    if !locked {
        return Err(Failure::usage(anyhow!(
            "another rein serve already uses the session database {}: one server per \
             SQLite database (several servers share a PostgreSQL one)",
            db.display()
        )));
    }
    Ok(file)
}

/// Accept connections until Ctrl-C or SIGTERM.
async fn accept(
    listener: tokio::net::TcpListener,
    server: Arc<Server>,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    loop {
        let term_fut = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let (stream, _) = tokio::select! {
            _ = tokio::signal::ctrl_c() => return,
            _ = term_fut => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    crate::output::err(&format!("rein serve: accept: {e}"));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (server, tls) = (server.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                // A client that cannot speak TLS is dropped.
                Some(acceptor) => {
                    if let Ok(s) = acceptor.accept(stream).await {
                        connection(server, s).await
                    }
                }
                None => connection(server, stream).await,
            }
        });
    }
}

/// Serve one connection's requests.
async fn connection<S>(server: Arc<Server>, stream: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let server = server.clone();
        // Boxed: the handler's future is deep (every route's), and inlined
        // here its layout passes the compiler's query depth limit.
        async move {
            let handled = Box::pin(routes::handle(server, request));
            Ok::<_, std::convert::Infallible>(handled.await)
        }
    });
    let io = hyper_util::rt::TokioIo::new(stream);
    // A client that never finishes its headers is dropped (slowloris).
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(io, service)
        .await;
}

/// Cancel every run, wait for them (at most 10 s), end the event streams.
async fn shut_down(server: &Arc<Server>) {
    crate::output::err("rein serve: shutting down: cancelling the running prompts");
    let served = server.all_served();
    for s in &served {
        s.cancel();
    }
    let all_idle = futures_util::future::join_all(served.iter().map(|s| s.idle()));
    if tokio::time::timeout(Duration::from_secs(10), all_idle)
        .await
        .is_err()
    {
        crate::output::err("rein serve: some runs did not stop within 10 s");
    }
    // What the runs emitted reaches the store before the streams end.
    let flushed = futures_util::future::join_all(served.iter().map(|s| s.events.flush()));
    let _ = tokio::time::timeout(Duration::from_secs(5), flushed).await;
    server.closing.cancel();
}
