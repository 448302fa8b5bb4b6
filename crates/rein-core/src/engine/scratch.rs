//! Scratch copies of the workspace, where the candidates lever tries an
//! alternative fix and its check (see `engine/run/candidates.rs`).
//!
//! Steps:
//! 1. [`sweep`] removes the copies of rein processes that are gone (a
//!    crash or a kill mid-candidate leaves its copy behind).
//! 2. [`Scratch::copy`] copies the workspace into a new folder of rein's
//!    own state (never inside the workspace): files with their modes,
//!    folders, and only the symbolic links that stay inside the
//!    workspace; `.git` is left out; a workspace over [`MAX_BYTES`] or
//!    [`MAX_ENTRIES`] is not copied.
//! 3. [`check_files_differ`] compares the check's own files of the copy
//!    with the workspace's, so a candidate cannot pass by changing them.
//! 4. Dropping a [`Scratch`] removes its folder (a cancelled run's
//!    future is dropped, and the copy with it).
//!
//! The workspace may be an attacker's: a link pointing out of it is not
//! copied, and nothing here follows a link.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::coach::candidates::is_check_file;

/// Most bytes of files a workspace may have to be copied.
pub(crate) const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Most files, folders and links a workspace may have to be copied.
pub(crate) const MAX_ENTRIES: usize = 20_000;
/// How a copy's folder name starts (then the process id).
const PREFIX: &str = "candidate-";

/// One scratch copy of the workspace; removed when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    /// The copy's own folder (removed on drop).
    dir: PathBuf,
    /// The copied workspace inside it, canonical.
    pub workspace: PathBuf,
}

/// Why a workspace was not copied.
#[derive(Debug)]
pub(crate) enum CopyError {
    TooBig,
    Io(io::Error),
}

impl std::fmt::Display for CopyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyError::TooBig => write!(
                f,
                "the workspace is over {} MiB or {MAX_ENTRIES} entries",
                MAX_BYTES / (1024 * 1024)
            ),
            CopyError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for CopyError {
    fn from(e: io::Error) -> Self {
        CopyError::Io(e)
    }
}

impl Scratch {
    /// Copy `workspace` (canonical) into a new folder under `root`.
    pub fn copy(root: &Path, workspace: &Path) -> Result<Scratch, CopyError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        fs::create_dir_all(root)?;
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("{PREFIX}{}-{n}", std::process::id()));
        create_private_dir(&dir)?;
        // From here the folder is removed on any early return.
        let mut scratch = Scratch {
            workspace: dir.join("workspace"),
            dir,
        };
        fs::create_dir(&scratch.workspace)?;
        let mut budget = Budget::default();
        copy_tree(workspace, workspace, &scratch.workspace, &mut budget)?;
        scratch.workspace = scratch.workspace.canonicalize()?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A folder only this user may enter.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// What a copy may still take.
#[derive(Default)]
struct Budget {
    bytes: u64,
    entries: usize,
}

impl Budget {
    fn take(&mut self, bytes: u64) -> Result<(), CopyError> {
        self.bytes = self.bytes.saturating_add(bytes);
        self.entries += 1;
        match self.bytes > MAX_BYTES || self.entries > MAX_ENTRIES {
            true => Err(CopyError::TooBig),
            false => Ok(()),
        }
    }
}

/// Copy the folder `from` (inside `top`, the workspace) into `to`.
fn copy_tree(top: &Path, from: &Path, to: &Path, budget: &mut Budget) -> Result<(), CopyError> {
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        // The entry itself, never what a link points to.
        let meta = fs::symlink_metadata(&src)?;
        budget.take(meta.len())?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&src)?;
            if stays_inside(top, &src, &target) {
                #[cfg(unix)]
                std::os::unix::fs::symlink(&target, &dst)?;
            }
        } else if meta.is_dir() {
            fs::create_dir(&dst)?;
            copy_tree(top, &src, &dst, budget)?;
        } else if meta.is_file() {
            fs::copy(&src, &dst)?;
        }
        // Sockets, fifos and devices are not copied.
    }
    Ok(())
}

/// Whether the link at `link` (inside `top`) pointing to `target` stays
/// inside `top` by its words alone: relative, and never climbing above
/// `top`. An absolute link would point at the real workspace (or
/// anywhere) from the copy.
pub(crate) fn stays_inside(top: &Path, link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let Ok(rel) = link.parent().unwrap_or(top).strip_prefix(top) else {
        return false;
    };
    let mut depth = rel.components().count() as i64;
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// Remove the copies under `root` whose rein process is gone.
pub(crate) fn sweep(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The first of the check's own files (see [`is_check_file`]) that the
/// copy `scratch` has otherwise than `workspace` (changed, removed or
/// added), if any.
pub(crate) fn check_files_differ(
    workspace: &Path,
    scratch: &Path,
    command: &str,
) -> Option<PathBuf> {
    let mut files = Vec::new();
    for top in [workspace, scratch] {
        list_files(top, top, command, &mut files);
    }
    files.sort();
    files.dedup();
    files.into_iter().find(|rel| {
        let (a, b) = (workspace.join(rel), scratch.join(rel));
        !same_entry(&a, &b)
    })
}

/// The check's own files under `dir` (relative to `top`), links included.
fn list_files(top: &Path, dir: &Path, command: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name() == ".git" || out.len() > MAX_ENTRIES {
            continue;
        }
        let Ok(rel) = path.strip_prefix(top) else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            list_files(top, &path, command, out);
        } else if is_check_file(rel, command) {
            out.push(rel.to_path_buf());
        }
    }
}

