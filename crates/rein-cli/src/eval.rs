//! `rein eval`: run a suite of tasks against a model and report what was
//! solved, how, and why not; `rein eval compare` shows what changed
//! between two runs of it.
//!
//! A task is a TOML file (see [`task`]); each runs in a fresh temporary
//! workspace through `rein exec --json` ([`runner`]), its checks decide
//! whether it was solved, and a failure is classified from the run's
//! events ([`record`]). Results go to `results.jsonl` as each task ends,
//! and a Markdown report ([`report`]) at the end.

mod record;
mod report;
mod runner;
mod task;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use futures_util::StreamExt;

use crate::cli::{EvalArgs, EvalCommand, EvalRunArgs, ModelArgs};
use crate::exit::{self, Failure};
use crate::output;
use record::TaskRecord;
use runner::EvalContext;
use task::Task;

/// Exit code when the suite ran and some task was not solved.
const UNSOLVED: i32 = 1;
/// Most characters of a run's error its progress line shows (the report
/// and the results show more).
const PROGRESS_ERROR_SHOWN: usize = 100;

pub async fn run(args: EvalArgs) -> Result<i32, Failure> {
    match args.command {
        Some(EvalCommand::Compare { before, after }) => compare(&before, &after),
        None => run_suite(args.run).await,
    }
}

fn read_results(path: &Path) -> Result<Vec<TaskRecord>, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::usage(anyhow!("cannot read {}: {e}", path.display())))?;
    report::parse_results(&text)
        .map_err(|e| Failure::usage(anyhow!("{} is not a results file: {e}", path.display())))
}

fn compare(before: &Path, after: &Path) -> Result<i32, Failure> {
    let (a, b) = (read_results(before)?, read_results(after)?);
    output::out(report::compare(&a, &b).trim_end());
    Ok(exit::COMPLETED)
}

/// The flags every task's `rein exec` gets for the model.
fn model_flags(m: &ModelArgs) -> Vec<OsString> {
    let mut flags: Vec<OsString> = Vec::new();
    let mut pass = |name: &str, value: Option<OsString>| {
        if let Some(v) = value {
            flags.push(name.into());
            flags.push(v);
        }
    };
    pass("--provider", m.provider.clone().map(Into::into));
    pass("--model", m.model.clone().map(Into::into));
    pass("--model-path", m.model_path.clone().map(Into::into));
    pass("--script", m.script.clone().map(Into::into));
    pass("--profile", m.profile.map(|p| p.as_str().into()));
    for lever in &m.without {
        pass("--without", Some(lever.as_str().into()));
    }
    flags
}

async fn run_suite(args: EvalRunArgs) -> Result<i32, Failure> {
    let paths = if args.suite.is_empty() {
        vec![PathBuf::from("evals")]
    } else {
        args.suite.clone()
    };
    let mut tasks = task::load_suite(&paths).map_err(|e| Failure::usage(anyhow!("{e}")))?;
    if let Some(text) = &args.filter {
        tasks.retain(|t| t.name.contains(text.as_str()) || t.kind.contains(text.as_str()));
        if tasks.is_empty() {
            return Err(Failure::usage(anyhow!("no task matches `{text}`")));
        }
    }
    if let Some(secs) = args.timeout_secs {
        for task in &mut tasks {
            task.timeout_secs = secs;
        }
    }
    let (ctx, local) = context(&args, &tasks)?;
    let jobs = args.jobs.unwrap_or(if local { 1 } else { 4 }).max(1);
    let out_dir = args.out.clone().unwrap_or_else(default_out_dir);
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| Failure::usage(anyhow!("cannot create {}: {e}", out_dir.display())))?;
    let results_path = out_dir.join("results.jsonl");
    let mut results = std::fs::File::create(&results_path)
        .map_err(|e| Failure::usage(anyhow!("cannot write {}: {e}", results_path.display())))?;

    let mut progress = Progress::new(tasks.len());
    let mut records: Vec<TaskRecord> = Vec::new();
    let mut runs = futures_util::stream::iter(tasks.iter().map(|t| {
        let ctx = &ctx;
        async move { runner::run_task(ctx, t).await }
    }))
    .buffer_unordered(jobs);
    while let Some(record) = runs.next().await {
        if let Ok(line) = serde_json::to_string(&record) {
            let _ = writeln!(results, "{line}");
        }
        progress.done(&record);
        records.push(record);
    }
    progress.finish();
    // The report lists tasks in suite order, whatever order they ended in.
    records.sort_by_key(|r| tasks.iter().position(|t| t.name == r.task));
    let report_path = out_dir.join("report.md");
    let report = report::markdown(&records);
    std::fs::write(&report_path, &report)
        .map_err(|e| Failure::harness(anyhow!("cannot write {}: {e}", report_path.display())))?;
    let t = report::totals(&records);
    output::out(&format!(
        "solved {}/{} · results {} · report {}",
        t.solved,
        t.tasks,
        results_path.display(),
        report_path.display()
    ));
    for (name, rs) in report::groups(&records) {
        let g = report::totals(&rs);
        output::out(&format!("  {name}: solved {}/{}", g.solved, g.tasks));
    }
    Ok(if t.solved == t.tasks {
        exit::COMPLETED
    } else {
        UNSOLVED
    })
}

