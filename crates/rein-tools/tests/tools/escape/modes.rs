//! The modes themselves: plan mode writes nothing by any spelling, default
//! and accept-edits ask (and headless, refuse) what they must, no process
//! outlives its call, and the network is off.

use std::time::{Duration, Instant};

use rein_core::PermissionMode::{self, AcceptEdits, Auto, Plan};
use serde_json::json;

use super::Expect::{Failed, Ok, Refused};
use super::{APPROVAL, Case, PLAN, PROTECTED, have, run_cases};

/// Every way to write from plan mode; the workspace must stay byte
/// identical (the runner compares it whole for plan-mode rows).
pub fn plan() -> Vec<Case> {
    let mut cases = vec![
        Case::new("write_file", Plan).call(
            "write_file",
            json!({"path": "notes.txt", "content": "x\n"}),
            Refused(PLAN),
        ),
        Case::new("edit_file", Plan).call(
            "edit_file",
            json!({"path": "src/main.rs", "old_string": "hi", "new_string": "bye"}),
            Refused(PLAN),
        ),
    ];
    let mut commands = vec![
        "echo x > f",
        "echo x > src/main.rs",
        "echo x >> src/main.rs",
        "echo x | tee f",
        "sed -i s/hi/bye/ src/main.rs",
        "touch f",
        "mkdir d",
        "rm src/main.rs",
        "rm -rf src",
        "mv src/main.rs src/moved.rs",
        "cp src/main.rs copy.rs",
        "git init",
        "ln -s src/main.rs l",
        "truncate -s 0 src/main.rs",
        "echo x > /proc/self/root{ws}/f",
        "cd src && echo x > ../f",
    ];
    if have("python3", &["-c", "pass"]) {
        commands.push("python3 -c \"open('f','w')\"");
    } else {
        rein_test_support::skip(
            rein_test_support::Component::Python3,
            "python3 does not run here: its plan-mode row",
        );
    }
    for cmd in commands {
        cases.push(Case::new(format!("bash `{cmd}`"), Plan).bash(cmd, Failed));
    }
    // Only bubblewrap's read-only mounts refuse changing times and modes
    // (Landlock has no right for them).
    for cmd in ["touch src/main.rs", "chmod 600 src/main.rs"] {
        cases.push(
            Case::new(format!("bash `{cmd}`"), Plan)
                .bash(cmd, Failed)
                .bwrap_only(),
        );
    }
    cases
}

/// Headless default and accept-edits: what they would ask is refused, not
/// run; what they allow runs.
pub fn asking_modes() -> Vec<Case> {
    let default = PermissionMode::Default;
    vec![
        Case::new("default: touch", default).bash("touch x", Refused(APPROVAL)),
        Case::new("default: write_file", default).call(
            "write_file",
            json!({"path": "notes.txt", "content": "x\n"}),
            Refused(APPROVAL),
        ),
        Case::new("default: edit_file", default).call(
            "edit_file",
            json!({"path": "src/main.rs", "old_string": "hi", "new_string": "bye"}),
            Refused(APPROVAL),
        ),
        Case::new("default: read_file runs", default).call(
            "read_file",
            json!({"path": "src/main.rs"}),
            Ok,
        ),
        Case::new("accept-edits: write_file inside runs", AcceptEdits).call(
            "write_file",
            json!({"path": "notes.txt", "content": "x\n"}),
            Ok,
        ),
        Case::new("accept-edits: edit_file inside runs", AcceptEdits).call(
            "edit_file",
            json!({"path": "src/main.rs", "old_string": "hi", "new_string": "bye"}),
            Ok,
        ),
        Case::new("accept-edits: bash is refused", AcceptEdits).bash("touch x", Refused(APPROVAL)),
        Case::new("accept-edits: write_file .env.local", AcceptEdits).call(
            "write_file",
            json!({"path": ".env.local", "content": "TOKEN=x\n"}),
            Refused(PROTECTED),
        ),
    ]
}

