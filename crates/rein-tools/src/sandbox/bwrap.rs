//! The bubblewrap command line.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rein_core::{SandboxMode, SandboxPolicy};

use super::scope::Scope;

/// Namespaces and privileges, the same for every command and the probe.
/// `--new-session` keeps the command away from the terminal rein runs in
/// (no TIOCSTI injection); the killable process group stays bwrap's own.
/// `--cap-drop ALL` matters when rein runs as root: a root command keeping
/// its capabilities could simply remount `/` writable.
const ISOLATION: [&str; 8] = [
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
];

/// The base filesystem: everything read-only, minimal devices (no disks),
/// a /proc of the new PID namespace, a private /tmp.
const BASE: [&str; 11] = [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--tmpfs",
    "/tmp",
    "--tmpfs",
    "/var/tmp",
];

/// Sockets through which a command could have something run outside the
/// sandbox (unix sockets stay connectable on a read-only mount, and in
/// another network namespace): container runtimes, systemd, the system
/// bus. Hidden when present, with the user's runtime folder (user systemd,
/// session bus, agents); see [`always_hidden`].
const ALWAYS_HIDDEN: [&str; 8] = [
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/run/systemd/private",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
];

/// [`ALWAYS_HIDDEN`], `$XDG_RUNTIME_DIR` and `/run/user/<euid>`.
fn always_hidden() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = ALWAYS_HIDDEN.iter().map(PathBuf::from).collect();
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && dir.is_absolute()
    {
        paths.push(dir);
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    paths.push(PathBuf::from(format!("/run/user/{euid}")));
    paths
}

/// Paths of the workspace no command may change, bound read-only over the
/// writable workspace: rein's own settings (`.rein`, whose rules the next
/// run loads) and what makes git run code on the host later (its hooks, and
/// the repository's config, where `core.hooksPath`, `core.fsmonitor`,
/// `alias.*`, filters, ... name commands). So `git config` writes, `git
/// remote add` and setting a branch's upstream fail inside the sandbox, on
/// purpose. `.git/config.worktree` matters only when the repository turns
/// `extensions.worktreeConfig` on. Missing ones are created first by
/// [`ensure_protected`], so a command cannot create them either (and taken
/// away again once no command needs them, see [`super::made`]).
pub(super) const PROTECTED: [&str; 4] =
    [".git/config", ".git/config.worktree", ".git/hooks", ".rein"];

/// Create on the host the protected paths of `workspace` (canonical) that a
/// command could otherwise create writable: an empty `.rein/` folder, and
/// when `.git` is a folder, an empty `.git/hooks/`, an empty `.git/config`
/// and (when the config mentions `worktreeConfig`) an empty
/// `.git/config.worktree`. A bind needs an existing path: one that is
/// missing would be left writable, and a command could write, say,
/// `.rein/settings.json` for the next run to load. When a path cannot be
/// created (other than on a read-only file system, where the command
/// cannot create it either), or exists as a symlink to nothing, the
/// command must not run: the error says why. For writable modes only
/// (read-only mode binds the whole workspace read-only). Returns the paths
/// it created, outermost first (what is put back later).
pub fn ensure_protected(workspace: &Path) -> Result<Vec<PathBuf>, String> {
    let mut made = Vec::new();
    ensure(&workspace.join(".rein"), Kind::Dir, &mut made)?;
    let git = workspace.join(".git");
    // Not a repository (or a worktree's `.git` file pointing elsewhere):
    // creating `.git` would make one.
    if std::fs::metadata(&git).is_ok_and(|m| m.is_dir()) {
        ensure(&git.join("hooks"), Kind::Dir, &mut made)?;
        let config = git.join("config");
        ensure(&config, Kind::File, &mut made)?;
        let text = std::fs::read_to_string(&config).unwrap_or_default();
        if text.to_ascii_lowercase().contains("worktreeconfig") {
            ensure(&git.join("config.worktree"), Kind::File, &mut made)?;
        }
    }
    Ok(made)
}

#[derive(Clone, Copy)]
enum Kind {
    Dir,
    File,
}

