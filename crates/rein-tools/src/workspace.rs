//! Workspace confinement: every path a file tool touches is resolved here to
//! a canonical path (symlinks followed) and refused when it lies outside the
//! workspace. Reading tools may also open paths inside the context's read
//! roots (where this session's big tool outputs are saved), under the same
//! rules: `..` and symlinks cannot leave a root.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use rein_core::{ToolContext, ToolError};

/// How many symlinks a path may pass through before we give up.
const MAX_SYMLINK_HOPS: u32 = 40;

/// Resolve `user_path` (relative to `workspace`, or absolute) to a canonical
/// path inside the workspace.
///
/// Existing paths are canonicalized with every symlink resolved. For a path
/// that does not exist yet, the deepest existing ancestor is canonicalized
/// and the rest appended; `..` is not allowed in that rest. Anything that
/// ends up outside the workspace is refused.
pub fn resolve(workspace: &Path, user_path: &str) -> Result<PathBuf, ToolError> {
    resolve_within(workspace, &[], user_path)
}

/// Resolve a path a reading tool opens: like [`resolve`], but a path inside
/// one of `ctx.read_roots` is accepted too. Relative paths are still
/// relative to the workspace; a read root is reached by its absolute path.
pub fn resolve_for_read(ctx: &ToolContext, user_path: &str) -> Result<PathBuf, ToolError> {
    resolve_within(&ctx.workspace, &ctx.read_roots, user_path)
}

/// [`resolve_for_read`] treating a missing `path` as the workspace root.
pub fn resolve_or_root_for_read(
    ctx: &ToolContext,
    user_path: Option<&str>,
) -> Result<PathBuf, ToolError> {
    match user_path {
        Some(p) if !p.trim().is_empty() => resolve_for_read(ctx, p),
        _ => Ok(canonical_workspace(&ctx.workspace)),
    }
}

/// Resolve `user_path` to a canonical path inside the workspace or inside
/// one of `read_roots` (absolute folders; each is canonicalized the same
/// way, so a root given through a symlink still matches).
pub fn resolve_within(
    workspace: &Path,
    read_roots: &[PathBuf],
    user_path: &str,
) -> Result<PathBuf, ToolError> {
    if user_path.trim().is_empty() {
        return Err(ToolError::new(
            "the path is empty; give a file path relative to the workspace",
        ));
    }
    if user_path.contains('\0') {
        return Err(ToolError::new(format!(
            "the path `{}` contains a NUL character",
            user_path.escape_debug()
        )));
    }
    let root = canonical_workspace(workspace);
    let joined = if Path::new(user_path).is_absolute() {
        PathBuf::from(user_path)
    } else {
        root.join(user_path)
    };
    let resolved = canonicalize_loose(&joined, 0)
        .map_err(|e| ToolError::new(format!("cannot resolve the path `{user_path}`: {e}")))?;
    if resolved.starts_with(&root) {
        return Ok(resolved);
    }
    let roots: Vec<PathBuf> = read_roots
        .iter()
        .filter(|r| r.is_absolute())
        .filter_map(|r| canonicalize_loose(r, 0).ok())
        .collect();
    if roots.iter().any(|r| resolved.starts_with(r)) {
        return Ok(resolved);
    }
    if let Some(r) = roots.iter().find(|r| lexically_inside(&joined, r)) {
        return Err(ToolError::new(format!(
            "`{user_path}` resolves (through a symlink) to {}, which is outside {}; only paths \
             inside the workspace or that folder can be read",
            resolved.display(),
            r.display()
        )));
    }
    let shown = if lexically_inside(&joined, &root) {
        format!(
            "`{user_path}` resolves (through a symlink) to {}, which is outside the workspace {}",
            resolved.display(),
            root.display()
        )
    } else {
        format!(
            "`{user_path}` is outside the workspace {} (resolves to {})",
            root.display(),
            resolved.display()
        )
    };
    Err(ToolError::new(format!(
        "{shown}; only paths inside the workspace can be used"
    )))
}

/// Resolve like [`resolve`], treating a missing `path` as the workspace root.
pub fn resolve_or_root(workspace: &Path, user_path: Option<&str>) -> Result<PathBuf, ToolError> {
    match user_path {
        Some(p) if !p.trim().is_empty() => resolve(workspace, p),
        _ => Ok(canonical_workspace(workspace)),
    }
}

