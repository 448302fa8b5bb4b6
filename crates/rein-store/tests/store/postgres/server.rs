//! A real PostgreSQL for the tests: `REIN_TEST_POSTGRES_URL` when set,
//! else a throwaway cluster this test binary starts once and shares.
//!
//! The cluster lives in a temporary directory and listens only on a Unix
//! socket there. The server runs as the `postgres` user when the tests run
//! as root (PostgreSQL refuses root), started through `setpriv` with a
//! parent-death signal. At exit an `atexit` handler shuts the server down
//! (SIGQUIT: immediate shutdown, which also ends its backends), waits for
//! it and deletes the cluster; should the test process die without running
//! it (SIGKILL), the parent-death signal still stops the server, since it
//! is tied to a thread that lives as long as the process, and the next run
//! deletes the cluster it left.
//!
//! Each test gets a database of its own, so tests running in parallel never
//! see each other's rows.
//!
//! The cluster runs with fsync, synchronous commit and full-page writes off
//! (throwaway data: durability only slows the tests down), unless its first
//! user asks for PostgreSQL's durable defaults (`fresh_db_with`), as the
//! `serve_load` benchmark does to compare stores at the same durability.
//!
//! No server binaries is a skip (through rein-test-support, so a failure
//! under `REIN_REQUIRE_ALL=1`); binaries found but a server that does not
//! start (initdb, setpriv, chown, readiness) is a failure, with its log.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// The port number in the socket's name (nothing listens on TCP).
const PORT: u16 = 5432;
/// The superuser the throwaway cluster is created with.
const SUPERUSER: &str = "rein";
/// Temp directories of clusters are named `<prefix><pid>-...`.
const DIR_PREFIX: &str = "rein-pg-test-";

/// What the throwaway cluster promises about a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// PostgreSQL's defaults: fsync, synchronous commit and full-page
    /// writes on; a commit has reached the disk when it returns. Asked
    /// for by the serve_load benchmark, not by these tests.
    #[allow(dead_code)]
    Durable,
    /// fsync, synchronous commit and full-page writes off: the tests'
    /// setting, fast, and a crash of the machine may lose or break data.
    Fast,
}

/// How to reach a server that tests may create databases on.
#[derive(Debug)]
struct Server {
    /// A connection string to the server's own database.
    url: String,
    /// The cluster's durability; `None` for `REIN_TEST_POSTGRES_URL` (its
    /// own settings, not checked).
    durability: Option<Durability>,
}

impl Server {
    /// The connection string with the database `db` instead.
    fn url_for(&self, db: &str) -> String {
        with_dbname(&self.url, db)
    }
}

/// `url` (either form) naming the database `db`.
pub fn with_dbname(url: &str, db: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let after = scheme_end + 3;
        let path = url[after..].find('/').map(|i| after + i);
        let query = url[after..].find('?').map(|i| after + i);
        let tail = query.map_or("", |q| &url[q..]);
        let head = match (path, query) {
            (Some(p), Some(q)) if p < q => &url[..p],
            (Some(p), None) => &url[..p],
            _ => query.map_or(url, |q| &url[..q]),
        };
        return format!("{head}/{db}{tail}");
    }
    let mut kept: Vec<&str> = url
        .split_whitespace()
        .filter(|kv| !kv.starts_with("dbname="))
        .collect();
    let dbname = format!("dbname={db}");
    kept.push(&dbname);
    kept.join(" ")
}

/// Why there is no server.
#[derive(Debug, Clone)]
pub enum NoServer {
    /// No PostgreSQL server binaries on this machine: a skip.
    Missing(String),
    /// Found, but it did not start (or a database could not be made): a
    /// failure, with what the server said.
    Failed(String),
}

static SERVER: OnceLock<Result<Server, NoServer>> = OnceLock::new();
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// A fresh, empty database for the test `name`, as a connection string;
/// `Err` says why there is no PostgreSQL.
pub async fn fresh_db(name: &str) -> Result<String, NoServer> {
    fresh_db_with(name, Durability::Fast).await
}

