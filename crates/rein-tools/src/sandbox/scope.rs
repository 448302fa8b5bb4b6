//! What commands can see: the read scope shared by both sandboxes.
//!
//! Home folders are hidden: `/home` (every user's), `/root`, and the user's
//! home wherever it lies (the policy's, else `$HOME`). Inside them only the
//! workspace, the toolchain folders of [`TOOLCHAIN_DIRS`] (and those the
//! toolchain variables name) and the user's `sandbox.read_paths` come back,
//! read-only, minus the files of [`TOOLCHAIN_SECRETS`] (registry tokens and
//! repository passwords). `$REIN_HOME` is always hidden, wherever it lies,
//! so commands never see other sessions' transcripts or spilled outputs.
//!
//! `~/.gitconfig` stays hidden (it may hold tokens in `url.*.insteadOf` or
//! credential helpers); git gets the user's name and e-mail through
//! `GIT_AUTHOR_*`/`GIT_COMMITTER_*` instead (see [`super::env`]).

use std::path::{Path, PathBuf};

use rein_core::SandboxPolicy;

/// Toolchain folders under the home that commands may read: Rust (cargo,
/// rustup), npm's cache, pip's cache, pyenv, Go (`~/go`, its build cache),
/// Maven, Gradle, nvm, and `~/.local/bin` and `~/.local/lib` (for
/// `pip install --user`).
pub const TOOLCHAIN_DIRS: [&str; 12] = [
    ".cargo",
    ".rustup",
    ".npm",
    ".cache/pip",
    ".pyenv",
    "go",
    ".cache/go-build",
    ".m2",
    ".gradle",
    ".nvm",
    ".local/bin",
    ".local/lib",
];

/// Variables naming toolchain folders; when they point into a hidden place,
/// that folder comes back read-only too.
pub const TOOLCHAIN_VARS: [&str; 10] = [
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOMODCACHE",
    "GOROOT",
    "PYENV_ROOT",
    "NVM_DIR",
    "GRADLE_USER_HOME",
    "VIRTUAL_ENV",
    "JAVA_HOME",
];

/// Files inside toolchain folders that hold credentials: cargo's registry
/// tokens, Maven's server passwords, Gradle's properties (often signing
/// keys and repository passwords). Hidden even though their folder is not.
pub const TOOLCHAIN_SECRETS: [&str; 5] = [
    "credentials.toml",
    "credentials",
    "settings.xml",
    "settings-security.xml",
    "gradle.properties",
];

/// Places a home folder can never be: hiding them would hide the system.
const NEVER_HIDDEN: [&str; 15] = [
    "/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/sys",
    "/dev", "/run", "/var", "/tmp",
];

use super::BwrapEntry as Found;

/// Something to make visible again inside a hidden folder: `src` (canonical)
/// shown at `dest` (where commands look for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindBack {
    pub src: PathBuf,
    pub dest: PathBuf,
}

/// The read scope of one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Folders replaced by an empty read-only folder (canonical, existing).
    pub hidden_roots: Vec<PathBuf>,
    /// Folders and files shown again, read-only, inside the hidden roots.
    pub bind_back: Vec<BindBack>,
    /// Paths hidden on top of everything: `$REIN_HOME` and the credential
    /// files of the toolchain folders.
    pub hidden: Vec<PathBuf>,
}

/// The homes whose contents are hidden: the policy's (or `$HOME`), and
/// `$HOME` when it differs.
pub fn homes(policy: &SandboxPolicy) -> Vec<PathBuf> {
    let env_home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let mut homes: Vec<PathBuf> = policy.home.iter().cloned().collect();
    if let Some(h) = env_home
        && !homes.contains(&h)
    {
        homes.push(h);
    }
    homes.retain(|h| h.is_absolute() && !NEVER_HIDDEN.iter().any(|n| h == Path::new(n)));
    homes
}

