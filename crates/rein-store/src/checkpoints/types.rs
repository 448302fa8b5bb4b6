//! The public values of the checkpoint store and the parsing of what git
//! prints about them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::git::{is_object_name, path_of, records};

/// Files bigger than this are not snapshotted unless the options say
/// otherwise: 10 MiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// How a [`Checkpoints`](super::Checkpoints) snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Files over this many bytes are skipped (and named in
    /// [`Checkpoint::skipped`]) rather than copied into the store.
    pub max_file_bytes: u64,
    /// Paths never snapshotted (rein's own state inside the workspace, for
    /// example); relative ones are taken from the workspace. The
    /// checkpoint root is always excluded when it is inside the workspace.
    pub exclude: Vec<PathBuf>,
    /// Most files one snapshot may store anew (a home folder is no
    /// workspace to copy): past it the snapshot fails as too big.
    pub max_new_files: usize,
    /// Most bytes one snapshot may store anew.
    pub max_new_bytes: u64,
}

/// Files one snapshot stores anew at most, by default.
pub const DEFAULT_MAX_NEW_FILES: usize = 100_000;
/// Bytes one snapshot stores anew at most, by default: 1 GiB.
pub const DEFAULT_MAX_NEW_BYTES: u64 = 1024 * 1024 * 1024;

impl Default for CheckpointOptions {
    fn default() -> Self {
        CheckpointOptions {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            exclude: Vec::new(),
            max_new_files: DEFAULT_MAX_NEW_FILES,
            max_new_bytes: DEFAULT_MAX_NEW_BYTES,
        }
    }
}

/// One recorded state of the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The commit in the shadow repository: what to restore to.
    pub id: String,
    /// Its tree: equal trees mean equal workspaces.
    pub tree: String,
    /// When it was taken, in milliseconds since the Unix epoch.
    pub at_millis: u64,
    /// What the caller called it (the turn it precedes, say).
    pub label: String,
    /// Files left out: bigger than the size cap, or git repositories
    /// nested in the workspace. Restoring leaves them as they are.
    #[serde(default)]
    pub skipped: Vec<PathBuf>,
}

/// What a path is, as git records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileMode {
    Regular,
    Executable,
    Symlink,
    /// A nested repository's commit (never created by rein's snapshots).
    Submodule,
}

impl FileMode {
    fn from_git(mode: u32) -> Option<FileMode> {
        match mode {
            0o100644 => Some(FileMode::Regular),
            0o100755 => Some(FileMode::Executable),
            0o120000 => Some(FileMode::Symlink),
            0o160000 => Some(FileMode::Submodule),
            _ => None,
        }
    }
}

/// How one path differs between two states. A rename is a deletion plus
/// an addition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Deleted,
    /// The content changed (the execute bit may have changed too).
    Modified,
    /// Only the execute bit changed.
    ModeChanged,
    /// A file became a symbolic link or the other way round.
    TypeChanged,
}

/// One changed path, relative to the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: PathBuf,
    pub kind: ChangeKind,
    /// None when the path did not exist before.
    pub old_mode: Option<FileMode>,
    /// None when the path does not exist after.
    pub new_mode: Option<FileMode>,
}

impl FileChange {
    /// Whether the execute bit differs (both sides regular files).
    pub fn executable_changed(&self) -> bool {
        matches!(
            (self.old_mode, self.new_mode),
            (Some(FileMode::Regular), Some(FileMode::Executable))
                | (Some(FileMode::Executable), Some(FileMode::Regular))
        )
    }
}

/// What a restore must not overwrite unless forced: files changed outside
/// rein.
#[derive(Debug, Clone, Copy, Default)]
pub struct RestoreGuard<'a> {
    /// rein's latest checkpoint: a file that differs from it now was
    /// changed outside rein since.
    pub unchanged_since: Option<&'a Checkpoint>,
    /// Files (relative to the workspace) known to have changed outside
    /// rein earlier, while a run went on: refused when the restore would
    /// change them.
    pub changed_outside: &'a [PathBuf],
}

