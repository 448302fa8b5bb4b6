//! The proxy a sandboxed command reaches the network through when the
//! policy's network is a list of hosts ([`rein_core::HostPolicy`]).
//!
//! The command runs in a network namespace of its own, with nothing but
//! loopback. One proxy serves one command, on a Unix socket in a private
//! folder that is bound into the sandbox; the [`super::netbridge`] inside
//! forwards a loopback TCP port to it and points `HTTP_PROXY` and its kin
//! there. For each connection the proxy:
//!
//! 1. reads the request head (at most [`MAX_HEAD`] bytes, within
//!    [`HEAD_TIMEOUT`]): `CONNECT host:port` for TLS and anything tunnelled,
//!    or an absolute `http://` URL for plain HTTP;
//! 2. decides by the host *name* asked for ([`HostPolicy::decide`]): a
//!    refusal is a `403` whose body is one line, and a note the command's
//!    output ends with ([`NetProxy::blocked`]);
//! 3. resolves the name once and keeps only public addresses, unless the
//!    name was listed exactly (a local server the user named);
//! 4. connects to an address it checked (never resolving again, so DNS
//!    rebinding cannot swap in another), then relays bytes both ways. A
//!    plain HTTP request is rewritten to the origin form with its `Host`
//!    set to the checked name and `Connection: close`, so one connection
//!    carries requests for that host only.
//!
//! What it does not stop: data sent to an allowed host is sent.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_core::{HostPolicy, Target};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use crate::net::{Refused, check};
pub use crate::net::{Resolve, SystemResolver};

/// The longest request head read before refusing the request.
pub const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to an allowed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most refusals remembered for the command's notes.
const MAX_NOTES: usize = 16;
/// The most connections one command has open through its proxy at once
/// (each holds file descriptors of rein's own process); more wait.
pub const MAX_CONNECTIONS: usize = 128;

/// One command's proxy: alive until dropped.
pub struct NetProxy {
    dir: tempfile::TempDir,
    blocked: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

/// The socket's file name inside the proxy's folder.
pub const SOCKET_NAME: &str = "proxy.sock";

impl NetProxy {
    /// Listen in a new private folder; needs a Tokio runtime.
    pub fn start(policy: HostPolicy, resolver: Arc<dyn Resolve>) -> io::Result<NetProxy> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| io::Error::other("no async runtime to run the proxy on"))?;
        let dir = tempfile::Builder::new().prefix("rein-net-").tempdir()?;
        let path = dir.path().join(SOCKET_NAME);
        let listener = std::os::unix::net::UnixListener::bind(&path)?;
        listener.set_nonblocking(true)?;
        let blocked = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::new(Shared {
            policy,
            resolver,
            blocked: blocked.clone(),
        });
        let task = runtime.spawn(async move {
            let Ok(listener) = UnixListener::from_std(listener) else {
                return;
            };
            let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else {
                    return;
                };
                let Ok((conn, _)) = listener.accept().await else {
                    return;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    serve(conn, shared).await;
                    drop(slot);
                });
            }
        });
        Ok(NetProxy { dir, blocked, task })
    }

    /// The folder holding the socket (bound into the sandbox).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The socket's path on the host.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join(SOCKET_NAME)
    }

    /// One line per refused host, in the order they were refused, each
    /// once.
    pub fn blocked(&self) -> Vec<String> {
        self.blocked.lock().map(|b| b.clone()).unwrap_or_default()
    }
}

impl Drop for NetProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Shared {
    policy: HostPolicy,
    resolver: Arc<dyn Resolve>,
    blocked: Arc<Mutex<Vec<String>>>,
}

impl Shared {
    fn note(&self, line: String) {
        if let Ok(mut b) = self.blocked.lock()
            && b.len() < MAX_NOTES
            && !b.contains(&line)
        {
            b.push(line);
        }
    }
}

/// What a client asked for.
struct Request {
    target: Target,
    /// `None` for `CONNECT`; else the head to send on, rewritten.
    forward: Option<Vec<u8>>,
}

/// A refusal: the status line and one line for the client and the notes.
struct Refusal {
    status: &'static str,
    line: String,
    /// Whether it goes in the command's notes (a policy refusal does; a
    /// malformed request or an unreachable host only answers the client).
    noted: bool,
}

impl Refusal {
    fn bad(line: impl Into<String>) -> Refusal {
        Refusal {
            status: "400 Bad Request",
            line: line.into(),
            noted: false,
        }
    }
}

async fn serve(mut conn: UnixStream, shared: Arc<Shared>) {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut conn)).await {
        Ok(Ok(read)) => read,
        Ok(Err(refusal)) => return refuse(&mut conn, &shared, refusal).await,
        Err(_) => return,
    };
    let request = match parse(&head) {
        Ok(r) => r,
        Err(refusal) => return refuse(&mut conn, &shared, refusal).await,
    };
    let upstream = match open(&shared, &request.target).await {
        Ok(s) => s,
        Err(refusal) => return refuse(&mut conn, &shared, refusal).await,
    };
    relay(conn, upstream, request, rest).await;
}

