//! Plugins from git: `GIT-URL[@REF]` cloned with the `git` command into a
//! scratch folder, checked out at REF (default: the repository's HEAD),
//! and installed from there pinned to the commit it resolved to.

use std::path::Path;
use std::process::Command;

/// A git source: the repository and the ref asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    pub url: String,
    pub reference: Option<String>,
}

/// `source` as a git source when it reads as one: a URL (`scheme://`,
/// `user@host:path`) or a path ending in `.git`, optionally followed by
/// `@REF`; None for anything else (a folder).
pub fn parse(source: &str) -> Option<GitSource> {
    let (url, reference) = match source.rsplit_once('@') {
        Some((left, right))
            if (left.contains('/') || left.contains(':'))
                && !right.is_empty()
                && !right.contains(':') =>
        {
            (left, Some(right.to_string()))
        }
        _ => (source, None),
    };
    let scp_like = url
        .split_once(':')
        .is_some_and(|(host, _)| host.contains('@') && !host.contains('/'));
    let looks_git = url.contains("://") || scp_like || url.trim_end_matches('/').ends_with(".git");
    looks_git.then(|| GitSource {
        url: url.to_string(),
        reference,
    })
}

/// Clone `source` into `into` (a folder that does not exist yet) at its
/// ref, and return the commit checked out. The error is one line.
pub fn fetch(source: &GitSource, into: &Path) -> Result<String, String> {
    let into_text = absolute(into);
    // git runs in rein's neutral folder (see `git`), so a local path is
    // made absolute against where the user typed it.
    let url = match source.url.contains("://") || Path::new(&source.url).is_absolute() {
        true => source.url.clone(),
        false if Path::new(&source.url).exists() => absolute(Path::new(&source.url)),
        false => source.url.clone(),
    };
    git(
        None,
        &["clone", "--quiet", "--no-checkout", "--", &url, &into_text],
    )
    .map_err(|e| format!("cannot clone {}: {e}", source.url))?;
    let wanted = source.reference.as_deref().unwrap_or("HEAD");
    let commit = git(
        Some(into),
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{wanted}^{{commit}}"),
        ],
    )
    .or_else(|_| {
        // A branch of the remote that is not the default one.
        git(
            Some(into),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("origin/{wanted}^{{commit}}"),
            ],
        )
    })
    .map_err(|_| format!("{}: no branch, tag or commit `{wanted}`", source.url))?;
    git(Some(into), &["checkout", "--quiet", "--detach", &commit])
        .map_err(|e| format!("{}: cannot check out {commit}: {e}", source.url))?;
    Ok(commit)
}

/// `path` made absolute against the current folder, as text.
fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Run git (no prompts, no user hooks of the repository's), its stdout
/// trimmed; the error is git's last line. Like every process rein starts
/// on the host, it runs in rein's neutral folder, never in the folder the
/// user happens to be in (which may be an untrusted repository whose
/// `.git/config` git would read).
fn git(dir: Option<&Path>, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(rein_core::host_process::neutral_dir());
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    let out = cmd
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "core.fsmonitor=false",
        ])
        .args(args)
        // Never the repository of whoever started rein (a git hook's
        // environment), never a password prompt on the terminal.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_COMMON_DIR")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_string());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err
        .trim()
        .lines()
        .last()
        .unwrap_or("git failed")
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_dot_git_paths_are_git_with_an_optional_ref_and_folders_are_not() {
        let g = |s: &str| parse(s).map(|g| (g.url, g.reference));
        assert_eq!(
            g("https://example.org/a/tidy.git@v1.2"),
            Some(("https://example.org/a/tidy.git".into(), Some("v1.2".into())))
        );
        assert_eq!(
            g("git@example.org:a/tidy.git"),
            Some(("git@example.org:a/tidy.git".into(), None))
        );
        assert_eq!(
            g("/srv/repos/tidy.git@feature/x"),
            Some(("/srv/repos/tidy.git".into(), Some("feature/x".into())))
        );
        assert_eq!(
            g("file:///srv/tidy"),
            Some(("file:///srv/tidy".into(), None))
        );
        assert_eq!(g("./plugins/tidy"), None);
        assert_eq!(g("/home/me/tidy"), None);
    }
}
