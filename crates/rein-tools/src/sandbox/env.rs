//! The environment of a command: an allowlist, not a denylist.
//!
//! A command starts from an empty environment and gets only the variables
//! of [`ALLOWED`] (and every `LC_*`) that rein itself has, plus the names
//! in the policy's `env_allow`. Anything else (`DATABASE_URL`, `GH_PAT`,
//! cloud keys, proxies with passwords in them) stays out unless the user
//! names it. Git gets the user's name and e-mail as `GIT_AUTHOR_*` and
//! `GIT_COMMITTER_*`, read from the user's git config on the host, because
//! `~/.gitconfig` itself is hidden.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// A user's git name and e-mail, when both are set.
type Identity = Option<(OsString, OsString)>;

use tokio::process::Command;

pub use rein_core::host_process::env::{ALLOWED, passes};

/// Clear `cmd`'s environment, then give it [`vars`].
pub fn apply(cmd: &mut Command, allow: &[String], homes: &[PathBuf], sandboxed: bool) {
    cmd.env_clear();
    cmd.envs(vars(allow, homes, sandboxed));
}

/// The whole environment of a command, computed from rein's own: the
/// variables that pass and the git identity of `homes` (the first home
/// with one). `sandboxed`: the home is hidden, so git is told there is no
/// global config (`GIT_CONFIG_GLOBAL=/dev/null`) rather than finding one
/// it may not read (under Landlock that is an error that stops every git
/// command), and `TMPDIR` is `/tmp` (a `TMPDIR` of the user's may be
/// hidden or read-only there) unless `env_allow` names it. Later entries
/// of the same name win.
pub fn vars(allow: &[String], homes: &[PathBuf], sandboxed: bool) -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| passes(name, allow))
        .collect();
    let mut set = |name: &str, value: &OsStr| {
        vars.retain(|(n, _)| n != name);
        vars.push((name.into(), value.to_owned()));
    };
    if sandboxed && !passes(OsStr::new("GIT_CONFIG_GLOBAL"), allow) {
        set("GIT_CONFIG_GLOBAL", OsStr::new("/dev/null"));
    }
    if sandboxed && !allow.iter().any(|a| a == "TMPDIR") {
        // The one temporary folder commands can write to in a sandbox.
        set("TMPDIR", OsStr::new("/tmp"));
    }
    if let Some((name, email)) = homes.iter().find_map(|h| git_identity(h)) {
        for (var, value) in [
            ("GIT_AUTHOR_NAME", &name),
            ("GIT_COMMITTER_NAME", &name),
            ("GIT_AUTHOR_EMAIL", &email),
            ("GIT_COMMITTER_EMAIL", &email),
        ] {
            // The user's own settings win.
            if std::env::var_os(var).is_none() || !passes(OsStr::new(var), allow) {
                set(var, value);
            }
        }
    }
    vars
}

/// The `user.name` and `user.email` of the git config files of `home`, read
/// once per home and process.
fn git_identity(home: &Path) -> Identity {
    static CACHE: OnceLock<Mutex<Vec<(PathBuf, Identity)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, id)) = cache.iter().find(|(h, _)| h == home) {
        return id.clone();
    }
    // git reads the XDG file first, so `~/.gitconfig` wins.
    let files = [home.join(".config/git/config"), home.join(".gitconfig")];
    let get = |key: &str| files.iter().rev().find_map(|f| config_value(f, key));
    let id = get("user.name").zip(get("user.email"));
    cache.push((home.to_path_buf(), id.clone()));
    id
}

/// `key` (`user.name`) of one git config file (no includes, no repository):
/// read by the strict parser when the file is plain, which costs no
/// process; otherwise asked of `git config --file`.
fn config_value(file: &Path, key: &str) -> Option<OsString> {
    let text = std::fs::read_to_string(file).ok()?;
    let (section, name) = key.split_once('.')?;
    if let Some(entries) = super::gitconfig::parse(&text) {
        return entries
            .iter()
            .rev()
            .find(|e| {
                e.sub.is_none()
                    && e.section.eq_ignore_ascii_case(section)
                    && e.key.eq_ignore_ascii_case(name)
            })
            .map(|e| OsString::from(&e.value))
            .filter(|v| !v.is_empty());
    }
    let out = std::process::Command::new("git")
        .args(["config", "--file"])
        .arg(file)
        .args(["--get", key])
        .current_dir("/")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let value = String::from_utf8(out.stdout).ok()?;
    let value = value.trim_end_matches('\n');
    (out.status.success() && !value.is_empty() && !value.contains('\0'))
        .then(|| OsString::from(value))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_git_identity_comes_from_the_home_config_only() {
        if std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_err()
        {
            return;
        }
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".gitconfig"),
            "[user]\n\tname = Ann Example\n\temail = ann@example.invalid\n\
             [include]\n\tpath = /nonexistent\n[credential]\n\thelper = store\n",
        )
        .unwrap();
        let id = git_identity(home.path()).unwrap();
        assert_eq!(id, ("Ann Example".into(), "ann@example.invalid".into()));
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(git_identity(empty.path()), None);
    }

    #[test]
    fn the_git_identity_is_what_git_itself_reads_plain_or_not() {
        let Ok(version) = std::process::Command::new("git").arg("--version").output() else {
            return;
        };
        assert!(version.status.success());
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".config/git")).unwrap();
        std::fs::write(
            home.path().join(".config/git/config"),
            "[user]\n\tname = From XDG\n\temail = xdg@example.invalid\n",
        )
        .unwrap();
        // Quotes, a comment and an escape: whichever way it is read, the
        // value is git's own.
        std::fs::write(
            home.path().join(".gitconfig"),
            "[User]\n\tName = \"Ann \\\"A\\\" Example\" ; a comment\n",
        )
        .unwrap();
        let git = |key: &str| {
            let out = std::process::Command::new("git")
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path().join(".config"))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .args(["config", "--global", "--get", key])
                .output()
                .unwrap();
            String::from_utf8(out.stdout)
                .unwrap()
                .trim_end()
                .to_string()
        };
        let id = git_identity(home.path()).unwrap();
        assert_eq!(id.0.to_str().unwrap(), git("user.name"));
        assert_eq!(id.0.to_str().unwrap(), "Ann \"A\" Example");
        // Not in ~/.gitconfig: the XDG file's value.
        assert_eq!(id.1.to_str().unwrap(), "xdg@example.invalid");
    }
}
