//! The hooks of a run (see [`rein_tools::user_hooks`]): the `hooks` block
//! of `$REIN_HOME/settings.json`, then of the project's
//! `.rein/settings.json` and `.rein/settings.local.json` in a trusted
//! folder only; and `rein hooks list`.

use std::path::{Path, PathBuf};

use rein_tools::user_hooks::HookSet;

use crate::cli::HooksArgs;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

/// The files hooks are read from, and whether each counts.
fn files(cfg: &Config, workspace: &Path) -> Vec<(PathBuf, bool)> {
    let mut list = vec![(cfg.home.join("settings.json"), true)];
    for name in crate::permissions::PROJECT_RULES_FILES {
        list.push((workspace.join(".rein").join(name), cfg.trusted));
    }
    list
}

/// The hooks a run in `workspace` runs, with a note for each that it
/// does not.
pub fn load(cfg: &Config, workspace: &Path) -> HookSet {
    let mut set = HookSet::default();
    for (path, counts) in files(cfg, workspace) {
        let text = match crate::settings_file::read_text(&path, "settings file") {
            Ok(Some(t)) => t,
            Ok(None) => continue,
            Err(e) => {
                set.notes.push(format!("{e:#}"));
                continue;
            }
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(block) = value.get("hooks").filter(|b| !b.is_null()) else {
            continue;
        };
        if counts {
            set.add_block(block, &path);
        } else {
            set.notes.push(format!(
                "{}: its hooks are not run, because this folder is not trusted (`rein trust`)",
                path.display()
            ));
        }
    }
    set
}

/// `rein hooks list`: each hook a run here would run, and why others
/// would not.
pub fn list(args: HooksArgs) -> Result<i32, Failure> {
    let workspace = crate::exec::resolve_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust::command::trusted_for_run(&workspace, false)?;
    let (cfg, _) = Config::load(&workspace, trusted).map_err(Failure::usage)?;
    let set = load(&cfg, &workspace);
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
