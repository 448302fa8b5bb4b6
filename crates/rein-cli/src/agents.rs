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

/// `rein agents`: each agent the `task` tool can start here.
pub fn list_agents(args: ListArgs) -> Result<i32, Failure> {
    let (cfg, workspace) = config(&args)?;
    let catalog = crate::setup::engine::agents(&cfg, &workspace);
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
            out(&rein_tui::cells::sanitize(&format!(
                "{}  {}  ({source})",
                a.name,
                rein_core::text::one_line(&a.description, 80)
            )));
        }
    }
    for w in &catalog.warnings {
        out(&format!("note: {}", rein_tui::cells::sanitize(w)));
    }
    Ok(COMPLETED)
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
