//! The one way rein starts a process on the host, outside the sandbox: MCP
//! stdio servers, hooks, pip for `rein model fetch`.
//!
//! Such a process is the user's program, but it must not become the
//! repository's: started in the workspace, `python3 -m NAME` imports the
//! workspace's `NAME/`, `make` reads its Makefile, `npx x` its
//! `node_modules`. So every host process gets:
//! - a neutral working folder: an empty folder of rein's, private and
//!   read-only (`0500`), made once per rein process and removed at exit,
//!   never the workspace unless the entry's own `cwd` says so;
//! - Python's safe path (`PYTHONSAFEPATH=1`: neither the working folder
//!   nor a script's folder joins `sys.path`), unless the entry's own `env`
//!   sets it;
//! - a scrubbed environment: the allowlist of [`env`], the names the user
//!   allowed, then the project folder as `REIN_PROJECT_DIR` and
//!   `CLAUDE_PROJECT_DIR`, then the entry's own variables;
//! - its own process group, with a watcher that kills the group when rein
//!   ends ([`supervisor`]); [`ProcessGroup`] kills it sooner (timeout,
//!   drop, a closed connection).
//!
//! The project reaches the process as data (the variables, a hook's `cwd`
//! input), never as its working folder.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub mod env;
mod supervisor;

/// The variables that carry the project folder.
pub const PROJECT_VARS: [&str; 2] = ["REIN_PROJECT_DIR", "CLAUDE_PROJECT_DIR"];

/// How one host process starts.
#[derive(Debug, Clone, Default)]
pub struct HostLaunch {
    /// The project folder, given as [`PROJECT_VARS`]; a relative `cwd` is
    /// taken from it.
    pub project: Option<PathBuf>,
    /// The entry's own working folder (the user's word); None: the
    /// neutral folder.
    pub cwd: Option<PathBuf>,
    /// Names of rein's variables passed besides the allowlist.
    pub env_allow: Vec<String>,
    /// The entry's own variables, set last.
    pub env: Vec<(OsString, OsString)>,
}

impl HostLaunch {
    /// A launch for the project at `project`.
    pub fn for_project(project: &Path) -> HostLaunch {
        HostLaunch {
            project: Some(project.to_path_buf()),
            ..HostLaunch::default()
        }
    }

    /// The command to run `program` this way. Start it with `spawn` and
    /// hold a [`ProcessGroup`] of its id for as long as it may run.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .envs(self.vars())
            .current_dir(self.working_dir())
            .process_group(0);
        supervisor::attach(&mut cmd);
        cmd
    }

    /// The whole environment the process gets.
    pub fn vars(&self) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(name, _)| env::passes(name, &self.env_allow))
            .collect();
        let mut set = |name: &OsStr, value: &OsStr| {
            vars.retain(|(n, _)| n != name);
            vars.push((name.to_owned(), value.to_owned()));
        };
        set(OsStr::new("PYTHONSAFEPATH"), OsStr::new("1"));
        if let Some(project) = &self.project {
            for name in PROJECT_VARS {
                set(OsStr::new(name), project.as_os_str());
            }
        }
        for (name, value) in &self.env {
            set(name, value);
        }
        vars
    }

    /// Where the process runs: its own `cwd` (relative to the project),
    /// or the neutral folder.
    pub fn working_dir(&self) -> PathBuf {
        match (&self.cwd, &self.project) {
            (Some(cwd), Some(project)) if cwd.is_relative() => project.join(cwd),
            (Some(cwd), _) => cwd.clone(),
            (None, _) => neutral_dir().to_path_buf(),
        }
    }
}

/// The empty folder host processes run in: made private and read-only
/// once per rein process, removed when rein exits normally; `/` when no
/// folder can be made.
pub fn neutral_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| make_neutral_dir().unwrap_or_else(|| PathBuf::from("/")))
}

fn make_neutral_dir() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("rein-host-")
        .tempdir()
        .ok()?
        .keep();
    // Nothing can be written into it (by anyone but root), so nothing can
    // wait there to be loaded.
    if std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).is_err() {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    // SAFETY: registers a plain function with no captured state.
    unsafe {
        libc::atexit(remove_neutral_dir);
    }
    Some(dir)
}

extern "C" fn remove_neutral_dir() {
    let dir = neutral_dir();
    if dir != Path::new("/") {
        let _ = std::fs::remove_dir(dir);
    }
}

/// A host process's group: killed (`SIGKILL`, every member) when dropped,
/// or sooner by [`ProcessGroup::kill`]. The group's watcher keeps its id
/// from being reused until the group is killed.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: libc::pid_t,
}

impl ProcessGroup {
    /// The group a process started by [`HostLaunch::command`] leads (its
    /// id is the process's).
    pub fn of(pid: u32) -> Option<ProcessGroup> {
        let pgid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 1)?;
        Some(ProcessGroup { pgid })
    }

    /// Kill every process of the group.
    pub fn kill(&self) {
        // SAFETY: killpg takes plain numbers; the group is ours.
        unsafe {
            libc::killpg(self.pgid, libc::SIGKILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests;