/// Toolchain folders of `homes` and of the toolchain variables, as written
/// (not resolved).
pub fn toolchain_paths(homes: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = homes
        .iter()
        .flat_map(|h| TOOLCHAIN_DIRS.iter().map(move |d| h.join(d)))
        .collect();
    for var in TOOLCHAIN_VARS {
        if let Some(v) = std::env::var_os(var).map(PathBuf::from)
            && v.is_absolute()
            // A variable naming a home itself must not unhide it.
            && !homes.iter().any(|h| h.starts_with(&v))
        {
            paths.push(v);
        }
    }
    paths
}

impl Scope {
    /// The scope of `policy` for `workspace` (canonical); `lookup` resolves
    /// a path on the host (canonical path and kind), `None` when missing.
    pub fn new(
        policy: &SandboxPolicy,
        workspace: &Path,
        lookup: &impl Fn(&Path) -> Option<Found>,
    ) -> Scope {
        let homes = homes(policy);
        let mut roots: Vec<PathBuf> = [PathBuf::from("/home"), PathBuf::from("/root")]
            .into_iter()
            .chain(homes.iter().cloned())
            .filter_map(|p| lookup(&p))
            .filter(|f| f.is_dir && !NEVER_HIDDEN.iter().any(|n| f.path == Path::new(n)))
            .map(|f| f.path)
            .collect();
        roots.sort();
        roots.dedup();
        // A root inside another one is hidden with it, unless it lies in the
        // workspace (which shows it again).
        let all = roots.clone();
        roots.retain(|r| {
            r.starts_with(workspace) || !all.iter().any(|o| o != r && r.starts_with(o))
        });

        let mut scope = Scope {
            hidden_roots: roots,
            ..Scope::default()
        };
        let wanted = toolchain_paths(&homes)
            .into_iter()
            .chain(policy.read_paths.iter().cloned());
        for path in wanted {
            let Some(src) = lookup(&path) else { continue };
            // Where commands look for it: its folder resolved, its own name
            // kept (a symlinked toolchain folder shows up where the link is).
            let dest = match (path.parent().and_then(lookup), path.file_name()) {
                (Some(parent), Some(name)) => parent.path.join(name),
                _ => src.path.clone(),
            };
            if !scope.is_covered(&dest, workspace) {
                continue;
            }
            if src.is_dir {
                for secret in TOOLCHAIN_SECRETS {
                    if lookup(&src.path.join(secret)).is_some() {
                        scope.hidden.push(dest.join(secret));
                    }
                }
            }
            let entry = BindBack {
                src: src.path,
                dest,
            };
            if !scope.bind_back.contains(&entry) {
                scope.bind_back.push(entry);
            }
        }
        // Parents before children, so a folder bound back does not cover
        // one bound inside it.
        scope.bind_back.sort_by(|a, b| a.dest.cmp(&b.dest));
        if let Some(state) = &policy.state_dir {
            let real = lookup(state).map_or_else(|| state.clone(), |f| f.path);
            if workspace.starts_with(&real) {
                // The workspace lies in `$REIN_HOME`: hide everything of it
                // but the way down to the workspace.
                scope.hidden.extend(siblings_on_the_way(&real, workspace));
            } else {
                scope.hidden.push(state.clone());
            }
        }
        scope
    }

    /// Whether `dest` lies in a hidden root where the workspace does not
    /// show it anyway.
    fn is_covered(&self, dest: &Path, workspace: &Path) -> bool {
        self.hidden_roots.iter().any(|r| {
            dest.starts_with(r) && !(dest.starts_with(workspace) && workspace.starts_with(r))
        })
    }
}

