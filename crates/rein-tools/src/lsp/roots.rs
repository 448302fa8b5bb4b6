//! The project a file belongs to, for its language server's root
//! (`rootUri`, `workspaceFolders`): the nearest folder at or above the
//! file, inside the workspace, that holds one of the server's root
//! markers (`pyproject.toml`, `package.json`, `Cargo.toml`...), else the
//! workspace itself.
//!
//! 1. folders are tried from the file's own up to the workspace, never
//!    above it (a marker outside the workspace is not followed);
//! 2. a marker counts when it is a file or folder whose real location is
//!    inside the workspace: a symbolic link to something outside is not
//!    one (the workspace may be an attacker's, its links too).

use std::path::{Path, PathBuf};

/// The root for `file` (canonical) in `workspace` (canonical).
pub fn project_root(file: &Path, workspace: &Path, markers: &[String]) -> PathBuf {
    if !file.starts_with(workspace) {
        return workspace.to_path_buf();
    }
    let start = if file.is_dir() {
        file
    } else {
        file.parent().unwrap_or(workspace)
    };
    for dir in start.ancestors() {
        if !dir.starts_with(workspace) {
            break;
        }
        if markers.iter().any(|m| holds_marker(dir, m, workspace)) {
            return dir.to_path_buf();
        }
        if dir == workspace {
            break;
        }
    }
    workspace.to_path_buf()
}

/// Whether `dir` holds `marker` (a plain name), resolved inside
/// `workspace`.
fn holds_marker(dir: &Path, marker: &str, workspace: &Path) -> bool {
    let plain = !marker.is_empty()
        && !marker.contains('/')
        && marker != "."
        && marker != ".."
        && !marker.contains('\0');
    if !plain {
        return false;
    }
    std::fs::canonicalize(dir.join(marker)).is_ok_and(|real| real.starts_with(workspace))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn markers() -> Vec<String> {
        vec!["pyproject.toml".into(), "setup.py".into()]
    }

    /// A canonical temporary folder with `ws/` inside it.
    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        (dir, ws)
    }

    fn file(path: &Path) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x = 1\n").unwrap();
        path.to_path_buf()
    }

    #[test]
    fn the_nearest_folder_with_a_marker_is_the_root() {
        let (_d, ws) = tree();
        file(&ws.join("pyproject.toml"));
        file(&ws.join("apps/api/setup.py"));
        let deep = file(&ws.join("apps/api/src/pkg/mod.py"));
        assert_eq!(project_root(&deep, &ws, &markers()), ws.join("apps/api"));
        let other = file(&ws.join("apps/web/main.py"));
        assert_eq!(project_root(&other, &ws, &markers()), ws);
    }

    #[test]
    fn two_projects_in_one_workspace_have_two_roots() {
        let (_d, ws) = tree();
        file(&ws.join("a/pyproject.toml"));
        file(&ws.join("b/pyproject.toml"));
        let a = file(&ws.join("a/x.py"));
        let b = file(&ws.join("b/y.py"));
        assert_eq!(project_root(&a, &ws, &markers()), ws.join("a"));
        assert_eq!(project_root(&b, &ws, &markers()), ws.join("b"));
    }

    #[test]
    fn without_a_marker_the_workspace_is_the_root() {
        let (_d, ws) = tree();
        let f = file(&ws.join("src/x.py"));
        assert_eq!(project_root(&f, &ws, &markers()), ws);
        assert_eq!(project_root(&f, &ws, &[]), ws);
    }

    #[test]
    fn a_marker_above_the_workspace_is_not_followed() {
        let (dir, ws) = tree();
        let above = std::fs::canonicalize(dir.path()).unwrap();
        file(&above.join("pyproject.toml"));
        let f = file(&ws.join("src/x.py"));
        assert_eq!(project_root(&f, &ws, &markers()), ws);
    }

    #[test]
    fn a_symlinked_marker_pointing_outside_the_workspace_does_not_count() {
        let (dir, ws) = tree();
        let outside = file(
            &std::fs::canonicalize(dir.path())
                .unwrap()
                .join("out/pyproject.toml"),
        );
        let f = file(&ws.join("sub/x.py"));
        std::os::unix::fs::symlink(&outside, ws.join("sub/pyproject.toml")).unwrap();
        assert_eq!(project_root(&f, &ws, &markers()), ws);
        // A link that stays inside the workspace is a marker.
        file(&ws.join("shared/setup.py"));
        std::os::unix::fs::symlink(ws.join("shared/setup.py"), ws.join("sub/setup.py")).unwrap();
        assert_eq!(project_root(&f, &ws, &markers()), ws.join("sub"));
    }

    #[test]
    fn a_marker_that_names_a_path_is_ignored() {
        let (_d, ws) = tree();
        file(&ws.join("sub/inner/pyproject.toml"));
        let f = file(&ws.join("sub/x.py"));
        let odd = vec!["inner/pyproject.toml".to_string(), "..".to_string()];
        assert_eq!(project_root(&f, &ws, &odd), ws);
    }

    #[test]
    fn a_file_outside_the_workspace_gets_the_workspace() {
        let (dir, ws) = tree();
        let out = file(
            &std::fs::canonicalize(dir.path())
                .unwrap()
                .join("elsewhere/setup.py"),
        );
        assert_eq!(project_root(&out, &ws, &markers()), ws);
    }
}
