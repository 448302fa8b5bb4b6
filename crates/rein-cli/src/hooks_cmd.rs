//! `rein hooks list`: the hooks a run in a folder would use, and which
//! of the project's are not used there.

use crate::cli::HooksArgs;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

/// `rein hooks list`: each hook a run here would run, and why others
/// would not.
pub fn list(args: HooksArgs) -> Result<i32, Failure> {
    let workspace = crate::setup::workspace::resolve_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust_cmd::trusted_for_run(&workspace, false)?;
    let (cfg, _) = Config::load(&workspace, trusted).map_err(Failure::usage)?;
    let set = crate::hooks::load(&cfg, &workspace);
    if args.json {
        for e in &set.entries {
            out(&serde_json::json!({
                "event": e.event, "matcher": e.matcher, "command": e.handler.command,
                "timeout": e.handler.timeout, "fail_closed": e.handler.fail_closed, "file": e.file,
            })
            .to_string());
        }
        out(&serde_json::json!({ "notes": set.notes }).to_string());
        return Ok(COMPLETED);
    }
    if set.entries.is_empty() {
        out("no hooks run here");
    }
    for e in &set.entries {
        let matcher = if e.matcher.is_empty() {
            "*"
        } else {
            e.matcher.as_str()
        };
        out(&rein_tui::cells::sanitize(&format!(
            "{} [{matcher}] {}  (from {})",
            e.event,
            e.handler.command,
            e.file.display()
        )));
    }
    for note in &set.notes {
        out(&format!("note: {}", rein_tui::cells::sanitize(note)));
    }
    Ok(COMPLETED)
}