async fn refuse(conn: &mut UnixStream, shared: &Shared, refusal: Refusal) {
    if refusal.noted {
        shared.note(refusal.line.clone());
    }
    let body = format!("{}\n", refusal.line);
    let reply = format!(
        "HTTP/1.1 {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: \
         close\r\n\r\n{body}",
        refusal.status,
        body.len()
    );
    let _ = conn.write_all(reply.as_bytes()).await;
    let _ = conn.shutdown().await;
}

/// The request head (through the blank line) and whatever came after it.
async fn read_head(conn: &mut (impl AsyncRead + Unpin)) -> Result<(Vec<u8>, Vec<u8>), Refusal> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = conn
            .read(&mut chunk)
            .await
            .map_err(|e| Refusal::bad(format!("rein proxy: could not read the request: {e}")))?;
        if n == 0 {
            return Err(Refusal::bad("rein proxy: the request ended early"));
        }
        buf.extend_from_slice(&chunk[..n]);
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n");
        if end.map_or(buf.len(), |e| e + 4) > MAX_HEAD {
            return Err(Refusal::bad("rein proxy: the request head is too long"));
        }
        if let Some(end) = end {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
    }
}

fn parse(head: &[u8]) -> Result<Request, Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; 100];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(Refusal::bad("rein proxy: not an HTTP request")),
    }
    let (Some(method), Some(path)) = (req.method, req.path) else {
        return Err(Refusal::bad("rein proxy: not an HTTP request"));
    };
    if method.eq_ignore_ascii_case("CONNECT") {
        let target = Target::parse(path, None).map_err(|e| unusable(path, &e))?;
        return Ok(Request {
            target,
            forward: None,
        });
    }
    let Some(after) = path.strip_prefix("http://") else {
        return Err(Refusal::bad(
            "rein proxy: only CONNECT and absolute http:// URLs go through this proxy",
        ));
    };
    let (authority, origin) = match after.find(['/', '?']) {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, "/"),
    };
    let origin = if origin.starts_with('?') {
        format!("/{origin}")
    } else {
        origin.to_string()
    };
    let target = Target::parse(authority, Some(80)).map_err(|e| unusable(authority, &e))?;
    let mut out = format!("{method} {origin} HTTP/1.1\r\nHost: {authority}\r\n").into_bytes();
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "host"
            || name == "connection"
            || name == "keep-alive"
            || name.starts_with("proxy-")
        {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        target,
        forward: Some(out),
    })
}

/// A host that cannot even be named: refused, and noted (a NUL in a name
/// is how allowlists get fooled).
fn unusable(asked: &str, e: &rein_core::HostError) -> Refusal {
    let shown: String = asked
        .chars()
        .take(80)
        .flat_map(char::escape_debug)
        .collect();
    Refusal {
        status: "400 Bad Request",
        line: format!("rein: network: refused \"{shown}\": {e}"),
        noted: true,
    }
}

/// Decide, resolve, check ([`crate::net::check`]) and connect to an
/// address that was checked.
async fn open(shared: &Shared, target: &Target) -> Result<TcpStream, Refusal> {
    let checked = match check(&shared.policy, target, shared.resolver.as_ref()).await {
        Ok(c) => c,
        Err(refused @ Refused::Unresolved(_)) => {
            return Err(unreachable(format!(
                "rein proxy: {}",
                refused.line(target, "network")
            )));
        }
        Err(refused) => {
            return Err(blocked(format!(
                "rein: network: {}",
                refused.line(target, "network")
            )));
        }
    };
    let mut last = None;
    for addr in checked.addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = Some(e.to_string()),
            Err(_) => last = Some("timed out".into()),
        }
    }
    Err(unreachable(format!(
        "rein proxy: could not connect to {target}: {}",
        last.unwrap_or_else(|| "no address".into())
    )))
}

fn blocked(line: String) -> Refusal {
    Refusal {
        status: "403 Forbidden",
        line,
        noted: true,
    }
}

fn unreachable(line: String) -> Refusal {
    Refusal {
        status: "502 Bad Gateway",
        line,
        noted: false,
    }
}

async fn relay(mut conn: UnixStream, mut upstream: TcpStream, request: Request, rest: Vec<u8>) {
    let ready = match &request.forward {
        None => {
            conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
        }
        Some(head) => upstream.write_all(head).await,
    };
    if ready.is_err() || upstream.write_all(&rest).await.is_err() {
        return;
    }
    let _ = copy_both(&mut conn, &mut upstream).await;
}

async fn copy_both(
    a: &mut (impl AsyncRead + AsyncWrite + Unpin),
    b: &mut (impl AsyncRead + AsyncWrite + Unpin),
) -> io::Result<()> {
    tokio::io::copy_bidirectional(a, b).await.map(|_| ())
}

#[cfg(test)]
#[path = "netproxy_tests.rs"]
mod tests;
