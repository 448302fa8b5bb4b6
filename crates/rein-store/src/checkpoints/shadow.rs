//! Creating the shadow repository and keeping its exclude list.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::git::{Git, bytes_of};
use super::{CheckpointError, WORKSPACE_FILE, io_error};

/// Every path is stored and restored byte for byte.
const ATTRIBUTES: &str = "* -text -eol -crlf -filter -ident -working-tree-encoding\n";

/// Create the shadow repository in a fresh folder beside its place, then
/// rename it there: another process doing the same at the same moment
/// wins or loses whole.
pub(super) fn create_shadow(root: &Path, git: &Git) -> Result<(), CheckpointError> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let name = git
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = root.join(format!(".{name}.{}.{nanos}.init", std::process::id()));
    let fresh = Git {
        dir: tmp.clone(),
        work: git.work.clone(),
    };
    let built = (|| {
        rein_core::private_fs::create_private_dir(&tmp).map_err(|e| io_error(&tmp, e))?;
        fresh.init()?;
        let info = tmp.join("info");
        rein_core::private_fs::create_private_dir(&info).map_err(|e| io_error(&info, e))?;
        write(&info.join("attributes"), ATTRIBUTES.as_bytes())?;
        write(&tmp.join(WORKSPACE_FILE), &bytes_of(&git.work))
    })();
    let placed = built.and_then(|()| match std::fs::rename(&tmp, &git.dir) {
        Ok(()) => Ok(()),
        // Another process made it first: theirs is as good.
        Err(_) if git.dir.join(WORKSPACE_FILE).exists() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => Err(io_error(&git.dir, e)),
    });
    if placed.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    placed
}

/// Write the shadow repository's `info/exclude`: each path of `excluded`
/// inside the workspace, anchored and escaped. Rewritten only when it
/// changes.
pub(super) fn write_excludes(git: &Git, excluded: &[PathBuf]) -> Result<(), CheckpointError> {
    let mut text = String::from("# rein: its own state, never snapshotted\n");
    for path in excluded {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        let Ok(rel) = path.strip_prefix(&git.work) else {
            continue;
        };
        let Some(rel) = rel.to_str().filter(|r| !r.is_empty() && !r.contains('\n')) else {
            continue;
        };
        text.push_str(&ignore_pattern(rel));
        text.push('\n');
    }
    let file = git.dir.join("info").join("exclude");
    if std::fs::read(&file).ok().as_deref() == Some(text.as_bytes()) {
        return Ok(());
    }
    write(&file, text.as_bytes())
}

/// A gitignore line matching exactly the workspace-relative path `rel`.
pub(super) fn ignore_pattern(rel: &str) -> String {
    let mut out = String::from("/");
    let trimmed = rel.trim_end_matches(' ');
    for c in trimmed.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']' | '!' | '#') {
            out.push('\\');
        }
        out.push(c);
    }
    for _ in trimmed.len()..rel.len() {
        out.push_str("\\ ");
    }
    out
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    std::fs::write(path, bytes).map_err(|e| io_error(path, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn ignore_patterns_are_anchored_and_escaped() {
        assert_eq!(ignore_pattern(".rein/state"), "/.rein/state");
        assert_eq!(ignore_pattern("a*[b]?!#"), "/a\\*\\[b\\]\\?\\!\\#");
        assert_eq!(ignore_pattern("x  "), "/x\\ \\ ");
    }
}
