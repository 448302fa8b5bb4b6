//! Inside the sandbox: the supervisor that runs the session's commands, one
//! at a time, as process 1 of the sandbox's PID namespace ([`main`], when
//! the front end's executable starts with [`super::SERVER_ARG`]).
//!
//! 1. Set up: refuse to run unless it is process 1 of its namespace (as
//!    such no process of the namespace can kill or stop it: the kernel
//!    drops signals it has no handler for); make itself not dumpable (no
//!    command may trace it, read its memory or reach its descriptors in
//!    `/proc`); keep its control socket from being inherited; take
//!    `SIGCHLD` through a signalfd; note what `/dev` holds; say `Ready`.
//! 2. For each `Run`: start `bash -c` with the command's stdout and stderr
//!    (received with the request), its environment only, its working
//!    folder, a session of its own and its rlimits; say `Started`.
//! 3. Reap every process that ends (orphans come to process 1) until the
//!    command's own process ends; a `Kill` meanwhile kills the command.
//! 4. Then kill every other process of the namespace (`kill(-1)` from
//!    process 1 reaches all of them but itself; a killed process cannot
//!    fork any more) and reap them; empty `/tmp`, `/var/tmp` and
//!    `/dev/shm`, remove what was added to `/dev`, remove every System V
//!    IPC object; say `Exited` with the wait status. When something new
//!    could not be removed, say `Retired` instead and exit: rein's next
//!    command gets a new sandbox.
//! 5. When rein closes the socket (or goes away), kill everything and exit:
//!    the namespace ends with its process 1.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::wire::{self, FromServer, Job, ToServer};

/// Folders emptied after every command: each command gets them empty.
const EMPTIED: [&str; 3] = ["/tmp", "/var/tmp", "/dev/shm"];

/// Run as the supervisor; `args` are the control socket's descriptor and
/// the executable's descriptor (closed at once). Returns the exit code.
pub fn main(args: &[OsString]) -> i32 {
    let fd = |i: usize| -> Option<RawFd> { args.get(i)?.to_str()?.parse().ok() };
    let (Some(control), Some(exe)) = (fd(0), fd(1)) else {
        eprintln!("rein: the sandbox supervisor needs its two descriptors");
        return 2;
    };
    // SAFETY: getpid has no preconditions; close and prctl act on this
    // process only; `exe` is the executable's descriptor, which nothing
    // else here uses.
    unsafe {
        libc::close(exe);
        if libc::getpid() != 1 {
            eprintln!("rein: the sandbox supervisor must be process 1 of its namespace");
            return 2;
        }
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::fcntl(control, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: the descriptor was handed to this process for it alone.
    let sock = UnixStream::from(unsafe { OwnedFd::from_raw_fd(control) });
    let Ok(chld) = child_signals() else {
        return 2;
    };
    let first = First::now();
    if wire::send(&sock, &FromServer::Ready, &[]).is_err() {
        return 2;
    }
    loop {
        let reply = match wire::recv::<ToServer>(&sock) {
            Ok(Some((ToServer::Run(job), fds))) => match run(&sock, &chld, job, fds) {
                Some(reply) => reply,
                None => break,
            },
            Ok(Some((ToServer::Kill, _))) => continue,
            Ok(None) | Err(_) => break,
        };
        kill_the_rest();
        // Something could not be removed (a path deeper than the kernel
        // lets a name be, say): this sandbox serves no other command.
        let clean = clean(&first);
        let reply = match reply {
            FromServer::Exited(status) if !clean => FromServer::Retired(status),
            other => other,
        };
        if wire::send(&sock, &reply, &[]).is_err() || !clean {
            break;
        }
    }
    kill_the_rest();
    0
}

/// Block `SIGCHLD` and read it from a descriptor instead.
fn child_signals() -> io::Result<OwnedFd> {
    // SAFETY: sigset operations on a local set; sigprocmask and signalfd
    // change this process's signal handling only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Start the job and wait for its end; the reply to send once the rest is
/// killed, or `None` when rein went away meanwhile.
fn run(sock: &UnixStream, chld: &OwnedFd, job: Job, fds: Vec<OwnedFd>) -> Option<FromServer> {
    let mut fds = fds.into_iter();
    let (Some(out), Some(err)) = (fds.next(), fds.next()) else {
        return Some(FromServer::Failed(
            "the command came without its output".into(),
        ));
    };
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(&job.script)
        .env_clear()
        .envs(
            job.env
                .into_iter()
                .map(|(k, v)| (OsString::from_vec(k), OsString::from_vec(v))),
        )
        .current_dir(OsString::from_vec(job.cwd))
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let limits = job.limits;
    // SAFETY: runs in the forked child before exec: setsid, sigprocmask
    // and setrlimit system calls only.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            limits.set_all()
        });
    }
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Some(FromServer::Failed(format!("could not start bash: {e}"))),
    };
    drop(cmd);
    let pid = child.id() as libc::pid_t;
    if wire::send(sock, &FromServer::Started, &[]).is_err() {
        return None;
    }
    wait_for(sock, chld, pid).map(FromServer::Exited)
}

