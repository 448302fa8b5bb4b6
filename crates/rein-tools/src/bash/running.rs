//! A started command until it is over: its output read into bounded
//! memory, its end waited for, and a timeout, a cancel or background
//! processes holding the output stopping it.
//!
//! 1. [`Started`]: a child of rein's own (stopped by killing its process
//!    group) or a command in the session's running sandbox (stopped
//!    through the sandbox's supervisor, which kills all it started).
//! 2. [`run`]: read both pipes, wait for the exit, stop on the deadline or
//!    a cancel; then the work left after it ([`super::after_notes`]) and
//!    the observation.

use std::collections::BTreeSet;
use std::process::ExitStatus;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rein_core::{CancellationToken, ToolError, ToolOutput};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{
    Captured, DRAIN_AFTER_KILL, EXIT_GRACE, Ending, HEAD_BYTES, TAIL_BYTES, after_notes,
    observation, observe,
};
use crate::sandbox::{self, server};

/// A pipe of the command's output.
type Reader = Box<dyn AsyncRead + Unpin + Send>;

/// What a served command's wait gives: its status and the notes about
/// limits it ran into.
type ServedEnd = (std::io::Result<ExitStatus>, Vec<String>);

/// The process behind a started command.
enum Proc {
    Local(Child),
    Served {
        wait: Option<JoinHandle<ServedEnd>>,
        notes: Vec<String>,
    },
}

impl Proc {
    /// Wait for the end (cancel-safe: it can be called again).
    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Proc::Local(child) => child.wait().await,
            Proc::Served { wait, notes } => {
                let Some(handle) = wait.as_mut() else {
                    return Err(std::io::Error::other("already waited for"));
                };
                let joined = handle.await;
                *wait = None;
                match joined {
                    Ok((status, lines)) => {
                        *notes = lines;
                        status
                    }
                    Err(e) => Err(std::io::Error::other(e)),
                }
            }
        }
    }

    fn take_notes(&mut self) -> Vec<String> {
        match self {
            Proc::Local(_) => Vec::new(),
            Proc::Served { notes, .. } => std::mem::take(notes),
        }
    }
}

/// A command that runs: its process, what stops it, its pipes, and the
/// work left for when it is over.
pub(super) struct Started {
    proc: Proc,
    guard: GroupGuard,
    out: Option<Reader>,
    err: Option<Reader>,
    after: sandbox::After,
}

impl Started {
    /// Spawn a prepared process.
    pub(super) fn spawn(prepared: sandbox::Prepared) -> Result<Started, ToolError> {
        let sandbox::Prepared { mut cmd, after } = prepared;
        let mut child = cmd
            .spawn()
            .map_err(|e| ToolError::new(format!("could not start bash: {e}")))?;
        // The descriptors the child needed to join its cgroup are no longer
        // needed by this side; `after` keeps the cgroup itself.
        drop(cmd);
        let guard = GroupGuard::new(child.id().and_then(|id| i32::try_from(id).ok()), None);
        let out = child.stdout.take().map(|p| Box::new(p) as Reader);
        let err = child.stderr.take().map(|p| Box::new(p) as Reader);
        Ok(Started {
            proc: Proc::Local(child),
            guard,
            out,
            err,
            after,
        })
    }

    /// A command the running sandbox started.
    pub(super) fn served(served: sandbox::Served) -> Result<Started, ToolError> {
        use tokio::net::unix::pipe::Receiver;
        let sandbox::Served {
            running,
            output,
            after,
        } = served;
        let guard = GroupGuard::new(None, Some(running.killer()));
        let wait = tokio::task::spawn_blocking(move || running.wait());
        let pipe = |fd| {
            Receiver::from_owned_fd(fd)
                .map(|r| Box::new(r) as Reader)
                .map_err(|e| ToolError::new(format!("could not read the command's output: {e}")))
        };
        Ok(Started {
            proc: Proc::Served {
                wait: Some(wait),
                notes: Vec::new(),
            },
            guard,
            out: Some(pipe(output.stdout)?),
            err: Some(pipe(output.stderr)?),
            after,
        })
    }
}

/// Process groups of the commands running right now, so that a process
/// about to exit abruptly can take them down with it.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn running() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: killpg only asks the kernel to signal a process group; no
        // memory is shared. `pgid` is a group created for our child with
        // process_group(0) (its id is the child's pid, > 1, so this can never
        // signal our own group or every process).
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Kill every command still running. For a process that is about to exit
/// without unwinding (a second Ctrl-C), where drop guards never run.
pub fn kill_running_commands() {
    for pgid in std::mem::take(&mut *running()) {
        kill_group(pgid);
    }
}

/// Kills the command (its process group, or through the running sandbox)
/// when dropped, unless disarmed.
pub(super) struct GroupGuard {
    pgid: Option<i32>,
    served: Option<server::Killer>,
}

