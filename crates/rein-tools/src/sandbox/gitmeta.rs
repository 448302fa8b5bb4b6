//! Git metadata at any depth of the workspace, checked after every
//! sandboxed command that could write.
//!
//! Git runs programs named by its metadata: hooks, `core.fsmonitor`,
//! `core.pager`, aliases, filters, `ext::` remotes, and it follows `.git`
//! files (`gitdir: ...`), `commondir` and `gitdir` pointers to other
//! repositories. A command that plants any of these in the workspace (in a
//! nested repository, a fresh `git init`, a copied `.git`) would have the
//! user's next `git status` run its code on the host. So before a command
//! the workspace's git metadata is recorded, and after it (when nothing of
//! the command runs any more) it is compared: a new or changed hook (other
//! than `*.sample`), `.git` file, `commondir` or `gitdir` is removed or put
//! back, and a new or changed `config` is put back (or removed when new)
//! when it sets anything outside the safe keys of [`super::gitconfig`].
//! Ordinary git work (objects, index, refs, `git init`, `git remote add`,
//! `git commit`) changes none of this, or only safe keys.
//!
//! The check reads the filesystem's result, so no spelling of the command
//! gets around it. The walk lists folders only (the kind of each entry
//! comes from `readdir`, no `stat` per file) and never enters
//! `.git/objects`, `.git/refs` or `.git/logs`. Writes back go through
//! folder handles opened without following symlinks, so a planted symlink
//! cannot redirect them outside the workspace.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::gitconfig;

mod handles;

use handles::{Reach, put_back, remove};

/// Files larger than this are recorded by size and time, not content.
const MAX_CONTENT: u64 = 1024 * 1024;

/// What a watched path is to git.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// `config` or `config.worktree` of a git folder.
    Config,
    /// A hook (or the `hooks` folder itself when it is a symlink).
    Hook,
    /// A `.git` file or symlink, `commondir`, `gitdir`.
    Pointer,
}

/// What was at a watched path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    File {
        content: Vec<u8>,
        mode: u32,
    },
    Big {
        len: u64,
        mtime: i64,
        ino: u64,
    },
    Link(PathBuf),
    /// A folder or anything else git does not run or follow.
    Other,
    /// Could not be reached to be read (treated as changed).
    Unreachable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    role: Role,
    state: State,
}

/// The git metadata of a workspace at one moment, by path relative to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitMeta {
    items: BTreeMap<PathBuf, Item>,
    /// Folders listed (for the benchmark).
    pub folders: usize,
}

impl GitMeta {
    /// How many paths are watched.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing is watched (no git metadata in the workspace).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// Record the git metadata of `workspace` (canonical).
pub fn scan(workspace: &Path) -> GitMeta {
    let mut meta = GitMeta::default();
    // Each folder with whether it lies under a git folder's `modules/` or
    // `worktrees/` (every folder there is treated as a git folder: git
    // makes them one later, say on `git submodule update`).
    let mut stack = vec![(PathBuf::new(), false)];
    while let Some((rel, nested)) = stack.pop() {
        let Ok(at) = Reach::new(workspace, &rel) else {
            continue;
        };
        let Ok(read) = std::fs::read_dir(&at.path) else {
            continue;
        };
        meta.folders += 1;
        let entries: Vec<(OsString, std::fs::FileType)> = read
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
            .collect();
        let named = |n: &str, dir: bool| {
            entries
                .iter()
                .any(|(name, t)| name == n && t.is_dir() == dir && !t.is_symlink())
        };
        let dot_git = rel.file_name() == Some(OsStr::new(".git"));
        let git_dir = dot_git
            || nested
            || (named("HEAD", false)
                && ((named("objects", true) && named("refs", true)) || named("commondir", false)));
        for (name, kind) in &entries {
            let path = rel.join(name);
            let real_dir = kind.is_dir() && !kind.is_symlink();
            let text = name.to_str().unwrap_or("");
            if text == ".git" && !real_dir {
                meta.watch(workspace, path, Role::Pointer);
            } else if git_dir && matches!(text, "config" | "config.worktree") {
                meta.watch(workspace, path, Role::Config);
            } else if git_dir && matches!(text, "commondir" | "gitdir") {
                meta.watch(workspace, path, Role::Pointer);
            } else if git_dir && text == "hooks" {
                if real_dir {
                    meta.watch_hooks(workspace, &path);
                } else {
                    meta.watch(workspace, path, Role::Hook);
                }
            } else if real_dir && !(git_dir && matches!(text, "objects" | "refs" | "logs")) {
                let below = nested || (git_dir && matches!(text, "modules" | "worktrees"));
                stack.push((path, below));
            }
        }
    }
    meta
}

impl GitMeta {
    fn watch(&mut self, workspace: &Path, rel: PathBuf, role: Role) {
        let state = match Reach::new(workspace, &rel) {
            Ok(at) => read_state(&at.path),
            Err(_) => State::Unreachable,
        };
        self.items.insert(rel, Item { role, state });
    }