/// `fresh_db` on a cluster of the given durability. The process's first
/// call starts the cluster; a later call asking for another durability is
/// an error (one cluster a process).
pub async fn fresh_db_with(name: &str, durability: Durability) -> Result<String, NoServer> {
    let server = SERVER
        .get_or_init(|| start(durability))
        .as_ref()
        .map_err(Clone::clone)?;
    if server.durability.is_some_and(|d| d != durability) {
        return Err(NoServer::Failed(format!(
            "the test cluster already runs {:?}, not {durability:?}",
            server.durability
        )));
    }
    let db = format!(
        "t{}_{}_{}",
        std::process::id(),
        NEXT_DB.fetch_add(1, Ordering::Relaxed),
        name.chars()
            .filter(char::is_ascii_alphanumeric)
            .take(30)
            .collect::<String>()
    )
    .to_lowercase();
    let admin = server.url.clone();
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .map_err(|e| {
            NoServer::Failed(format!("cannot connect to the test server ({admin}): {e}"))
        })?;
    let io = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE \"{db}\""))
        .await
        .map_err(|e| NoServer::Failed(format!("cannot create a test database: {e:?}")))?;
    drop(client);
    let _ = io.await;
    Ok(server.url_for(&db))
}

/// The URL for the test `name`; `None` (a recorded skip) without server
/// binaries; a panic with the server's log when one was found but failed.
pub async fn db_or_skip(name: &str) -> Option<String> {
    match fresh_db(name).await {
        Ok(url) => Some(url),
        Err(NoServer::Missing(reason)) => {
            rein_test_support::skip(rein_test_support::Component::Postgres, reason);
            None
        }
        Err(NoServer::Failed(reason)) => panic!("{name}: PostgreSQL failed: {reason}"),
    }
}

/// A raw client on the database `url`, as another program would have.
pub async fn raw(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("raw connection to {url}: {e:?}"));
    tokio::spawn(connection);
    client
}

fn start(durability: Durability) -> Result<Server, NoServer> {
    if let Ok(url) = std::env::var("REIN_TEST_POSTGRES_URL") {
        return Ok(Server {
            url,
            durability: None,
        });
    }
    let bin = find_bin_dir().ok_or_else(|| {
        NoServer::Missing("no PostgreSQL server binaries (initdb, postgres) found".into())
    })?;
    start_socket_cluster(&bin, durability).map_err(NoServer::Failed)
}

/// What a throwaway cluster listens on besides its Unix socket.
pub enum Listen {
    /// The socket only.
    Socket,
    /// Also TCP on 127.0.0.1:`port`, TLS on (`cert` and `key`, PEM files
    /// in the cluster's folder), plain connections over TCP refused.
    Tls {
        port: u16,
        cert: String,
        key: String,
    },
}

/// A throwaway cluster from the binaries in `bin`, started and ready;
/// `setup` writes files into its folder (owned by the server) first.
pub fn start_cluster(
    bin: &Path,
    durability: Durability,
    setup: impl FnOnce(&Path) -> Result<Listen, String>,
) -> Result<String, String> {
    remove_stale_clusters();
    let dir = tempfile::Builder::new()
        .prefix(&format!("{DIR_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(|e| format!("creating a temp dir: {e}"))?
        // Kept for the life of the process: the server runs in it.
        .keep();
    let listen = setup(&dir)?;
    let as_postgres = is_root();
    if as_postgres {
        run(Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir))?;
    }
    let data = dir.join("data");
    let mut initdb = server_command(as_postgres, &bin.join("initdb"));
    initdb.arg("-D").arg(&data).args([
        "-U",
        SUPERUSER,
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
    ]);
    run(&mut initdb)?;
    if let Listen::Tls { .. } = listen {
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\n\
             hostssl all all 127.0.0.1/32 trust\n\
             hostnossl all all 127.0.0.1/32 reject\n",
        )
        .map_err(|e| format!("writing pg_hba.conf: {e}"))?;
    }
    let pid = spawn_postmaster(as_postgres, bin, &dir, &data, &listen, durability)?;
    stop_at_exit(pid, dir.clone());
    wait_ready(pid, &data, &dir)?;
    Ok(format!(
        "host={} port={PORT} user={SUPERUSER} dbname=postgres",
        dir.display()
    ))
}

/// A cluster on the socket only, for most tests.
fn start_socket_cluster(bin: &Path, durability: Durability) -> Result<Server, String> {
    let url = start_cluster(bin, durability, |_| Ok(Listen::Socket))?;
    Ok(Server {
        url,
        durability: Some(durability),
    })
}

