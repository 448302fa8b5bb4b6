//! Paths no tool writes even inside the workspace, unless a precise rule
//! names them: git metadata at any depth, rein's project settings, and
//! credential files.

use std::path::{Component, Path, PathBuf};

/// Why writing `path` is refused even inside the workspace, if it is.
///
/// The path is normalised first (`.` dropped, `..` applied), so another
/// spelling of the same path is refused the same way; callers pass the
/// resolved path (symlinks followed) as well. Git metadata is protected at
/// any depth (nested repositories, submodules, `.git` gitlink files), names
/// compared without letter case so that a case-insensitive filesystem
/// cannot be used to get around it.
pub fn protected_write(path: &Path, workspace: &Path) -> Option<&'static str> {
    let path = normalise(path);
    let rel = path.strip_prefix(normalise(workspace)).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.iter().any(|p| p.eq_ignore_ascii_case(".git")) {
        return Some("git's internals change only through git itself");
    }
    if parts
        .first()
        .is_some_and(|p| p.eq_ignore_ascii_case(".rein"))
    {
        return Some("rein's own project settings");
    }
    let name = parts.last()?;
    if name.starts_with(".env") {
        return Some("environment files hold credentials");
    }
    if name.ends_with(".pem") || name.ends_with(".key") {
        return Some("key files hold credentials");
    }
    if name.starts_with("id_") && (!name.contains('.') || name.ends_with(".pub")) {
        return Some("SSH keys");
    }
    None
}

/// `path` with `.` dropped and `..` applied, without looking at the
/// filesystem.
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
