//! A cgroup per command, where rein may make one: it caps the processes
//! (and threads) alive at once, which is what stops a fork bomb (an
//! `RLIMIT_NPROC` counts every process of the user, and root is exempt
//! from it), caps the memory of the whole command, and lets rein kill every
//! process of the command at the end, whatever session or group it moved to.
//!
//! cgroup v2 is used when rein's own cgroup lets it make children with the
//! `pids` controller (a delegated subtree, or root); else the v1 `pids`
//! and `memory` hierarchies when they are writable (root on a v1 or hybrid
//! host). Neither: no cgroup, the process cap is only the timeout (see the
//! README's known limits). The child joins its cgroups itself, before
//! `exec`, by writing `0` to descriptors opened here.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use rein_core::CommandLimits;
use rein_core::human_bytes;
use tokio::process::Command;

/// Where command cgroups are made.
#[derive(Debug, Clone)]
enum Layout {
    /// One v2 folder (rein's own cgroup) holding pids and memory.
    V2(PathBuf),
    /// v1: the folders of rein's `pids` and `memory` cgroups, when writable.
    V1 {
        pids: Option<PathBuf>,
        memory: Option<PathBuf>,
    },
}

/// The cgroups of one running command; dropping it kills what is left in
/// them and removes them.
#[derive(Debug)]
pub struct CommandCgroup {
    /// Folders made for this command.
    dirs: Vec<PathBuf>,
    /// The one with the `pids` controller, and the one with `memory`.
    pids: Option<PathBuf>,
    memory: Option<PathBuf>,
    /// `cgroup.procs` of each, opened for the child to join.
    procs: Vec<OwnedFd>,
    v2: bool,
    limits: CommandLimits,
}

/// How long [`CommandCgroup::kill_all`] waits for killed processes to be
/// gone.
const KILL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Cgroups that could not be removed yet (a process not yet reaped); tried
/// again before the next one is made.
static STALE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn own_path(controller: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = if controller.is_empty() {
            ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == controller)
        };
        hit.then(|| PathBuf::from(path.trim_start_matches('/')))
    })
}

fn writable_child_ok(parent: &Path, probe_file: &str) -> bool {
    let dir = parent.join(format!("rein-probe-{}", std::process::id()));
    if std::fs::create_dir(&dir).is_err() {
        return false;
    }
    let ok = dir.join(probe_file).exists();
    let _ = std::fs::remove_dir(&dir);
    ok
}

fn layout() -> Option<&'static Layout> {
    static LAYOUT: OnceLock<Option<Layout>> = OnceLock::new();
    LAYOUT
        .get_or_init(|| {
            if let Some(own) = own_path("") {
                let base = Path::new("/sys/fs/cgroup").join(own);
                if base.join("cgroup.controllers").exists() && writable_child_ok(&base, "pids.max")
                {
                    sweep(&base);
                    return Some(Layout::V2(base));
                }
            }
            let v1 = |ctrl: &str, file: &str| {
                let base = Path::new("/sys/fs/cgroup").join(ctrl).join(own_path(ctrl)?);
                writable_child_ok(&base, file).then_some(base)
            };
            let pids = v1("pids", "pids.max");
            let memory = v1("memory", "memory.limit_in_bytes");
            for parent in pids.iter().chain(&memory) {
                sweep(parent);
            }
            (pids.is_some() || memory.is_some()).then_some(Layout::V1 { pids, memory })
        })
        .as_ref()
}

/// Whether commands get a cgroup here (with the `pids` controller).
pub fn available() -> bool {
    match layout() {
        Some(Layout::V2(_)) => true,
        Some(Layout::V1 { pids, .. }) => pids.is_some(),
        None => false,
    }
}

fn write_file(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(value.as_bytes())
}

