//! Which files a run changed that rein did not write: changed between the
//! checkpoint before the run and the one after it, written by none of its
//! calls, and last changed while none of its commands ran. They were
//! changed by someone else during the run (the user in an editor, say):
//! rewind names them as changed outside rein and asks before it
//! overwrites them.
//!
//! A file's last change is the later of its content and status change
//! times (a command that renames a file or flips its execute bit moves
//! only the second, and no command can set that one back), and for a
//! file that is gone, that of the nearest folder still there (a deletion
//! changes its folder).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rein_core::rewind::RunWrites;
use rein_store::checkpoints::FileChange;

/// The paths of `changes` (relative to the workspace `work`, its
/// canonical path) that the run described by `writes` did not write.
pub(super) fn not_written(work: &Path, changes: &[FileChange], writes: &RunWrites) -> Vec<String> {
    let resolved = RunWrites {
        paths: writes.paths.iter().map(|p| resolve_folders(p)).collect(),
        exec_windows: writes.exec_windows.clone(),
    };
    changes
        .iter()
        .filter(|c| !resolved.may_have_written(&work.join(&c.path), changed_at(work, &c.path)))
        .map(|c| c.path.to_string_lossy().into_owned())
        .collect()
}

/// `path` with the folders on its way resolved (as the workspace's own
/// path is); the last part, which may be gone or a link, as it is.
fn resolve_folders(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut dir = path;
    while let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) {
        rest.push(name);
        if let Ok(real) = std::fs::canonicalize(parent) {
            return rest.iter().rev().fold(real, |p, n| p.join(n));
        }
        dir = parent;
    }
    path.to_path_buf()
}

/// When `rel` (inside `work`) last changed; see the module documentation.
fn changed_at(work: &Path, rel: &Path) -> Option<SystemTime> {
    let mut at = work.join(rel);
    loop {
        if let Ok(meta) = std::fs::symlink_metadata(&at) {
            return last_change(&meta);
        }
        if !at.pop() || !at.starts_with(work) {
            return None;
        }
    }
}

#[cfg(unix)]
fn last_change(meta: &std::fs::Metadata) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let status = u64::try_from(meta.ctime())
        .ok()
        .map(|s| SystemTime::UNIX_EPOCH + std::time::Duration::new(s, meta.ctime_nsec() as u32));
    let content = meta.modified().ok();
    status.max(content)
}

#[cfg(not(unix))]
fn last_change(meta: &std::fs::Metadata) -> Option<SystemTime> {
    meta.modified().ok()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rein_core::rewind::ExecWindow;
    use rein_store::checkpoints::ChangeKind;

    use super::*;

    fn change(path: &str, kind: ChangeKind) -> FileChange {
        FileChange {
            path: PathBuf::from(path),
            kind,
            old_mode: None,
            new_mode: None,
        }
    }

    /// A window of commands from `from` to `to` seconds from now.
    fn window(from: i64, to: i64) -> ExecWindow {
        let at = |s: i64| match s >= 0 {
            true => SystemTime::now() + Duration::from_secs(s as u64),
            false => SystemTime::now() - Duration::from_secs((-s) as u64),
        };
        ExecWindow {
            start: at(from),
            end: at(to),
        }
    }

    #[test]
    fn files_the_calls_wrote_or_that_changed_while_commands_ran_are_the_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let work = std::fs::canonicalize(tmp.path()).unwrap();
        for f in ["by-edit.txt", "by-user.txt", "sub/by-command.txt"] {
            std::fs::create_dir_all(work.join(f).parent().unwrap()).unwrap();
            std::fs::write(work.join(f), "x").unwrap();
        }
        let changes = [
            change("by-edit.txt", ChangeKind::Modified),
            change("by-user.txt", ChangeKind::Added),
            change("sub/by-command.txt", ChangeKind::Added),
        ];
        // The workspace as the engine spelled it: through a link.
        let link = tempfile::tempdir().unwrap();
        let spelled = link.path().join("ws");
        std::os::unix::fs::symlink(&work, &spelled).unwrap();
        let edit_only = RunWrites {
            paths: vec![spelled.join("by-edit.txt")],
            exec_windows: vec![],
        };
        assert_eq!(
            not_written(&work, &changes, &edit_only),
            ["by-user.txt", "sub/by-command.txt"]
        );
        // A command ran just now: everything changed now is the run's.
        let with_command = RunWrites {
            exec_windows: vec![window(-5, 5)],
            ..edit_only.clone()
        };
        assert!(not_written(&work, &changes, &with_command).is_empty());
        // Commands ran earlier in the run, not when these files changed.
        let earlier = RunWrites {
            exec_windows: vec![window(-600, -300)],
            ..edit_only
        };
        assert_eq!(
            not_written(&work, &changes, &earlier),
            ["by-user.txt", "sub/by-command.txt"]
        );
    }

    #[test]
    fn a_deleted_file_takes_the_time_of_the_nearest_folder_still_there() {
        let tmp = tempfile::tempdir().unwrap();
        let work = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(work.join("a")).unwrap();
        let gone = [change("a/b/c/gone.txt", ChangeKind::Deleted)];
        let now = RunWrites {
            paths: vec![],
            exec_windows: vec![window(-5, 5)],
        };
        assert!(not_written(&work, &gone, &now).is_empty());
        let earlier = RunWrites {
            paths: vec![],
            exec_windows: vec![window(-600, -300)],
        };
        assert_eq!(not_written(&work, &gone, &earlier), ["a/b/c/gone.txt"]);
    }
}
