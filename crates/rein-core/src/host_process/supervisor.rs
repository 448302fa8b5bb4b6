//! What ends a host process's whole group when rein itself ends, however
//! it ends (a normal exit, a panic, `SIGKILL`).
//!
//! `PR_SET_PDEATHSIG` reaches only the direct child, and only while the
//! thread that forked it lives; a grandchild (`sleep 300 &` in a hook, the
//! worker an `npx` wrapper starts) would outlive rein. So each host
//! process's group gets a watcher: forked from the child just before it
//! runs its program, in the same group, holding nothing but the read end
//! of a pipe whose only writer is rein (the write end is close-on-exec, so
//! no program rein starts keeps it). When rein is gone the pipe hangs up,
//! the watcher wakes and kills its group, itself included. While the
//! watcher lives the group's id cannot be reused, so rein's own `killpg`
//! of the group never reaches a stranger.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::OnceLock;

/// The pipe every watcher listens on: (read end, write end), both
/// close-on-exec, open for rein's whole life.
fn life_pipe() -> Option<RawFd> {
    static PIPE: OnceLock<Option<(OwnedFd, OwnedFd)>> = OnceLock::new();
    PIPE.get_or_init(|| {
        let mut fds = [0; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return None;
        }
        // SAFETY: both descriptors were just opened and are owned here.
        Some(unsafe {
            (
                std::os::fd::FromRawFd::from_raw_fd(fds[0]),
                std::os::fd::FromRawFd::from_raw_fd(fds[1]),
            )
        })
    })
    .as_ref()
    .map(|(read, _)| read.as_raw_fd())
}

/// Make `cmd` fork a watcher of its group just before it runs its program.
/// The command must be in a new process group (`process_group(0)`, which
/// the child applies before this hook runs). Without the pipe (out of
/// descriptors) the command fails to start rather than run unwatched.
pub(super) fn attach(cmd: &mut Command) {
    let life = life_pipe();
    // SAFETY: the closure runs in the forked child before exec and makes
    // only async-signal-safe calls (pipe2, fork, close, poll, getppid,
    // getpgrp, kill, _exit).
    unsafe {
        cmd.pre_exec(move || {
            let Some(life) = life else {
                return Err(std::io::Error::other("no pipe to watch rein's life"));
            };
            // Its write end stays with the child until exec: the watcher
            // learns when the program started or failed to.
            let mut exec = [0; 2];
            if libc::pipe2(exec.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => watch(life, exec[0]),
                _ => {
                    libc::close(exec[0]);
                    Ok(())
                }
            }
        });
    }
}

/// The watcher: keep only the two pipes, wait until rein is gone, kill the
/// group. When the program could not start (its exec failed, so the child
/// is gone as soon as the exec pipe closes) the group is killed at once:
/// rein got an error and holds no handle that would. Never returns.
fn watch(life: RawFd, exec: RawFd) -> ! {
    close_all_but(life, exec);
    let mut fds = [
        libc::pollfd {
            fd: life,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: exec,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let mut watched: libc::nfds_t = 2;
    // SAFETY: poll on valid pollfds; the rest take plain numbers.
    unsafe {
        loop {
            if libc::poll(fds.as_mut_ptr(), watched, -1) < 0 {
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                break;
            }
            // Nobody writes either pipe: a wake-up is a hang-up.
            if fds[0].revents != 0 {
                break;
            }
            if watched == 2 && fds[1].revents != 0 {
                // The child's pid is the group's id: still our parent
                // means its exec succeeded.
                if libc::getppid() != libc::getpgrp() {
                    break;
                }
                watched = 1;
            }
        }
        libc::kill(0, libc::SIGKILL);
        libc::_exit(0)
    }
}

/// Close every descriptor but `a` and `b` (the child's stdio included, so
/// the watcher holds none of the program's pipes open).
fn close_all_but(a: RawFd, b: RawFd) {
    let (low, high) = (a.min(b) as libc::c_uint, a.max(b) as libc::c_uint);
    let ranges = [
        (0, low.checked_sub(1)),
        (low + 1, high.checked_sub(1)),
        (high + 1, Some(libc::c_uint::MAX)),
    ];
    for (first, last) in ranges {
        let Some(last) = last.filter(|l| *l >= first) else {
            continue;
        };
        // SAFETY: close_range and close take plain numbers.
        unsafe {
            if libc::syscall(libc::SYS_close_range, first, last, 0) != 0 {
                // Kernels before 5.9: one by one.
                for fd in first..=last.min(65_535) {
                    libc::close(fd as libc::c_int);
                }
            }
        }
    }
}
