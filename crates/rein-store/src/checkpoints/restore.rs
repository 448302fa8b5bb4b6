//! Making the workspace's files equal to a checkpoint, one path at a time,
//! without ever leaving the workspace.
//!
//! The changes come from `git diff-tree` between the workspace as it is
//! now (just staged) and the checkpoint. Every path is checked before
//! anything is touched (no `..`, no absolute path, no `.git` component);
//! deletions run first (so a file can take the place of a folder), then
//! writes. A folder on the way that is a symbolic link is never followed:
//! the path is left alone. A file is written to a new name beside its
//! place (`O_EXCL`, so never through a link planted there) and renamed over
//! it, which replaces a symbolic link instead of writing through it.
//! Something on disk that is not part of the current snapshot (an ignored
//! file, a file over the size cap, a folder with ignored files in it) is
//! never overwritten: it is reported as left alone.

use std::ffi::OsStr;
use std::io::{ErrorKind, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::CheckpointError;
use super::git::{BlobReader, Git, path_of};
use super::types::RawChange;

/// Git's mode of a symbolic link, an executable file and a submodule link.
const MODE_SYMLINK: u32 = 0o120000;
const MODE_EXECUTABLE: u32 = 0o100755;
const MODE_GITLINK: u32 = 0o160000;

/// What [`apply`] did, by path relative to the workspace.
#[derive(Debug, Default)]
pub(super) struct Applied {
    pub(super) written: Vec<PathBuf>,
    pub(super) deleted: Vec<PathBuf>,
    pub(super) left_alone: Vec<PathBuf>,
}

/// A relative path from git, checked: every component a plain name, none
/// `.git` (the user's repository is never written).
pub(super) fn safe_relative(bytes: &[u8]) -> Result<PathBuf, CheckpointError> {
    let unsafe_path = |reason: &'static str| CheckpointError::UnsafePath {
        path: path_of(bytes),
        reason,
    };
    if bytes.is_empty() {
        return Err(unsafe_path("empty path"));
    }
    if bytes.starts_with(b"/") {
        return Err(unsafe_path("absolute path"));
    }
    for part in bytes.split(|&b| b == b'/') {
        match part {
            b"" => return Err(unsafe_path("empty path component")),
            b"." | b".." => return Err(unsafe_path("`.` or `..` component")),
            p if p.eq_ignore_ascii_case(b".git") => return Err(unsafe_path("`.git` component")),
            _ => {}
        }
    }
    let path = path_of(bytes);
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(unsafe_path("not a plain relative path"));
    }
    Ok(path)
}

/// Apply `changes` (current state → target) to the workspace of `git`.
pub(super) fn apply(git: &Git, changes: &[RawChange]) -> Result<Applied, CheckpointError> {
    let checked: Vec<(PathBuf, &RawChange)> = changes
        .iter()
        .map(|c| safe_relative(&c.path).map(|p| (p, c)))
        .collect::<Result<_, _>>()?;
    let work = git.work.as_path();
    let mut done = Applied::default();

    // Deletions first: what the target does not have, or has as another type.
    for (rel, change) in &checked {
        if change.new_mode.is_some() || change.old_mode == Some(MODE_GITLINK) {
            continue;
        }
        match remove_entry(work, rel)? {
            true => done.deleted.push(rel.clone()),
            false => done.left_alone.push(rel.clone()),
        }
    }

    let mut blobs: Option<BlobReader> = None;
    for (rel, change) in &checked {
        let Some(mode) = change.new_mode else {
            continue;
        };
        if mode == MODE_GITLINK || change.old_mode == Some(MODE_GITLINK) {
            done.left_alone.push(rel.clone());
            continue;
        }
        let Some(parent) = prepare_parents(work, rel)? else {
            done.left_alone.push(rel.clone());
            continue;
        };
        let target = work.join(rel);
        let existing = match std::fs::symlink_metadata(&target) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(source) => return Err(io_error(&target, source)),
        };
        // In the current snapshot (old mode) or nothing there: ours to write.
        let ours = match &existing {
            None => true,
            Some(meta) => change.old_mode.is_some() && !meta.is_dir(),
        };
        if !ours {
            done.left_alone.push(rel.clone());
            continue;
        }
        let reader = match &mut blobs {
            Some(r) => r,
            None => blobs.insert(git.blob_reader()?),
        };
        let bytes = reader.read(&change.new_sha)?;
        write_entry(&parent, &target, &bytes, mode, existing.as_ref())?;
        done.written.push(rel.clone());
    }
    Ok(done)
}