/// Create `path` as an empty folder or file unless something is there
/// (adding it to `made` when created), then make sure it resolves to
/// something that can be bound.
fn ensure(path: &Path, kind: Kind, made: &mut Vec<PathBuf>) -> Result<(), String> {
    let created = match kind {
        Kind::Dir => std::fs::create_dir(path),
        Kind::File => std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map(drop),
    };
    let refuse = |why: String| {
        Err(format!(
            "the command was not run: {} must exist so the sandbox can keep commands from \
             changing it, and {why}",
            path.display()
        ))
    };
    match created {
        Ok(()) => made.push(path.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        // Nothing can create it there, the command no more than rein.
        Err(e) if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem => return Ok(()),
        Err(e) => return refuse(format!("it could not be created: {e}")),
    }
    // Follows symlinks: a link to nothing cannot be bound, and a command
    // could create its target.
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(e) => refuse(format!(
            "it cannot be looked up (a symlink to nothing?): {e}"
        )),
    }
}

/// A path as found on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapEntry {
    /// Canonical.
    pub path: PathBuf,
    pub is_dir: bool,
}

/// What the probe found out about this bubblewrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Probed {
    /// A trivial command runs under the same isolation as real ones.
    pub usable: bool,
    /// It caps a tmpfs's size (`--size`, bubblewrap 0.5 and later).
    pub caps_tmp: bool,
}

