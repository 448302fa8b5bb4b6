//! `rein agents` (the sub-agents a run here can start) and `rein
//! worktrees` (the worktrees isolated sub-agents left with changes).

use std::path::PathBuf;

use crate::cli::ListArgs;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

fn config(args: &ListArgs) -> Result<(Config, PathBuf), Failure> {
    let workspace = crate::setup::workspace::resolve_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust_cmd::trusted_for_run(&workspace, false)?;
    let (cfg, _) = Config::load(&workspace, trusted).map_err(Failure::usage)?;
    Ok((cfg, workspace))
}

/// `rein agents`: each agent the `task` tool can start here, as
/// aligned columns (name, description, source) or JSON Lines.
pub fn list_agents(args: ListArgs) -> Result<i32, Failure> {
    let (cfg, workspace) = config(&args)?;
    let catalog = crate::setup::engine::agents(&cfg, &workspace);
    let mut rows = Vec::new();
    for a in &catalog.agents {
        let source = match &a.source {
            rein_core::agents::AgentSource::BuiltIn => "built-in".to_string(),
            rein_core::agents::AgentSource::File(p) => p.display().to_string(),
        };
        if args.json {
            out(&serde_json::json!({
                "name": a.name, "description": a.description, "tools": a.tools,
                "disallowed_tools": a.disallowed_tools, "model": a.model,
                "mode": a.mode.map(|m| m.to_string()), "max_turns": a.max_turns,
                "isolation": if a.worktree { "worktree" } else { "none" }, "source": source,
            })
            .to_string());
        } else {
            let description = rein_core::text::one_line(&a.description, 80);
            rows.push([a.name.clone(), description, format!("({source})")]);
        }
    }
    for line in columns(&rows) {
        out(&rein_tui::cells::sanitize(&line));
    }
    for w in &catalog.warnings {
        out(&format!("note: {}", rein_tui::cells::sanitize(w)));
    }
    Ok(COMPLETED)
}

/// Rows as lines whose columns start at the same place: every column
/// but the last padded to its widest cell, two spaces between.
fn columns(rows: &[[String; 3]]) -> Vec<String> {
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (name, description) = (width(0), width(1));
    rows.iter()
        .map(|[n, d, s]| format!("{n:<name$}  {d:<description$}  {s}"))
        .collect()
}

/// `rein worktrees`: the worktrees sub-agents left with uncommitted
/// changes, to merge or remove (`git worktree remove PATH`).
pub fn list_worktrees(args: ListArgs) -> Result<i32, Failure> {
    let (cfg, _) = config(&args)?;
    let kept = rein_tools::worktrees::GitWorktrees::new(cfg.home.join("worktrees")).list();
    if kept.is_empty() && !args.json {
        out("no worktrees kept");
    }
    for k in kept {
        if args.json {
            out(&serde_json::to_string(&k).map_err(Failure::harness)?);
        } else {
            out(&format!(
                "{}  branch {}  {} uncommitted file(s)",
                k.path.display(),
                k.branch,
                k.changed
            ));
        }
    }
    Ok(COMPLETED)
}

#[cfg(test)]
mod tests {
    #[test]
    fn agent_columns_start_at_the_same_place_on_every_line() {
        let row = |n: &str, d: &str, s: &str| [n.to_string(), d.to_string(), s.to_string()];
        let lines = super::columns(&[
            row("explore", "Reads code", "(built-in)"),
            row("general-purpose", "Does anything asked", "(built-in)"),
        ]);
        assert_eq!(lines[0], "explore          Reads code           (built-in)");
        assert_eq!(lines[1], "general-purpose  Does anything asked  (built-in)");
    }
}
