//! The bubblewrap command line.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rein_core::{SandboxMode, SandboxPolicy};

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

/// A path as found on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapEntry {
    /// Canonical.
    pub path: PathBuf,
    pub is_dir: bool,
}

/// Whether a trivial command runs under the same isolation as real ones.
pub(super) fn probe(bwrap: &Path) -> bool {
    std::process::Command::new(bwrap)
        .args(ISOLATION)
        .arg("--unshare-net")
        .args(BASE)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
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
/// devices, proc, private /tmp, the workspace, read-only paths inside it,
/// hidden paths.
pub fn bwrap_args_with(
    policy: &SandboxPolicy,
    workspace: &Path,
    script: &str,
    always_hidden: &[PathBuf],
    lookup: impl Fn(&Path) -> Option<BwrapEntry>,
) -> Vec<OsString> {
    let mut args = Args::default();
    args.push_all(ISOLATION);
    if !policy.network {
        args.push("--unshare-net");
    }
    args.push_all(BASE);

    let writable = policy.mode != SandboxMode::ReadOnly;
    // Bound even in read-only mode: a workspace under /tmp would otherwise
    // vanish under the private /tmp.
    args.bind(if writable { "--bind" } else { "--ro-bind" }, workspace);
    let mut mounted: BTreeSet<PathBuf> = BTreeSet::new();
    mounted.insert(workspace.to_path_buf());

    if writable {
        let mut protected: Vec<PathBuf> = [".git/hooks", ".rein"]
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

    let hidden: Vec<BwrapEntry> = policy
        .hidden
        .iter()
        .map(|p| workspace.join(p))
        .chain(always_hidden.iter().cloned())
        .filter_map(|p| lookup(&p))
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

    args.push("--chdir");
    args.push(workspace);
    args.push_all(["--", "bash", "-c"]);
    args.push(script);
    args.0
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
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn policy(mode: SandboxMode) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            ..Default::default()
        }
    }

    /// A fake host where exactly `dirs` and `files` exist, canonical as
    /// given, with `/home/u/link` a symlink to `/home/u/real`.
    fn host<'a>(dirs: &'a [&'a str], files: &'a [&'a str]) -> impl Fn(&Path) -> Option<BwrapEntry> {
        move |p: &Path| {
            let p = if p == Path::new("/home/u/link") {
                PathBuf::from("/home/u/real")
            } else {
                p.to_path_buf()
            };
            let s = p.to_str()?;
            if dirs.contains(&s) {
                Some(BwrapEntry {
                    path: p,
                    is_dir: true,
                })
            } else if files.contains(&s) {
                Some(BwrapEntry {
                    path: p,
                    is_dir: false,
                })
            } else {
                None
            }
        }
    }

    fn render(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    const HEAD: &str = "--die-with-parent --new-session --cap-drop ALL --unshare-pid \
        --unshare-ipc --unshare-uts --unshare-cgroup-try";
    const MOUNTS: &str = "--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /var/tmp";

    #[test]
    fn workspace_write_binds_the_workspace_and_cuts_the_network() {
        let ws = Path::new("/w");
        let args = bwrap_args_with(
            &policy(SandboxMode::WorkspaceWrite),
            ws,
            "echo hi",
            &[],
            host(&["/w"], &[]),
        );
        assert_eq!(
            render(&args),
            format!("{HEAD} --unshare-net {MOUNTS} --bind /w /w --chdir /w -- bash -c echo hi")
        );
        // The script stays one argument.
        assert_eq!(args.last().unwrap(), "echo hi");
    }

    #[test]
    fn read_only_binds_the_workspace_read_only_and_protects_nothing_more() {
        let mut p = policy(SandboxMode::ReadOnly);
        p.network = true;
        p.read_only = vec![PathBuf::from("/w/state")];
        let args = bwrap_args_with(
            &p,
            Path::new("/w"),
            "ls",
            &[],
            host(&["/w", "/w/.git/hooks", "/w/state"], &[]),
        );
        assert_eq!(
            render(&args),
            format!("{HEAD} {MOUNTS} --ro-bind /w /w --chdir /w -- bash -c ls")
        );
    }

    #[test]
    fn protected_paths_get_their_folders_pinned_then_a_read_only_bind() {
        let mut p = policy(SandboxMode::WorkspaceWrite);
        p.read_only = vec![
            PathBuf::from("/w/a/b/c.db"),
            PathBuf::from("missing"),
            PathBuf::from("/etc"),
            // The workspace and its parents are never made read-only.
            PathBuf::from("/w"),
            PathBuf::from("/"),
        ];
        let args = bwrap_args_with(
            &p,
            Path::new("/w"),
            "x",
            &[],
            host(
                &[
                    "/w",
                    "/w/.git",
                    "/w/.git/hooks",
                    "/w/.rein",
                    "/w/a",
                    "/w/a/b",
                    "/etc",
                    "/",
                ],
                &["/w/a/b/c.db"],
            ),
        );
        let s = render(&args);
        let tail = s.split_once("--bind /w /w ").unwrap().1;
        assert_eq!(
            tail,
            "--ro-bind /etc /etc \
             --bind /w/.git /w/.git --ro-bind /w/.git/hooks /w/.git/hooks \
             --ro-bind /w/.rein /w/.rein \
             --bind /w/a /w/a --bind /w/a/b /w/a/b --ro-bind /w/a/b/c.db /w/a/b/c.db \
             --chdir /w -- bash -c x"
                .replace("             ", "")
        );
    }

    #[test]
    fn a_protected_folder_inside_another_is_not_rebound_writable() {
        let mut p = policy(SandboxMode::WorkspaceWrite);
        p.read_only = vec![PathBuf::from(".git")];
        let args = bwrap_args_with(
            &p,
            Path::new("/w"),
            "x",
            &[],
            host(&["/w", "/w/.git", "/w/.git/hooks"], &[]),
        );
        let s = render(&args);
        assert!(
            s.contains("--bind /w /w --ro-bind /w/.git /w/.git --ro-bind /w/.git/hooks /w/.git/hooks --chdir"),
            "{s}"
        );
    }

    #[test]
    fn hidden_folders_get_an_empty_read_only_tmpfs_and_files_dev_null() {
        let mut p = policy(SandboxMode::WorkspaceWrite);
        p.hidden = vec![
            PathBuf::from("/home/u/.ssh"),
            PathBuf::from("/home/u/.netrc"),
            PathBuf::from("/home/u/link"),
            PathBuf::from("/home/u/.aws"),
            // Would hide the workspace.
            PathBuf::from("/home/u"),
        ];
        let args = bwrap_args_with(
            &p,
            Path::new("/home/u/w"),
            "x",
            &[
                PathBuf::from("/run/docker.sock"),
                PathBuf::from("/run/crio/crio.sock"),
                PathBuf::from("/run/user/1000"),
            ],
            host(
                &[
                    "/home/u",
                    "/home/u/w",
                    "/home/u/.ssh",
                    "/home/u/real",
                    "/run/user/1000",
                ],
                &["/home/u/.netrc", "/run/docker.sock"],
            ),
        );
        let s = render(&args);
        let tail = s.split_once("--bind /home/u/w /home/u/w ").unwrap().1;
        assert_eq!(
            tail,
            "--tmpfs /home/u/.ssh --remount-ro /home/u/.ssh \
             --ro-bind /dev/null /home/u/.netrc \
             --tmpfs /home/u/real --remount-ro /home/u/real \
             --ro-bind /dev/null /run/docker.sock \
             --tmpfs /run/user/1000 --remount-ro /run/user/1000 \
             --chdir /home/u/w -- bash -c x"
                .replace("             ", "")
        );
    }

    #[test]
    fn sockets_and_the_runtime_folder_are_always_hidden() {
        let paths = always_hidden();
        for p in [
            "/run/docker.sock",
            "/run/systemd/private",
            "/run/dbus/system_bus_socket",
        ] {
            assert!(paths.contains(&PathBuf::from(p)), "{p}");
        }
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert!(paths.contains(&PathBuf::from(format!("/run/user/{euid}"))));
    }
}
