//! An enabled plugin's commands, agents and skills joined to those a run
//! found in the project and the user's folders, as the user's own
//! (trusted). Each keeps its name unless that is taken (by the project's,
//! the user's, rein's own or an earlier plugin's); then it is named
//! `PLUGIN:NAME`. Its hooks (`hooks/hooks.json`) join the user's, with
//! `${CLAUDE_PLUGIN_ROOT}` and `${REIN_PLUGIN_ROOT}` expanded to its
//! folder; its MCP servers are read in `mcp::plugins`. Each part is read
//! from its usual place and from those the plugin's manifest adds
//! ([`PluginPart`]).

use std::path::{Path, PathBuf};

use rein_core::FrontEndCommands;
use rein_core::agents::{AgentCatalog, ToolNames};
use rein_core::commands::Commands;
use rein_tools::skills::Skills;
use rein_tools::user_hooks::HookSet;
use serde_json::Value;

use super::manifest::{self, Part};
pub use super::store::enabled;

/// One enabled plugin's part: where it is found, and what the manifest
/// writes of it inline.
pub struct PluginPart {
    pub plugin: String,
    pub root: PathBuf,
    /// Its usual place and the manifest's, those that exist inside it.
    pub places: Vec<PathBuf>,
    /// Hooks or servers written in `plugin.json` itself.
    pub inline: Option<Value>,
}

/// `part` of each enabled plugin of `home`.
pub fn enabled_parts(home: &Path, part: Part) -> Vec<PluginPart> {
    enabled(home)
        .into_iter()
        .map(|(plugin, root)| {
            let read = manifest::read(&root).ok();
            let extra = read.as_ref().and_then(|m| m.extra.get(&part));
            PluginPart {
                places: manifest::locations(&root, &part, extra),
                inline: extra.and_then(|e| e.inline.clone()),
                plugin,
                root,
            }
        })
        .collect()
}

/// The words for a plugin's folder in its hook and server commands:
/// Claude Code's, and rein's.
const ROOT_VARIABLES: [&str; 2] = ["${CLAUDE_PLUGIN_ROOT}", "${REIN_PLUGIN_ROOT}"];

/// The variables set for a plugin's servers, naming its folder.
pub const ROOT_ENV: [&str; 2] = ["CLAUDE_PLUGIN_ROOT", "REIN_PLUGIN_ROOT"];

/// `text` with the plugin's folder put for [`ROOT_VARIABLES`].
pub fn expand_root(text: &str, root: &Path) -> String {
    let shown = root.display().to_string();
    ROOT_VARIABLES
        .iter()
        .fold(text.to_string(), |t, var| t.replace(var, &shown))
}

/// Every string in `value` with [`expand_root`] applied.
fn expand_value(value: &mut Value, root: &Path) {
    match value {
        Value::String(s) => *s = expand_root(s, root),
        Value::Array(items) => items.iter_mut().for_each(|v| expand_value(v, root)),
        Value::Object(map) => map.values_mut().for_each(|v| expand_value(v, root)),
        _ => {}
    }
}

/// Add the enabled plugins' hooks of `home` to `set` (a file that cannot
/// be read is a note): each `hooks.json` the plugin has, and the block its
/// manifest writes inline.
pub fn add_hooks(set: &mut HookSet, home: &Path) {
    for part in enabled_parts(home, Part::Hooks) {
        let plugin = &part.plugin;
        for path in &part.places {
            // Bounded, and a regular file only (never a FIFO to hang on).
            let text = match crate::settings_file::read_text(path, "plugin hook file") {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(e) => {
                    set.notes.push(format!("plugin {plugin}: {e:#}"));
                    continue;
                }
            };
            match serde_json::from_str::<Value>(&text) {
                Ok(value) => add_hook_block(set, value, &part.root, path),
                Err(e) => set.notes.push(format!(
                    "plugin {plugin}: {}: not valid JSON: {e}",
                    path.display()
                )),
            }
        }
        if let Some(inline) = part.inline {
            let manifest = part.root.join(manifest::MANIFEST);
            add_hook_block(set, inline, &part.root, &manifest);
        }
    }
}

/// A hook file's block (`{"hooks": {...}}`, or the events themselves as a
/// manifest may write them), its plugin's folder expanded in its commands
/// and set in their environment ([`ROOT_ENV`]), as Claude Code does.
fn add_hook_block(set: &mut HookSet, mut value: Value, root: &Path, from: &Path) {
    expand_value(&mut value, root);
    let block = match value.get("hooks") {
        Some(block) => block.clone(),
        None => value,
    };
    let env: Vec<(String, String)> = ROOT_ENV
        .iter()
        .map(|var| (var.to_string(), root.display().to_string()))
        .collect();
    if !block.is_null() {
        set.add_block_with_env(&block, from, &env);
    }
}

