//! Git worktrees for isolated sub-agents (`isolation: worktree`): each
//! gets a worktree of the workspace's repository on a new branch
//! `rein/AGENT-TIME`, under `$REIN_HOME/worktrees/`. When the sub-agent
//! ends, a worktree with nothing uncommitted is removed (its branch too,
//! unless the sub-agent committed to it); one with changes is kept for
//! the user (`rein worktrees`).
//!
//! git runs with the repository's hooks and fsmonitor switched off: the
//! repository may be hostile, and making a worktree must not run its code.

use std::path::{Path, PathBuf};
use std::process::Command;

use rein_core::agents::{Worktree, WorktreeEnd, WorktreeError, Worktrees};

/// Worktrees under one root folder.
pub struct GitWorktrees {
    root: PathBuf,
}

impl GitWorktrees {
    /// Worktrees kept under `root` (`$REIN_HOME/worktrees`).
    pub fn new(root: impl Into<PathBuf>) -> GitWorktrees {
        GitWorktrees { root: root.into() }
    }

    /// The worktrees kept under the root: path, branch, uncommitted files.
    pub fn list(&self) -> Vec<KeptWorktree> {
        let mut kept = Vec::new();
        let Ok(repos) = std::fs::read_dir(&self.root) else {
            return kept;
        };
        for repo in repos.flatten() {
            let Ok(trees) = std::fs::read_dir(repo.path()) else {
                continue;
            };
            for tree in trees.flatten().filter(|t| t.path().is_dir()) {
                let path = tree.path();
                let branch = git(&path, &["branch", "--show-current"]).unwrap_or_default();
                let changed = git(&path, &["status", "--porcelain"])
                    .map(|s| s.lines().count())
                    .unwrap_or(0);
                kept.push(KeptWorktree {
                    path,
                    branch,
                    changed,
                });
            }
        }
        kept.sort_by(|a, b| a.path.cmp(&b.path));
        kept
    }
}

/// A worktree kept under the root.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeptWorktree {
    pub path: PathBuf,
    pub branch: String,
    /// Uncommitted files in it.
    pub changed: usize,
}

/// Run git in `dir` with the repository's own code switched off; its
/// trimmed stdout, or its stderr as the error.
fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        .output()
        .map_err(|e| WorktreeError(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(WorktreeError(rein_core::text::one_line(&err, 300)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Worktrees for GitWorktrees {
    fn create(&self, workspace: &Path, agent_id: &str) -> Result<Worktree, WorktreeError> {
        let top = git(workspace, &["rev-parse", "--show-toplevel"])
            .map_err(|_| WorktreeError("the workspace is not in a git repository".into()))?;
        let top = PathBuf::from(top);
        let base = git(&top, &["rev-parse", "--verify", "HEAD"])
            .map_err(|_| WorktreeError("the repository has no commit to start from".into()))?;
        let sub = workspace
            .canonicalize()
            .ok()
            .and_then(|w| {
                w.strip_prefix(top.canonicalize().ok()?)
                    .ok()
                    .map(Path::to_path_buf)
            })
            .unwrap_or_default();
        let name = format!("{agent_id}-{}", rein_core::time::now_millis());
        let repo_dir = self.root.join(repo_key(&top));
        std::fs::create_dir_all(&repo_dir)
            .map_err(|e| WorktreeError(format!("cannot create {}: {e}", repo_dir.display())))?;
        let path = repo_dir.join(&name);
        let branch = format!("rein/{name}");
        let path_text = path.to_string_lossy().into_owned();
        git(
            &top,
            &[
                "worktree", "add", "--quiet", "-b", &branch, &path_text, &base,
            ],
        )?;
        Ok(Worktree {
            path: if sub.as_os_str().is_empty() {
                path
            } else {
                path.join(sub)
            },
            branch,
            base,
        })
    }

    fn finish(&self, workspace: &Path, wt: &Worktree) -> Result<WorktreeEnd, WorktreeError> {
        let top = PathBuf::from(git(&wt.path, &["rev-parse", "--show-toplevel"])?);
        let changed = git(&top, &["status", "--porcelain"])?.lines().count();
        let range = format!("{}..HEAD", wt.base);
        let commits = git(&top, &["rev-list", "--count", &range])?
            .parse::<usize>()
            .unwrap_or(0);
        if changed > 0 {
            return Ok(WorktreeEnd::Kept { changed, commits });
        }
        // From the main repository: the worktree's folder goes away.
        let top_text = top.to_string_lossy().into_owned();
        git(workspace, &["worktree", "remove", &top_text])?;
        if commits == 0 {
            git(workspace, &["branch", "-D", &wt.branch])?;
        }
        // The repository's folder under the root, once empty.
        if let Some(dir) = top.parent() {
            let _ = std::fs::remove_dir(dir);
        }
        Ok(WorktreeEnd::Removed { commits })
    }
}

/// A folder name for a repository: its path's hash, so two repositories
/// never share one.
fn repo_key(top: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(top.to_string_lossy().as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}
