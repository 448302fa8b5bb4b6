//! What the bubblewrap sandbox makes in a workspace (an empty `.rein/`,
//! and in a repository missing them, `.git/hooks/` or an empty
//! `.git/config`; see [`super::bwrap::ensure_protected`]), taken away
//! again once no command needs it, so a session leaves nothing in the
//! user's project that nothing wrote to.
//!
//! A made path may only go when no command of any rein process is running
//! with it bound read-only: removing a folder that is a mount point in
//! another mount namespace detaches that mount, and the command could then
//! create `.rein/settings.json` on the host. So every bubblewrap command
//! holds a lock per workspace, shared, from before the paths are made to
//! after its processes are gone:
//!
//! 1. [`hold`] takes the shared lock (waiting out a clean-up), makes what
//!    is missing, and appends what it made to the lock file (a record that
//!    survives a crash of the process that made it).
//! 2. [`Hold::release`], once the command is over, drops its shared lock
//!    and tries for the exclusive one without waiting: got, no command
//!    runs with the workspace, and each recorded path that is still empty
//!    is removed, innermost first, and the record emptied; not got, a
//!    running command keeps them and its own release takes them away.
//! 3. A hold dropped without [`Hold::release`] (its command abandoned,
//!    maybe still running) keeps its lock until the process exits.
//!
//! The locks live in a folder of the user's own (`$XDG_RUNTIME_DIR`, else
//! the temporary folder), which commands never see (the sandbox hides the
//! first and has a private `/tmp`). Without one, made paths stay, as they
//! were.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a command waits for another process's clean-up (a moment in
/// practice) before it is refused.
const WAIT: Duration = Duration::from_secs(10);

/// A command's share of the workspace's protected paths.
pub(super) struct Hold {
    lock: Option<File>,
    workspace: PathBuf,
}

/// Take the workspace's shared lock, then make the protected paths that
/// are missing (`workspace` canonical). The error says why the command
/// must not run.
pub(super) fn hold(workspace: &Path) -> Result<Hold, String> {
    let Some(mut lock) = lock_file(workspace) else {
        super::bwrap::ensure_protected(workspace)?;
        return Ok(Hold {
            lock: None,
            workspace: workspace.to_path_buf(),
        });
    };
    let started = Instant::now();
    while !flock(&lock, libc::LOCK_SH | libc::LOCK_NB) {
        if started.elapsed() > WAIT {
            return Err(format!(
                "the command was not run: another process has held the sandbox's lock for this \
                 workspace for {} s",
                WAIT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let made = super::bwrap::ensure_protected(workspace)?;
    if !made.is_empty() {
        let mut lines = String::new();
        for path in &made {
            lines.push_str(&path.to_string_lossy());
            lines.push('\n');
        }
        // O_APPEND: holders of the shared lock append side by side.
        let _ = lock.write_all(lines.as_bytes());
    }
    Ok(Hold {
        lock: Some(lock),
        workspace: workspace.to_path_buf(),
    })
}

impl Hold {
    /// The command is over (none of its processes runs): remove what was
    /// made for commands when no other holds it.
    pub(super) fn release(mut self) {
        let Some(mut lock) = self.lock.take() else {
            return;
        };
        // Not atomic: the shared lock goes first, and another process may
        // take either lock in between; that one then cleans up.
        if !flock(&lock, libc::LOCK_EX | libc::LOCK_NB) {
            return;
        }
        let mut record = String::new();
        if lock.rewind().is_err() || lock.read_to_string(&mut record).is_err() {
            return;
        }
        // Only this workspace's protected paths, whatever the record says.
        let protected: Vec<PathBuf> = super::bwrap::PROTECTED
            .iter()
            .map(|p| self.workspace.join(p))
            .collect();
        let mut made: Vec<PathBuf> = record
            .lines()
            .map(PathBuf::from)
            .filter(|p| protected.contains(p))
            .collect();
        made.sort();
        made.dedup();
        // Innermost first: `.git/hooks` before what holds it.
        for path in made.iter().rev() {
            remove_if_empty(path);
        }
        let _ = lock.set_len(0);
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        // Abandoned: its command may still run with the paths bound. The
        // lock stays held until this process exits.
        if let Some(lock) = self.lock.take() {
            std::mem::forget(lock);
        }
    }
}

/// Remove `path` if it is still an empty folder or an empty file (not a
/// link): anything else was put there by someone and stays.
fn remove_if_empty(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        // Fails, leaving it, unless empty.
        let _ = std::fs::remove_dir(path);
    } else if meta.is_file() && meta.len() == 0 {
        let _ = std::fs::remove_file(path);
    }
}

fn flock(file: &File, how: libc::c_int) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock only locks the open file description of a valid fd.
    unsafe { libc::flock(file.as_raw_fd(), how) == 0 }
}

/// The lock file of `workspace`, opened for reading and appending; `None`
/// when there is no private folder to keep it in.
fn lock_file(workspace: &Path) -> Option<File> {
    let dir = lock_dir()?;
    let name = format!(
        "{:016x}.lock",
        fnv1a(workspace.as_os_str().as_encoded_bytes())
    );
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(name))
        .ok()
}

/// `rein-sandbox-EUID` in `$XDG_RUNTIME_DIR` or the temporary folder:
/// made when missing, used only when it is a real folder of this user
/// that nobody else may enter.
fn lock_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let dir = base.join(format!("rein-sandbox-{euid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == euid && meta.mode() & 0o077 == 0).then_some(dir)
}

/// FNV-1a, 64 bits: a name for a workspace that every rein version agrees
/// on (two workspaces sharing one only share a lock).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn made_paths_go_with_the_last_holder_and_only_while_empty() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        let first = hold(&ws).unwrap();
        let second = hold(&ws).unwrap();
        assert!(ws.join(".rein").is_dir() && ws.join(".git/hooks").is_dir());
        // Another command still runs with them bound.
        first.release();
        assert!(ws.join(".rein").is_dir() && ws.join(".git/hooks").is_dir());
        second.release();
        assert!(!ws.join(".rein").exists() && !ws.join(".git/hooks").exists());
        // What the user had stays.
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/config")).unwrap(),
            "[core]\n"
        );

        // Something put in a made folder keeps it.
        let third = hold(&ws).unwrap();
        std::fs::write(ws.join(".rein/settings.json"), "{}").unwrap();
        third.release();
        assert!(ws.join(".rein/settings.json").is_file());
        assert!(!ws.join(".git/hooks").exists());
    }

    #[test]
    fn an_abandoned_hold_keeps_what_it_made() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        drop(hold(&ws).unwrap());
        // Its command may still run: a later release leaves the folder.
        hold(&ws).unwrap().release();
        assert!(ws.join(".rein").is_dir());
    }
}
