//! Running one task: a fresh workspace, `rein exec --json` on it (the
//! same binary, so what is measured is what users run), then its checks in
//! the sandbox.
//!
//! Each task gets its own temporary folder:
//!
//! ```text
//! rein-eval-XXXX/
//!   work/         the workspace (the task's files)
//!   home/         REIN_HOME of the run: fresh, with the user's config.toml
//!                 (its `store` and `[mcp_servers]` left out)
//!   answer.txt    the run's final answer ($ANSWER_FILE of the checks)
//!   replay.json   the task's scripted solution (replay provider only)
//! ```
//!
//! A fresh home keeps the user's sessions, memories and approvals out of
//! the measurement (and the measurement out of them): the run's store is
//! the SQLite file in that home whatever the user's `store` or
//! `REIN_STORE` say (a PostgreSQL store would bring every session and
//! global memory of the user's), and the user's MCP servers do not run
//! for a suite's prompts in auto mode.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rein_core::{SandboxMode, SandboxPolicy};
use rein_tools::sandbox::{self, SandboxKind};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::record::{CheckResult, RunSummary, TaskRecord, classify};
use super::task::{Task, materialize};

/// Longest a check may run.
const CHECK_TIMEOUT: Duration = Duration::from_secs(120);
/// How long past its own time budget a run gets before it is killed.
const KILL_GRACE: Duration = Duration::from_secs(60);
/// Most bytes of a check's output kept in the record (its end).
const CHECK_OUTPUT_KEPT: usize = 2000;

/// What every task of one eval shares.
#[derive(Debug, Clone)]
pub struct EvalContext {
    /// The `rein` binary that runs the tasks.
    pub exe: PathBuf,
    /// Model flags passed to every run (`--provider`, `--model`…).
    pub model_flags: Vec<OsString>,
    /// Play each task's own `[replay]` script (`--provider replay` without
    /// `--script`).
    pub task_scripts: bool,
    /// The user's config.toml, copied into each run's home.
    pub config_file: Option<PathBuf>,
    /// Where the local models are (the runs' homes are fresh).
    pub models_dir: PathBuf,
    /// The sandbox the checks run in.
    pub sandbox: SandboxKind,
    /// Keep each task's folder instead of deleting it.
    pub keep: bool,
}

/// Run `task` and check what it left.
pub async fn run_task(ctx: &EvalContext, task: &Task) -> TaskRecord {
    let started = Instant::now();
    let mut record = match run_and_check(ctx, task).await {
        Ok(record) => record,
        Err(e) => failed_to_start(task, e.to_string()),
    };
    record.wall_ms = started.elapsed().as_millis() as u64;
    record
}

/// A task whose run could not even be started.
fn failed_to_start(task: &Task, error: String) -> TaskRecord {
    let summary = RunSummary {
        error: Some(error),
        ..RunSummary::default()
    };
    to_record(task, summary, Vec::new(), None)
}

async fn run_and_check(ctx: &EvalContext, task: &Task) -> anyhow::Result<TaskRecord> {
    let dir = tempfile::Builder::new().prefix("rein-eval-").tempdir()?;
    let root = std::fs::canonicalize(dir.path())?;
    let work = root.join("work");
    let home = root.join("home");
    std::fs::create_dir(&work)?;
    std::fs::create_dir(&home)?;
    materialize(task, &work)?;
    if let Some(config) = &ctx.config_file {
        std::fs::write(home.join("config.toml"), config_for_run(config)?)?;
    }
    let mut args = ctx.model_flags.clone();
    if ctx.task_scripts {
        let script = task.replay.as_ref().ok_or_else(|| {
            anyhow::anyhow!("the task has no [replay] script for the replay provider")
        })?;
        let path = root.join("replay.json");
        std::fs::write(&path, serde_json::to_vec_pretty(script)?)?;
        args.push("--script".into());
        args.push(path.into());
    }
    let summary = run_exec(ctx, task, &work, &home, args).await?;
    let answer_file = root.join("answer.txt");
    std::fs::write(&answer_file, &summary.answer)?;
    let mut checks = Vec::new();
    for check in &task.checks {
        checks.push(run_check(ctx.sandbox, &root, check).await);
    }
    let kept = ctx.keep.then(|| dir.keep());
    Ok(to_record(task, summary, checks, kept))
}

/// The user's config.toml as a task's run gets it: the model settings
/// (providers, keys' variable names, the local model, limits), without
/// what reaches the user's own state: `store` and `[mcp_servers]`.
fn config_for_run(config: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(config)?;
    // One that does not parse is passed on: the run says what is wrong.
    let Ok(mut table) = text.parse::<toml::Table>() else {
        return Ok(text);
    };
    table.remove("store");
    table.remove("mcp_servers");
    Ok(toml::to_string(&table)?)
}

