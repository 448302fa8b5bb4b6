//! `rein sandbox-run --spec FILE --sha256 HEX` (hidden): run one command
//! in rein's sandbox with its output on this process's stdout and stderr.
//!
//! `rein acp` starts it through the editor's terminal (`terminal/create`),
//! so the editor shows the command live while the sandbox stays rein's:
//! the editor spawns this process with its own environment (its API keys
//! included), and this process throws all of that away first. Step by
//! step:
//!
//! 1. the spec ([`spec`]) is checked, read and deleted; a bad one is one
//!    line on stderr and exit code 2;
//! 2. the environment becomes the spec's, all of it, before anything else
//!    runs (no thread exists yet);
//! 3. a child process of this one supervises the command, and is told
//!    when this one dies, however it dies (an editor's `terminal/kill` may
//!    be a SIGKILL, which nothing can catch): this process only waits for
//!    it and passes its exit code on;
//! 4. [`rein_tools::sandbox::prepare`] makes the command as the bash tool
//!    makes it (Landlock, rlimits, cgroup, bubblewrap), its environment
//!    exactly the spec's, its stdin the null device;
//! 5. it runs until it exits or its timeout (then its process group is
//!    killed), or until the supervisor is told to stop (the same);
//! 6. the notes of [`rein_tools::sandbox::After::finish`] and the timeout's
//!    line go to stderr, where the model reads them in the terminal's
//!    output; the exit code is the command's (128 + the signal when a
//!    signal killed it, 124 on timeout, 125 when it could not run).

mod spec;

use std::time::Duration;

use rein_tools::bash::{self, Ending};
use rein_tools::sandbox;

use crate::cli::SandboxRunArgs;
use crate::exit;
pub use spec::{Spec, Written};

/// The exit code of a command stopped at its timeout (as `timeout(1)`).
pub const TIMED_OUT: i32 = 124;
/// The exit code when the command could not be run at all.
pub const NOT_RUN: i32 = 125;

/// Run the command of `args.spec`; the process's exit code. Called before
/// any runtime or thread exists: the environment is replaced here.
pub fn main(args: &SandboxRunArgs) -> i32 {
    // 1. The spec: rein's, private, read once.
    let spec = match Spec::take(&args.spec, &args.sha256) {
        Ok(spec) => spec,
        Err(e) => {
            crate::output::err(&format!("rein: sandbox-run: {e}"));
            return exit::USAGE;
        }
    };
    // 2. Nothing of the editor's environment is left.
    replace_environment(&spec);
    // 3. A supervisor that outlives no kill of this process.
    match fork_supervisor() {
        Ok(Some(code)) => return code,
        Ok(None) => {}
        Err(e) => {
            crate::output::err(&format!("rein: sandbox-run: cannot start: {e}"));
            return NOT_RUN;
        }
    }
    // 4. In the supervisor: a runtime of its own, on this one thread.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::output::err(&format!("rein: sandbox-run: cannot start a runtime: {e}"));
            return NOT_RUN;
        }
    };
    runtime.block_on(run(spec))
}

/// Make this process's environment the spec's: every variable removed,
/// then the spec's set (and rein's runtime folder, for the sandbox's
/// setup only).
fn replace_environment(spec: &Spec) {
    let names: Vec<_> = std::env::vars_os().map(|(name, _)| name).collect();
    for name in names {
        // SAFETY: this process has one thread yet (no runtime, nothing
        // spawned), so nothing reads the environment while it changes.
        unsafe { std::env::remove_var(name) };
    }
    for (name, value) in &spec.env {
        // SAFETY: as above; the spec checked every name and value.
        unsafe { std::env::set_var(name, value) };
    }
    if let Some(dir) = &spec.runtime_dir {
        // SAFETY: as above.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir) };
    }
}

/// Fork a supervisor: the child goes on (`None`) and gets SIGTERM when
/// this process dies; this process waits for it and returns its exit code.
fn fork_supervisor() -> std::io::Result<Option<i32>> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: this process has one thread (no runtime, nothing spawned),
    // so the child may go on running any code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(Some(wait_for(pid)));
    }
    // SAFETY: prctl only sets a flag of this process; the flag survives,
    // as this process never calls exec.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    // The parent may have died before the flag was set.
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        std::process::exit(NOT_RUN);
    }
    Ok(None)
}

/// The exit code of child `pid` (128 + the signal that killed it).
fn wait_for(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child, writing its status into `status`.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return NOT_RUN;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        NOT_RUN
    }
}

/// Prepare, run and report the command; its exit code.
async fn run(spec: Spec) -> i32 {
    let limit = Duration::from_secs(spec.timeout_secs.clamp(1, bash::MAX_TIMEOUT_SECS));
    // 1. The command, exactly as the bash tool prepares it.
    let prepared = {
        let Spec {
            sandbox: kind,
            policy,
            workspace,
            script,
            ..
        } = &spec;
        sandbox::prepare(*kind, policy, workspace, script, limit)
    };
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(e) => {
            crate::output::err(&format!("[the command could not be run: {e}]"));
            return NOT_RUN;
        }
    };
    // 2. Its environment is the spec's, not one recomputed here.
    prepared.cmd.env_clear().envs(spec.env.iter().cloned());
    // 3. Run it; a signal (watched before it starts) stops it: its group
    // is killed and its aftermath done when the run is dropped.
    let mut signals = Signals::watch();
    let attached = tokio::select! {
        attached = bash::run_attached(prepared, limit) => attached,
        signal = signals.first() => return 128 + signal,
    };
    // 4. What the model should know, then the command's own exit code.
    match attached {
        Ok(attached) => {
            for note in &attached.notes {
                crate::output::err(note);
            }
            exit_code(&attached.ending)
        }
        Err(e) => {
            crate::output::err(&format!("[{e}]"));
            NOT_RUN
        }
    }
}

/// The exit code for how the command ended (a line on stderr when a
/// signal killed it).
fn exit_code(ending: &Ending) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match ending {
        Ending::Exited(Some(status)) => match (status.code(), status.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => {
                crate::output::err(&format!("[killed by signal {signal}]"));
                128 + signal
            }
            (None, None) => NOT_RUN,
        },
        Ending::Exited(None) => NOT_RUN,
        Ending::TimedOut(_) => TIMED_OUT,
        Ending::Cancelled => exit::CANCELLED,
    }
}

/// The stop signals watched: SIGTERM, SIGINT and SIGHUP.
struct Signals(Vec<(tokio::signal::unix::Signal, i32)>);

impl Signals {
    /// Start watching (those that cannot be watched are left out).
    fn watch() -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            (SignalKind::terminate(), libc::SIGTERM),
            (SignalKind::interrupt(), libc::SIGINT),
            (SignalKind::hangup(), libc::SIGHUP),
        ];
        Signals(
            kinds
                .into_iter()
                .filter_map(|(kind, number)| signal(kind).ok().map(|s| (s, number)))
                .collect(),
        )
    }

    /// The number of the first that arrives (never, when none is watched).
    async fn first(&mut self) -> i32 {
        if self.0.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.0.iter_mut().map(|(s, number)| {
            let number = *number;
            Box::pin(async move {
                s.recv().await;
                number
            })
        });
        futures_util::future::select_all(waits).await.0
    }
}