/// Every entry of `top` and of the folders between it and `inner` (which
/// lies inside it), except the folders leading to `inner`.
fn siblings_on_the_way(top: &Path, inner: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rest) = inner.strip_prefix(top) else {
        return out;
    };
    let mut dir = top.to_path_buf();
    for part in rest.components() {
        let next = dir.join(part);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            out.extend(entries.flatten().map(|e| e.path()).filter(|p| *p != next));
        }
        dir = next;
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn host(
        dirs: &'static [&'static str],
        files: &'static [&'static str],
    ) -> impl Fn(&Path) -> Option<Found> {
        move |p: &Path| {
            let s = p.to_str()?;
            if dirs.contains(&s) {
                Some(Found {
                    path: p.into(),
                    is_dir: true,
                })
            } else if files.contains(&s) {
                Some(Found {
                    path: p.into(),
                    is_dir: false,
                })
            } else {
                None
            }
        }
    }

    #[test]
    fn homes_are_hidden_and_toolchains_come_back_without_their_credentials() {
        let policy = SandboxPolicy {
            home: Some("/home/u".into()),
            state_dir: Some("/home/u/.rein".into()),
            read_paths: vec!["/home/u/data".into(), "/srv/shared".into()],
            ..Default::default()
        };
        let lookup = host(
            &[
                "/home",
                "/home/u",
                "/root",
                "/home/u/.cargo",
                "/home/u/data",
                "/srv/shared",
                "/home/u/w",
            ],
            &["/home/u/.cargo/credentials.toml"],
        );
        let s = Scope::new(&policy, Path::new("/home/u/w"), &lookup);
        // /home/u lies in /home: one root is enough.
        assert!(s.hidden_roots.contains(&PathBuf::from("/home")));
        assert!(s.hidden_roots.contains(&PathBuf::from("/root")));
        assert!(!s.hidden_roots.contains(&PathBuf::from("/home/u")));
        let dests: Vec<_> = s.bind_back.iter().map(|b| b.dest.clone()).collect();
        assert!(
            dests.contains(&PathBuf::from("/home/u/.cargo")),
            "{dests:?}"
        );
        assert!(dests.contains(&PathBuf::from("/home/u/data")), "{dests:?}");
        // Visible anyway: nothing to bind.
        assert!(!dests.contains(&PathBuf::from("/srv/shared")), "{dests:?}");
        assert!(
            s.hidden
                .contains(&PathBuf::from("/home/u/.cargo/credentials.toml"))
        );
        assert!(s.hidden.contains(&PathBuf::from("/home/u/.rein")));
    }

    #[test]
    fn a_home_workspace_shows_its_toolchains_through_the_workspace() {
        let policy = SandboxPolicy {
            home: Some("/home/u".into()),
            ..Default::default()
        };
        let lookup = host(&["/home", "/home/u", "/home/u/.cargo"], &[]);
        let s = Scope::new(&policy, Path::new("/home/u"), &lookup);
        assert!(s.bind_back.is_empty(), "{:?}", s.bind_back);
    }

    #[test]
    fn a_workspace_holding_the_home_still_hides_it() {
        let policy = SandboxPolicy {
            home: Some("/home/u".into()),
            ..Default::default()
        };
        let lookup = host(&["/home", "/home/u"], &[]);
        let s = Scope::new(&policy, Path::new("/home"), &lookup);
        assert!(s.hidden_roots.contains(&PathBuf::from("/home/u")), "{s:?}");
    }

    #[test]
    fn a_workspace_inside_rein_home_sees_nothing_else_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = std::fs::canonicalize(dir.path()).unwrap();
        let ws = state.join("projects/mine");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(state.join("projects/other")).unwrap();
        std::fs::write(state.join("sessions.db"), "x").unwrap();
        std::fs::create_dir_all(state.join("sessions/s1/outputs")).unwrap();
        let policy = SandboxPolicy {
            state_dir: Some(state.clone()),
            ..Default::default()
        };
        let lookup = |p: &Path| {
            let path = std::fs::canonicalize(p).ok()?;
            let is_dir = path.is_dir();
            Some(Found { path, is_dir })
        };
        let s = Scope::new(&policy, &ws, &lookup);
        let mut hidden = s.hidden.clone();
        hidden.sort();
        assert_eq!(
            hidden,
            [
                state.join("projects/other"),
                state.join("sessions"),
                state.join("sessions.db")
            ]
        );
    }

    #[test]
    fn the_system_is_never_a_home() {
        let policy = SandboxPolicy {
            home: Some("/".into()),
            ..Default::default()
        };
        assert!(!homes(&policy).contains(&PathBuf::from("/")));
    }
}