/// `name` when it is free, else `plugin:name` when that is; None when
/// both are taken.
fn free_name(plugin: &str, name: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    free_name_with(plugin, ':', name, taken)
}

/// `name` when it is free, else `plugin`, `between`, `name` when that is.
pub fn free_name_with(
    plugin: &str,
    between: char,
    name: &str,
    taken: impl Fn(&str) -> bool,
) -> Option<String> {
    if !taken(name) {
        return Some(name.to_string());
    }
    let spaced = format!("{plugin}{between}{name}");
    (!taken(&spaced)).then_some(spaced)
}

/// The line for an item neither of whose names is free.
fn both_taken(kind: &str, plugin: &str, name: &str) -> String {
    format!(
        "plugin {plugin}: its {kind} `{name}` is not used: `{name}` and `{plugin}:{name}` are both taken"
    )
}

/// Each place of `part` in the enabled plugins of `home`, with its plugin.
fn places(home: &Path, part: Part) -> Vec<(String, PathBuf)> {
    let parts = enabled_parts(home, part).into_iter();
    parts
        .flat_map(|p| {
            let plugin = p.plugin;
            p.places
                .into_iter()
                .map(move |place| (plugin.clone(), place))
        })
        .collect()
}

/// Add the enabled plugins' commands of `home` to `found`; `reserved`
/// are rein's own command names.
pub fn add_commands(
    found: &mut Commands,
    home: &Path,
    reserved: &[&str],
    front_end: &FrontEndCommands,
) {
    for (plugin, place) in places(home, Part::Commands) {
        let read = Commands::read_folder(&place, front_end);
        found.warnings.extend(read.warnings);
        for mut command in read.commands {
            let taken = |n: &str| reserved.contains(&n) || found.get(n).is_some();
            match free_name(&plugin, &command.name, taken) {
                Some(name) => {
                    command.name = name;
                    found.commands.push(command);
                }
                None => found
                    .warnings
                    .push(both_taken("command", &plugin, &command.name)),
            }
        }
    }
}

/// Add the enabled plugins' agents of `home` to `found`.
pub fn add_agents(found: &mut AgentCatalog, home: &Path, tool_names: ToolNames) {
    for (plugin, place) in places(home, Part::Agents) {
        let read = AgentCatalog::read_folder(&place, tool_names);
        found.warnings.extend(read.warnings);
        for mut agent in read.agents {
            match free_name(&plugin, &agent.name, |n| found.get(n).is_some()) {
                Some(name) => {
                    agent.name = name;
                    found.agents.push(agent);
                }
                None => found
                    .warnings
                    .push(both_taken("agent", &plugin, &agent.name)),
            }
        }
    }
}

/// Add the enabled plugins' skills of `home` to `found`.
pub fn add_skills(found: &mut Skills, home: &Path) {
    for (plugin, place) in places(home, Part::Skills) {
        let read = Skills::read_folder(&place);
        found.warnings.extend(read.warnings);
        for mut skill in read.skills {
            match free_name(&plugin, &skill.name, |n| found.get(n).is_some()) {
                Some(name) => {
                    skill.name = name;
                    found.skills.push(skill);
                }
                None => found
                    .warnings
                    .push(both_taken("skill", &plugin, &skill.name)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_name_is_spaced_by_the_plugin_and_a_free_one_kept() {
        let taken = |n: &str| n == "review" || n == "fmt:lint";
        assert_eq!(free_name("fmt", "tidy", taken).as_deref(), Some("tidy"));
        assert_eq!(
            free_name("fmt", "review", taken).as_deref(),
            Some("fmt:review")
        );
        assert_eq!(free_name("fmt", "lint", |n| n == "lint" || taken(n)), None);
    }

    #[test]
    fn both_spellings_of_the_plugins_folder_are_expanded_everywhere_in_a_hook_file() {
        let root = Path::new("/h/plugins/tidy");
        let mut v = serde_json::json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/a.sh\" ${REIN_PLUGIN_ROOT}/b"}
        ]}]}});
        expand_value(&mut v, root);
        assert_eq!(
            v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
            "\"/h/plugins/tidy/a.sh\" /h/plugins/tidy/b"
        );
    }
}
