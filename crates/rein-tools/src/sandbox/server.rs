//! A sandbox that is already running: one bubblewrap per session (per
//! policy and mounts) whose process 1 is rein's own supervisor
//! ([`inside`]), running each shell command as a fresh child, instead of
//! one bubblewrap per command (about 15 ms of namespaces and mounts).
//!
//! 1. [`start`] (before a command, on a blocking thread): the command's git
//!    metadata is recorded as for any command, then an idle server whose
//!    [`Key`] matches is taken from the pool, or a new one started: the
//!    workspace's protected paths held ([`super::made`]) for its life, a
//!    cgroup with the policy's limits joined by bubblewrap, bubblewrap
//!    run with the same mounts as a command would get, plus `--as-pid-1`,
//!    executing the front end's executable by descriptor (so it needs no
//!    path inside the sandbox) with [`SERVER_ARG`]; it says `Ready`.
//! 2. The command goes to it with fresh pipes for its output; the caller
//!    reads them and waits with [`Running::wait`], or kills with
//!    [`Killer::kill`].
//! 3. The supervisor answers `Exited` once nothing of the command runs and
//!    `/tmp` is empty again; the server goes back to the pool. A server
//!    that fails in any way is killed (its bubblewrap's process group) and
//!    the next command starts a new one; one that cannot start makes the
//!    command fall back to a bubblewrap of its own.
//!
//! The key holds the bubblewrap arguments and the inode of every path they
//! name: when a bound path is replaced (say `.git/config` rewritten by
//! rename on the host, or a repository made), or the policy changes (plan
//! mode), the next command gets a new server whose mounts are what a
//! bubblewrap of its own would have. Commands whose network is a list of
//! hosts keep a bubblewrap each (their proxy is per command).
//! `REIN_SANDBOX_SERVER=off` turns this off (read once).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rein_core::{NetworkAccess, SandboxMode, SandboxPolicy};

use super::cgroup::{CommandCgroup, Counters};
use super::{made, rlimits};

mod inside;
mod wire;

pub use inside::main;
use wire::{FromServer, Job, ToServer};

/// The first argument that makes a front end's executable the supervisor.
pub const SERVER_ARG: &str = "__rein-sandbox-server";
/// The variable that turns the running sandbox off (`off`, `0`, `false`).
pub const SERVER_ENV: &str = "REIN_SANDBOX_SERVER";
/// Idle servers kept at most (more run only while commands run at once).
const MAX_IDLE: usize = 4;

static EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();
static IDLE: Mutex<Vec<Server>> = Mutex::new(Vec::new());

/// Make `exe` (the front end's own executable, which calls [`main`] when
/// started with [`SERVER_ARG`]) the supervisor of this process's
/// sandboxes. Without one, every command gets a bubblewrap of its own.
pub fn register(exe: PathBuf) {
    let _ = EXECUTABLE.set(exe);
}

/// Whether commands run in a running sandbox here: an executable is
/// registered and [`SERVER_ENV`] does not turn it off.
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let off = std::env::var(SERVER_ENV).unwrap_or_default();
        !matches!(
            off.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "false" | "no"
        )
    }) && EXECUTABLE.get().is_some()
}

/// Whether a command under `policy` may use a running sandbox.
pub(super) fn serves(policy: &SandboxPolicy) -> bool {
    enabled()
        && policy.mode != SandboxMode::Off
        && !matches!(policy.network, NetworkAccess::Hosts(_))
}

/// Stop every idle server (at the end of a run, so their processes are
/// gone, and counted, before the program exits).
pub fn shutdown() {
    let idle = std::mem::take(&mut *IDLE.lock().unwrap_or_else(PoisonError::into_inner));
    drop(idle);
}

/// What a server was started for: its bubblewrap arguments and the inode
/// of each path they name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key(Vec<OsString>, Vec<Option<(u64, u64)>>);