/// What [`Checkpoints::restore`](super::Checkpoints::restore) did, so the caller can say it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Files (and links) written: recreated, rewritten or mode-changed.
    pub written: Vec<PathBuf>,
    /// Files (and links) removed because the checkpoint did not have them.
    pub deleted: Vec<PathBuf>,
    /// Paths the checkpoint wanted changed but that were not rein's to
    /// touch: something not in the current snapshot is there (an ignored
    /// or too big file, a folder), or a folder on the way is a link.
    pub left_alone: Vec<PathBuf>,
    /// The workspace just before the restore, recorded as a checkpoint:
    /// restoring it undoes the restore.
    pub before: Checkpoint,
}

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The `git` program could not be started.
    #[error(
        "the workspace is too big to checkpoint: {files} files and {} MiB to store at once \
         (at most {max_files} files and {} MiB); rewind is off for it (`checkpoints = false` stops \
         trying)",
        bytes / (1024 * 1024),
        max_bytes / (1024 * 1024)
    )]
    TooBig {
        files: usize,
        bytes: u64,
        max_files: usize,
        max_bytes: u64,
    },
    #[error("checkpoints need the `git` program: {0}")]
    GitMissing(#[source] std::io::Error),
    /// A git command failed.
    #[error("`git {command}` failed ({status}): {stderr}")]
    Git {
        command: String,
        status: String,
        stderr: String,
    },
    /// Another process holds a lock of the shadow repository.
    #[error("the checkpoint store is busy (another rein on this workspace?): {0}")]
    Busy(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The shadow repository for this path records another workspace (a
    /// hash collision, or a copied store).
    #[error(
        "the checkpoint store {} belongs to workspace {}, not {}",
        shadow.display(),
        found.display(),
        expected.display()
    )]
    WorkspaceMismatch {
        shadow: PathBuf,
        expected: PathBuf,
        found: PathBuf,
    },
    /// Files changed by something other than rein (since the last
    /// checkpoint, or during a run); restoring would lose those changes
    /// (pass `force` to do it).
    #[error(
        "{} file(s) changed outside rein (since its last checkpoint, or during a run): {}",
        files.len(),
        list(files)
    )]
    ChangedOutside { files: Vec<PathBuf> },
    /// The id or tree names nothing in the shadow repository.
    #[error("no checkpoint {0} in this workspace's store")]
    UnknownCheckpoint(String),
    /// A stored path would leave the workspace or reach a `.git` folder.
    #[error("refusing the path {}: {reason}", path.display())]
    UnsafePath { path: PathBuf, reason: &'static str },
    /// Git answered something this module does not understand.
    #[error("unexpected answer from git: {0}")]
    Parse(String),
}

fn list(files: &[PathBuf]) -> String {
    let shown: Vec<String> = files
        .iter()
        .take(10)
        .map(|f| f.display().to_string())
        .collect();
    let more = files.len().saturating_sub(shown.len());
    match more {
        0 => shown.join(", "),
        n => format!("{} and {n} more", shown.join(", ")),
    }
}

/// One line of `git diff-tree --raw`: modes as numbers (None: absent),
/// object names, the path as git printed it.
#[derive(Debug, Clone)]
pub(super) struct RawChange {
    pub(super) old_mode: Option<u32>,
    pub(super) new_mode: Option<u32>,
    pub(super) old_sha: String,
    pub(super) new_sha: String,
    pub(super) status: u8,
    pub(super) path: Vec<u8>,
}

/// The key of the metadata line in a checkpoint commit's message.
pub(super) const META_KEY: &str = "rein-checkpoint: ";

/// What a checkpoint commit's message carries besides its subject.
#[derive(Serialize, Deserialize)]
pub(super) struct Meta {
    pub(super) label: String,
    pub(super) at_millis: u64,
    #[serde(default)]
    pub(super) skipped: Vec<String>,
}

