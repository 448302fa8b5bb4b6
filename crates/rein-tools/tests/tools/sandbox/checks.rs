//! What every sandbox must do, written once and run by the bubblewrap and
//! Landlock tests: writes outside fail, workspace writes work, read-only
//! mode changes nothing, no network, no privileges, no signals to the host,
//! and every process dies with the call.

use std::time::{Duration, Instant};

use rein_core::{CancellationToken, SandboxMode, Tool};
use serde_json::json;

use super::{Sbx, have, policy, process_running, snapshot, unique};

/// Commands that try to write outside the workspace; each must fail.
pub(super) fn escape_commands() -> Vec<&'static str> {
    let mut cmds = vec![
        "touch OUT/x",
        "echo x > OUT/x",
        "echo x >> OUT/existing",
        "cd / && touch OUT/y",
        "ln -s OUT link && echo x > link/z",
        "echo data > f; cp f OUT/",
        "rm -rf OUT",
        "rm OUT/existing",
        "echo data > f; mv f OUT/",
        "mv OUT/existing WS/",
        "echo x | tee OUT/t",
        "echo x > /proc/self/root/OUT/q",
        "mkdir OUT/newdir",
        "ln OUT/existing WS/h && echo y >> WS/h",
        "mount -o remount,rw / && touch OUT/m",
    ];
    if have("python3") {
        cmds.push("python3 -c \"open('OUT/p', 'w')\"");
    } else {
        rein_test_support::skip(
            rein_test_support::Component::Python3,
            "python3 not found: its escape case",
        );
    }
    cmds
}

/// `metadata`: whether changing only times or modes is refused too
/// (bubblewrap's read-only mounts do; Landlock has no right for it).
pub(super) async fn writes_outside_fail(tool: &dyn Tool, metadata: bool) {
    use std::os::unix::fs::PermissionsExt;
    let sbx = Sbx::new().await;
    let before = snapshot(&sbx.out);
    let mode = || {
        std::fs::metadata(sbx.out.join("existing"))
            .unwrap()
            .permissions()
            .mode()
    };
    let before_mode = mode();
    let p = policy(SandboxMode::WorkspaceWrite);
    let mut cmds = escape_commands();
    if metadata {
        cmds.extend(["touch OUT/existing", "chmod 777 OUT/existing"]);
    }
    for cmd in cmds {
        sbx.fails(tool, &p, cmd).await;
        assert_eq!(snapshot(&sbx.out), before, "`{cmd}` changed the outside");
        assert_eq!(mode(), before_mode, "`{cmd}` changed the outside");
    }
    // The hard link was refused, not made.
    assert!(!sbx.ws("h").exists());
    assert!(sbx.out.join("existing").exists());
}

pub(super) async fn workspace_writes_work(tool: &dyn Tool) -> Sbx {
    let sbx = Sbx::new().await;
    let before = snapshot(&sbx.out);
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .ok(
            tool,
            &p,
            "echo x > f && mkdir -p a/b && touch a/b/c && sed -i s/x/y/ f && cat f && \
             echo more >> f && mv f g && ln g h && ln -s g s && rm h && cat s",
        )
        .await;
    assert!(out.starts_with("y\ny\nmore\n"), "{out}");
    assert_eq!(std::fs::read_to_string(sbx.ws("g")).unwrap(), "y\nmore\n");
    assert!(sbx.ws("a/b/c").is_file());
    assert!(!sbx.ws("h").exists());
    if have("python3") {
        sbx.ok(tool, &p, "python3 -c \"open('p', 'w').write('py')\"")
            .await;
        assert_eq!(std::fs::read_to_string(sbx.ws("p")).unwrap(), "py");
    }
    // Standard streams reopened by path, and /dev/null, still work.
    let out = sbx
        .ok(
            tool,
            &p,
            "echo to-stderr > /dev/stderr; echo gone > /dev/null",
        )
        .await;
    assert!(out.contains("to-stderr"), "{out}");
    assert_eq!(snapshot(&sbx.out), before);
    sbx
}

