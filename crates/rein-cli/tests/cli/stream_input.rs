//! `rein exec --input-format stream-json` driven like a script or an SDK
//! drives it: several messages in one session (Claude Code's line form
//! included), an approval answered on stdin, a malformed line (an
//! `input_error`, the session goes on), an interrupt that stops a running
//! command, and the end when stdin closes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use super::sandbox::dirs;

/// Lines of the child's stdout, as JSON, until `until` matches one.
fn until(rx: &mpsc::Receiver<Value>, until: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let v = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("nothing more came; saw {seen:?}"));
        let done = until(&v);
        seen.push(v);
        if done {
            return seen;
        }
    }
}

#[test]
fn a_conversation_on_stdin_with_an_approval_a_bad_line_and_an_interrupt() {
    let d = dirs();
    let script = d.home.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo one > one.txt"}}]},
            {"text": "first done"},
            {"text": "second answer"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3 && echo late > late.txt"}}]},
            {"text": "never"}
        ]})
        .to_string(),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .args([
            "exec",
            "--input-format",
            "stream-json",
            "--provider",
            "replay",
            "--script",
        ])
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let first = until(&rx, |v| v["type"] == "ready");
    assert_eq!(first.last().unwrap()["version"], 1);

    // Claude Code's form; the command needs an approval, given on stdin.
    send(
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "make one"}]}}),
    );
    let seen = until(&rx, |v| v["type"] == "approval_required");
    let call_id = seen.last().unwrap()["request"]["call_id"]
        .as_str()
        .unwrap()
        .to_string();
    send(json!({"type": "approval", "call_id": call_id, "decision": "approve"}));
    let seen = until(&rx, |v| v["type"] == "stopped");
    assert_eq!(seen.last().unwrap()["final_text"], "first done");
    assert_eq!(
        std::fs::read_to_string(d.ws.join("one.txt")).unwrap(),
        "one\n"
    );
    let session = seen.last().unwrap()["session_id"].clone();

    // A bad line is said, and the session goes on.
    send(json!({"type": "shout"}));
    let seen = until(&rx, |v| v["type"] == "input_error");
    assert!(
        seen.last().unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("unknown `type`")
    );
    send(json!({"type": "user", "text": "and then?"}));
    let seen = until(&rx, |v| v["type"] == "stopped");
    let stopped = seen.last().unwrap();
    assert_eq!(stopped["final_text"], "second answer");
    let started = seen.iter().find(|v| v["type"] == "run_started").unwrap();
    assert_eq!(started["resumed"], true, "{started}");

    // An interrupt stops the running command.
    send(json!({"type": "user", "text": "wait a bit"}));
    let seen = until(&rx, |v| v["type"] == "approval_required");
    let call_id = seen.last().unwrap()["request"]["call_id"]
        .as_str()
        .unwrap()
        .to_string();
    send(json!({"type": "approval", "call_id": call_id, "decision": "approve"}));
    until(&rx, |v| v["type"] == "approval_resolved");
    std::thread::sleep(Duration::from_millis(500));
    send(json!({"type": "interrupt"}));
    let seen = until(&rx, |v| v["type"] == "stopped");
    assert_eq!(seen.last().unwrap()["reason"], "cancelled");
    let _ = session;

    // Closing stdin ends the session; the exit code is the last run's.
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !d.ws.join("late.txt").exists(),
        "the interrupted command ran on"
    );
}

#[test]
fn the_stdlib_python_example_client_holds_a_two_message_conversation() {
    let d = dirs();
    let script = d.home.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [{"text": "answer one"}, {"text": "answer two"}]}).to_string(),
    )
    .unwrap();
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rein_stream.py");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_rein"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("python3")
        .arg(&example)
        .args([
            "first?",
            "second?",
            "--",
            "--provider",
            "replay",
            "--script",
        ])
        .arg(&script)
        .env("PATH", path)
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "answer one\nanswer two\n"
    );
}
