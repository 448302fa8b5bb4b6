//! Where the file tools never read: the credential stores under the home
//! ([`super::SECRET_HOME_DIRS`]) and rein's own state folder (`$REIN_HOME`:
//! every session's transcript, saved outputs, tokens), except this
//! session's saved-output folder and a workspace that lies in it (a
//! sub-agent's worktree).
//!
//! The gate refuses a call whose assessment reads there ([`ReadFence::refusal`]),
//! and the walks of `grep` and `glob` skip what lies there
//! ([`ReadFence::fences`]), so a search of a workspace that holds the home
//! does not list or read them either.

use std::path::{Path, PathBuf};

use super::{Assessment, SandboxPolicy};

/// The places a session's file tools never read, resolved once.
#[derive(Debug, Clone, Default)]
pub struct ReadFence {
    /// Credential folders and files, as written and resolved.
    secrets: Vec<PathBuf>,
    /// `$REIN_HOME`, as written and resolved.
    state: Vec<PathBuf>,
    /// Folders inside `$REIN_HOME` that stay readable: this session's
    /// saved outputs, and the workspace when it lies there.
    open: Vec<PathBuf>,
}

impl ReadFence {
    /// The fence of a session whose sandbox is `policy` (its `hidden`
    /// paths are the credential stores, its `state_dir` is `$REIN_HOME`),
    /// working in `workspace` and allowed to read `read_roots` (its
    /// saved-output folder).
    pub fn new(policy: &SandboxPolicy, workspace: &Path, read_roots: &[PathBuf]) -> ReadFence {
        let state = policy
            .state_dir
            .as_deref()
            .map(both_spellings)
            .unwrap_or_default();
        let mut open: Vec<PathBuf> = read_roots
            .iter()
            .filter(|r| r.is_absolute())
            .flat_map(|r| both_spellings(r))
            .collect();
        let ws = both_spellings(workspace);
        if ws.iter().any(|w| state.iter().any(|s| w.starts_with(s))) {
            open.extend(ws);
        }
        ReadFence {
            secrets: policy.hidden.clone(),
            state,
            open,
        }
    }

    /// Why reading `path` (absolute) is refused, if it is.
    pub fn refusal(&self, path: &Path) -> Option<String> {
        if let Some(dir) = secret_holding(&self.secrets, path) {
            return Some(format!(
                "{} is inside {}, which holds credentials and is never read",
                path.display(),
                dir.display()
            ));
        }
        let dir = self.state.iter().find(|d| path.starts_with(d))?;
        if self.open.iter().any(|o| path.starts_with(o)) {
            return None;
        }
        Some(format!(
            "{} is inside {}, rein's own state folder (REIN_HOME), which tools never read \
             (only this session's saved outputs there are readable)",
            path.display(),
            dir.display()
        ))
    }

    /// Whether `path` lies where nothing is read (walks skip it).
    pub fn fences(&self, path: &Path) -> bool {
        self.refusal(path).is_some()
    }

    /// Why the call `a` is refused for what it reads, if it is.
    pub fn refused_reads(&self, a: &Assessment) -> Option<String> {
        a.reads.iter().find_map(|r| self.refusal(r))
    }
}

/// The one of `secrets` that `path` is or lies inside, if any.
pub(super) fn secret_holding<'a>(secrets: &'a [PathBuf], path: &Path) -> Option<&'a PathBuf> {
    secrets.iter().find(|d| path.starts_with(d))
}

/// `path` as written (normalised) and with symlinks resolved: the deepest
/// existing ancestor resolved, the rest appended.
fn both_spellings(path: &Path) -> Vec<PathBuf> {
    let written = super::normalise(path);
    let mut out = vec![written.clone()];
    let resolved = resolve_loosely(&written);
    if resolved != written {
        out.push(resolved);
    }
    out
}

fn resolve_loosely(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn fence(state: &Path, workspace: &Path, spill: &Path) -> ReadFence {
        let policy = SandboxPolicy {
            state_dir: Some(state.to_path_buf()),
            hidden: vec![PathBuf::from("/home/u/.config/gh")],
            ..Default::default()
        };
        ReadFence::new(&policy, workspace, &[spill.to_path_buf()])
    }

    #[test]
    fn rein_home_is_never_read_but_this_sessions_saved_outputs_are() {
        let dir = tempfile::tempdir().unwrap();
        let state = std::fs::canonicalize(dir.path()).unwrap();
        let spill = state.join("sessions/s1/outputs");
        let f = fence(&state, Path::new("/home/u"), &spill);
        assert!(f.refusal(&spill.join("call_1.txt")).is_none());
        let other = state.join("sessions/s2/outputs/call_1.txt");
        let why = f.refusal(&other).unwrap();
        assert!(why.contains("REIN_HOME"), "{why}");
        assert!(f.fences(&state.join("serve/token")));
        assert!(f.fences(&state));
        assert!(f.fences(Path::new("/home/u/.config/gh/hosts.yml")));
        assert!(!f.fences(Path::new("/home/u/.config/ghost")));
        assert!(!f.fences(Path::new("/home/u/src/main.rs")));
    }

    #[test]
    fn rein_home_reached_through_a_symlink_is_fenced_as_well() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let f = fence(
            &link,
            Path::new("/home/u"),
            &link.join("sessions/s1/outputs"),
        );
        let real = std::fs::canonicalize(&real).unwrap();
        assert!(f.fences(&real.join("sessions.db")));
        assert!(f.fences(&link.join("sessions.db")));
        assert!(!f.fences(&real.join("sessions/s1/outputs/x.txt")));
    }

    #[test]
    fn a_workspace_inside_rein_home_stays_readable() {
        let dir = tempfile::tempdir().unwrap();
        let state = std::fs::canonicalize(dir.path()).unwrap();
        let ws = state.join("worktrees/repo/task-1");
        let f = fence(&state, &ws, &state.join("sessions/s1/outputs"));
        assert!(!f.fences(&ws.join("src/lib.rs")));
        assert!(f.fences(&state.join("worktrees/repo/task-2/src/lib.rs")));
    }
}
