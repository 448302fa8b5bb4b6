//! Per-process limits set in the child before `exec` (inherited by
//! bubblewrap's sandbox and everything the command starts), and the words
//! for a command that ran into one.

use std::io;

use rein_core::CommandLimits;
use rein_core::human_bytes;
use tokio::process::Command;

/// The rlimits of one command, computed before the fork.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct Plan {
    address_space: u64,
    file_size: u64,
    cpu_secs: u64,
    nproc: Option<u64>,
}

/// Set `RLIMIT_AS`, `RLIMIT_FSIZE`, `RLIMIT_CPU` (soft at `cpu_secs`, the
/// command's timeout times the cores: never reached by a process the
/// timeout kills, it stops one that escaped the kill; hard a little later)
/// and `RLIMIT_CORE` 0 in `cmd`'s child. A zero limit
/// leaves that one unlimited.
///
/// `nproc_fallback`: when no cgroup caps the processes and rein does not
/// run as root (root is exempt from `RLIMIT_NPROC`), the user's processes
/// are capped at what they are now plus the command's allowance, since the
/// kernel counts every thread of the user, not of the command.
pub fn apply(cmd: &mut Command, limits: &CommandLimits, cpu_secs: u64, nproc_fallback: bool) {
    let plan = plan(limits, cpu_secs, nproc_fallback);
    // SAFETY: runs in the forked child: only setrlimit system calls on
    // values computed before the fork.
    unsafe {
        cmd.pre_exec(move || plan.set_all());
    }
}

/// The limits [`apply`] sets, computed here (before any fork), for a
/// child made elsewhere (the sandbox's supervisor, see [`super::server`]).
pub(crate) fn plan(limits: &CommandLimits, cpu_secs: u64, nproc_fallback: bool) -> Plan {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let nproc = (nproc_fallback && !root && limits.processes > 0)
        .then(user_tasks)
        .flatten()
        .map(|n| n.saturating_add(limits.processes));
    Plan {
        address_space: limits.address_space,
        file_size: limits.file_size,
        cpu_secs,
        nproc,
    }
}

impl Plan {
    /// Lower the calling process's limits to the plan: only setrlimit
    /// system calls, so it may run in a forked child.
    pub(crate) fn set_all(&self) -> io::Result<()> {
        set(libc::RLIMIT_CORE, 0, 0)?;
        if self.address_space > 0 {
            set(libc::RLIMIT_AS, self.address_space, self.address_space)?;
        }
        if self.file_size > 0 {
            set(libc::RLIMIT_FSIZE, self.file_size, self.file_size)?;
        }
        if self.cpu_secs > 0 {
            set(
                libc::RLIMIT_CPU,
                self.cpu_secs,
                self.cpu_secs.saturating_add(5),
            )?;
        }
        if let Some(n) = self.nproc {
            set(libc::RLIMIT_NPROC, n, n)?;
        }
        Ok(())
    }
}

/// Threads of every process whose real user is ours, from `/proc`.
fn user_tasks() -> Option<u64> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() }.to_string();
    let mut total = 0u64;
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        if !e
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next().map(str::to_string))
        };
        if field("Uid:").as_deref() == Some(uid.as_str()) {
            total += field("Threads:").and_then(|t| t.parse().ok()).unwrap_or(1);
        }
    }
    Some(total)
}

/// Lower one limit of the calling process (never raise: a host limit below
/// ours stays).
fn set(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> io::Result<()> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct given.
    unsafe {
        if libc::getrlimit(resource, &mut old) != 0 {
            return Err(io::Error::last_os_error());
        }
        let hard = hard.min(old.rlim_max);
        let new = libc::rlimit {
            rlim_cur: soft.min(hard),
            rlim_max: hard,
        };
        if libc::setrlimit(resource, &new) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What a finished command said about itself, for [`explain`].
pub struct Ending<'a> {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// What it printed.
    pub output: &'a str,
}

/// The line explaining a command that ran into the file size or CPU time
/// limit, `None` otherwise. Recognised: a kill by `SIGXFSZ`/`SIGXCPU`; bash
/// reporting one of its children killed so (exit 128 + the signal, with
/// its "File size limit exceeded" / "CPU time limit exceeded" line, passed
/// on by bubblewrap); a program that ignores `SIGXFSZ` (Python does) and
/// reports the write error "File too large".
pub fn explain(end: &Ending<'_>, limits: &CommandLimits, cpu_secs: u64) -> Option<String> {
    let by = |sig: i32, said: &str| {
        end.signal == Some(sig) || (end.code == Some(128 + sig) && end.output.contains(said))
    };
    let fsize = limits.file_size > 0
        && (by(libc::SIGXFSZ, "File size limit exceeded") || end.output.contains("File too large"));
    if fsize {
        Some(format!(
            "[file size limit ({}) reached: a process was stopped for writing a larger file]",
            human_bytes(limits.file_size)
        ))
    } else if by(libc::SIGXCPU, "CPU time limit exceeded") {
        Some(format!(
            "[CPU time limit ({cpu_secs} s) reached: a process was stopped]"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_endings_are_named_and_others_are_not() {
        let l = CommandLimits::default();
        let end = |code, signal, output| Ending {
            code,
            signal,
            output,
        };
        let bash = end(Some(128 + libc::SIGXFSZ), None, "File size limit exceeded");
        let fsize = explain(&bash, &l, 10).unwrap_or_default();
        assert!(fsize.contains("file size limit (1 GiB)"), "{fsize}");
        let python = end(Some(1), None, "OSError: [Errno 27] File too large");
        assert!(explain(&python, &l, 10).is_some());
        let cpu = explain(&end(None, Some(libc::SIGXCPU), ""), &l, 10).unwrap_or_default();
        assert!(cpu.contains("CPU time limit (10 s)"), "{cpu}");
        // A plain exit code 153 or 152 is just an exit code.
        assert_eq!(explain(&end(Some(153), None, "done"), &l, 10), None);
        assert_eq!(explain(&end(Some(152), None, ""), &l, 10), None);
        assert_eq!(explain(&end(Some(1), None, ""), &l, 10), None);
    }
}