fn key(args: &[OsString]) -> Key {
    let stamps = args
        .iter()
        .filter(|a| a.as_bytes().first() == Some(&b'/'))
        .map(|a| {
            std::fs::symlink_metadata(a)
                .ok()
                .map(|m| (m.dev(), m.ino()))
        })
        .collect();
    Key(args.to_vec(), stamps)
}

/// One running sandbox.
struct Server {
    key: Key,
    sock: UnixStream,
    bwrap: std::process::Child,
    cgroup: Option<CommandCgroup>,
    made: Option<made::Hold>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let pgid = self.bwrap.id() as i32;
        // SAFETY: killpg signals the group made for this bubblewrap
        // (process_group(0): its id is bubblewrap's pid, > 1).
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
        let _ = self.bwrap.wait();
        drop(self.cgroup.take());
        if let Some(made) = self.made.take() {
            made.release();
        }
    }
}

impl Server {
    /// Start one for `args` (a command's bubblewrap arguments without the
    /// command); `None` when it did not come up (`made` is then released).
    fn start(
        args: &[OsString],
        key: Key,
        policy: &SandboxPolicy,
        made: Option<made::Hold>,
    ) -> Option<Server> {
        let cgroup = CommandCgroup::create(&policy.limits);
        let spawned = EXECUTABLE
            .get()
            .zip(super::probe().bwrap.as_ref())
            .and_then(|(exe, bwrap)| spawn(bwrap, exe, args, cgroup.as_ref()));
        let Some((bwrap, sock)) = spawned else {
            if let Some(made) = made {
                made.release();
            }
            return None;
        };
        let server = Server {
            key,
            sock,
            bwrap,
            cgroup,
            made,
        };
        server
            .sock
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .ok()?;
        match wire::recv::<FromServer>(&server.sock) {
            Ok(Some((FromServer::Ready, _))) => {}
            _ => return None,
        }
        server.sock.set_read_timeout(None).ok()?;
        Some(server)
    }
}