pub(super) fn parse_checkpoint(
    id: &str,
    tree: &str,
    message: &str,
) -> Result<Checkpoint, CheckpointError> {
    let meta = message
        .lines()
        .find_map(|l| l.strip_prefix(META_KEY))
        .and_then(|json| serde_json::from_str::<Meta>(json).ok())
        .ok_or_else(|| CheckpointError::UnknownCheckpoint(id.to_string()))?;
    let tree = tree.trim();
    if !is_object_name(tree) {
        return Err(CheckpointError::Parse(format!("tree {tree:?} of {id}")));
    }
    Ok(Checkpoint {
        id: id.to_string(),
        tree: tree.to_string(),
        at_millis: meta.at_millis,
        label: meta.label,
        skipped: meta.skipped.into_iter().map(PathBuf::from).collect(),
    })
}

/// Parse `diff-tree -r -z --raw` output: `:<old mode> <new mode> <old sha>
/// <new sha> <status>` then the path, each NUL-terminated.
pub(super) fn parse_raw(out: &[u8]) -> Result<Vec<RawChange>, CheckpointError> {
    let mut changes = Vec::new();
    let mut fields = records(out);
    while let Some(header) = fields.next() {
        let bad = || CheckpointError::Parse(format!("diff-tree: {}", lossy(header)));
        let text = std::str::from_utf8(header).map_err(|_| bad())?;
        let parts: Vec<&str> = text.trim_start_matches(':').split(' ').collect();
        let [old_mode, new_mode, old_sha, new_sha, status] = parts[..] else {
            return Err(bad());
        };
        let mode = |m: &str| -> Result<Option<u32>, CheckpointError> {
            let n = u32::from_str_radix(m, 8).map_err(|_| bad())?;
            Ok((n != 0).then_some(n))
        };
        let path = fields.next().ok_or_else(bad)?;
        changes.push(RawChange {
            old_mode: mode(old_mode)?,
            new_mode: mode(new_mode)?,
            old_sha: old_sha.to_string(),
            new_sha: new_sha.to_string(),
            status: status.bytes().next().ok_or_else(bad)?,
            path: path.to_vec(),
        });
    }
    Ok(changes)
}

pub(super) fn public_change(raw: &RawChange) -> FileChange {
    let old_mode = raw.old_mode.and_then(FileMode::from_git);
    let new_mode = raw.new_mode.and_then(FileMode::from_git);
    let kind = match raw.status {
        b'A' => ChangeKind::Added,
        b'D' => ChangeKind::Deleted,
        b'T' => ChangeKind::TypeChanged,
        _ if raw.old_sha == raw.new_sha => ChangeKind::ModeChanged,
        _ => ChangeKind::Modified,
    };
    FileChange {
        path: path_of(&raw.path),
        kind,
        old_mode,
        new_mode,
    }
}

pub(super) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn raw_diff_lines_parse_into_modes_names_and_paths() {
        let a = "a".repeat(40);
        let z = "0".repeat(40);
        let out = format!(":100644 100755 {a} {a} M\0run.sh\0:000000 120000 {z} {a} A\0dir/link\0");
        let got = parse_raw(out.as_bytes()).unwrap();
        assert_eq!(got.len(), 2);
        let first = public_change(&got[0]);
        assert_eq!(first.kind, ChangeKind::ModeChanged);
        assert!(first.executable_changed());
        let second = public_change(&got[1]);
        assert_eq!(second.kind, ChangeKind::Added);
        assert_eq!(second.old_mode, None);
        assert_eq!(second.new_mode, Some(FileMode::Symlink));
        assert_eq!(second.path, PathBuf::from("dir/link"));
    }

    #[test]
    fn long_lists_of_files_are_shortened_in_messages() {
        let files: Vec<PathBuf> = (0..12).map(|i| PathBuf::from(format!("f{i}"))).collect();
        let text = list(&files);
        assert!(text.ends_with("and 2 more"), "{text}");
    }
}