/// Reap until `pid` ends (its wait status), killing everything on a
/// `Kill`; `None` when rein went away.
fn wait_for(sock: &UnixStream, chld: &OwnedFd, pid: libc::pid_t) -> Option<i32> {
    loop {
        let mut polled = [
            libc::pollfd {
                fd: sock.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: chld.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll writes only the revents of the two entries given.
        let n = unsafe { libc::poll(polled.as_mut_ptr(), 2, -1) };
        if n < 0 {
            continue;
        }
        if polled[1].revents != 0 {
            let mut info = [0u8; 128];
            // SAFETY: reads one signalfd_siginfo into a buffer of its size.
            unsafe { libc::read(chld.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) };
            if let Some(status) = reap(pid) {
                return Some(status);
            }
        }
        if polled[0].revents != 0 {
            match wire::recv::<ToServer>(sock) {
                Ok(Some((ToServer::Kill, _))) => kill_all(),
                // A second command while one runs: not asked by rein.
                Ok(Some((ToServer::Run(_), _))) => kill_all(),
                Ok(None) | Err(_) => return None,
            }
        }
    }
}

/// Reap every ended child; the wait status of `pid` when it was one.
fn reap(pid: libc::pid_t) -> Option<i32> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only `status`.
        let got = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if got <= 0 {
            return found;
        }
        if got == pid {
            found = Some(status);
        }
    }
}

fn kill_all() {
    // SAFETY: from process 1 of the namespace, kill(-1) signals every
    // process of the namespace but this one.
    unsafe { libc::kill(-1, libc::SIGKILL) };
}

/// Kill every process but this one and reap them all.
fn kill_the_rest() {
    kill_all();
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only `status`.
        let got = unsafe { libc::waitpid(-1, &mut status, 0) };
        if got < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// What the emptied folders and `/dev` held before any command: the mount
/// points bubblewrap made (and the folders leading to them).
struct First {
    dirs: Vec<BTreeSet<OsString>>,
    dev: BTreeSet<OsString>,
}

impl First {
    fn now() -> First {
        First {
            dirs: EMPTIED.iter().map(|d| entries(Path::new(d))).collect(),
            dev: entries(Path::new("/dev")),
        }
    }
}

/// Give the next command what the first one found: the emptied folders
/// empty, `/dev` as it was, no System V IPC object. Only what is on the
/// folder's own file system goes: a mount inside it (the workspace, when
/// it lies under `/tmp`, and the folders leading to it) is never entered.
/// False when something new is left all the same.
fn clean(first: &First) -> bool {
    let mut clean = true;
    for (dir, before) in EMPTIED.iter().zip(&first.dirs) {
        let dir = Path::new(dir);
        if let Ok(meta) = std::fs::symlink_metadata(dir) {
            for name in entries(dir) {
                remove_tree(&dir.join(name), meta.dev());
            }
        }
        clean &= entries(dir).is_subset(before);
    }
    let root = Path::new("/dev");
    if let Ok(meta) = std::fs::symlink_metadata(root) {
        for name in entries(root) {
            if !first.dev.contains(&name) {
                remove_tree(&root.join(name), meta.dev());
            }
        }
    }
    clean &= entries(root).is_subset(&first.dev);
    remove_ipc();
    clean
}

fn entries(dir: &Path) -> BTreeSet<OsString> {
    std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Remove `path` and what it holds, staying on the file system `dev`
/// (what lies on another is a mount: left, and so are the folders that
/// lead to it). Symlinks are removed, never followed.
fn remove_tree(path: &Path, dev: u64) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.dev() != dev {
        return;
    }
    if meta.is_dir() {
        for name in entries(path) {
            remove_tree(&path.join(name), dev);
        }
        let _ = std::fs::remove_dir(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// Remove the namespace's shared memory segments, semaphore sets and
/// message queues (listed in `/proc/sysvipc`, the id in the second column).
fn remove_ipc() {
    for (file, which) in [("shm", 0), ("sem", 1), ("msg", 2)] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/sysvipc/{file}")) else {
            continue;
        };
        for id in text
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<i32>().ok())
        {
            // SAFETY: IPC_RMID on an id of this namespace; no memory is
            // passed besides a null buffer, which IPC_RMID ignores.
            unsafe {
                match which {
                    0 => libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()),
                    1 => libc::semctl(id, 0, libc::IPC_RMID),
                    _ => libc::msgctl(id, libc::IPC_RMID, std::ptr::null_mut()),
                };
            }
        }
    }
}
