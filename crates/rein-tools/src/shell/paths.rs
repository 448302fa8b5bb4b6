//! Where a path argument points: home expansion, resolution against the
//! current directory with symlinks followed where the path exists, and its
//! place relative to the workspace.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::Dyn;
use super::words::has_glob;

/// How many symlinks a resolution may follow.
const MAX_HOPS: u32 = 40;

/// The home directory a word refers to: `~`, `~/rest`, `$HOME`,
/// `$HOME/rest`, `${HOME}`, `${HOME}/rest` (as the parser leaves them in
/// argv) resolve against `$HOME`. `None` when the word has no such prefix or
/// the home directory is unknown.
pub fn expand_home(word: &str) -> Option<PathBuf> {
    let rest = home_rest(word)?;
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    let mut path = PathBuf::from(home);
    if !rest.is_empty() {
        path.push(rest);
    }
    Some(path)
}

/// What follows a home prefix (without the slash), if the word has one.
fn home_rest(word: &str) -> Option<&str> {
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = word.strip_prefix(prefix) {
            if rest.is_empty() {
                return Some("");
            }
            if let Some(r) = rest.strip_prefix('/') {
                return Some(r.trim_start_matches('/'));
            }
        }
    }
    None
}

/// A path argument, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The path itself.
    Path(PathBuf),
    /// Entries somewhere below this directory (a glob like `dir/*.o`).
    Below(PathBuf),
    /// Cannot be known statically; the text says why.
    Unknown(String),
}

/// Where a target lies relative to the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Strictly inside.
    Inside,
    /// The workspace root itself.
    Root,
    /// Outside (an ancestor of the workspace is outside too).
    Outside,
}

impl Target {
    pub(crate) fn place(&self, workspace: &Path) -> Option<Place> {
        match self {
            Self::Path(p) if p == workspace => Some(Place::Root),
            Self::Path(p) if p.starts_with(workspace) => Some(Place::Inside),
            Self::Below(p) if p.starts_with(workspace) => Some(Place::Inside),
            Self::Path(_) | Self::Below(_) => Some(Place::Outside),
            Self::Unknown(_) => None,
        }
    }

    /// The path shown in reasons.
    pub(crate) fn shown(&self) -> String {
        match self {
            Self::Path(p) => p.display().to_string(),
            Self::Below(p) => format!("{}/…", p.display().to_string().trim_end_matches('/')),
            Self::Unknown(w) => w.clone(),
        }
    }
}

/// Resolve a path argument against `cwd` (`None` when the directory is not
/// known statically, after `cd "$X"`).
pub(crate) fn resolve(word: &str, d: Dyn, cwd: Option<&Path>) -> Target {
    if d == Dyn::Runtime {
        return Target::Unknown(word.to_string());
    }
    let absolute = match home_rest(word) {
        Some(_) => match expand_home(word) {
            Some(p) => p,
            None => return Target::Unknown(word.to_string()),
        },
        None if word.starts_with('/') => PathBuf::from(word),
        None => match cwd {
            Some(dir) => dir.join(word),
            None => {
                return Target::Unknown(format!("{word} (in a directory only known at run time)"));
            }
        },
    };
    if d == Dyn::Glob {
        return glob_base(&absolute);
    }
    Target::Path(real_path(&absolute))
}

/// The directory a glob's matches lie below. A component like `.*` may
/// match `..`, so its base is the parent.
fn glob_base(pattern: &Path) -> Target {
    let mut base = PathBuf::new();
    for comp in pattern.components() {
        match comp {
            Component::Normal(name) => {
                let name = name.to_string_lossy();
                if has_glob(&name) {
                    if name.starts_with('.') || name.starts_with('[') || name.starts_with('?') {
                        base.push("..");
                    }
                    return Target::Below(real_path(&base));
                }
                base.push(name.as_ref());
            }
            other => base.push(other.as_os_str()),
        }
    }
    Target::Path(real_path(&base))
}

/// `path` (absolute) with symlinks resolved where it exists: the longest
/// existing prefix is canonicalized and the rest appended, `..` applied.
pub(crate) fn real_path(path: &Path) -> PathBuf {
    real_path_hops(path, 0)
}

fn real_path_hops(path: &Path, hops: u32) -> PathBuf {
    let mut cur = PathBuf::from("/");
    let mut tail: Vec<OsString> = Vec::new();
    let comps: Vec<Component<'_>> = path.components().collect();
    for (i, comp) in comps.iter().enumerate() {
        match comp {
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                if tail.pop().is_none() {
                    cur.pop();
                }
            }
            Component::Normal(name) => {
                if !tail.is_empty() {
                    tail.push(name.to_os_string());
                    continue;
                }
                let candidate = cur.join(name);
                if let Ok(real) = std::fs::canonicalize(&candidate) {
                    cur = real;
                } else if let (Ok(target), true) = (std::fs::read_link(&candidate), hops < MAX_HOPS)
                {
                    // A dangling symlink: follow it where it would point.
                    let mut next = cur.join(target);
                    for rest in &comps[i + 1..] {
                        next.push(rest.as_os_str());
                    }
                    return real_path_hops(&next, hops + 1);
                } else {
                    tail.push(name.to_os_string());
                }
            }
        }
    }
    for t in tail {
        cur.push(t);
    }
    cur
}

/// Device paths writing to which is harmless.
pub(crate) fn harmless_device(path: &Path) -> bool {
    const FILES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/stdin",
        "/dev/tty",
    ];
    const DIRS: &[&str] = &["/dev/fd", "/dev/shm", "/dev/pts", "/proc/self/fd"];
    FILES.iter().any(|f| path == Path::new(f))
        || DIRS
            .iter()
            .any(|d| path.starts_with(d) && path != Path::new(d))
}

/// `path` with `.` and `..` applied, without looking at the file system.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for comp in path.components() {
        match comp {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}