    fn watch_hooks(&mut self, workspace: &Path, rel: &Path) {
        let Ok(at) = Reach::new(workspace, rel) else {
            return;
        };
        let Ok(read) = std::fs::read_dir(&at.path) else {
            return;
        };
        for e in read.flatten() {
            let name = e.file_name();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir && !name.as_bytes().ends_with(b".sample") {
                self.watch(workspace, rel.join(name), Role::Hook);
            }
        }
    }
}

fn read_state(path: &Path) -> State {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return State::Other;
    };
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path).map_or(State::Other, State::Link);
    }
    if !meta.is_file() {
        return State::Other;
    }
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let Ok(file) = opened else {
        return State::Other;
    };
    let Ok(m) = file.metadata() else {
        return State::Other;
    };
    if m.len() > MAX_CONTENT || !m.is_file() {
        return State::Big {
            len: m.len(),
            mtime: m.mtime(),
            ino: m.ino(),
        };
    }
    let mut content = Vec::new();
    if file
        .take(MAX_CONTENT + 1)
        .read_to_end(&mut content)
        .is_err()
    {
        return State::Other;
    }
    State::File {
        content,
        mode: m.mode() & 0o7777,
    }
}

/// Compare the workspace with `before` and undo what a command may not
/// change; the answer is one line for the observation, `None` when nothing
/// had to be undone.
pub fn restore(workspace: &Path, before: &GitMeta) -> Option<String> {
    let after = scan(workspace);
    let mut done = Vec::new();
    for (rel, item) in &after.items {
        let old = before.items.get(rel);
        if old.map(|o| &o.state) == Some(&item.state) || item.state == State::Other {
            continue;
        }
        let why = match item.role {
            Role::Config => match config_problem(old.map(|o| &o.state), &item.state) {
                Some(why) => why,
                None => continue,
            },
            Role::Hook => "a hook".to_string(),
            Role::Pointer => "a pointer to another git folder".to_string(),
        };
        let verb = match old.map(|o| &o.state) {
            Some(state @ (State::File { .. } | State::Link(_))) => {
                match put_back(workspace, rel, state) {
                    Ok(()) => "put back",
                    Err(e) => {
                        done.push(format!(
                            "{} ({why}) could NOT be put back: {e}",
                            rel.display()
                        ));
                        continue;
                    }
                }
            }
            _ => match remove(workspace, rel) {
                Ok(()) => "removed",
                Err(e) => {
                    done.push(format!(
                        "{} ({why}) could NOT be removed: {e}",
                        rel.display()
                    ));
                    continue;
                }
            },
        };
        done.push(format!("{verb} {} ({why})", shown(rel)));
    }
    if done.is_empty() {
        return None;
    }
    let shown: Vec<&str> = done.iter().take(8).map(String::as_str).collect();
    let more = done.len().saturating_sub(shown.len());
    let more = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    Some(format!(
        "[sandbox: commands may not plant git metadata that runs code on the host: {}{more}]",
        shown.join("; ")
    ))
}

