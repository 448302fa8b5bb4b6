//! The `hooks` blocks of settings files: each hook with its event, matcher,
//! handler and file, and a note for each one that cannot be used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::HookEvent;
use super::matcher::Matcher;

/// One `{"type": "command", ...}` handler.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Handler {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub command: String,
    /// Seconds.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Block the call when the hook itself fails.
    #[serde(default)]
    pub fail_closed: bool,
    /// Variables the hook gets besides the usual ones (a plugin's hook:
    /// its folder), never read from a settings file.
    #[serde(skip)]
    pub env: Vec<(String, String)>,
}

#[derive(Debug, Deserialize)]
struct Group {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<Handler>,
}

/// One hook: its event, matcher, handler and the file it came from.
#[derive(Debug, Clone)]
pub struct HookEntry {
    pub event: HookEvent,
    pub matcher: String,
    pub handler: Handler,
    pub file: PathBuf,
}

/// The hooks of the run's settings files, and what could not be used.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    pub entries: Vec<HookEntry>,
    pub notes: Vec<String>,
}

impl HookSet {
    /// Add the `hooks` block of settings file `file` (the JSON value).
    pub fn add_block(&mut self, block: &Value, file: &Path) {
        self.add_block_with_env(block, file, &[]);
    }

    /// [`HookSet::add_block`], each hook getting `env` too (a plugin's
    /// hooks learn its folder).
    pub fn add_block_with_env(&mut self, block: &Value, file: &Path, env: &[(String, String)]) {
        let groups: BTreeMap<String, Vec<Group>> = match serde_json::from_value(block.clone()) {
            Ok(g) => g,
            Err(e) => {
                self.notes.push(format!(
                    "{}: the hooks block cannot be read: {e}",
                    file.display()
                ));
                return;
            }
        };
        for (name, groups) in groups {
            let count: usize = groups.iter().map(|g| g.hooks.len()).sum();
            let Ok(event) = name.parse::<HookEvent>() else {
                self.notes.push(format!(
                    "{}: {count} hook(s) for `{name}` are not run: rein knows no such event \
                     (it runs {})",
                    file.display(),
                    HookEvent::names()
                ));
                continue;
            };
            for group in groups {
                let matcher = group.matcher.unwrap_or_default();
                if let Err(e) = Matcher::new(&matcher) {
                    self.notes.push(format!(
                        "{}: {event} matcher `{matcher}` is not a valid pattern ({e}); its hooks \
                         are not run",
                        file.display()
                    ));
                    continue;
                }
                for mut handler in group.hooks {
                    handler.env = env.to_vec();
                    if handler.kind != "command" || handler.command.trim().is_empty() {
                        self.notes.push(format!(
                            "{}: a {event} hook of type `{}` without a command is not run",
                            file.display(),
                            handler.kind
                        ));
                        continue;
                    }
                    self.entries.push(HookEntry {
                        event,
                        matcher: matcher.clone(),
                        handler,
                        file: file.to_path_buf(),
                    });
                }
            }
        }
    }
}
