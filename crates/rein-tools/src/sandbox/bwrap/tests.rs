//! Tests of the bubblewrap command line, on a fake host.

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
const MOUNTS: &str = "--ro-bind / / --dev /dev --proc /proc --size 1073741824 --tmpfs /tmp \
    --size 1073741824 --tmpfs /var/tmp";

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
    p.network = rein_core::NetworkAccess::On;
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
fn the_git_config_is_bound_read_only_next_to_the_hooks() {
    let args = bwrap_args_with(
        &policy(SandboxMode::WorkspaceWrite),
        Path::new("/w"),
        "x",
        &[],
        host(
            &["/w", "/w/.git", "/w/.git/hooks", "/w/.rein"],
            &["/w/.git/config", "/w/.git/config.worktree"],
        ),
    );
    let s = render(&args);
    let tail = s.split_once("--bind /w /w ").unwrap().1;
    assert_eq!(
        tail,
        "--bind /w/.git /w/.git --ro-bind /w/.git/config /w/.git/config \
         --ro-bind /w/.git/config.worktree /w/.git/config.worktree \
         --ro-bind /w/.git/hooks /w/.git/hooks --ro-bind /w/.rein /w/.rein \
         --chdir /w -- bash -c x"
            .replace("             ", "")
    );
}

#[test]
fn missing_protected_paths_are_created_empty_before_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    // Not a repository: only `.rein` is made, never a `.git`.
    assert_eq!(ensure_protected(&ws).unwrap(), [ws.join(".rein")]);
    assert!(ws.join(".rein").is_dir());
    assert_eq!(std::fs::read_dir(ws.join(".rein")).unwrap().count(), 0);
    assert!(!ws.join(".git").exists());

    std::fs::create_dir(ws.join(".git")).unwrap();
    assert_eq!(
        ensure_protected(&ws).unwrap(),
        [ws.join(".git/hooks"), ws.join(".git/config")]
    );
    assert!(ws.join(".git/hooks").is_dir());
    assert_eq!(std::fs::read(ws.join(".git/config")).unwrap(), b"");
    assert!(!ws.join(".git/config.worktree").exists());

    // What exists is left as it is; the worktree config is made when
    // the repository uses it.
    std::fs::write(ws.join(".rein/settings.json"), "{}").unwrap();
    std::fs::write(
        ws.join(".git/config"),
        "[extensions]\n\tworktreeConfig = true\n",
    )
    .unwrap();
    ensure_protected(&ws).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.join(".rein/settings.json")).unwrap(),
        "{}"
    );
    assert!(
        std::fs::read_to_string(ws.join(".git/config"))
            .unwrap()
            .contains("worktreeConfig")
    );
    assert!(ws.join(".git/config.worktree").is_file());

    // A worktree's `.git` file is not a folder to fill.
    let dir2 = tempfile::tempdir().unwrap();
    let ws2 = std::fs::canonicalize(dir2.path()).unwrap();
    std::fs::write(ws2.join(".git"), "gitdir: /elsewhere\n").unwrap();
    ensure_protected(&ws2).unwrap();
    assert!(ws2.join(".git").is_file());
}

#[test]
fn a_protected_path_that_cannot_be_made_refuses_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    // A link to nothing cannot be bound, and a command could create its
    // target.
    std::os::unix::fs::symlink(ws.join("nowhere"), ws.join(".rein")).unwrap();
    let e = ensure_protected(&ws).unwrap_err();
    assert!(e.contains("the command was not run"), "{e}");
    assert!(e.contains(".rein"), "{e}");
    assert!(!ws.join("nowhere").exists());

    std::fs::remove_file(ws.join(".rein")).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::os::unix::fs::symlink(ws.join("gone"), ws.join(".git/hooks")).unwrap();
    let e = ensure_protected(&ws).unwrap_err();
    assert!(e.contains(".git/hooks"), "{e}");

    // A path under a file cannot be created at all.
    let file = ws.join("plain");
    std::fs::write(&file, "").unwrap();
    let e = ensure_protected(&file).unwrap_err();
    assert!(e.contains("could not be created"), "{e}");
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
        s.contains(
            "--bind /w /w --ro-bind /w/.git /w/.git --ro-bind /w/.git/hooks /w/.git/hooks --chdir"
        ),
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
fn a_home_workspace_still_masks_each_token_store_of_the_never_read_list() {
    let mut perms = rein_core::Permissions::new(rein_core::PermissionMode::Plan);
    perms.home = Some(PathBuf::from("/home/u"));
    let mut p = perms.sandbox(rein_core::PermissionMode::Plan);
    p.limits.tmp_size = 0;
    let args = bwrap_args_with(
        &p,
        Path::new("/home/u"),
        "x",
        &[],
        host(
            &["/home", "/home/u", "/home/u/.config/gh", "/home/u/.docker"],
            &[
                "/home/u/.git-credentials",
                "/home/u/.docker/config.json",
                "/home/u/.npmrc",
            ],
        ),
    );
    let s = render(&args);
    for masked in [
        "--ro-bind /dev/null /home/u/.git-credentials",
        "--tmpfs /home/u/.config/gh --remount-ro /home/u/.config/gh",
        "--ro-bind /dev/null /home/u/.docker/config.json",
        "--ro-bind /dev/null /home/u/.npmrc",
    ] {
        let (before, _) = s
            .split_once(masked)
            .unwrap_or_else(|| panic!("{masked}: {s}"));
        // Over the workspace, not under it.
        assert!(before.contains("--ro-bind /home/u /home/u"), "{s}");
    }
    assert!(!s.contains("/dev/null /home/u/.docker "), "{s}");
}

#[test]
fn homes_are_hidden_toolchains_bound_back_and_the_state_folder_hidden() {
    let mut p = policy(SandboxMode::ReadOnly);
    p.home = Some(PathBuf::from("/home/u"));
    p.state_dir = Some(PathBuf::from("/home/u/w/.state"));
    p.limits.tmp_size = 0;
    let args = bwrap_args_with(
        &p,
        Path::new("/home/u/w"),
        "x",
        &[],
        host(
            &[
                "/home",
                "/home/u",
                "/home/u/w",
                "/home/u/w/.state",
                "/home/u/.cargo",
                "/home/u/.rustup",
            ],
            &["/home/u/.cargo/credentials.toml"],
        ),
    );
    let s = render(&args);
    let tail = s.split_once("--tmpfs /var/tmp ").unwrap().1;
    assert_eq!(
        tail,
        "--tmpfs /home --ro-bind /home/u/w /home/u/w \
         --ro-bind /home/u/.cargo /home/u/.cargo --ro-bind /home/u/.rustup /home/u/.rustup \
         --ro-bind /dev/null /home/u/.cargo/credentials.toml \
         --tmpfs /home/u/w/.state --remount-ro /home/u/w/.state \
         --remount-ro /home --chdir /home/u/w -- bash -c x"
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
