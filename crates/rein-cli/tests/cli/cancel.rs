//! Ctrl-C during a shell command.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

/// Whether a process exists and is not a zombie waiting to be reaped.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Start `rein exec --json` on a command that leaves a long-lived child,
/// and wait until that child exists. Returns the process, the events read
/// so far, the rest of stdout and the child's pid.
fn start_slow_run(
    env: &Env,
) -> (
    std::process::Child,
    Vec<Value>,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    i32,
) {
    start_run_of(env, "echo started; sleep 300 & echo $! > child.pid; wait")
}

/// A replay run whose one tool call is `command` (which must write the pid
/// of a process to watch into `child.pid`), stopped once that has started.
fn start_run_of(
    env: &Env,
    command: &str,
) -> (
    std::process::Child,
    Vec<Value>,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
    i32,
) {
    let script = env.script(
        "slow.json",
        &json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {
            "command": command
        }}]}]}),
    );
    let mut child = env
        .command()
        .args([
            "exec",
            "--json",
            // The host must see the command's pid: no PID namespace. The
            // sandboxed path is covered by rein-tools' sandbox scenarios.
            "--mode",
            "bypass",
            "--provider",
            "replay",
            "--script",
            &script,
            "go",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<Value> = Vec::new();
    for line in lines.by_ref() {
        let ev: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let started = ev["type"] == "tool_started";
        events.push(ev);
        if started {
            break;
        }
    }
    let pid_file = env.path("child.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&pid_file)
        .map(|s| s.trim().is_empty())
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let grandchild: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(grandchild));
    (child, events, lines, grandchild)
}

#[test]
fn ctrl_c_during_bash_kills_the_child_and_keeps_what_was_produced() {
    let env = Env::new();
    let (mut child, mut events, lines, grandchild) = start_slow_run(&env);
    sigint(child.id() as i32);
    for line in lines {
        events.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(events.last().unwrap()["reason"], "cancelled");
    std::thread::sleep(Duration::from_millis(100));
    assert!(!alive(grandchild), "the sleep survived the cancel");
    let messages = stored(&env, &session_id(&events));
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the result is stored");
    assert_eq!(result["is_error"], true);
    let output = result["output"].as_str().unwrap();
    assert!(output.contains("started"), "{output}");
    assert!(output.contains("cancel"), "{output}");
}

#[test]
fn a_second_ctrl_c_exits_at_once_without_waiting_for_the_clean_stop() {
    let env = Env::new();
    let (mut child, _events, lines, grandchild) = start_slow_run(&env);
    // Hold the session database: the clean stop after the first Ctrl-C
    // cannot store the cancelled result, so it cannot finish. Only the
    // second Ctrl-C's hard exit can end the process now.
    let db = rusqlite::Connection::open(env.home.path().join("sessions.db")).unwrap();
    db.execute_batch("BEGIN EXCLUSIVE").unwrap();
    sigint(child.id() as i32);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the run ended although its result could not be stored"
    );
    sigint(child.id() as i32);
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    db.execute_batch("ROLLBACK").unwrap();
    let Some(status) = status else {
        let _ = child.kill();
        panic!("the second Ctrl-C did not end the process");
    };
    assert_eq!(status.code(), Some(130));
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        !rest.iter().any(|l| l.contains("\"stopped\"")),
        "a hard exit prints no stopped event: {rest:?}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(!alive(grandchild), "the sleep survived a hard exit");
}

fn sigint(pid: i32) {
    let ok = std::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}
