//! The shell under bubblewrap: the shared checks, plus git and its
//! hooks, /tmp, hard links, protected and hidden paths and sockets.

use std::path::Path;
use std::time::{Duration, Instant};

use rein_core::SandboxMode;

use super::checks::{
    kills_everything, network, privileges_dropped, read_only_changes_nothing,
    signals_cannot_reach_outside, workspace_writes_work, writes_outside_fail,
};
use super::{Sbx, bwrap, have, policy, process_running, snapshot, unique};

#[tokio::test]
async fn bwrap_workspace_writes_work() {
    let Some(tool) = bwrap() else { return };
    workspace_writes_work(&tool).await;
}

#[tokio::test]
async fn bwrap_git_works_while_its_hooks_stay_read_only() {
    let Some(tool) = bwrap() else { return };
    if !have("git") {
        rein_test_support::skip(rein_test_support::Component::Git, "git not found");
        return;
    }
    let sbx = Sbx::new().await;
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&sbx.ws)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let hook = sbx.ws(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let hooks = snapshot(&sbx.ws(".git/hooks"));
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .ok(
            &tool,
            &p,
            "echo x > f && git add f && git -c user.name=t -c user.email=t@t commit -q -m one \
             && git log --oneline | wc -l",
        )
        .await;
    assert!(out.starts_with("1\n"), "{out}");
    sbx.fails(&tool, &p, "echo evil > .git/hooks/post-checkout")
        .await;
    assert_eq!(snapshot(&sbx.ws(".git/hooks")), hooks);
}

#[tokio::test]
async fn bwrap_workspace_under_tmp_stays_shared_and_tmp_is_private() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::with_workspace_in(Path::new("/tmp")).await;
    let leak = format!("/tmp/rein-sandbox-leak-{}", unique());
    let command =
        format!("echo in > f && echo private > {leak} && cat {leak} && ls -A /tmp | wc -l");
    let out = sbx
        .ok(&tool, &policy(SandboxMode::WorkspaceWrite), &command)
        .await;
    // Inside, /tmp holds only the workspace's mount point path and the file.
    assert!(out.starts_with("private\n2\n"), "{out}");
    assert_eq!(std::fs::read_to_string(sbx.ws("f")).unwrap(), "in\n");
    assert!(
        !Path::new(&leak).exists(),
        "the private /tmp leaked to the host"
    );
}

#[tokio::test]
async fn bwrap_writes_outside_the_workspace_fail() {
    let Some(tool) = bwrap() else { return };
    writes_outside_fail(&tool, true).await;
}

#[tokio::test]
async fn bwrap_hard_links_to_outside_files_cannot_be_made_but_old_ones_write_through() {
    let Some(tool) = bwrap() else { return };
    use std::os::unix::fs::MetadataExt;
    let sbx = Sbx::new().await;
    // Same filesystem: only the sandbox's mount boundary can refuse the link.
    assert_eq!(
        std::fs::metadata(&sbx.ws).unwrap().dev(),
        std::fs::metadata(&sbx.out).unwrap().dev()
    );
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .fails(&tool, &p, "ln OUT/existing WS/h && echo y >> WS/h")
        .await;
    assert!(out.contains("Invalid cross-device link"), "{out}");
    assert!(!sbx.ws("h").exists());
    assert_eq!(
        std::fs::read_to_string(sbx.out.join("existing")).unwrap(),
        "orig\n"
    );

    // Known limit: a hard link that already exists in the workspace (made
    // outside the sandbox) is the same file, and the workspace is writable.
    std::fs::write(sbx.out.join("linked"), "orig\n").unwrap();
    std::fs::hard_link(sbx.out.join("linked"), sbx.ws("pre")).unwrap();
    sbx.ok(&tool, &p, "echo y >> pre").await;
    assert_eq!(
        std::fs::read_to_string(sbx.out.join("linked")).unwrap(),
        "orig\ny\n"
    );
}

#[tokio::test]
async fn bwrap_git_hooks_rein_and_read_only_paths_cannot_be_changed_or_replaced() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    sbx.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
    sbx.write(".git/HEAD", "ref: refs/heads/main\n");
    sbx.write(".rein/state.json", "{}\n");
    sbx.write("data/keep.txt", "keep\n");
    sbx.write("data/other.txt", "other\n");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.read_only = vec![sbx.ws("data/keep.txt")];
    let protected = || {
        [".git/hooks", ".rein", "data/keep.txt"]
            .iter()
            .map(|rel| {
                (
                    rel.to_string(),
                    snapshot(&sbx.ws(rel)),
                    sbx.ws(rel)
                        .is_file()
                        .then(|| std::fs::read_to_string(sbx.ws(rel)).unwrap()),
                )
            })
            .collect::<Vec<_>>()
    };
    let before = protected();
    for cmd in [
        "echo evil > .git/hooks/pre-commit",
        "touch .git/hooks/post-checkout",
        "rm .git/hooks/pre-commit",
        "rm -rf .git/hooks",
        "mv .git/hooks .git/h2",
        "mv .git .git2",
        "rm -rf .git",
        "echo x > .rein/state.json",
        "touch .rein/new",
        "rm -rf .rein",
        "mv .rein .rein2",
        "echo x >> data/keep.txt",
        "rm data/keep.txt",
        "mv data/keep.txt data/moved",
        "mv data data2",
        "ln -sf /etc/passwd data/keep.txt",
    ] {
        sbx.fails(&tool, &p, cmd).await;
        assert_eq!(protected(), before, "`{cmd}` changed a protected path");
    }
    assert!(!sbx.ws(".git2").exists());
    assert!(!sbx.ws(".rein2").exists());
    assert!(!sbx.ws("data2").exists());
    // The rest of .git and of the folder stays writable.
    sbx.ok(
        &tool,
        &p,
        "echo x > .git/other && echo y > data/other.txt && rm data/other.txt",
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(sbx.ws(".git/other")).unwrap(),
        "x\n"
    );
}

