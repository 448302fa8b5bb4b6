//! The Markdown report of one eval, and the comparison of two.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::record::{FailureKind, TaskRecord};

/// Solved count, and the median wall time, turns and tokens of a set of
/// records.
#[derive(Debug, PartialEq)]
pub struct Totals {
    pub tasks: usize,
    pub solved: usize,
    pub median_wall_ms: u64,
    pub median_turns: u32,
    pub tokens: u64,
    /// Every request's size, summed (see [`TaskRecord::request_tokens`]).
    pub request_tokens: u64,
    /// `None` when some run's cost is unknown.
    pub cost_usd: Option<f64>,
}

fn median<T: Copy + Ord + Default>(mut values: Vec<T>) -> T {
    values.sort();
    values.get(values.len() / 2).copied().unwrap_or_default()
}

pub fn totals(records: &[TaskRecord]) -> Totals {
    Totals {
        tasks: records.len(),
        solved: records.iter().filter(|r| r.solved).count(),
        median_wall_ms: median(records.iter().map(|r| r.wall_ms).collect()),
        median_turns: median(records.iter().map(|r| r.turns).collect()),
        tokens: records
            .iter()
            .map(|r| r.input_tokens + r.output_tokens)
            .sum(),
        request_tokens: records.iter().map(|r| r.request_tokens).sum(),
        cost_usd: records.iter().map(|r| r.cost_usd).sum(),
    }
}

fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn cost(c: Option<f64>) -> String {
    match c {
        Some(c) => format!("${c:.4}"),
        None => "unknown".to_string(),
    }
}

/// Where the records came from: the first record's provider, model and
/// profile.
fn setup(records: &[TaskRecord]) -> String {
    records
        .iter()
        .find(|r| !r.model.is_empty())
        .map(|r| format!("{}/{} · {} profile", r.provider, r.model, r.profile))
        .unwrap_or_else(|| "no run started".to_string())
}

/// The groups of `records` in the order they first appear, each with its
/// records; one group (or records without groups) gives none, as there is
/// nothing to tell apart.
pub fn groups(records: &[TaskRecord]) -> Vec<(String, Vec<TaskRecord>)> {
    let mut out: Vec<(String, Vec<TaskRecord>)> = Vec::new();
    for r in records {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, rs)) => rs.push(r.clone()),
            None => out.push((r.group.clone(), vec![r.clone()])),
        }
    }
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// One line of a group's totals.
fn group_line(name: &str, records: &[TaskRecord]) -> String {
    let t = totals(records);
    let name = if name.is_empty() { "(no group)" } else { name };
    format!(
        "- {name}: solved {}/{} · median {} a task · {} tokens",
        t.solved,
        t.tasks,
        secs(t.median_wall_ms),
        t.tokens
    )
}

/// The report: totals (and each group's), failures by kind, then a row
/// per task.
pub fn markdown(records: &[TaskRecord]) -> String {
    let t = totals(records);
    let mut out = String::new();
    let _ = writeln!(out, "# rein eval: {}\n", setup(records));
    let _ = writeln!(
        out,
        "Solved **{}/{}** · median {} and {} turns a task · {} tokens ({} in requests) · cost {}\n",
        t.solved,
        t.tasks,
        secs(t.median_wall_ms),
        t.median_turns,
        t.tokens,
        t.request_tokens,
        cost(t.cost_usd)
    );
    let groups = groups(records);
    if !groups.is_empty() {
        out.push_str("By group:\n\n");
        for (name, rs) in &groups {
            let _ = writeln!(out, "{}", group_line(name, rs));
        }
        out.push('\n');
    }
    let mut kinds: BTreeMap<FailureKind, usize> = BTreeMap::new();
    for kind in records.iter().filter_map(|r| r.failure) {
        *kinds.entry(kind).or_default() += 1;
    }
    if !kinds.is_empty() {
        out.push_str("Failures: ");
        let list: Vec<String> = kinds
            .iter()
            .map(|(k, n)| format!("{} {n}", k.as_str()))
            .collect();
        out.push_str(&list.join(", "));
        out.push_str("\n\n");
    }
    errors(&mut out, records);
    out.push_str(
        "| task | group | kind | solved | failure | turns | calls | tokens | time | cost |\n",
    );
    out.push_str("| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
    for r in records {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.task,
            r.group,
            r.kind,
            if r.solved { "yes" } else { "no" },
            r.failure.map_or("", FailureKind::as_str),
            r.turns,
            r.tool_calls,
            r.input_tokens + r.output_tokens,
            secs(r.wall_ms),
            cost(r.cost_usd)
        );
    }
    out
}

