//! Folders no session may work in, refused the same way by every front end
//! (`rein exec`, the app, `rein acp`'s `session/new` and `session/load`,
//! `rein serve`'s root and its sessions' folders).
//!
//! A workspace is what the sandbox lets commands write and what the file
//! tools read, so it must not be a place whose contents run code or hold
//! secrets: a git directory (its `config` and `hooks` run code at the next
//! `git status`), rein's own state folder (`$REIN_HOME`: every session, the
//! serve token, OAuth tokens), or a credential store of the never-read list
//! (`~/.ssh`, `~/.config/gh`, ...). A workspace that *holds* one of them
//! (the home) is fine: the file tools and the sandbox keep them out of
//! reach there. Both the path as given and the path with symlinks resolved
//! are checked, names compared without letter case.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use rein_core::Permissions;
use rein_core::normalise;

use crate::exit::Failure;

/// Canonical workspace from `-C` or the current directory.
pub fn resolve_workspace(dir: Option<&Path>) -> Result<PathBuf, Failure> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Failure::usage(anyhow!("cannot read the current directory: {e}")))?,
    };
    match std::fs::canonicalize(&dir) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(_) => Err(Failure::usage(anyhow!(
            "workspace {} is not a directory",
            dir.display()
        ))),
        Err(e) => Err(Failure::usage(anyhow!(
            "workspace {} does not exist or cannot be read: {e}",
            dir.display()
        ))),
    }
}

/// `dir` (default: the current folder), resolved and checked: a usage
/// error naming why when it cannot be a session's workspace.
pub fn session_workspace(dir: Option<&Path>) -> Result<PathBuf, Failure> {
    let canonical = resolve_workspace(dir)?;
    let given = match dir {
        Some(d) => d.to_path_buf(),
        None => canonical.clone(),
    };
    match unfit(&given, &canonical) {
        Some(why) => Err(Failure::usage(anyhow!("{why}"))),
        None => Ok(canonical),
    }
}

/// Why the folder `given` (resolved: `canonical`) cannot be a session's
/// workspace on this machine (`$HOME`, `$REIN_HOME`), if it cannot.
pub fn unfit(given: &Path, canonical: &Path) -> Option<String> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let state = crate::config::rein_home().ok();
    unfit_in(given, canonical, home.as_deref(), state.as_deref())
}

/// [`unfit`] with the home and the state folder given.
fn unfit_in(
    given: &Path,
    canonical: &Path,
    home: Option<&Path>,
    state: Option<&Path>,
) -> Option<String> {
    let given = absolute(given);
    let spellings = [given.as_path(), canonical];
    let shown = given.display();
    for path in spellings {
        if let Some(git) = git_dir_holding(path) {
            return Some(format!(
                "workspace {shown} is or lies inside the git directory {}: git runs what its \
                 config and hooks name, so rein does not work there; use the repository's folder",
                git.display()
            ));
        }
    }
    if let Some(state) = state {
        let states = [
            normalise(state),
            std::fs::canonicalize(state).unwrap_or_default(),
        ];
        if let Some(dir) = first_holding(&states, &spellings) {
            return Some(format!(
                "workspace {shown} is or lies inside {}, rein's own state folder (REIN_HOME), \
                 which holds every session and rein's tokens; use another folder",
                dir.display()
            ));
        }
    }
    let mut perms = Permissions::default();
    perms.home = home.map(Path::to_path_buf);
    if let Some(dir) = first_holding(&perms.secret_dirs(), &spellings) {
        return Some(format!(
            "workspace {shown} is or lies inside {}, which holds credentials and is never read; \
             use another folder",
            dir.display()
        ));
    }
    None
}

/// The git directory `path` is or lies in: the path up to a `.git`
/// component, or a folder of it that is a bare repository.
fn git_dir_holding(path: &Path) -> Option<PathBuf> {
    let mut at = PathBuf::new();
    for part in path.components() {
        at.push(part.as_os_str());
        if part.as_os_str().eq_ignore_ascii_case(".git") {
            return Some(at);
        }
    }
    path.ancestors()
        .find(|dir| is_bare_repository(dir))
        .map(Path::to_path_buf)
}

/// Whether `dir` is a git directory without a work tree around it: it has
/// `HEAD`, `objects/` and `refs/`, as git itself recognises one.
fn is_bare_repository(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The first of `dirs` that one of `paths` is or lies inside (compared
/// without letter case: a case-insensitive file system must not open a
/// way around it).
fn first_holding<'a>(dirs: &'a [PathBuf], paths: &[&Path]) -> Option<&'a PathBuf> {
    dirs.iter()
        .filter(|d| d.is_absolute())
        .find(|d| paths.iter().any(|p| lies_in(p, d)))
}

fn lies_in(path: &Path, dir: &Path) -> bool {
    let lower = |p: &Path| p.to_string_lossy().to_lowercase();
    Path::new(&lower(path)).starts_with(lower(dir))
}

/// `path` made absolute (against the current folder) with `.` dropped and
/// `..` applied, without looking at the file system.
fn absolute(path: &Path) -> PathBuf {
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    normalise(&joined)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn check(dir: &Path, home: &Path, state: &Path) -> Option<String> {
        let canonical = std::fs::canonicalize(dir).unwrap();
        unfit_in(dir, &canonical, Some(home), Some(state))
    }

    #[test]
    fn git_directories_are_refused_at_any_depth_and_in_any_case() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        for dir in [
            "repo/.git",
            "repo/.git/refs",
            "repo/.GIT/hooks",
            "bare.git/objects",
        ] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::write(home.join("bare.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(home.join("bare.git/refs")).unwrap();
        let state = home.join(".rein");
        for dir in [
            "repo/.git",
            "repo/.git/refs",
            "repo/.GIT/hooks",
            "bare.git",
            "bare.git/objects",
        ] {
            let why = check(&home.join(dir), &home, &state).unwrap_or_default();
            assert!(why.contains("git directory"), "{dir}: {why}");
        }
        assert_eq!(check(&home.join("repo"), &home, &state), None);
    }

    #[test]
    fn rein_home_and_credential_stores_are_refused_but_the_home_is_not() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        let state = home.join("state");
        for dir in [
            "state/sessions",
            ".ssh",
            ".config/gh/x",
            ".docker/config.json",
        ] {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        let why = check(&state, &home, &state).unwrap_or_default();
        assert!(why.contains("REIN_HOME"), "{why}");
        let why = check(&state.join("sessions"), &home, &state).unwrap_or_default();
        assert!(why.contains("REIN_HOME"), "{why}");
        for dir in [".ssh", ".config/gh/x", ".docker/config.json"] {
            let why = check(&home.join(dir), &home, &state).unwrap_or_default();
            assert!(why.contains("never read"), "{dir}: {why}");
        }
        assert_eq!(check(&home, &home, &state), None);
        assert_eq!(check(&home.join(".config"), &home, &state), None);
    }

    #[test]
    fn a_symlink_to_a_refused_folder_is_refused_by_where_it_leads() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(home.join("repo/.git")).unwrap();
        std::os::unix::fs::symlink(home.join("repo/.git"), home.join("innocent")).unwrap();
        let why = check(&home.join("innocent"), &home, &home.join(".rein")).unwrap_or_default();
        assert!(why.contains("git directory"), "{why}");
    }
}
