//! The installed plugins: `$REIN_HOME/plugins.json` records each one's
//! name, version, where it came from (and the commit, from git), the digest of its files as
//! installed and whether it is enabled; its files are in
//! `$REIN_HOME/plugins/NAME/`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The record's file under `$REIN_HOME`.
const FILE: &str = "plugins.json";

/// One installed plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The folder or git URL (with its `@REF`) it was installed from.
    pub source: String,
    /// The commit a git source was at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// `sha256:HEX` of its files as installed.
    pub digest: String,
    pub enabled: bool,
}

/// What `plugins.json` holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Registry {
    pub plugins: Vec<Installed>,
}

/// The folder holding every plugin's files.
pub fn plugins_dir(home: &Path) -> PathBuf {
    home.join("plugins")
}

/// The folder of plugin `name`.
pub fn root_of(home: &Path, name: &str) -> PathBuf {
    plugins_dir(home).join(name)
}

impl Registry {
    /// The record of `home` (none yet: empty). The error is one line.
    pub fn load(home: &Path) -> Result<Registry, String> {
        read_record(&home.join(FILE), "plugin record")
    }

    /// Write it back in one step (a crash leaves the old record).
    pub fn save(&self, home: &Path) -> Result<(), String> {
        write_record(home, FILE, self)
    }

    pub fn get(&self, name: &str) -> Option<&Installed> {
        self.plugins.iter().find(|p| p.name == name)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Installed> {
        self.plugins.iter_mut().find(|p| p.name == name)
    }
}

/// The enabled plugins of `home` as (name, folder), in the order they were
/// installed; an unreadable record gives none (the run's other parts go on).
pub fn enabled(home: &Path) -> Vec<(String, PathBuf)> {
    Registry::load(home)
        .map(|r| {
            r.plugins
                .into_iter()
                .filter(|p| p.enabled)
                .map(|p| {
                    let root = root_of(home, &p.name);
                    (p.name, root)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A JSON record of rein's under `$REIN_HOME` (none yet: the default);
/// the error is one line naming the file and `what` it should be.
pub fn read_record<T: serde::de::DeserializeOwned + Default>(
    path: &Path,
    what: &str,
) -> Result<T, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a {what}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Write `value` as `home/file` in one step (a crash leaves the old one).
pub fn write_record<T: Serialize>(home: &Path, file: &str, value: &T) -> Result<(), String> {
    let path = home.join(file);
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut out = tempfile::NamedTempFile::new_in(home).map_err(fail)?;
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    out.write_all(text.as_bytes()).map_err(fail)?;
    out.persist(&path).map_err(|e| fail(e.error))?;
    Ok(())
}