/// Run a trivial command under the same isolation as real ones, with a
/// size-capped `/tmp`; only when that fails, once more without the cap (an
/// older bubblewrap). One process in the common case: this runs before
/// the first command of every rein process.
pub(super) fn probe(bwrap: &Path) -> Probed {
    let run = |capped: bool| {
        let mut cmd = std::process::Command::new(bwrap);
        cmd.args(ISOLATION).arg("--unshare-net");
        if capped {
            // BASE with `--size` before its first tmpfs.
            cmd.args(&BASE[..7])
                .args(["--size", "1048576"])
                .args(&BASE[7..]);
        } else {
            cmd.args(BASE);
        }
        cmd.args(["--", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if run(true) {
        Probed {
            usable: true,
            caps_tmp: true,
        }
    } else {
        Probed {
            usable: run(false),
            caps_tmp: false,
        }
    }
}

/// The arguments after `bwrap` that run `script` with `bash -c` in
/// `workspace` (canonical) under `policy`, looking paths up on this host.
pub fn bwrap_args(policy: &SandboxPolicy, workspace: &Path, script: &str) -> Vec<OsString> {
    bwrap_args_with(policy, workspace, script, &always_hidden(), |p| {
        let path = std::fs::canonicalize(p).ok()?;
        let meta = std::fs::metadata(&path).ok()?;
        Some(BwrapEntry {
            is_dir: meta.is_dir(),
            path,
        })
    })
}

/// [`bwrap_args`] with the host given: `always_hidden` is hidden besides
/// the policy's hidden paths, and `lookup` returns the canonical path and
/// kind of a path, or `None` when it does not exist.
/// Later mounts cover earlier ones, so the order is: the read-only root,
/// devices, proc, private size-capped /tmp, the hidden home folders (see
/// [`super::scope`]), the workspace, home folders hidden inside it, the
/// toolchain folders and `read_paths` bound back read-only, read-only paths
/// inside the workspace, hidden paths (credential folders, `$REIN_HOME`),
/// and last the hidden home folders made read-only (only now: bubblewrap
/// makes the mount points of what is bound inside them).
pub fn bwrap_args_with(
    policy: &SandboxPolicy,
    workspace: &Path,
    script: &str,
    always_hidden: &[PathBuf],
    lookup: impl Fn(&Path) -> Option<BwrapEntry>,
) -> Vec<OsString> {
    let mut args = Args::default();
    args.push_all(ISOLATION);
    if policy.network != rein_core::NetworkAccess::On {
        args.push("--unshare-net");
    }
    base_mounts(&mut args, policy.limits.tmp_size);

    let scope = Scope::new(policy, workspace, &lookup);
    let (inner_roots, outer_roots): (Vec<&PathBuf>, Vec<&PathBuf>) = scope
        .hidden_roots
        .iter()
        .partition(|r| r.starts_with(workspace) && *r != workspace);
    for root in &outer_roots {
        args.push("--tmpfs");
        args.push(root);
    }

    let writable = policy.mode != SandboxMode::ReadOnly;
    // Bound even in read-only mode: a workspace under /tmp would otherwise
    // vanish under the private /tmp.
    args.bind(if writable { "--bind" } else { "--ro-bind" }, workspace);
    for root in &inner_roots {
        args.push("--tmpfs");
        args.push(root);
    }
    for back in &scope.bind_back {
        args.push("--ro-bind");
        args.push(&back.src);
        args.push(&back.dest);
    }

    if writable {
        protect(&mut args, policy, workspace, &lookup);
    }
    hide(&mut args, policy, &scope, workspace, always_hidden, &lookup);

    for root in scope.hidden_roots.iter().filter(|r| *r != workspace) {
        args.push("--remount-ro");
        args.push(root);
    }
    args.push("--chdir");
    args.push(workspace);
    args.push_all(["--", "bash", "-c"]);
    args.push(script);
    args.0
}

/// Bind `PROTECTED` and the policy's read-only paths read-only
/// over the writable workspace, each folder between the workspace and a
/// protected path a mount point of its own.
fn protect(
    args: &mut Args,
    policy: &SandboxPolicy,
    workspace: &Path,
    lookup: &impl Fn(&Path) -> Option<BwrapEntry>,
) {
    let mut mounted: BTreeSet<PathBuf> = BTreeSet::new();
    mounted.insert(workspace.to_path_buf());
    let mut protected: Vec<PathBuf> = PROTECTED
        .iter()
        .map(|p| workspace.join(p))
        .chain(policy.read_only.iter().map(|p| workspace.join(p)))
        .filter_map(|p| lookup(&p))
        .map(|e| e.path)
        // The workspace itself stays writable.
        .filter(|p| !workspace.starts_with(p))
        .collect();
    protected.sort();
    protected.dedup();
    for path in protected {
        if path.starts_with(workspace) {
            // Each folder between the workspace and the protected path
            // becomes a mount point of its own, which cannot be renamed:
            // otherwise `mv .git x && mkdir -p .git/hooks` would put a
            // writable hooks folder where the host looks for one.
            let mut between = Vec::new();
            let mut at = path.parent();
            while let Some(dir) = at {
                if dir == workspace || !dir.starts_with(workspace) {
                    break;
                }
                between.push(dir.to_path_buf());
                at = dir.parent();
            }
            for dir in between.into_iter().rev() {
                if mounted.insert(dir.clone()) {
                    args.bind("--bind", &dir);
                }
            }
        }
        if mounted.insert(path.clone()) {
            args.bind("--ro-bind", &path);
        }
    }
}

/// Hide the policy's and the scope's hidden paths and `always_hidden`:
/// folders under an empty read-only tmpfs, files under `/dev/null`.
fn hide(
    args: &mut Args,
    policy: &SandboxPolicy,
    scope: &Scope,
    workspace: &Path,
    always_hidden: &[PathBuf],
    lookup: &impl Fn(&Path) -> Option<BwrapEntry>,
) {
    // Scope paths are hidden where commands see them too (a toolchain
    // folder reached through a symlink is bound at the link's place).
    let seen_at = scope.hidden.iter().filter_map(|p| {
        let e = lookup(p)?;
        (e.path != *p).then(|| BwrapEntry {
            path: p.clone(),
            is_dir: e.is_dir,
        })
    });
    let hidden: Vec<BwrapEntry> = policy
        .hidden
        .iter()
        .chain(&scope.hidden)
        .map(|p| workspace.join(p))
        .chain(always_hidden.iter().cloned())
        .filter_map(|p| lookup(&p))
        .chain(seen_at)
        // Hiding a folder that holds the workspace would hide the workspace.
        .filter(|e| !workspace.starts_with(&e.path))
        .collect();
    let mut seen = BTreeSet::new();
    for entry in hidden {
        if !seen.insert(entry.path.clone()) {
            continue;
        }
        if entry.is_dir {
            args.push("--tmpfs");
            args.push(&entry.path);
            args.push("--remount-ro");
            args.push(&entry.path);
        } else {
            args.push("--ro-bind");
            args.push("/dev/null");
            args.push(&entry.path);
        }
    }
}

/// [`BASE`] with `/tmp` and `/var/tmp` capped at `tmp_size` bytes each
/// (0: uncapped).
fn base_mounts(args: &mut Args, tmp_size: u64) {
    for a in BASE {
        if a == "--tmpfs" && tmp_size > 0 {
            args.push("--size");
            args.push(tmp_size.to_string());
        }
        args.push(a);
    }
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push(&mut self, a: impl AsRef<std::ffi::OsStr>) {
        self.0.push(a.as_ref().to_os_string());
    }

    fn push_all<A: AsRef<std::ffi::OsStr>>(&mut self, all: impl IntoIterator<Item = A>) {
        for a in all {
            self.push(a);
        }
    }

    fn bind(&mut self, how: &str, path: &Path) {
        self.push(how);
        self.push(path);
        self.push(path);
    }
}

#[cfg(test)]
mod tests;