/// `url` (either form) with the parameter `key=value` added.
pub fn with_param(url: &str, key: &str, value: &str) -> String {
    if url.contains("://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}{key}={value}")
    } else {
        format!("{url} {key}={value}")
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// `initdb` and `postgres` on PATH, else the newest Debian install.
pub fn find_bin_dir() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|d| has_both(d)));
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_both(bin))
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// A command run as `postgres` when we are root, with `pdeathsig` (if
/// any) set on the program itself: setpriv execs it without forking.
fn server_command_with(as_postgres: bool, program: &Path, pdeathsig: Option<&str>) -> Command {
    let mut cmd = Command::new("setpriv");
    if as_postgres {
        cmd.args(["--reuid=postgres", "--regid=postgres", "--init-groups"]);
    }
    if let Some(signal) = pdeathsig {
        cmd.arg(format!("--pdeathsig={signal}"));
    }
    cmd.arg("--").arg(program);
    cmd
}

fn server_command(as_postgres: bool, program: &Path) -> Command {
    server_command_with(as_postgres, program, None)
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running {cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Start the server from a thread that never ends: a parent-death signal
/// fires when the spawning *thread* exits, and test threads come and go.
fn spawn_postmaster(
    as_postgres: bool,
    bin: &Path,
    dir: &Path,
    data: &Path,
    listen: &Listen,
    durability: Durability,
) -> Result<u32, String> {
    let mut cmd = server_command_with(as_postgres, &bin.join("postgres"), Some("QUIT"));
    cmd.arg("-D").arg(data).arg("-k").arg(dir);
    match listen {
        Listen::Socket => cmd
            .args(["-p", &PORT.to_string()])
            .args(["-c", "listen_addresses="]),
        Listen::Tls { port, cert, key } => cmd
            .args(["-p", &port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "ssl=on"])
            .args(["-c", &format!("ssl_cert_file={cert}")])
            .args(["-c", &format!("ssl_key_file={key}")]),
    };
    cmd.args(["-c", "max_connections=300"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("server.log")).map_err(|e| e.to_string())?);
    if durability == Durability::Fast {
        cmd.args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off"]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("postgres-parent".into())
        .spawn(move || {
            let spawned = cmd.spawn().map_err(|e| format!("starting postgres: {e}"));
            let ok = spawned.is_ok();
            // The child is reaped by the exit handler (waitpid), not here.
            let _ = tx.send(spawned.map(|child| child.id()));
            if ok {
                loop {
                    std::thread::park();
                }
            }
        })
        .map_err(|e| e.to_string())?;
    rx.recv().map_err(|e| e.to_string())?
}

/// Wait until the server says it accepts connections: the eighth line of
/// `postmaster.pid` reads `ready` from then on.
fn wait_ready(pid: u32, data: &Path, dir: &Path) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let log = || std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
    loop {
        // A server that exited (a zombie until the exit handler reaps it)
        // will never be ready.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| rest.starts_with('Z'))
        {
            return Err(format!("postgres exited: {}", log()));
        }
        let status = std::fs::read_to_string(data.join("postmaster.pid")).unwrap_or_default();
        if status.lines().nth(7).is_some_and(|l| l.trim() == "ready") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("postgres did not become ready in 30 s: {}", log()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Delete the cluster directories of earlier runs whose process is gone.
fn remove_stale_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !pid.is_empty() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The servers to stop and the directories to delete when the process
/// exits.
static AT_EXIT: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());

fn stop_at_exit(pid: u32, dir: PathBuf) {
    let mut servers = AT_EXIT.lock().unwrap_or_else(PoisonError::into_inner);
    if servers.is_empty() {
        // SAFETY: registers a plain `extern "C"` function with no arguments.
        unsafe {
            libc::atexit(stop_servers);
        }
    }
    servers.push((pid, dir));
}

/// Immediate shutdown of every server, then their directories are deleted.
extern "C" fn stop_servers() {
    let servers = std::mem::take(&mut *AT_EXIT.lock().unwrap_or_else(PoisonError::into_inner));
    for (pid, dir) in servers {
        stop_server(pid, &dir);
    }
}

fn stop_server(pid: u32, dir: &Path) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: signals and reaps our own child process by its pid.
    unsafe {
        libc::kill(pid, libc::SIGQUIT);
        let deadline = Instant::now() + Duration::from_secs(10);
        while libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) == 0 {
            if Instant::now() > deadline {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}