/// `metadata`: whether changing only times or modes is refused too
/// (bubblewrap's read-only mounts do; Landlock has no right for it).
pub(super) async fn read_only_changes_nothing(tool: &dyn Tool, sbx: &Sbx, metadata: bool) {
    sbx.write("f", "alpha\n");
    sbx.write("d/g", "beta\n");
    let before_ws = snapshot(&sbx.ws);
    let before_out = snapshot(&sbx.out);
    let p = policy(SandboxMode::ReadOnly);
    let mut cmds = vec![
        "echo x > f",
        "echo x > new",
        "touch new",
        "sed -i s/alpha/omega/ f",
        "echo x | tee t",
        "mkdir m",
        "rm f",
        "rm -rf d",
        "mv f f2",
        "ln -s f s",
        "ln f hl",
        "truncate -s 0 f",
        "touch OUT/x",
    ];
    if have("python3") {
        cmds.push("python3 -c \"open('f', 'w').write('py')\"");
    }
    if metadata {
        cmds.extend(["touch f", "chmod 600 f"]);
    }
    for cmd in cmds {
        sbx.fails(tool, &p, cmd).await;
        assert_eq!(
            snapshot(&sbx.ws),
            before_ws,
            "`{cmd}` changed the workspace"
        );
        assert_eq!(
            snapshot(&sbx.out),
            before_out,
            "`{cmd}` changed the outside"
        );
    }
    let out = sbx
        .ok(tool, &p, "cat f && ls && grep -r beta . && wc -l d/g")
        .await;
    assert!(out.starts_with("alpha\nd\nf\n./d/g:beta\n1 d/g\n"), "{out}");
}

pub(super) async fn network(tool: &dyn Tool, sbx: &Sbx) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let mut p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx.fails(tool, &p, &connect).await;
    assert!(!out.contains("connected"), "{out}");
    p.network = rein_core::NetworkAccess::On;
    let out = sbx.ok(tool, &p, &connect).await;
    assert!(out.starts_with("connected\n"), "{out}");
    drop(listener);
}

pub(super) async fn privileges_dropped(tool: &dyn Tool, sbx: &Sbx) {
    let p = policy(SandboxMode::WorkspaceWrite);
    let out = sbx
        .ok(tool, &p, "grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status")
        .await;
    for line in out.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{out}");
    }
    sbx.fails(tool, &p, "mount -t tmpfs none WS").await;
}

/// A process of the host (here a `sleep` of the test's own) cannot be
/// signalled from inside.
pub(super) async fn signals_cannot_reach_outside(tool: &dyn Tool) {
    let sbx = Sbx::new().await;
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = victim.id();
    sbx.fails(
        tool,
        &policy(SandboxMode::WorkspaceWrite),
        &format!("kill -KILL {pid}"),
    )
    .await;
    let alive = victim.try_wait().unwrap().is_none();
    victim.kill().unwrap();
    victim.wait().unwrap();
    assert!(alive, "a command inside the sandbox killed a host process");
}

/// Kill semantics: a timeout and a cancel both take down every process the
/// command started, and dropping the call does too. `setsid`: whether a
/// process that left the group (possible only with a PID namespace) is
/// among them.
pub(super) async fn kills_everything(tool: &dyn Tool, setsid: bool) {
    let sbx = Sbx::new().await;
    let p = policy(SandboxMode::WorkspaceWrite);

    let marker = format!("30.{}", unique());
    let started = Instant::now();
    let escapee = if setsid {
        format!("setsid sleep {marker} & ")
    } else {
        String::new()
    };
    let command =
        format!("echo begun; sleep {marker} & (sleep 2; touch after) & {escapee}sleep {marker}");
    let out = sbx
        .env
        .call_with(
            tool,
            json!({"command": command, "timeout_secs": 1}),
            sbx.ctx(p.clone()),
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error, "{}", out.content);
    assert!(out.content.starts_with("begun\n"), "{}", out.content);
    assert!(
        out.content.contains("timed out after 1 s"),
        "{}",
        out.content
    );

    let marker2 = format!("30.{}", unique());
    let cancel = CancellationToken::new();
    let ctx = sbx.ctx_with(p.clone(), cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let command = format!("echo started; (sleep 2; touch after2) & sleep {marker2}");
    let out = sbx
        .env
        .call_with(tool, json!({"command": command}), ctx)
        .await
        .unwrap();
    canceller.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error, "{}", out.content);
    assert!(out.content.contains("cancelled"), "{}", out.content);

    let marker3 = format!("30.{}", unique());
    let command = format!("(sleep 2; touch after3) & sleep {marker3}");
    let call = sbx
        .env
        .call_with(tool, json!({"command": command}), sbx.ctx(p.clone()));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );

    tokio::time::sleep(Duration::from_millis(2500)).await;
    for file in ["after", "after2", "after3"] {
        assert!(!sbx.ws(file).exists(), "{file}: a process survived");
    }
    for m in [&marker, &marker2, &marker3] {
        assert!(
            !process_running(&format!("sleep {m}")),
            "sleep {m} survived"
        );
    }
}