/// `rel` for a message: its middle cut when it is long.
fn shown(rel: &Path) -> String {
    let text = rel.display().to_string();
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 160 {
        return text;
    }
    let head: String = chars[..60].iter().collect();
    let tail: String = chars[chars.len() - 80..].iter().collect();
    format!("{head}…{tail}")
}

/// Why a new or changed config must go, or `None` when it only sets safe
/// keys (or keys it already had).
fn config_problem(old: Option<&State>, new: &State) -> Option<String> {
    let State::File { content, .. } = new else {
        return Some("a config that is not a plain file".into());
    };
    let old_text = match old {
        Some(State::File { content, .. }) => std::str::from_utf8(content).ok(),
        _ => None,
    };
    let Ok(new_text) = std::str::from_utf8(content) else {
        return Some("a config git could read differently".into());
    };
    match gitconfig::unsafe_additions(old_text, new_text) {
        Some(names) if names.is_empty() => None,
        Some(names) => Some(format!("it set {}", names.join(", "))),
        None => Some("a config git could read differently".into()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::ffi::CString;
    use std::fs::File;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use super::*;

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = std::fs::canonicalize(dir.path()).unwrap();
        for d in [
            ".git/objects",
            ".git/refs/heads",
            ".git/hooks",
            "sub/.git/objects",
            "sub/.git/hooks",
            "src",
        ] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        for f in [".git/HEAD", "sub/.git/HEAD"] {
            std::fs::write(p.join(f), "ref: refs/heads/main\n").unwrap();
        }
        std::fs::write(p.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(p.join("sub/.git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(p.join(".git/hooks/pre-commit.sample"), "x").unwrap();
        (dir, p)
    }

    #[test]
    fn planted_metadata_is_undone_and_safe_changes_stay() {
        let (_d, p) = ws();
        let before = scan(&p);
        std::fs::write(
            p.join("sub/.git/config"),
            "[core]\n\tbare = false\n\tfsmonitor = evil\n",
        )
        .unwrap();
        std::fs::write(p.join("sub/.git/hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::create_dir_all(p.join("src/deep/.git/objects")).unwrap();
        std::fs::write(p.join("src/deep/.git/config"), "[alias]\n\tx = !evil\n").unwrap();
        std::fs::create_dir_all(p.join("src/gitlink")).unwrap();
        std::fs::write(p.join("src/gitlink/.git"), "gitdir: /tmp/x\n").unwrap();
        std::fs::write(p.join(".git/commondir"), "/tmp/y\n").unwrap();
        std::fs::create_dir_all(p.join(".git/modules/m")).unwrap();
        std::fs::write(p.join(".git/modules/m/config"), "[core]\n\tworktree = /\n").unwrap();
        std::fs::create_dir_all(p.join(".git/worktrees/w")).unwrap();
        std::fs::write(p.join(".git/worktrees/w/gitdir"), "/tmp/w/.git\n").unwrap();
        // Safe: a remote, a new sample hook, a plain new repository.
        std::fs::write(
            p.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"o\"]\n\turl = /srv/r\n",
        )
        .unwrap();
        std::fs::write(p.join(".git/hooks/commit-msg.sample"), "x").unwrap();
        std::fs::create_dir_all(p.join("fresh/.git/objects")).unwrap();
        std::fs::write(
            p.join("fresh/.git/config"),
            "[core]\n\trepositoryformatversion = 0\n",
        )
        .unwrap();

        let line = restore(&p, &before).unwrap();
        assert!(line.contains("core.fsmonitor"), "{line}");
        assert_eq!(
            std::fs::read_to_string(p.join("sub/.git/config")).unwrap(),
            "[core]\n\tbare = false\n"
        );
        assert!(!p.join("sub/.git/hooks/post-checkout").exists());
        assert!(!p.join("src/deep/.git/config").exists());
        assert!(!p.join("src/gitlink/.git").exists());
        assert!(!p.join(".git/commondir").exists());
        assert!(!p.join(".git/modules/m/config").exists());
        assert!(!p.join(".git/worktrees/w/gitdir").exists());
        assert!(
            std::fs::read_to_string(p.join(".git/config"))
                .unwrap()
                .contains("/srv/r")
        );
        assert!(p.join(".git/hooks/commit-msg.sample").exists());
        assert!(p.join("fresh/.git/config").exists());
        // Nothing left to undo.
        assert_eq!(restore(&p, &scan(&p)), None);
    }

    /// Make `rel` (longer than a path may be) under `root`, folder by
    /// folder through handles; a handle of the last one.
    fn deep_dirs(root: &Path, parts: &[String]) -> OwnedFd {
        let mut dir = OwnedFd::from(File::open(root).unwrap());
        for part in parts {
            let name = CString::new(part.as_str()).unwrap();
            // SAFETY: mkdirat/openat with a NUL-terminated name.
            unsafe {
                libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o755);
                let fd = libc::openat(
                    dir.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                );
                assert!(fd >= 0, "{}", std::io::Error::last_os_error());
                dir = OwnedFd::from_raw_fd(fd);
            }
        }
        dir
    }

    #[test]
    fn metadata_deeper_than_a_path_may_be_long_is_found_and_undone() {
        let (_d, p) = ws();
        let mut parts: Vec<String> = (0..25).map(|i| format!("{i:0>200}")).collect();
        let before = scan(&p);
        parts.push(".git".into());
        let git = deep_dirs(&p, &parts);
        for (name, content) in [
            ("HEAD", "ref: refs/heads/x\n"),
            ("config", "[core]\n\tfsmonitor = evil\n"),
        ] {
            let path = format!("/proc/self/fd/{}/{name}", git.as_raw_fd());
            std::fs::write(path, content).unwrap();
        }
        let rel: PathBuf = parts.iter().collect::<PathBuf>().join("config");
        assert!(p.join(&rel).as_os_str().len() > 4096);
        let line = restore(&p, &before).unwrap();
        assert!(line.contains("core.fsmonitor"), "{line}");
        assert!(line.len() < 600, "{line}");
        let left = format!("/proc/self/fd/{}/config", git.as_raw_fd());
        assert!(!Path::new(&left).exists());
    }

    #[test]
    fn bare_repositories_are_found_and_lookalike_folders_left_alone() {
        let (_d, p) = ws();
        for d in ["b.git/objects", "b.git/refs", "proj/objects"] {
            std::fs::create_dir_all(p.join(d)).unwrap();
        }
        std::fs::write(p.join("b.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(p.join("proj/HEAD"), "a project file\n").unwrap();
        let before = scan(&p);
        std::fs::write(p.join("b.git/config"), "[core]\n\tpager = evil\n").unwrap();
        std::fs::write(p.join("proj/config"), "anything = at all\n").unwrap();
        let line = restore(&p, &before).unwrap();
        assert!(line.contains("b.git/config (it set core.pager)"), "{line}");
        assert!(!p.join("b.git/config").exists());
        assert!(!line.contains("proj"), "{line}");
        assert!(p.join("proj/config").exists());
    }

    #[test]
    fn a_symlinked_folder_cannot_redirect_the_undo() {
        let (_d, p) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join(".git/hooks")).unwrap();
        let before = scan(&p);
        std::fs::write(p.join("sub/.git/hooks/pre-push"), "evil").unwrap();
        let after_plant = scan(&p);
        // The folder is swapped for a symlink after the scan found the hook.
        std::fs::rename(p.join("sub"), p.join("sub-moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), p.join("sub")).unwrap();
        std::fs::write(outside.path().join(".git/hooks/pre-push"), "victim").unwrap();
        let e = remove(&p, Path::new("sub/.git/hooks/pre-push")).unwrap_err();
        assert!(
            matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join(".git/hooks/pre-push")).unwrap(),
            "victim"
        );
        assert!(after_plant.len() > before.len());
    }
}