/// Run bubblewrap with `args`, executing `exe` (by descriptor) as the
/// supervisor, in `cgroup`; its process and rein's end of the socket.
fn spawn(
    bwrap: &Path,
    exe: &Path,
    args: &[OsString],
    cgroup: Option<&CommandCgroup>,
) -> Option<(std::process::Child, UnixStream)> {
    let exe = std::fs::File::open(exe).ok()?;
    let (ours, theirs) = UnixStream::pair().ok()?;
    let (exe_fd, their_fd) = (exe.as_raw_fd(), theirs.as_raw_fd());
    let mut cmd = std::process::Command::new(bwrap);
    // Not --die-with-parent: the signal would come when the thread that
    // started it ends. The supervisor ends when rein's socket closes.
    cmd.args(args.iter().filter(|a| *a != "--die-with-parent"))
        .arg("--as-pid-1")
        .arg("--")
        .arg(format!("/proc/self/fd/{exe_fd}"))
        .arg(SERVER_ARG)
        .arg(their_fd.to_string())
        .arg(exe_fd.to_string())
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(cg) = cgroup {
        cg.join_in_std_child(&mut cmd);
    }
    // SAFETY: runs in the forked child: fcntl on two descriptors this
    // function keeps open until the spawn returns.
    unsafe {
        cmd.pre_exec(move || {
            for fd in [exe_fd, their_fd] {
                if libc::fcntl(fd, libc::F_SETFD, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().ok()?;
    Some((child, ours))
}

/// A command running in a server.
pub struct Running {
    server: Option<Server>,
    counters: Counters,
    /// The server's socket while this command runs (for [`Killer`]).
    live: Arc<Mutex<Option<UnixStream>>>,
}

/// Kills a [`Running`] command from elsewhere; once the command is over it
/// does nothing (the server may be running the next one).
#[derive(Clone)]
pub struct Killer {
    live: Arc<Mutex<Option<UnixStream>>>,
}

impl Killer {
    /// Kill the command and everything it started (the server stays).
    pub fn kill(&self) {
        if let Some(sock) = &*self.live.lock().unwrap_or_else(PoisonError::into_inner) {
            let _ = wire::send(sock, &ToServer::Kill, &[]);
        }
    }
}

impl Running {
    /// A handle that kills this command.
    pub fn killer(&self) -> Killer {
        Killer {
            live: self.live.clone(),
        }
    }

    /// Wait (blocking) until the command is over and nothing it started
    /// runs; the server then serves the next command. Also the lines about
    /// limits it ran into. An error when the server failed (it is gone).
    pub fn wait(mut self) -> (io::Result<ExitStatus>, Vec<String>) {
        let Some(server) = self.server.take() else {
            return (Err(io::Error::other("no sandbox")), Vec::new());
        };
        let reply = wire::recv::<FromServer>(&server.sock);
        let retired = matches!(reply, Ok(Some((FromServer::Retired(_), _))));
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match reply {
            Ok(Some((FromServer::Exited(status) | FromServer::Retired(status), _))) => {
                let notes = server
                    .cgroup
                    .as_ref()
                    .map(|cg| cg.report_since(self.counters))
                    .unwrap_or_default();
                let mut idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
                if !retired && idle.len() < MAX_IDLE {
                    idle.push(server);
                }
                (Ok(ExitStatus::from_raw(status)), notes)
            }
            Ok(Some((FromServer::Failed(why), _))) => (Err(io::Error::other(why)), Vec::new()),
            _ => (
                Err(io::Error::other(
                    "the sandbox stopped while the command ran (its processes are gone)",
                )),
                Vec::new(),
            ),
        }
    }
}

/// Output pipes of a started command, to read on this side.
pub struct Output {
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// The job that runs `script` in `workspace` with `env` and `limits`.
pub(super) fn job(
    workspace: &Path,
    script: &str,
    env: Vec<(OsString, OsString)>,
    limits: rlimits::Plan,
) -> Job {
    Job {
        script: script.to_string(),
        cwd: workspace.as_os_str().as_bytes().to_vec(),
        env: env
            .into_iter()
            .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect(),
        limits,
    }
}

/// Start `job` in a running sandbox for `args` (the command's bubblewrap
/// arguments, without its `-- bash -c SCRIPT` tail); `hold` is the
/// workspace's protected paths, taken before `args` were computed (kept
/// by a new server, released when an idle one serves). `None` when no
/// server could serve it (the caller runs its own bubblewrap).
pub(super) fn start(
    args: &[OsString],
    policy: &SandboxPolicy,
    hold: Option<made::Hold>,
    job: Job,
) -> Option<(Running, Output)> {
    let key = key(args);
    let idle = {
        let mut idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
        let at = idle.iter().position(|s| s.key == key);
        at.map(|i| idle.swap_remove(i))
    };
    let server = match idle {
        Some(s) => {
            if let Some(h) = hold {
                h.release();
            }
            s
        }
        None => Server::start(args, key, policy, hold)?,
    };
    let (out_r, out_w) = std::io::pipe().ok()?;
    let (err_r, err_w) = std::io::pipe().ok()?;
    let counters = server
        .cgroup
        .as_ref()
        .map(|cg| cg.counters())
        .unwrap_or_default();
    let fds = [out_w.as_raw_fd(), err_w.as_raw_fd()];
    wire::send(&server.sock, &ToServer::Run(job), &fds).ok()?;
    drop((out_w, err_w));
    match wire::recv::<FromServer>(&server.sock) {
        Ok(Some((FromServer::Started, _))) => {}
        _ => return None,
    }
    let live = Arc::new(Mutex::new(server.sock.try_clone().ok()));
    Some((
        Running {
            server: Some(server),
            counters,
            live,
        },
        Output {
            stdout: out_r.into(),
            stderr: err_r.into(),
        },
    ))
}