/// Whether `a` and `b` are the same kind of entry with the same content
/// (a link: the same target; a file: the same bytes), or both missing.
fn same_entry(a: &Path, b: &Path) -> bool {
    match (fs::symlink_metadata(a), fs::symlink_metadata(b)) {
        (Err(_), Err(_)) => true,
        (Ok(ma), Ok(mb)) if ma.file_type().is_symlink() && mb.file_type().is_symlink() => {
            fs::read_link(a).ok() == fs::read_link(b).ok()
        }
        (Ok(ma), Ok(mb)) if ma.is_file() && mb.is_file() => {
            ma.len() == mb.len() && fs::read(a).ok() == fs::read(b).ok()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rein-scratch-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir.canonicalize().unwrap()
    }

    #[test]
    fn links_that_climb_out_or_are_absolute_do_not_stay_inside() {
        let top = Path::new("/w");
        let at = |p: &str| top.join(p);
        assert!(stays_inside(top, &at("a"), Path::new("b")));
        assert!(stays_inside(top, &at("d/a"), Path::new("../b")));
        assert!(!stays_inside(top, &at("a"), Path::new("../outside")));
        assert!(!stays_inside(top, &at("d/a"), Path::new("x/../../../etc")));
        assert!(!stays_inside(top, &at("a"), Path::new("/etc/passwd")));
        assert!(
            !stays_inside(top, &at("a"), Path::new("/w/b")),
            "absolute, even inside"
        );
    }

    #[test]
    fn a_copy_has_the_files_but_no_link_out_and_no_git_and_goes_when_dropped() {
        let base = temp("copy");
        let (ws, root, outside) = (base.join("ws"), base.join("state"), base.join("outside"));
        fs::create_dir_all(ws.join("src/.git")).unwrap();
        fs::create_dir_all(ws.join(".git")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(ws.join("src/calc.py"), "x = 1\n").unwrap();
        fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        std::os::unix::fs::symlink("src/calc.py", ws.join("inside")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("out_abs")).unwrap();
        std::os::unix::fs::symlink("../outside", ws.join("out_rel")).unwrap();
        let scratch = Scratch::copy(&root, &ws).unwrap();
        let copy = scratch.workspace.clone();
        assert!(copy.starts_with(root.canonicalize().unwrap()));
        assert_eq!(fs::read_to_string(copy.join("inside")).unwrap(), "x = 1\n");
        assert!(!copy.join(".git").exists() && !copy.join("src/.git").exists());
        assert!(fs::symlink_metadata(copy.join("out_abs")).is_err());
        assert!(fs::symlink_metadata(copy.join("out_rel")).is_err());
        drop(scratch);
        assert_eq!(fs::read_dir(&root).unwrap().count(), 0, "dropped, removed");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_sweep_removes_copies_of_gone_processes_only() {
        let root = temp("sweep");
        // Pids are below 2^22 on Linux: this one is not running.
        let gone = root.join(format!("{PREFIX}4194303-0"));
        let mine = root.join(format!("{PREFIX}{}-7", std::process::id()));
        let other = root.join("not-a-copy");
        for d in [&gone, &mine, &other] {
            fs::create_dir_all(d.join("workspace")).unwrap();
        }
        sweep(&root);
        assert!(!gone.exists(), "a gone process's copy is removed");
        assert!(mine.exists() && other.exists());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_check_files_must_match_changed_removed_or_added() {
        let base = temp("differ");
        let (ws, copy) = (base.join("ws"), base.join("copy"));
        for d in [&ws, &copy] {
            fs::create_dir_all(d.join("tests")).unwrap();
            fs::write(d.join("calc.py"), "x = 1\n").unwrap();
            fs::write(d.join("test_calc.py"), "assert True\n").unwrap();
        }
        let cmd = "python3 test_calc.py";
        assert_eq!(check_files_differ(&ws, &copy, cmd), None);
        fs::write(copy.join("calc.py"), "x = 2\n").unwrap();
        assert_eq!(check_files_differ(&ws, &copy, cmd), None, "code may change");
        fs::write(copy.join("test_calc.py"), "pass\n").unwrap();
        assert_eq!(
            check_files_differ(&ws, &copy, cmd),
            Some("test_calc.py".into())
        );
        fs::remove_file(copy.join("test_calc.py")).unwrap();
        assert_eq!(
            check_files_differ(&ws, &copy, cmd),
            Some("test_calc.py".into())
        );
        fs::write(copy.join("test_calc.py"), "assert True\n").unwrap();
        fs::write(copy.join("tests/conftest.py"), "import sys\n").unwrap();
        assert_eq!(
            check_files_differ(&ws, &copy, cmd),
            Some("tests/conftest.py".into()),
            "an added file the check may load"
        );
        fs::remove_dir_all(&base).unwrap();
    }
}
