//! Copying a plugin folder into `$REIN_HOME/plugins/` without following
//! links out of it, and the digest that pins what was copied.
//!
//! Regular files and folders are copied; a symbolic link is kept as a link
//! when its target is relative and stays inside the plugin, and refused
//! otherwise (absolute, leading out, or dangling), so nothing outside the
//! folder is ever read. `.git` is left behind.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

/// Copy `from` into `to` (which must not exist). The error is one line
/// naming the file.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for rel in entries(from)? {
        let source = from.join(&rel);
        let target = to.join(&rel);
        let meta = source
            .symlink_metadata()
            .map_err(|e| format!("{}: {e}", source.display()))?;
        let done = if meta.file_type().is_symlink() {
            let link = inner_link(from, &rel)?;
            std::os::unix::fs::symlink(link, &target)
        } else if meta.is_dir() {
            std::fs::create_dir(&target)
        } else if meta.is_file() {
            std::fs::copy(&source, &target).map(|_| ())
        } else {
            return Err(format!("{}: not a file, folder or link", source.display()));
        };
        done.map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(())
}

/// The target of the link at `rel` under `root`, when it is relative and
/// stays inside `root`.
fn inner_link(root: &Path, rel: &Path) -> Result<PathBuf, String> {
    let path = root.join(rel);
    let target = std::fs::read_link(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let out = || {
        format!(
            "{}: a link to {} outside the plugin; links must stay inside it",
            path.display(),
            target.display()
        )
    };
    if target.is_absolute() {
        return Err(out());
    }
    // Walk the target from the link's folder without leaving the root.
    let mut depth: Vec<Component> = rel
        .parent()
        .map(|p| p.components().collect())
        .unwrap_or_default();
    for part in target.components() {
        match part {
            Component::ParentDir if depth.pop().is_none() => return Err(out()),
            Component::ParentDir => {}
            Component::Normal(_) => depth.push(part),
            _ => {}
        }
    }
    // And where it really leads, through any links on the way.
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("{}: {e}", root.display()))?;
    match path.canonicalize() {
        Ok(real) if real.starts_with(&real_root) => Ok(target),
        Ok(_) => Err(out()),
        Err(_) => Err(format!(
            "{}: a link to {} that leads nowhere",
            path.display(),
            target.display()
        )),
    }
}

/// Every entry under `root`, relative, parents before children, sorted;
/// links are listed but not entered, `.git` is skipped.
fn entries(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        let full = root.join(&dir);
        let read = std::fs::read_dir(&full).map_err(|e| format!("{}: {e}", full.display()))?;
        let mut names: Vec<_> = read.flatten().map(|e| e.file_name()).collect();
        names.sort();
        for name in names {
            if dir.as_os_str().is_empty() && name == ".git" {
                continue;
            }
            let rel = dir.join(&name);
            let is_dir = root.join(&rel).symlink_metadata().is_ok_and(|m| m.is_dir());
            found.push(rel.clone());
            if is_dir {
                pending.push(rel);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `sha256:HEX` of everything under `root`: each entry's path, kind and
/// content (a link's target), in order.
pub fn digest(root: &Path) -> Result<String, String> {
    let mut hash = Sha256::new();
    for rel in entries(root)? {
        let path = root.join(&rel);
        let meta = path
            .symlink_metadata()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        hash.update(rel.to_string_lossy().as_bytes());
        hash.update([0]);
        if meta.file_type().is_symlink() {
            let target =
                std::fs::read_link(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            hash.update(b"link\0");
            hash.update(target.to_string_lossy().as_bytes());
        } else if meta.is_dir() {
            hash.update(b"dir\0");
        } else {
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            hash.update(b"file\0");
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
        hash.update([0]);
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// How an entry differs between two copies of a plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Removed,
    Changed,
}

impl Change {
    pub fn label(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
        }
    }
}

/// The entries that differ from `old` to `new`, by path.
pub fn differences(old: &Path, new: &Path) -> Result<Vec<(Change, PathBuf)>, String> {
    let before = entries(old)?;
    let after = entries(new)?;
    let mut found = Vec::new();
    for rel in &before {
        if !after.contains(rel) {
            found.push((Change::Removed, rel.clone()));
        } else if content(&old.join(rel)) != content(&new.join(rel)) {
            found.push((Change::Changed, rel.clone()));
        }
    }
    for rel in after.iter().filter(|r| !before.contains(r)) {
        found.push((Change::Added, rel.clone()));
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(found)
}

/// What an entry is, for comparing: a link's target, a file's bytes, or
/// nothing for a folder.
fn content(path: &Path) -> Option<Vec<u8>> {
    let meta = path.symlink_metadata().ok()?;
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path)
            .ok()
            .map(|t| t.to_string_lossy().as_bytes().to_vec());
    }
    if meta.is_dir() {
        return Some(Vec::new());
    }
    std::fs::read(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_folders_and_inner_links_are_copied_and_the_digest_follows_the_content() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("commands/sub")).unwrap();
        std::fs::create_dir_all(src.path().join(".git")).unwrap();
        std::fs::write(src.path().join("commands/a.md"), "A").unwrap();
        std::os::unix::fs::symlink("../a.md", src.path().join("commands/sub/b.md")).unwrap();
        let dst = tempfile::tempdir().unwrap();
        let to = dst.path().join("p");
        copy_tree(src.path(), &to).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.join("commands/sub/b.md")).unwrap(),
            "A"
        );
        assert!(!to.join(".git").exists());
        let first = digest(&to).unwrap();
        assert_eq!(first, digest(src.path()).unwrap());
        std::fs::write(to.join("commands/a.md"), "B").unwrap();
        assert_ne!(digest(&to).unwrap(), first);
    }

    #[test]
    fn a_link_leading_out_of_the_plugin_is_refused_and_nothing_outside_is_read() {
        for target in ["../../outside", "/etc/passwd", "missing"] {
            let src = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(src.path().join("commands")).unwrap();
            std::os::unix::fs::symlink(target, src.path().join("commands/x.md")).unwrap();
            let dst = tempfile::tempdir().unwrap();
            let e = copy_tree(src.path(), &dst.path().join("p")).unwrap_err();
            assert!(e.contains("commands/x.md") && !e.contains('\n'), "{e}");
        }
    }
}