fn to_record(
    task: &Task,
    run: RunSummary,
    checks: Vec<CheckResult>,
    kept: Option<PathBuf>,
) -> TaskRecord {
    let solved = run.error.is_none() && !checks.is_empty() && checks.iter().all(|c| c.passed);
    let failure = (!solved).then(|| classify(&run));
    TaskRecord {
        task: task.name.clone(),
        kind: task.kind.clone(),
        group: task.group.clone(),
        solved,
        failure,
        stop_reason: run
            .stop_reason
            .clone()
            .unwrap_or_else(|| "not_started".to_string()),
        turns: run.turns,
        tool_calls: run.tool_calls,
        unknown_tool_calls: run.unknown_tool_calls,
        invalid_argument_calls: run.invalid_argument_calls,
        nudges: run.nudges,
        candidates: run.candidates,
        candidate_won: run.candidate_won,
        input_tokens: run.input_tokens,
        output_tokens: run.output_tokens,
        request_tokens: run.request_tokens,
        cost_usd: run.cost_usd,
        wall_ms: 0,
        answer: run.answer,
        checks,
        error: run.error,
        provider: run.provider,
        model: run.model,
        profile: run.profile,
        workdir: kept.map(|p| p.display().to_string()),
    }
}

/// `rein exec --json` on the task; its events summed up. A run that
/// outlives its budget by [`KILL_GRACE`] is killed and counts as out of
/// time.
async fn run_exec(
    ctx: &EvalContext,
    task: &Task,
    work: &Path,
    home: &Path,
    model_flags: Vec<OsString>,
) -> anyhow::Result<RunSummary> {
    let mut cmd = tokio::process::Command::new(&ctx.exe);
    cmd.arg("exec")
        .arg("--json")
        .args(["--mode", "auto"])
        .arg("-C")
        .arg(work)
        .args(["--max-turns", &task.max_turns.to_string()])
        .args(["--max-wall-time", &format!("{}s", task.timeout_secs)])
        .args(model_flags)
        .arg("--")
        .arg(&task.prompt)
        .env("REIN_HOME", home)
        // The SQLite files of the fresh home, never the user's database.
        .env("REIN_STORE", "sqlite")
        .env("REIN_MODELS_DIR", &ctx.models_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // An eval that is killed takes its runs with it (SIGTERM: each run
    // stops cleanly and its commands go with it).
    // SAFETY: runs in the forked child; prctl only sets a flag.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let mut stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let err_task = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut summary = RunSummary::default();
    let budget = Duration::from_secs(task.timeout_secs) + KILL_GRACE;
    let read = async {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            summary.take(&line);
        }
    };
    let finished = tokio::time::timeout(budget, read).await.is_ok();
    if !finished {
        let _ = child.start_kill();
    }
    let _ = child.wait().await;
    let stderr = err_task.await.unwrap_or_default();
    if !finished {
        summary.stop_reason = Some("max_wall_time".into());
    } else if summary.stop_reason.is_none() {
        // It never got to run: the last line of its stderr says why.
        let why = stderr.lines().rev().find(|l| !l.trim().is_empty());
        summary.error = Some(why.unwrap_or("rein exec printed nothing").to_string());
    }
    Ok(summary)
}

/// One check, in the sandbox (read-only, no network), in the workspace,
/// with `$ANSWER_FILE` set.
async fn run_check(kind: SandboxKind, root: &Path, check: &str) -> CheckResult {
    let outcome = run_sandboxed(kind, root, check).await;
    let (passed, output) = match outcome {
        Ok((code, output)) => (code == Some(0), output),
        Err(e) => (false, format!("the check could not run: {e}")),
    };
    CheckResult {
        command: check.to_string(),
        passed,
        output: tail(&output, CHECK_OUTPUT_KEPT),
    }
}

async fn run_sandboxed(
    kind: SandboxKind,
    root: &Path,
    check: &str,
) -> anyhow::Result<(Option<i32>, String)> {
    let policy = SandboxPolicy {
        mode: SandboxMode::ReadOnly,
        ..SandboxPolicy::default()
    };
    let script = format!("cd ./work || exit 97\n{check}\n");
    let mut prepared = sandbox::prepare(kind, &policy, root, &script, CHECK_TIMEOUT)?;
    prepared
        .cmd
        .env("ANSWER_FILE", root.join("answer.txt"))
        .kill_on_drop(true);
    let mut child = prepared.cmd.spawn()?;
    let pid = child.id();
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let collect = async {
        let mut a = Vec::new();
        let mut b = Vec::new();
        if let (Some(o), Some(e)) = (out.as_mut(), err.as_mut()) {
            let _ = tokio::join!(o.read_to_end(&mut a), e.read_to_end(&mut b));
        }
        a.extend_from_slice(&b);
        String::from_utf8_lossy(&a).into_owned()
    };
    let (output, status) = match tokio::time::timeout(CHECK_TIMEOUT, collect).await {
        Ok(output) => (output, child.wait().await.ok()),
        Err(_) => {
            if let Some(pid) = pid {
                // SAFETY: killpg only signals the check's own process group.
                unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
            ("[the check timed out]".to_string(), None)
        }
    };
    let after = prepared.after;
    let shown = output.clone();
    let notes = tokio::task::spawn_blocking(move || after.finish(status, &shown))
        .await
        .unwrap_or_default();
    let mut output = output;
    for note in notes {
        output.push('\n');
        output.push_str(&note);
    }
    Ok((status.and_then(|s| s.code()), output))
}

/// The last `max` bytes of `text` (at a character boundary).
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}