/// The workspace root, canonical (it should already be; this is a guard).
pub fn canonical_workspace(workspace: &Path) -> PathBuf {
    std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// `path` as the model should see it: relative to the workspace when inside
/// it (`.` for the root itself), absolute otherwise.
pub fn display(workspace: &Path, path: &Path) -> String {
    let root = canonical_workspace(workspace);
    match path
        .strip_prefix(&root)
        .or_else(|_| path.strip_prefix(workspace))
    {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// `user_path` made absolute against the canonical workspace `root` and
/// normalised without looking at the filesystem (`.` dropped, `..` removes
/// the name before it): the path the model named, before any symlink. The
/// gate checks it as well as the resolved path, so that a symlink swapped
/// in later cannot make a protected path look like another one.
pub fn lexical(root: &Path, user_path: &str) -> Option<PathBuf> {
    if user_path.trim().is_empty() || user_path.contains('\0') {
        return None;
    }
    let joined = if Path::new(user_path).is_absolute() {
        PathBuf::from(user_path)
    } else {
        root.join(user_path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// Whether `path`, read without following symlinks, names something under
/// `root` (used only to word the error message).
fn lexically_inside(path: &Path, root: &Path) -> bool {
    let mut depth: i64 = 0;
    let Ok(rest) = path.strip_prefix(root) else {
        return false;
    };
    for c in rest.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// Canonicalize `path`, allowing its tail not to exist yet.
fn canonicalize_loose(path: &Path, hops: u32) -> io::Result<PathBuf> {
    if hops > MAX_SYMLINK_HOPS {
        return Err(io::Error::other("too many levels of symbolic links"));
    }
    match std::fs::canonicalize(path) {
        Ok(p) => return Ok(p),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let Ok(meta) = std::fs::symlink_metadata(&prefix) else {
            continue;
        };
        let rest = &components[split..];
        if meta.file_type().is_symlink() && std::fs::canonicalize(&prefix).is_err() {
            // A dangling symlink: follow it by hand, so that writing through
            // it cannot create a file outside the workspace.
            let target = std::fs::read_link(&prefix)?;
            let base = prefix.parent().unwrap_or(Path::new("/"));
            let mut next = base.join(target);
            for c in rest {
                next.push(c.as_os_str());
            }
            return canonicalize_loose(&next, hops + 1);
        }
        let mut resolved = std::fs::canonicalize(&prefix)?;
        let mut tail: Vec<OsString> = Vec::new();
        for c in rest {
            match c {
                Component::Normal(name) => tail.push(name.to_os_string()),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(io::Error::other(
                        "`..` is not allowed after a folder that does not exist",
                    ));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(io::Error::other(
                        "unexpected root in the middle of the path",
                    ));
                }
            }
        }
        for name in tail {
            resolved.push(name);
        }
        return Ok(resolved);
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "no part of the path exists",
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_d, root) = ws();
        std::fs::write(root.join("a.txt"), "x").unwrap();
        assert_eq!(resolve(&root, "a.txt").unwrap(), root.join("a.txt"));
        let abs = root.join("a.txt");
        assert_eq!(resolve(&root, abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(resolve(&root, "./a.txt").unwrap(), root.join("a.txt"));
    }

    #[test]
    fn missing_tail_is_appended_to_the_deepest_existing_ancestor() {
        let (_d, root) = ws();
        std::fs::create_dir(root.join("src")).unwrap();
        assert_eq!(
            resolve(&root, "src/new/deep.rs").unwrap(),
            root.join("src/new/deep.rs")
        );
        assert_eq!(
            resolve(&root, "src/../top.rs").unwrap(),
            root.join("top.rs")
        );
    }

    #[test]
    fn dotdot_in_the_missing_tail_is_refused() {
        let (_d, root) = ws();
        let e = resolve(&root, "nothere/../../x").unwrap_err();
        assert!(e.to_string().contains("`..` is not allowed"), "{e}");
    }

    #[test]
    fn escaping_with_dotdot_is_refused() {
        let (_d, root) = ws();
        let e = resolve(&root, "../outside.txt").unwrap_err();
        assert!(e.to_string().contains("outside the workspace"), "{e}");
        let e = resolve(&root, "/etc/passwd").unwrap_err();
        assert!(e.to_string().contains("outside the workspace"), "{e}");
    }

    #[test]
    fn dangling_symlink_pointing_outside_is_refused() {
        let (_d, root) = ws();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("not-yet");
        std::os::unix::fs::symlink(&target, root.join("link")).unwrap();
        let e = resolve(&root, "link").unwrap_err();
        assert!(e.to_string().contains("outside the workspace"), "{e}");
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    /// A workspace and, beside it, a read root holding `out.txt`.
    fn ws_and_root() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let ws = base.join("ws");
        let root = base.join("data/sessions/s1/outputs");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("out.txt"), "saved").unwrap();
        std::fs::write(base.join("secret.txt"), "no").unwrap();
        (dir, ws, root)
    }

    #[test]
    fn a_path_inside_a_read_root_resolves_for_reading_only() {
        let (_d, ws, root) = ws_and_root();
        let file = root.join("out.txt");
        let abs = file.to_str().unwrap();
        let roots = [root.clone()];
        assert_eq!(resolve_within(&ws, &roots, abs).unwrap(), file);
        // Not yet written files inside the root resolve too.
        assert_eq!(
            resolve_within(&ws, &roots, root.join("later.txt").to_str().unwrap()).unwrap(),
            root.join("later.txt")
        );
        // Writes (plain `resolve`) stay confined to the workspace.
        let e = resolve(&ws, abs).unwrap_err();
        assert!(e.to_string().contains("outside the workspace"), "{e}");
        // Without read roots, reading is confined the same way.
        assert!(resolve_within(&ws, &[], abs).is_err());
        // The workspace itself still works.
        std::fs::write(ws.join("a.txt"), "x").unwrap();
        assert_eq!(
            resolve_within(&ws, &roots, "a.txt").unwrap(),
            ws.join("a.txt")
        );
    }

    #[test]
    fn dotdot_cannot_leave_a_read_root() {
        let (_d, ws, root) = ws_and_root();
        let roots = [root.clone()];
        let escape = format!("{}/../../../../secret.txt", root.display());
        let e = resolve_within(&ws, &roots, &escape).unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        // `..` that stays inside the root is fine.
        std::fs::create_dir(root.join("sub")).unwrap();
        let inside = format!("{}/sub/../out.txt", root.display());
        assert_eq!(
            resolve_within(&ws, &roots, &inside).unwrap(),
            root.join("out.txt")
        );
    }

    #[test]
    fn symlinks_cannot_leave_a_read_root() {
        let (_d, ws, root) = ws_and_root();
        let roots = [root.clone()];
        let secret = root.parent().unwrap().join("../../../secret.txt");
        std::os::unix::fs::symlink(&secret, root.join("link.txt")).unwrap();
        let e = resolve_within(&ws, &roots, root.join("link.txt").to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("through a symlink"), "{e}");
        // A dangling symlink pointing out is refused as well.
        std::os::unix::fs::symlink("/nonexistent-rein-test/x", root.join("dangling")).unwrap();
        assert!(resolve_within(&ws, &roots, root.join("dangling").to_str().unwrap()).is_err());
        // A symlink inside the root pointing elsewhere inside it is fine.
        std::os::unix::fs::symlink(root.join("out.txt"), root.join("alias.txt")).unwrap();
        assert_eq!(
            resolve_within(&ws, &roots, root.join("alias.txt").to_str().unwrap()).unwrap(),
            root.join("out.txt")
        );
    }

    #[test]
    fn a_read_root_given_through_a_symlink_still_matches() {
        let (d, ws, root) = ws_and_root();
        let alias = d.path().join("alias-of-outputs");
        std::os::unix::fs::symlink(&root, &alias).unwrap();
        let roots = [alias.clone()];
        assert_eq!(
            resolve_within(&ws, &roots, alias.join("out.txt").to_str().unwrap()).unwrap(),
            root.join("out.txt")
        );
        assert_eq!(
            resolve_within(&ws, &roots, root.join("out.txt").to_str().unwrap()).unwrap(),
            root.join("out.txt")
        );
    }

    #[test]
    fn relative_read_roots_are_ignored() {
        let (_d, ws, root) = ws_and_root();
        let relative = [PathBuf::from("data")];
        assert!(resolve_within(&ws, &relative, root.join("out.txt").to_str().unwrap()).is_err());
    }

    #[test]
    fn lexical_paths_are_normalised_without_following_anything() {
        let root = Path::new("/w/p");
        let l = |p: &str| lexical(root, p).unwrap();
        assert_eq!(l("./a/../b/.git/config"), Path::new("/w/p/b/.git/config"));
        assert_eq!(l("/w/p/x/./y"), Path::new("/w/p/x/y"));
        assert_eq!(l("../q"), Path::new("/w/q"));
        assert_eq!(l("/../../etc"), Path::new("/etc"));
        assert!(lexical(root, " ").is_none());
        assert!(lexical(root, "a\0b").is_none());
    }

    #[test]
    fn display_is_relative_to_the_workspace() {
        let (_d, root) = ws();
        assert_eq!(display(&root, &root.join("a/b.rs")), "a/b.rs");
        assert_eq!(display(&root, &root), ".");
        assert_eq!(display(&root, Path::new("/elsewhere")), "/elsewhere");
    }
}
