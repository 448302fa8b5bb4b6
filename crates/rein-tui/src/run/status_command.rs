//! `[tui] status_command`: a command of the user's that writes the status
//! line. It gets the session's state as JSON on stdin ([`state`]): model,
//! provider, mode, context use, cost, session, folder, git branch, whether
//! a run is under way. Its first line of output replaces the built-in
//! line; a command that fails, prints nothing or outlives its timeout
//! leaves the built-in line.
//!
//! It runs as a host process (a neutral folder, the scrubbed environment,
//! its own process group, killed at its timeout), never in the workspace:
//! a status command like `git status` run there would run what the
//! repository's own git config names. It runs again when the state
//! changes, at most once per refresh interval, one at a time.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::app::App;

/// The most bytes of output read.
const MAX_OUTPUT: u64 = 4096;

/// How the command is run.
#[derive(Debug, Clone)]
pub struct StatusCommand {
    /// A `bash -c` line.
    pub command: String,
    /// Not more often than this.
    pub refresh: Duration,
    /// Killed after this.
    pub timeout: Duration,
}

/// The command's state in the app's loop.
pub struct StatusRunner {
    spec: StatusCommand,
    workspace: PathBuf,
    /// The state last given to the command.
    last: Option<String>,
    next_allowed: Instant,
    in_flight: bool,
    tx: mpsc::UnboundedSender<Option<String>>,
}

impl StatusRunner {
    /// A runner and the receiver its lines come back on.
    pub fn new(
        spec: StatusCommand,
        workspace: &Path,
    ) -> (StatusRunner, mpsc::UnboundedReceiver<Option<String>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let runner = StatusRunner {
            spec,
            workspace: workspace.to_path_buf(),
            last: None,
            next_allowed: Instant::now(),
            in_flight: false,
            tx,
        };
        (runner, rx)
    }

    /// When the state changed and may run now, run the command.
    pub fn poll(&mut self, app: &App) {
        let input = state(app).to_string();
        if self.in_flight || self.last.as_deref() == Some(input.as_str()) {
            return;
        }
        if Instant::now() < self.next_allowed {
            return;
        }
        self.last = Some(input.clone());
        self.in_flight = true;
        self.next_allowed = Instant::now() + self.spec.refresh;
        let spec = self.spec.clone();
        let workspace = self.workspace.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(run(&spec, &workspace, &input).await);
        });
    }

    /// A line came back (None: keep the built-in line).
    pub fn done(&mut self) {
        self.in_flight = false;
    }

    /// When to run again: the state changed since the last run, which
    /// waits for the refresh interval (None: nothing to do).
    pub fn wake_at(&self, app: &App) -> Option<Instant> {
        let changed = self.last.as_deref() != Some(state(app).to_string().as_str());
        (changed && !self.in_flight).then_some(self.next_allowed)
    }
}

/// The command's first line, or None.
async fn run(spec: &StatusCommand, workspace: &Path, input: &str) -> Option<String> {
    let launch = rein_core::host_process::HostLaunch::for_project(workspace);
    let mut cmd = tokio::process::Command::from(launch.command("bash"));
    cmd.arg("-c")
        .arg(&spec.command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().ok()?;
    let group = child
        .id()
        .and_then(rein_core::host_process::ProcessGroup::of);
    let mut stdin = child.stdin.take()?;
    let mut stdout = child.stdout.take()?;
    let input = input.to_string();
    let work = async move {
        let _ = stdin.write_all(input.as_bytes()).await;
        drop(stdin);
        let mut out = Vec::new();
        let _ = (&mut stdout).take(MAX_OUTPUT).read_to_end(&mut out).await;
        let status = child.wait().await.ok()?;
        status.success().then_some(out)
    };
    let out = tokio::time::timeout(spec.timeout, work)
        .await
        .ok()
        .flatten();
    drop(group);
    let text = String::from_utf8_lossy(&out?).into_owned();
    let line: String = text
        .lines()
        .next()?
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    (!line.trim().is_empty()).then_some(line)
}

/// What the command is told.
pub fn state(app: &App) -> Value {
    let s = &app.status;
    let percent = match (s.context_tokens, s.context_window) {
        (Some(t), Some(w)) if w > 0 => Some((t as f64 / w as f64 * 100.0).round()),
        _ => None,
    };
    json!({
        "model": s.model,
        "provider": s.provider,
        "mode": s.mode.as_str(),
        "context": {"tokens": s.context_tokens, "window": s.context_window, "percent": percent},
        "cost_usd": s.totals.cost_usd,
        "session_id": s.session_id,
        "cwd": app.workspace,
        "branch": branch(&app.workspace),
        "running": s.running,
    })
}

/// The checked-out branch, read from `.git/HEAD` (git itself is not run).
fn branch(workspace: &Path) -> Option<String> {
    let head = std::fs::read_to_string(workspace.join(".git/HEAD")).ok()?;
    head.trim()
        .strip_prefix("ref: refs/heads/")
        .map(|b| b.chars().filter(|c| !c.is_control()).collect())
}