impl GroupGuard {
    pub(super) fn new(pgid: Option<i32>, served: Option<server::Killer>) -> Self {
        if let Some(p) = pgid {
            running().insert(p);
        }
        GroupGuard { pgid, served }
    }

    pub(super) fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
        if let Some(k) = &self.served {
            k.kill();
        }
    }

    pub(super) fn disarm(&mut self) {
        if let Some(p) = self.pgid.take() {
            running().remove(&p);
        }
        self.served = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
        self.disarm();
    }
}

/// Why the command stopped before it exited on its own with closed pipes.
enum Stop {
    /// It exited, but background processes kept the output open.
    Lingering,
    TimedOut,
    Cancelled,
}

pub(super) async fn run(
    started: Started,
    deadline: Instant,
    limit: Duration,
    cancel: CancellationToken,
    events: Option<rein_core::GateEvents>,
) -> Result<ToolOutput, ToolError> {
    let Started {
        proc: mut child,
        mut guard,
        out,
        err,
        after,
    } = started;
    let mut pipes = Pipes {
        out,
        err,
        captured: Captured::new(HEAD_BYTES, TAIL_BYTES),
    };
    let mut status: Option<ExitStatus> = None;
    let mut linger_until: Option<Instant> = None;
    let mut out_buf = vec![0u8; 8192];
    let mut err_buf = vec![0u8; 8192];

    let stop = loop {
        if status.is_some() && pipes.closed() {
            break None;
        }
        tokio::select! {
            r = read_some(&mut pipes.out, &mut out_buf), if pipes.out.is_some() => match r {
                Ok(n) if n > 0 => pipes.captured.push(&out_buf[..n]),
                _ => pipes.out = None,
            },
            r = read_some(&mut pipes.err, &mut err_buf), if pipes.err.is_some() => match r {
                Ok(n) if n > 0 => pipes.captured.push(&err_buf[..n]),
                _ => pipes.err = None,
            },
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => {
                    status = Some(s);
                    linger_until = Some(Instant::now() + EXIT_GRACE);
                }
                Err(e) => {
                    guard.kill();
                    after_notes(after, None, String::new()).await;
                    return Err(ToolError::new(format!("lost track of the command: {e}")));
                }
            },
            _ = sleep_until_some(linger_until), if linger_until.is_some() => break Some(Stop::Lingering),
            _ = tokio::time::sleep_until(deadline) => break Some(Stop::TimedOut),
            _ = cancel.cancelled() => break Some(Stop::Cancelled),
        }
    };

    let (ending, stop_note) = match stop {
        None => {
            guard.disarm();
            (Ending::Exited(status), None)
        }
        Some(Stop::Lingering) => {
            guard.kill();
            guard.disarm();
            pipes.drain(Instant::now() + DRAIN_AFTER_KILL).await;
            let note = "[background processes still holding the output were stopped]";
            (Ending::Exited(status), Some(note.to_string()))
        }
        Some(why) => {
            guard.kill();
            reap(&mut child).await;
            guard.disarm();
            pipes.drain(Instant::now() + DRAIN_AFTER_KILL).await;
            let ending = match why {
                Stop::Cancelled => Ending::Cancelled,
                _ => Ending::TimedOut(limit),
            };
            let note = ending.note();
            (ending, note)
        }
    };
    let text = observe::body(pipes.captured);
    // A host the network proxy refused is a notice too: a long output's
    // preview would not show the note at its end.
    if let Some(events) = &events {
        for line in after.network_blocked() {
            events(rein_core::Event::Notice { message: line });
        }
    }
    let mut notes = child.take_notes();
    notes.extend(after_notes(after, status, text.clone()).await);
    Ok(observation(
        text,
        stop_note.into_iter().chain(notes),
        &ending,
    ))
}

/// Wait briefly for a killed child, so it does not linger as a zombie.
async fn reap(child: &mut Proc) {
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}

/// [`reap`] for a child of rein's own.
pub(super) async fn reap_local(child: &mut Child) {
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
}

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn sleep_until_some(when: Option<Instant>) {
    match when {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

struct Pipes {
    out: Option<Reader>,
    err: Option<Reader>,
    captured: Captured,
}

impl Pipes {
    fn closed(&self) -> bool {
        self.out.is_none() && self.err.is_none()
    }

    /// Read what is left until both pipes close or `until`.
    async fn drain(&mut self, until: Instant) {
        let mut out_buf = vec![0u8; 8192];
        let mut err_buf = vec![0u8; 8192];
        while !self.closed() {
            tokio::select! {
                r = read_some(&mut self.out, &mut out_buf), if self.out.is_some() => match r {
                    Ok(n) if n > 0 => self.captured.push(&out_buf[..n]),
                    _ => self.out = None,
                },
                r = read_some(&mut self.err, &mut err_buf), if self.err.is_some() => match r {
                    Ok(n) if n > 0 => self.captured.push(&err_buf[..n]),
                    _ => self.err = None,
                },
                _ = tokio::time::sleep_until(until) => break,
            }
        }
    }
}
