//! Running one hook command: `sh -c COMMAND` started as every host process
//! is ([`rein_core::host_process`]: a neutral folder, not the workspace; a
//! scrubbed environment with the project as `REIN_PROJECT_DIR` and
//! `CLAUDE_PROJECT_DIR`; its own process group), the event JSON on stdin,
//! bounded in time and in output. The group is killed when the hook ends,
//! so nothing it started in the background outlives it.

use std::process::Stdio;
use std::time::Duration;

use rein_core::host_process::{HostLaunch, ProcessGroup};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Handler;

/// A hook's time when it does not set one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Most bytes of a hook's stdout or stderr read.
const MAX_OUTPUT: u64 = 64 * 1024;

/// How a handler's process ended.
#[derive(Debug)]
pub(super) enum Ran {
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// It could not start, or it timed out (and was killed).
    Failed(String),
}

impl Ran {
    /// What a handler that did not end well says, for the user: None for
    /// exit 0 and exit 2 (the two answers a hook gives on purpose).
    pub fn failure(&self) -> Option<String> {
        match self {
            Ran::Failed(why) => Some(why.clone()),
            Ran::Exited {
                code: Some(0 | 2), ..
            } => None,
            Ran::Exited {
                code: Some(n),
                stderr,
                ..
            } => Some(format!("exit {n}: {}", one_line(stderr, 300))),
            Ran::Exited { code: None, .. } => Some("killed by a signal".into()),
        }
    }

    /// The JSON a handler that exited 0 printed, if it printed JSON.
    pub fn json(&self) -> Option<Value> {
        match self {
            Ran::Exited {
                code: Some(0),
                stdout,
                ..
            } => serde_json::from_str::<Value>(stdout.trim())
                .ok()
                .filter(Value::is_object),
            _ => None,
        }
    }

    /// Exit 2's stderr (its reason to block), if the handler exited 2.
    pub fn blocked(&self) -> Option<String> {
        match self {
            Ran::Exited {
                code: Some(2),
                stderr,
                ..
            } => Some(one_line(stderr, 2000)),
            _ => None,
        }
    }
}

/// Run one handler with `input` on its stdin, started by `launch`.
pub(super) async fn run_handler(handler: &Handler, input: &Value, launch: &HostLaunch) -> Ran {
    let timeout = handler
        .timeout
        .map(|s| Duration::from_secs(s.max(1)))
        .unwrap_or(DEFAULT_TIMEOUT);
    let mut child = match tokio::process::Command::from(launch.command("sh"))
        .arg("-c")
        .arg(&handler.command)
        .envs(handler.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return Ran::Failed(format!("cannot start: {e}")),
    };
    // Dropped on every way out (an answer, the timeout, a cancelled
    // run): the hook's background processes go with it.
    let _group = child.id().and_then(ProcessGroup::of);
    let body = input.to_string();
    let work = async {
        let stdin = child.stdin.take();
        let write = async {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input must not hang rein
                // (the write fails when it exits); dropping stdin closes it.
                let _ = stdin.write_all(body.as_bytes()).await;
            }
        };
        let (mut out, mut err) = (String::new(), String::new());
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        // All three pipes at once: a hook that writes a lot before it
        // reads its input, or fills stderr while rein waits on stdout,
        // would otherwise block with rein until the timeout.
        futures_util::future::join3(
            write,
            read_capped(stdout, &mut out),
            read_capped(stderr, &mut err),
        )
        .await;
        let status = child.wait().await;
        (status, out, err)
    };
    match tokio::time::timeout(timeout, work).await {
        Ok((Ok(status), stdout, stderr)) => Ran::Exited {
            code: status.code(),
            stdout,
            stderr,
        },
        Ok((Err(e), _, _)) => Ran::Failed(e.to_string()),
        Err(_) => Ran::Failed(format!("timed out after {} s", timeout.as_secs())),
    }
}

/// Read a pipe to its end, keeping its first [`MAX_OUTPUT`] bytes (the
/// rest is drained, so a chatty hook does not block on a full pipe).
async fn read_capped(pipe: Option<impl tokio::io::AsyncRead + Unpin>, into: &mut String) {
    let Some(pipe) = pipe else { return };
    let mut head = pipe.take(MAX_OUTPUT);
    let mut bytes = Vec::new();
    let _ = head.read_to_end(&mut bytes).await;
    *into = String::from_utf8_lossy(&bytes).into_owned();
    let _ = tokio::io::copy(&mut head.into_inner(), &mut tokio::io::sink()).await;
}

pub(super) fn one_line(text: &str, max: usize) -> String {
    rein_core::text::one_line(text, max)
}
