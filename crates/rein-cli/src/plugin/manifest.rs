//! A plugin folder in Claude Code's layout: `.claude-plugin/plugin.json`
//! (`name`, optional `version` and `description`) and, at the plugin's
//! root, the parts it brings: `commands/`, `agents/`, `skills/`,
//! `hooks/hooks.json` and `.mcp.json`. The manifest may add places for a
//! part (`"commands": "./more"` or a list; for hooks and servers a file,
//! or the part itself written inline): they add to the usual places, and
//! each must stay inside the plugin ([`Manifest::extra`]).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// The manifest's place inside a plugin.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";

/// Largest manifest read.
const MAX_BYTES: u64 = 64 * 1024;

/// What `plugin.json` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The places it adds for a part, besides the usual one.
    pub extra: BTreeMap<Part, Extra>,
    /// What it says of a part that cannot be used (a path that leaves
    /// the plugin, a value of the wrong kind), one line each.
    pub problems: Vec<String>,
}

/// A manifest's own places for one part.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extra {
    /// Inside the plugin, relative to its root.
    pub paths: Vec<PathBuf>,
    /// The part written in the manifest itself (hooks, servers).
    pub inline: Option<Value>,
}

/// A part a plugin may bring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

    /// Its key in `plugin.json`.
    pub fn key(self) -> &'static str {
        match self {
            Part::McpServers => "mcpServers",
            other => other.label(),
        }
    }

    /// Whether the manifest may write it inline (an object).
    fn inline(self) -> bool {
        matches!(self, Part::Hooks | Part::McpServers)
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

/// The parts present under `root`, in their usual places or in the
/// manifest's.
pub fn parts(root: &Path) -> Vec<Part> {
    let manifest = read(root).ok();
    Part::ALL
        .into_iter()
        .filter(|p| {
            let extra = manifest.as_ref().and_then(|m| m.extra.get(p));
            extra.is_some_and(|e| e.inline.is_some()) || !locations(root, p, extra).is_empty()
        })
        .collect()
}

/// Where `part` is found under `root`: its usual place, then the
/// manifest's paths, each that exists and stays inside the plugin once
/// its links are followed.
pub fn locations(root: &Path, part: &Part, extra: Option<&Extra>) -> Vec<PathBuf> {
    let Ok(inside) = root.canonicalize() else {
        return Vec::new();
    };
    let own = std::iter::once(PathBuf::from(part.path()));
    let more = extra.into_iter().flat_map(|e| e.paths.iter().cloned());
    let mut found: Vec<PathBuf> = Vec::new();
    for relative in own.chain(more) {
        let path = root.join(&relative);
        let real = path.canonicalize();
        if real.is_ok_and(|r| r.starts_with(&inside)) && !found.contains(&path) {
            found.push(path);
        }
    }
    found
}

/// The manifest's places for each part, and a line for each that cannot
/// be used.
fn extras(object: &serde_json::Map<String, Value>) -> (BTreeMap<Part, Extra>, Vec<String>) {
    let mut extra = BTreeMap::new();
    let mut problems = Vec::new();
    for part in Part::ALL {
        let Some(value) = object.get(part.key()) else {
            continue;
        };
        let mut e = Extra::default();
        let texts: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            Value::Object(_) if part.inline() => {
                e.inline = Some(value.clone());
                Vec::new()
            }
            other => vec![other],
        };
        for text in texts {
            match text.as_str().map(inside_path) {
                Some(Ok(path)) => e.paths.push(path),
                Some(Err(why)) => problems.push(format!("`{}`: {why}", part.key())),
                None => problems.push(format!(
                    "`{}`: {text} is not a path{}",
                    part.key(),
                    if part.inline() { " or an object" } else { "" }
                )),
            }
        }
        extra.insert(part, e);
    }
    (extra, problems)
}

/// A manifest's path, which must name something inside the plugin:
/// relative (`./x` or `x`), without `..`.
fn inside_path(text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text);
    let fine = path
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    let inside: PathBuf = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    match fine && !inside.as_os_str().is_empty() {
        true => Ok(inside),
        false => Err(format!("`{text}` is not a path inside the plugin")),
    }
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
    let (extra, problems) = extras(object);
    Ok(Manifest {
        name,
        version: text_of("version"),
        description: text_of("description"),
        extra,
        problems,
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
    fn a_manifest_gives_name_version_description_and_its_own_places_for_parts() {
        let dir = plugin(
            r#"{"name":"fmt-tools","version":"1.2.0","description":"Format",
                "agents":["./team/", "solo.md"], "hooks": {"PreToolUse": []}}"#,
        );
        std::fs::create_dir_all(dir.path().join("commands")).unwrap();
        std::fs::create_dir_all(dir.path().join("team")).unwrap();
        std::fs::write(dir.path().join(".mcp.json"), "{}").unwrap();
        let m = read(dir.path()).unwrap();
        assert_eq!(m.name, "fmt-tools");
        assert_eq!(m.version.as_deref(), Some("1.2.0"));
        assert_eq!(m.description.as_deref(), Some("Format"));
        let agents = &m.extra[&Part::Agents];
        assert_eq!(
            agents.paths,
            [PathBuf::from("team"), PathBuf::from("solo.md")]
        );
        assert!(m.extra[&Part::Hooks].inline.is_some());
        assert!(m.problems.is_empty(), "{:?}", m.problems);
        // `solo.md` is not there: only the folder counts.
        assert_eq!(
            locations(dir.path(), &Part::Agents, Some(agents)),
            [dir.path().join("team")]
        );
        assert_eq!(
            parts(dir.path()),
            [Part::Commands, Part::Agents, Part::Hooks, Part::McpServers]
        );
    }

    #[test]
    fn a_manifest_path_that_leaves_the_plugin_is_a_problem_and_never_a_place() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("cmds")).unwrap();
        let dir = plugin(
            &serde_json::json!({"name": "p", "commands": [
                "../x", "/etc", format!("{}/cmds", outside.path().display()), "./linked", 7
            ]})
            .to_string(),
        );
        std::os::unix::fs::symlink(outside.path().join("cmds"), dir.path().join("linked")).unwrap();
        let m = read(dir.path()).unwrap();
        assert_eq!(m.problems.len(), 4, "{:?}", m.problems);
        assert!(m.problems[0].contains("`../x` is not a path inside the plugin"));
        assert!(
            m.problems[3].contains("7 is not a path"),
            "{:?}",
            m.problems
        );
        // The link's target is outside: it is no place.
        let extra = m.extra.get(&Part::Commands);
        assert!(locations(dir.path(), &Part::Commands, extra).is_empty());
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
