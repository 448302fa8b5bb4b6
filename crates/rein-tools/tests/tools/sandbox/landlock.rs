//! The shell under Landlock: the shared checks, and its known limits
//! (metadata outside, new sessions without a cgroup).

use std::path::Path;
use std::time::Duration;

use rein_core::SandboxMode;
use rein_tools::sandbox;

use super::checks::{
    kills_everything, network, privileges_dropped, read_only_changes_nothing,
    signals_cannot_reach_outside, workspace_writes_work, writes_outside_fail,
};
use super::{Sbx, landlock, policy, processes, unique};

#[tokio::test]
async fn landlock_workspace_writes_work() {
    let Some(tool) = landlock() else { return };
    workspace_writes_work(&tool).await;
}

#[tokio::test]
async fn landlock_writes_outside_the_workspace_fail() {
    let Some(tool) = landlock() else { return };
    writes_outside_fail(&tool, false).await;
}

#[tokio::test]
async fn landlock_read_only_mode_changes_nothing_but_reads_work() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    read_only_changes_nothing(&tool, &sbx, false).await;
}

/// Known limit: Landlock has no right for metadata, so times and modes of
/// files anywhere (that the user owns) can still change.
#[tokio::test]
async fn landlock_known_limit_metadata_outside_can_change() {
    use std::os::unix::fs::PermissionsExt;
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    let file = sbx.out.join("existing");
    sbx.ok(
        &tool,
        &policy(SandboxMode::WorkspaceWrite),
        "touch -d 2001-01-01 OUT/existing && chmod 600 OUT/existing",
    )
    .await;
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "orig\n");
}

#[tokio::test]
async fn landlock_read_only_mode_keeps_a_workspace_under_tmp_read_only() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::with_workspace_in(Path::new("/tmp")).await;
    sbx.write("f", "a\n");
    let p = policy(SandboxMode::ReadOnly);
    sbx.fails(&tool, &p, "echo x > f").await;
    sbx.fails(&tool, &p, "touch g").await;
    let out = sbx.ok(&tool, &p, "cat f").await;
    assert!(out.starts_with("a\n"), "{out}");
    assert_eq!(std::fs::read_to_string(sbx.ws("f")).unwrap(), "a\n");
    assert!(!sbx.ws("g").exists());
}

#[tokio::test]
async fn landlock_tcp_is_refused_unless_the_network_is_allowed() {
    let Some(tool) = landlock() else { return };
    if sandbox::landlock_abi_version() < 4 {
        rein_test_support::skip(
            rein_test_support::Component::Landlock,
            "landlock: this kernel cannot restrict TCP (ABI < 4)",
        );
        return;
    }
    let sbx = Sbx::new().await;
    network(&tool, &sbx).await;
}

#[tokio::test]
async fn landlock_commands_have_no_capabilities() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    privileges_dropped(&tool, &sbx).await;
}

#[tokio::test]
async fn landlock_host_processes_cannot_be_signalled() {
    let Some(tool) = landlock() else { return };
    if sandbox::landlock_abi_version() < 6 {
        rein_test_support::skip(
            rein_test_support::Component::Landlock,
            "landlock: this kernel cannot scope signals (ABI < 6)",
        );
        return;
    }
    signals_cannot_reach_outside(&tool).await;
}

#[tokio::test]
async fn landlock_timeout_cancel_and_drop_kill_everything() {
    let Some(tool) = landlock() else { return };
    kills_everything(&tool, false).await;
}

/// Without a PID namespace, a process that makes its own session leaves
/// the command's process group: where rein can make a cgroup per command,
/// it is killed with the cgroup all the same; elsewhere it outlives the
/// call (a known limit).
#[tokio::test]
async fn landlock_a_new_session_dies_with_the_cgroup_or_is_a_known_limit() {
    let Some(tool) = landlock() else { return };
    let sbx = Sbx::new().await;
    let marker = format!("30.{}", unique());
    let command = format!("setsid sleep {marker} > /dev/null 2>&1 & echo started");
    sbx.ok(&tool, &policy(SandboxMode::WorkspaceWrite), &command)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pids = processes(&format!("sleep {marker}"));
    // Whether a cgroup can be made here, probed by the tests' own code: the
    // expectation never comes from the code under test.
    let cgroup = rein_test_support::cgroup_usable();
    eprintln!("cgroup per command: {cgroup}");
    assert_eq!(
        sandbox::cgroup_available(),
        cgroup,
        "rein's probe disagrees"
    );
    let expected = if cgroup { 0 } else { 1 };
    assert_eq!(
        pids.len(),
        expected,
        "escaped sleeps still running: {pids:?}"
    );
    for pid in pids {
        // SAFETY: kill only signals the process this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
