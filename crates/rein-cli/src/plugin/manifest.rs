//! A plugin folder in Claude Code's layout: `.claude-plugin/plugin.json`
//! (`name`, optional `version` and `description`) and, at the plugin's
//! root, the parts it brings: `commands/`, `agents/`, `skills/`,
//! `hooks/hooks.json` and `.mcp.json`.

use std::path::Path;

/// The manifest's place inside a plugin.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";

/// Largest manifest read.
const MAX_BYTES: u64 = 64 * 1024;

/// Manifest keys that move a part away from its usual folder; rein reads
/// only the usual folders.
const CUSTOM_PATHS: [&str; 5] = ["commands", "agents", "skills", "hooks", "mcpServers"];

/// What `plugin.json` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The keys it has that rein does not follow ([`CUSTOM_PATHS`]).
    pub ignored: Vec<String>,
}

/// A part a plugin may bring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Commands,
    Agents,
    Skills,
    Hooks,
    McpServers,
}

impl Part {
    pub const ALL: [Part; 5] = [
        Part::Commands,
        Part::Agents,
        Part::Skills,
        Part::Hooks,
        Part::McpServers,
    ];

    /// Its place under the plugin's root.
    pub fn path(self) -> &'static str {
        match self {
            Part::Commands => "commands",
            Part::Agents => "agents",
            Part::Skills => "skills",
            Part::Hooks => "hooks/hooks.json",
            Part::McpServers => ".mcp.json",
        }
    }

    /// Its name in listings.
    pub fn label(self) -> &'static str {
        match self {
            Part::Commands => "commands",
            Part::Agents => "agents",
            Part::Skills => "skills",
            Part::Hooks => "hooks",
            Part::McpServers => "mcp-servers",
        }
    }
}

/// The parts present under `root`.
pub fn parts(root: &Path) -> Vec<Part> {
    Part::ALL
        .into_iter()
        .filter(|p| root.join(p.path()).symlink_metadata().is_ok())
        .collect()
}

/// Read `root`'s manifest; the error is one line naming the file.
pub fn read(root: &Path) -> Result<Manifest, String> {
    let path = root.join(MANIFEST);
    let shown = path.display();
    let meta = path
        .symlink_metadata()
        .map_err(|_| format!("{} is not a plugin: it has no {MANIFEST}", root.display()))?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!("{shown}: larger than {MAX_BYTES} bytes"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{shown}: {e}"))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{shown}: not valid JSON: {}",
            crate::output::one_line(&e.to_string(), 200)
        )
    })?;
    let Some(object) = value.as_object() else {
        return Err(format!("{shown}: not a JSON object"));
    };
    let text_of = |key: &str| object.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let name = text_of("name").ok_or_else(|| format!("{shown}: no `name`"))?;
    if !valid_name(&name) {
        return Err(format!(
            "{shown}: `{name}` is not a plugin name (letters, digits, `-`, `_`; at most 64)"
        ));
    }
    Ok(Manifest {
        name,
        version: text_of("version"),
        description: text_of("description"),
        ignored: CUSTOM_PATHS
            .iter()
            .filter(|k| object.contains_key(**k))
            .map(|k| k.to_string())
            .collect(),
    })
}

/// Whether `name` can name a plugin (and its folder under
/// `$REIN_HOME/plugins`): no `/`, no dots, nothing empty.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(json: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".claude-plugin")).unwrap();
        std::fs::write(dir.path().join(MANIFEST), json).unwrap();
        dir
    }

    #[test]
    fn a_manifest_gives_name_version_description_and_the_keys_not_followed() {
        let dir = plugin(
            r#"{"name":"fmt-tools","version":"1.2.0","description":"Format","commands":["./x"]}"#,
        );
        std::fs::create_dir_all(dir.path().join("commands")).unwrap();
        std::fs::write(dir.path().join(".mcp.json"), "{}").unwrap();
        let m = read(dir.path()).unwrap();
        assert_eq!(m.name, "fmt-tools");
        assert_eq!(m.version.as_deref(), Some("1.2.0"));
        assert_eq!(m.description.as_deref(), Some("Format"));
        assert_eq!(m.ignored, ["commands"]);
        assert_eq!(parts(dir.path()), [Part::Commands, Part::McpServers]);
    }

    #[test]
    fn names_that_could_leave_the_plugins_folder_are_refused() {
        for bad in ["../x", "a/b", "..", "", ".hidden", "a b"] {
            assert!(!valid_name(bad), "{bad}");
            let dir = plugin(&serde_json::json!({"name": bad}).to_string());
            let e = read(dir.path()).unwrap_err();
            assert!(e.contains("not a plugin name"), "{e}");
        }
        let e = read(plugin("{not json").path()).unwrap_err();
        assert!(e.contains("not valid JSON") && !e.contains('\n'), "{e}");
        let e = read(tempfile::tempdir().unwrap().path()).unwrap_err();
        assert!(e.contains("has no .claude-plugin/plugin.json"), "{e}");
    }
}