/// What the tasks share, and whether the model is the local one (then
/// tasks run one at a time by default: two would only share the cores).
fn context(args: &EvalRunArgs, tasks: &[Task]) -> Result<(EvalContext, bool), Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::usage(anyhow!("cannot read the current directory: {e}")))?;
    let (cfg, _) = crate::setup::settings::load_config(&cwd, args.models.clone(), false)?;
    let provider = crate::providers::chosen_name(&cfg)
        .ok_or_else(|| Failure::usage(anyhow!("{}", crate::providers::NO_MODEL)))?;
    let task_scripts = provider == "replay" && args.models.script.is_none();
    if task_scripts && let Some(t) = tasks.iter().find(|t| t.replay.is_none()) {
        return Err(Failure::usage(anyhow!(
            "task {} has no [replay] script: the replay provider plays each task's own script \
             (or pass --script FILE)",
            t.name
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| Failure::harness(anyhow!("cannot find the rein binary: {e}")))?;
    let config_file = Some(cfg.home.join("config.toml")).filter(|p| p.is_file());
    let ctx = EvalContext {
        exe,
        model_flags: model_flags(&args.models),
        task_scripts,
        config_file,
        models_dir: crate::model::models_dir(&cfg.home),
        sandbox: rein_tools::sandbox::available(),
        keep: args.keep,
    };
    Ok((ctx, provider == "local"))
}

/// `rein-eval-results/YYYY-MM-DD-HH-MM-SS` (UTC), from one reading of
/// the clock.
fn default_out_dir() -> PathBuf {
    let now = rein_core::time::now_millis();
    let minute: String = rein_core::time::format_datetime(now)
        .chars()
        .map(|c| if c.is_ascii_digit() { c } else { '-' })
        .collect();
    let secs = now.div_euclid(1000).rem_euclid(60);
    PathBuf::from("rein-eval-results").join(format!("{minute}-{secs:02}"))
}

/// One line on stderr: redrawn on a terminal, a line per task otherwise.
struct Progress {
    total: usize,
    done: usize,
    solved: usize,
    live: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        let live = std::io::stderr().is_terminal();
        let p = Progress {
            total,
            done: 0,
            solved: 0,
            live,
        };
        p.draw("");
        p
    }

    fn done(&mut self, r: &TaskRecord) {
        self.done += 1;
        self.solved += usize::from(r.solved);
        let outcome = match r.failure {
            _ if r.solved => "solved".to_string(),
            Some(kind) => kind.as_str().to_string(),
            None => "failed".to_string(),
        };
        let mut line = format!(
            "{}: {outcome} ({} turns, {:.1} s)",
            r.task,
            r.turns,
            r.wall_ms as f64 / 1000.0
        );
        if let Some(error) = &r.error {
            line.push_str(": ");
            line.push_str(&report::error_line(error, PROGRESS_ERROR_SHOWN));
        }
        self.draw(&line);
    }

    fn draw(&self, last: &str) {
        let bar_width = 20;
        let filled = (self.done * bar_width).checked_div(self.total).unwrap_or(0);
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(bar_width - filled));
        let head = format!(
            "[{bar}] {}/{} · solved {}",
            self.done, self.total, self.solved
        );
        let mut err = std::io::stderr();
        if self.live {
            let _ = write!(err, "\r\x1b[2K{head} · {last}");
            let _ = err.flush();
        } else if !last.is_empty() {
            let _ = writeln!(err, "{head} · {last}");
        }
    }

    fn finish(&self) {
        if self.live {
            let _ = writeln!(std::io::stderr());
        }
    }
}