/// Most characters of a run's error a report line shows.
pub const ERROR_SHOWN: usize = 240;

/// `error` on one line (its line breaks as spaces), cut to `max`
/// characters: what a report or a progress line shows of it.
pub fn error_line(error: &str, max: usize) -> String {
    let flat: String = error.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The "Errors" list: each task that stopped on an error, with what
/// the error said (nothing when none did).
fn errors(out: &mut String, records: &[TaskRecord]) {
    let failed: Vec<&TaskRecord> = records.iter().filter(|r| r.error.is_some()).collect();
    if failed.is_empty() {
        return;
    }
    out.push_str("Errors:\n\n");
    for r in failed {
        let error = r.error.as_deref().unwrap_or("");
        let _ = writeln!(
            out,
            "- {} ({}): {}",
            r.task,
            r.stop_reason,
            error_line(error, ERROR_SHOWN).replace('|', "\\|")
        );
    }
    out.push('\n');
}

/// What changed from `before` to `after`, task by task.
pub fn compare(before: &[TaskRecord], after: &[TaskRecord]) -> String {
    let (a, b) = (totals(before), totals(after));
    let mut out = String::new();
    let _ = writeln!(out, "# rein eval compare\n");
    let _ = writeln!(out, "| | before | after |\n| --- | --- | --- |");
    let _ = writeln!(out, "| setup | {} | {} |", setup(before), setup(after));
    let _ = writeln!(
        out,
        "| solved | {}/{} | {}/{} |",
        a.solved, a.tasks, b.solved, b.tasks
    );
    let _ = writeln!(
        out,
        "| median time | {} | {} |",
        secs(a.median_wall_ms),
        secs(b.median_wall_ms)
    );
    let _ = writeln!(
        out,
        "| median turns | {} | {} |",
        a.median_turns, b.median_turns
    );
    let _ = writeln!(out, "| tokens | {} | {} |", a.tokens, b.tokens);
    let (ga, gb) = (groups(before), groups(after));
    let mut names: Vec<&String> = Vec::new();
    for (g, _) in ga.iter().chain(&gb) {
        if !names.contains(&g) {
            names.push(g);
        }
    }
    for name in names {
        let solved = |gs: &[(String, Vec<TaskRecord>)]| match gs.iter().find(|(g, _)| g == name) {
            Some((_, rs)) => {
                let t = totals(rs);
                format!("{}/{}", t.solved, t.tasks)
            }
            None => "-".to_string(),
        };
        let _ = writeln!(
            out,
            "| solved, {name} | {} | {} |",
            solved(&ga),
            solved(&gb)
        );
    }
    let _ = writeln!(
        out,
        "| request tokens | {} | {} |",
        a.request_tokens, b.request_tokens
    );
    let _ = writeln!(
        out,
        "| cost | {} | {} |\n",
        cost(a.cost_usd),
        cost(b.cost_usd)
    );
    let old: BTreeMap<&str, &TaskRecord> = before.iter().map(|r| (r.task.as_str(), r)).collect();
    let new: BTreeMap<&str, &TaskRecord> = after.iter().map(|r| (r.task.as_str(), r)).collect();
    let mut rows = Vec::new();
    for (name, n) in &new {
        let line = match old.get(name) {
            None => format!("- {name}: only after ({})", outcome(n)),
            Some(o) if o.solved != n.solved || o.failure != n.failure => {
                format!("- {name}: {} → {}", outcome(o), outcome(n))
            }
            Some(_) => continue,
        };
        rows.push(line);
    }
    for name in old.keys().filter(|k| !new.contains_key(*k)) {
        rows.push(format!("- {name}: only before ({})", outcome(old[name])));
    }
    if rows.is_empty() {
        out.push_str("No task changed its outcome.\n");
    } else {
        out.push_str("Changed:\n");
        for row in rows {
            out.push_str(&row);
            out.push('\n');
        }
    }
    out
}

fn outcome(r: &TaskRecord) -> String {
    match r.failure {
        _ if r.solved => "solved".to_string(),
        Some(kind) => kind.as_str().to_string(),
        None => "failed".to_string(),
    }
}

/// Records from a results file (JSON Lines); blank lines are skipped.
pub fn parse_results(text: &str) -> Result<Vec<TaskRecord>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}
