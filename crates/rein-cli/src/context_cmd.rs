//! `rein context`: the instructions a run in a folder would follow (the
//! user's `$REIN_HOME/AGENTS.md`, then the project's AGENTS.md or
//! CLAUDE.md files from its root down to the folder), what each gives and
//! what was cut or not read. Folders below it add theirs during a run, when
//! the model works there.

use rein_core::instructions::{DEFAULT_CAP, Instructions};

use crate::cli::ContextArgs;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

pub fn run(args: ContextArgs) -> Result<i32, Failure> {
    let workspace = crate::setup::workspace::resolve_workspace(args.workspace.as_deref())?;
    let home = crate::config::rein_home().map_err(Failure::usage)?;
    let cfg = Config::defaults(home);
    let found = Instructions::load(
        Some(&crate::setup::engine::global_instructions(&cfg)),
        &workspace,
        DEFAULT_CAP,
    );
    if args.json {
        for file in &found.files {
            out(&serde_json::to_string(file).unwrap_or_default());
        }
        out(&serde_json::json!({"notes": found.notes, "cap_bytes": DEFAULT_CAP}).to_string());
        return Ok(COMPLETED);
    }
    if found.files.is_empty() {
        out(&format!(
            "no instructions: no AGENTS.md (or CLAUDE.md) from the project's root down to {}, \
             and none of yours in {}",
            workspace.display(),
            crate::setup::engine::global_instructions(&cfg).display()
        ));
        return Ok(COMPLETED);
    }
    out(&format!(
        "instructions a run in {} follows, in this order (at most {} KiB):",
        workspace.display(),
        DEFAULT_CAP / 1024
    ));
    for line in found.lines() {
        out(&format!("  {}", rein_tui::cells::sanitize(&line)));
    }
    for note in &found.notes {
        out(&format!("note: {}", rein_tui::cells::sanitize(note)));
    }
    Ok(COMPLETED)
}