#[tokio::test]
async fn bwrap_hidden_paths_cannot_be_read_or_written() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    let home = sbx.out.join("home");
    let secret = format!("PRIVATE-KEY-MATERIAL-{}", unique());
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), &secret).unwrap();
    std::fs::write(home.join(".netrc"), &secret).unwrap();
    std::fs::write(home.join("visible.txt"), "visible\n").unwrap();
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.hidden = vec![home.join(".ssh"), home.join(".netrc"), home.join("missing")];
    let before = snapshot(&sbx.out);
    let h = home.display();
    for cmd in [
        format!("cat {h}/.ssh/id_rsa"),
        format!("cat {h}/.netrc | grep PRIVATE"),
        format!("grep -r PRIVATE {h}"),
        format!("cp {h}/.ssh/id_rsa WS/stolen && grep PRIVATE WS/stolen"),
        format!("tar cf - {h} 2>/dev/null | grep -a PRIVATE"),
        format!("touch {h}/.ssh/new"),
    ] {
        let out = sbx.fails(&tool, &p, &cmd).await;
        assert!(!out.contains(&secret), "`{cmd}` read a hidden file: {out}");
    }
    let out = sbx
        .ok(
            &tool,
            &p,
            &format!("ls -A {h}/.ssh | wc -l; cat {h}/visible.txt"),
        )
        .await;
    assert!(out.starts_with("0\nvisible\n"), "{out}");
    assert_eq!(snapshot(&sbx.out), before);
}

/// Unix sockets stay connectable through read-only mounts and a new
/// network namespace; a hidden one is not.
#[tokio::test]
async fn bwrap_hidden_sockets_cannot_be_connected() {
    let Some(tool) = bwrap() else { return };
    if !have("python3") {
        rein_test_support::skip(rein_test_support::Component::Python3, "python3 not found");
        return;
    }
    let sbx = Sbx::new().await;
    let hidden = sbx.out.join("hidden.sock");
    let open = sbx.out.join("open.sock");
    let _l1 = std::os::unix::net::UnixListener::bind(&hidden).unwrap();
    let _l2 = std::os::unix::net::UnixListener::bind(&open).unwrap();
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.hidden = vec![hidden.clone()];
    let connect = |path: &Path| {
        format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
             s.connect('{}'); print('connected')\"",
            path.display()
        )
    };
    let out = sbx.ok(&tool, &p, &connect(&open)).await;
    assert!(out.starts_with("connected\n"), "{out}");
    let out = sbx.fails(&tool, &p, &connect(&hidden)).await;
    assert!(!out.contains("connected\n"), "{out}");
}

#[tokio::test]
async fn bwrap_read_only_mode_changes_nothing_but_reads_work() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    read_only_changes_nothing(&tool, &sbx, true).await;
    // The private /tmp stays writable.
    let p = policy(SandboxMode::ReadOnly);
    let out = sbx.ok(&tool, &p, "echo t > /tmp/t && cat /tmp/t").await;
    assert!(out.starts_with("t\n"), "{out}");
}

#[tokio::test]
async fn bwrap_network_is_off_unless_allowed() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    network(&tool, &sbx).await;
}

#[tokio::test]
async fn bwrap_commands_have_no_capabilities() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    privileges_dropped(&tool, &sbx).await;
}

#[tokio::test]
async fn bwrap_background_processes_do_not_outlive_the_call() {
    let Some(tool) = bwrap() else { return };
    let sbx = Sbx::new().await;
    let p = policy(SandboxMode::WorkspaceWrite);
    let marker = format!("30.{}", unique());
    let started = Instant::now();
    let command = format!(
        "(sleep 1; touch WS/late) > /dev/null 2>&1 & \
         nohup sh -c 'sleep 1; touch WS/late2' > /dev/null 2>&1 & \
         setsid sh -c 'sleep 1; touch WS/late3' > /dev/null 2>&1 & \
         (sleep {marker} > /dev/null 2>&1 &) ; \
         disown -a; echo started"
    );
    let out = sbx.ok(&tool, &p, &command).await;
    assert!(out.starts_with("started\n"), "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for file in ["late", "late2", "late3"] {
        assert!(
            !sbx.ws(file).exists(),
            "{file}: a background process outlived the call"
        );
    }
    assert!(!process_running(&format!("sleep {marker}")));
}

#[tokio::test]
async fn bwrap_host_processes_cannot_be_signalled() {
    let Some(tool) = bwrap() else { return };
    signals_cannot_reach_outside(&tool).await;
}

#[tokio::test]
async fn bwrap_timeout_cancel_and_drop_kill_everything_inside() {
    let Some(tool) = bwrap() else { return };
    kills_everything(&tool, true).await;
}