/// Remove the file or link at `rel` and then the folders it leaves empty.
/// False when it is not ours to remove (a folder, or a link on the way).
fn remove_entry(work: &Path, rel: &Path) -> Result<bool, CheckpointError> {
    if !parents_are_real_folders(work, rel)? {
        return Ok(false);
    }
    let target = work.join(rel);
    match std::fs::symlink_metadata(&target) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(true),
        Err(source) => return Err(io_error(&target, source)),
        Ok(meta) if meta.is_dir() => return Ok(false),
        Ok(_) => {}
    }
    match std::fs::remove_file(&target) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(source) => return Err(io_error(&target, source)),
    }
    // Folders emptied by the deletion go too; the first non-empty one stops.
    let mut dir = rel.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if std::fs::remove_dir(work.join(d)).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(true)
}

/// True when every folder on the way to `rel` is a real folder (not a
/// link, not missing).
fn parents_are_real_folders(work: &Path, rel: &Path) -> Result<bool, CheckpointError> {
    let mut dir = work.to_path_buf();
    let Some(parent) = rel.parent() else {
        return Ok(true);
    };
    for part in parent.components() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(false),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(source) => return Err(io_error(&dir, source)),
        }
    }
    Ok(true)
}

/// Create the folders on the way to `rel`, refusing to pass through a
/// symbolic link or a file. The folder to write in, or None when the path
/// is blocked.
fn prepare_parents(work: &Path, rel: &Path) -> Result<Option<PathBuf>, CheckpointError> {
    let mut dir = work.to_path_buf();
    let Some(parent) = rel.parent() else {
        return Ok(Some(dir));
    };
    for part in parent.components() {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    // Created meanwhile: accept it only as a real folder.
                    if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                        return Ok(None);
                    }
                }
                Err(source) => return Err(io_error(&dir, source)),
            },
            Err(source) => return Err(io_error(&dir, source)),
        }
    }
    Ok(Some(dir))
}

/// A fresh name beside the target, unique in this process.
fn temp_name(parent: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".rein-restore.{}.{n}.tmp", std::process::id()))
}

/// Write `bytes` as a file (or link, per git `mode`) at `target`: into a
/// new name in `parent`, then renamed over whatever is at `target`.
fn write_entry(
    parent: &Path,
    target: &Path,
    bytes: &[u8],
    mode: u32,
    existing: Option<&std::fs::Metadata>,
) -> Result<(), CheckpointError> {
    let tmp = temp_name(parent);
    let made = if mode == MODE_SYMLINK {
        make_symlink(bytes, &tmp)
    } else {
        make_file(&tmp, bytes, mode == MODE_EXECUTABLE, existing)
    };
    let placed = made.and_then(|()| std::fs::rename(&tmp, target));
    if let Err(source) = placed {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(target, source));
    }
    Ok(())
}

#[cfg(unix)]
fn make_symlink(bytes: &[u8], at: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    std::os::unix::fs::symlink(OsStr::from_bytes(bytes), at)
}

#[cfg(not(unix))]
fn make_symlink(_bytes: &[u8], _at: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(
        ErrorKind::Unsupported,
        "symbolic links are restored on Unix only",
    ))
}

/// A new file at `at` (never an existing one, never through a link) with
/// `bytes`. Its permissions are those of the file it replaces, else the
/// umask's; the execute bits follow `executable` (set where read is).
fn make_file(
    at: &Path,
    bytes: &[u8],
    executable: bool,
    existing: Option<&std::fs::Metadata>,
) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(at)?;
    file.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let base = match existing {
            Some(meta) if meta.is_file() => meta.permissions().mode(),
            _ => file.metadata()?.permissions().mode(),
        } & 0o7777;
        let mode = if executable {
            base | ((base & 0o444) >> 2)
        } else {
            base & !0o111
        };
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = (executable, existing);
    Ok(())
}

fn io_error(path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn plain_relative_paths_are_accepted() {
        assert_eq!(
            safe_relative(b"src/a b.rs").unwrap(),
            PathBuf::from("src/a b.rs")
        );
        assert_eq!(
            safe_relative(b".github/x").unwrap(),
            PathBuf::from(".github/x")
        );
    }

    #[test]
    fn paths_that_could_leave_the_workspace_or_reach_dot_git_are_refused() {
        for bad in [
            &b""[..],
            b"/etc/passwd",
            b"../x",
            b"a/../../x",
            b"a/./b",
            b"a//b",
            b".git/config",
            b"sub/.GIT/hooks/x",
        ] {
            assert!(
                matches!(safe_relative(bad), Err(CheckpointError::UnsafePath { .. })),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
