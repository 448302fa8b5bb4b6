//! Per-process limits set in the child before `exec` (inherited by
//! bubblewrap's sandbox and everything the command starts), and the words
//! for a command that ran into one.

use std::io;

use rein_core::CommandLimits;
use rein_core::limits::human_bytes;
use tokio::process::Command;

/// The rlimits of one command, computed before the fork.
#[derive(Debug, Clone, Copy)]
struct Plan {
    address_space: u64,
    file_size: u64,
    cpu_secs: u64,
}

/// Set `RLIMIT_AS`, `RLIMIT_FSIZE`, `RLIMIT_CPU` (soft at `cpu_secs`, the
/// command's timeout: a single process cannot spend more CPU than that
/// without also running past the timeout, unless it has many threads; hard
/// a little later) and `RLIMIT_CORE` 0 in `cmd`'s child. A zero limit
/// leaves that one unlimited.
pub fn apply(cmd: &mut Command, limits: &CommandLimits, cpu_secs: u64) {
    let plan = Plan {
        address_space: limits.address_space,
        file_size: limits.file_size,
        cpu_secs,
    };
    // SAFETY: runs in the forked child: only setrlimit system calls on
    // values computed before the fork.
    unsafe {
        cmd.pre_exec(move || {
            set(libc::RLIMIT_CORE, 0, 0)?;
            if plan.address_space > 0 {
                set(libc::RLIMIT_AS, plan.address_space, plan.address_space)?;
            }
            if plan.file_size > 0 {
                set(libc::RLIMIT_FSIZE, plan.file_size, plan.file_size)?;
            }
            if plan.cpu_secs > 0 {
                set(
                    libc::RLIMIT_CPU,
                    plan.cpu_secs,
                    plan.cpu_secs.saturating_add(5),
                )?;
            }
            Ok(())
        });
    }
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

/// The line explaining an exit caused by a limit: a process killed by
/// `SIGXFSZ` or `SIGXCPU` (bash reports 128 + the signal for a child, and
/// bubblewrap passes that on), `None` for any other status.
pub fn explain(code: Option<i32>, signal: Option<i32>, limits: &CommandLimits, cpu_secs: u64) -> Option<String> {
    let sig = signal.or_else(|| code.filter(|c| *c > 128).map(|c| c - 128))?;
    if sig == libc::SIGXFSZ {
        Some(format!(
            "[file size limit ({}) reached: a process was stopped for writing a larger file]",
            human_bytes(limits.file_size)
        ))
    } else if sig == libc::SIGXCPU {
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
    fn limit_signals_are_named_and_others_are_not() {
        let l = CommandLimits::default();
        let fsize = explain(Some(128 + libc::SIGXFSZ), None, &l, 10).unwrap_or_default();
        assert!(fsize.contains("file size limit (1 GiB)"), "{fsize}");
        let cpu = explain(None, Some(libc::SIGXCPU), &l, 10).unwrap_or_default();
        assert!(cpu.contains("CPU time limit (10 s)"), "{cpu}");
        assert_eq!(explain(Some(1), None, &l, 10), None);
        assert_eq!(explain(Some(137), None, &l, 10), None);
    }
}