impl CommandCgroup {
    /// Make the cgroups of one command with `limits` applied; `None` when
    /// this host offers none (or making them failed: best effort).
    pub fn create(limits: &CommandLimits) -> Option<CommandCgroup> {
        retry_stale();
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "rein-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut cg = CommandCgroup {
            dirs: Vec::new(),
            pids: None,
            memory: None,
            procs: Vec::new(),
            v2: false,
            limits: *limits,
        };
        let settings: Vec<(PathBuf, Vec<(&str, u64)>)> = match layout()? {
            Layout::V2(base) => {
                cg.v2 = true;
                vec![(
                    base.join(&name),
                    vec![
                        ("pids.max", limits.processes),
                        ("memory.max", limits.memory),
                    ],
                )]
            }
            Layout::V1 { pids, memory } => {
                let mut v = Vec::new();
                if let Some(p) = pids {
                    v.push((p.join(&name), vec![("pids.max", limits.processes)]));
                }
                if let Some(m) = memory {
                    v.push((
                        m.join(&name),
                        vec![("memory.limit_in_bytes", limits.memory)],
                    ));
                }
                v
            }
        };
        for (dir, files) in settings {
            std::fs::create_dir(&dir).ok()?;
            cg.dirs.push(dir.clone());
            if files.iter().any(|(f, _)| f.starts_with("pids")) {
                cg.pids = Some(dir.clone());
            }
            if files.iter().any(|(f, _)| f.starts_with("memory")) {
                cg.memory = Some(dir.clone());
            }
            for (file, value) in files {
                if value > 0 {
                    write_file(&dir.join(file), &value.to_string()).ok()?;
                }
            }
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .ok()?;
            cg.procs.push(OwnedFd::from(procs));
        }
        Some(cg)
    }

    /// Make `cmd`'s child join these cgroups before anything else runs.
    pub fn join_in_child(&self, cmd: &mut Command) {
        self.join_in_std_child(cmd.as_std_mut());
    }

    /// [`CommandCgroup::join_in_child`] for a standard library command.
    pub fn join_in_std_child(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fds: Vec<i32> = self.procs.iter().map(AsRawFd::as_raw_fd).collect();
        // SAFETY: runs in the forked child: only `write` on descriptors that
        // this value keeps open until the command is spawned.
        unsafe {
            cmd.pre_exec(move || {
                for &fd in &fds {
                    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }

    /// Kill every process still in the command's cgroups and wait (a
    /// little) until they are gone, so that nothing of the command runs or
    /// still holds its files when the call ends.
    ///
    /// First no process of the command may fork any more (`pids.max` 0),
    /// so a fork bomb cannot refill what each round of kills empties (v1
    /// has no atomic `cgroup.kill`); killed processes leave the cgroup
    /// once the kernel has torn them down, which on a loaded machine takes
    /// a moment for dozens of them.
    pub fn kill_all(&self) {
        let Some(dir) = self.dirs.first() else { return };
        if let Some(pids) = &self.pids {
            let _ = write_file(&pids.join("pids.max"), "0");
        }
        let atomic = self.v2 && write_file(&dir.join("cgroup.kill"), "1").is_ok();
        let deadline = std::time::Instant::now() + KILL_WAIT;
        loop {
            let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
                return;
            };
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() || std::time::Instant::now() >= deadline {
                return;
            }
            if !atomic {
                for &pid in pids.iter().filter(|&&p| p > 1) {
                    // SAFETY: kill only sends a signal; the pid is in this
                    // command's cgroup.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }

    /// Lines for the observation about limits the command ran into.
    pub fn report(&self) -> Vec<String> {
        self.report_since(Counters::default())
    }

    /// The counts of refused forks and of processes killed for memory so
    /// far (a cgroup serving many commands reports each one's share).
    pub fn counters(&self) -> Counters {
        let read = |dir: &Option<PathBuf>, file: &str, key: &str| -> u64 {
            dir.as_ref()
                .and_then(|d| std::fs::read_to_string(d.join(file)).ok())
                .and_then(|text| {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                })
                .unwrap_or(0)
        };
        let file = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        Counters {
            refused: read(&self.pids, "pids.events", "max "),
            oom: read(&self.memory, file, "oom_kill "),
        }
    }

    /// [`CommandCgroup::report`] about what happened since `before`.
    pub fn report_since(&self, before: Counters) -> Vec<String> {
        let mut lines = Vec::new();
        let now = self.counters();
        let refused = now.refused.saturating_sub(before.refused);
        if refused > 0 {
            lines.push(format!(
                "[process limit ({}) reached: {refused} fork(s) were refused]",
                self.limits.processes
            ));
        }
        let oom = now.oom.saturating_sub(before.oom);
        if oom > 0 {
            lines.push(format!(
                "[memory limit ({}) reached: {oom} process(es) were killed]",
                human_bytes(self.limits.memory)
            ));
        }
        lines
    }
}

/// What a cgroup counted so far, see [`CommandCgroup::counters`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    refused: u64,
    oom: u64,
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.kill_all();
        self.procs.clear();
        for dir in self.dirs.drain(..) {
            // Killed processes leave the cgroup a moment later (bubblewrap's
            // sandbox init dies just after bubblewrap itself).
            let mut removed = false;
            for _ in 0..100 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    removed = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            if !removed {
                STALE
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(dir);
            }
        }
    }
}

/// Remove the empty cgroups earlier rein processes that are gone left in
/// `parent` (a rein killed with SIGKILL never removes its own).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("rein-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            // Fails (and stays) while anything still runs in it.
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

fn retry_stale() {
    let mut stale = STALE.lock().unwrap_or_else(PoisonError::into_inner);
    stale.retain(|d| std::fs::remove_dir(d).is_err() && d.exists());
}