/// Processes that try to outlive the call; checked after a wait.
pub fn background() -> Vec<Case> {
    [
        "(sleep 2; touch {ws}/late) > /dev/null 2>&1 & echo started",
        "nohup sh -c 'sleep 2; touch {ws}/late' > /dev/null 2>&1 & echo started",
        "setsid sh -c 'sleep 2; touch {ws}/late' > /dev/null 2>&1 & echo started",
    ]
    .into_iter()
    .map(|cmd| {
        Case::new(format!("background `{cmd}`"), Auto)
            .bash(cmd, Ok)
            .bwrap_only()
    })
    .collect()
}

/// Writing to `/dev/tcp` counts as a device write, and `exec` makes a line
/// opaque, so headless those are refused; allowed by a rule, or spelled so
/// the classifier sees nothing, they run and the sandbox has no network to
/// give them.
pub fn network() -> Vec<Case> {
    let mut cases = vec![
        Case::new("auto, headless: exec 3<>/dev/tcp", Auto).bash(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected",
            Refused(APPROVAL),
        ),
        Case::new("auto, headless: exec 3<>/dev/tcp in a nested bash", Auto).bash(
            "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected",
            Refused(APPROVAL),
        ),
        Case::new("auto: open /dev/tcp for reading", Auto)
            .bash(": < /dev/tcp/127.0.0.1/{port} && echo connected", Failed),
        Case::new("auto, allowed by `bash(*)`: write to /dev/tcp", Auto)
            .allow("bash(*)")
            .bash(
                "echo hi > /dev/tcp/127.0.0.1/{port} && echo connected",
                Failed,
            ),
        Case::new(
            "auto, allowed by `bash(*)`: nested bash writes to /dev/tcp",
            Auto,
        )
        .allow("bash(*)")
        .bash(
            "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected",
            Failed,
        ),
        Case::new("plan: open /dev/tcp for reading", Plan)
            .bash(": < /dev/tcp/127.0.0.1/{port} && echo connected", Failed),
    ];
    if have("python3", &["-c", "pass"]) {
        cases.push(
            Case::new("auto: python connects to a local port", Auto).bash(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); \
             print('connected')\"",
                Failed,
            ),
        );
    } else {
        rein_test_support::skip(
            rein_test_support::Component::Python3,
            "python3 does not run here: its network row",
        );
    }
    // Landlock refuses TCP only from ABI 4 on; bubblewrap always can.
    cases.into_iter().map(Case::bwrap_only).collect()
}

#[tokio::test]
async fn plan_mode_leaves_the_workspace_byte_identical_for_every_write_spelling() {
    run_cases(plan(), &[]).await.assert("plan mode");
}

#[tokio::test]
async fn headless_default_and_accept_edits_refuse_what_they_would_ask() {
    let outcome = run_cases(asking_modes(), &[]).await;
    let mut failures = Vec::new();
    for (name, fx) in &outcome.kept {
        let wrote = fx.ws.join("notes.txt").exists();
        let should = name.starts_with("accept-edits: write_file inside");
        if wrote != should {
            failures.push(format!("[{name}] notes.txt exists: {wrote}"));
        }
        if fx.ws.join("x").exists() {
            failures.push(format!("[{name}] `touch x` ran"));
        }
    }
    outcome.assert("default and accept-edits");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn no_background_process_outlives_its_call() {
    let started = Instant::now();
    let outcome = run_cases(background(), &[]).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the calls waited for their background processes: {:?}",
        started.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let late: Vec<String> = outcome
        .kept
        .iter()
        .filter(|(_, fx)| fx.ws.join("late").exists())
        .map(|(name, _)| name.clone())
        .collect();
    outcome.assert("background");
    assert!(late.is_empty(), "outlived the call: {late:?}");
}

#[tokio::test]
async fn the_network_is_off_in_the_sandbox() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let outcome = run_cases(network(), &[("{port}", port)]).await;
    drop(listener);
    outcome.assert("network");
}
