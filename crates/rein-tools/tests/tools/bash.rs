//! bash: output capture, exit codes, timeouts, cancellation, process groups.

use std::time::{Duration, Instant};

use rein_core::CancellationToken;
use rein_tools::Bash;
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn bash_reports_a_nonzero_exit_code_without_marking_an_error() {
    let env = Env::new().await;
    let out = env
        .call(&Bash, json!({"command": "echo out; echo err >&2; exit 3"}))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("out\n"), "{}", out.content);
    assert!(out.content.contains("err\n"), "{}", out.content);
    assert!(out.content.ends_with("[exit code: 3]"), "{}", out.content);
}

#[tokio::test]
async fn bash_runs_in_the_workspace_and_says_when_there_is_no_output() {
    let env = Env::new().await;
    let out = env.ok(&Bash, json!({"command": "pwd"})).await;
    assert_eq!(out, format!("{}\n[exit code: 0]", env.root.display()));
    let out = env.ok(&Bash, json!({"command": "true"})).await;
    assert_eq!(out, "(no output)\n[exit code: 0]");
}

#[tokio::test]
async fn bash_merges_stdout_and_stderr_in_arrival_order() {
    let env = Env::new().await;
    let out = env
        .ok(
            &Bash,
            json!({"command": "echo 1; sleep 0.1; echo 2 >&2; sleep 0.1; echo 3"}),
        )
        .await;
    assert_eq!(out, "1\n2\n3\n[exit code: 0]");
}

#[tokio::test]
async fn bash_huge_output_keeps_head_and_tail_and_reports_the_cut() {
    let env = Env::new().await;
    let out = env.ok(&Bash, json!({"command": "seq 1 200000"})).await;
    assert!(out.starts_with("1\n2\n3\n"), "{}", &out[..50]);
    assert!(
        out.ends_with("199999\n200000\n[exit code: 0]"),
        "{}",
        &out[out.len() - 80..]
    );
    assert!(
        out.contains("cut from the middle of 1288895 bytes of output"),
        "{out}"
    );
    assert!(out.len() < 40 * 1024, "{}", out.len());
}

#[tokio::test]
async fn bash_signal_death_is_reported() {
    let env = Env::new().await;
    let out = env.ok(&Bash, json!({"command": "kill -9 $$"})).await;
    assert!(out.ends_with("[killed by signal 9]"), "{out}");
}

#[tokio::test]
async fn bash_timeout_kills_the_whole_process_group() {
    let env = Env::new().await;
    let started = Instant::now();
    let out = env
        .call(
            &Bash,
            json!({
                "command": "echo begun; sleep 30 & (sleep 2; touch after) & sleep 30",
                "timeout_secs": 1
            }),
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error);
    assert!(out.content.starts_with("begun\n"), "{}", out.content);
    assert!(
        out.content.contains("timed out after 1 s"),
        "{}",
        out.content
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!env.exists("after"), "a grandchild survived the timeout");
}

#[tokio::test]
async fn bash_cancellation_returns_the_partial_output_as_an_error() {
    let env = Env::new().await;
    let cancel = CancellationToken::new();
    let ctx = env.ctx_with(cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let out = env
        .call_with(
            &Bash,
            json!({"command": "echo started; (sleep 2; touch after) & sleep 30"}),
            ctx,
        )
        .await
        .unwrap();
    canceller.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(out.is_error);
    assert!(out.content.starts_with("started\n"), "{}", out.content);
    assert!(out.content.contains("cancelled"), "{}", out.content);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!env.exists("after"));
}

#[tokio::test]
async fn bash_background_child_does_not_hang_the_call_and_is_stopped() {
    let env = Env::new().await;
    let started = Instant::now();
    let out = env
        .ok(
            &Bash,
            json!({"command": "sleep 100 & (sleep 2; touch bg) & echo done"}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(out.starts_with("done\n"), "{out}");
    assert!(out.ends_with("[exit code: 0]"), "{out}");
    assert!(out.contains("background processes"), "{out}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!env.exists("bg"));
}

#[tokio::test]
async fn bash_dropping_the_call_kills_the_process_group() {
    let env = Env::new().await;
    let call = env.call(
        &Bash,
        json!({"command": "(sleep 2; touch dropped) & sleep 30"}),
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!env.exists("dropped"));
}

#[tokio::test]
async fn bash_zero_timeout_is_refused_by_the_schema() {
    let env = Env::new().await;
    let e = env
        .err(&Bash, json!({"command": "true", "timeout_secs": 0}))
        .await;
    assert!(e.contains("at least 1"), "{e}");
}

/// `kill_running_commands` kills every command of the process, so it runs in
/// a child copy of this test binary where no other test's command lives.
#[test]
fn kill_running_commands_takes_down_every_running_group() {
    const CHILD: &str = "REIN_TOOLS_KILL_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(kill_running_commands_in_this_process());
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "bash::kill_running_commands_takes_down_every_running_group",
            "--test-threads",
            "1",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("1 passed"), "the child ran no test: {text}");
}

async fn kill_running_commands_in_this_process() {
    let env = Env::new().await;
    let call = env.call(
        &Bash,
        json!({"command": "(sleep 2; touch survived) & sleep 30"}),
    );
    tokio::pin!(call);
    // Let the command start, then kill it from outside the call, as a hard
    // exit does.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut call)
            .await
            .is_err()
    );
    rein_tools::bash::kill_running_commands();
    let started = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the call ends once its group is killed")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(out.content.contains("signal 9"), "{}", out.content);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!env.exists("survived"));
}
