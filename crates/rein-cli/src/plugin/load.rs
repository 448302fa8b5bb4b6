//! An enabled plugin's commands, agents and skills joined to those a run
//! found in the project and the user's folders, as the user's own
//! (trusted). Each keeps its name unless that is taken (by the project's,
//! the user's, rein's own or an earlier plugin's); then it is named
//! `PLUGIN:NAME`.

use std::path::Path;

use rein_core::FrontEndCommands;
use rein_core::agents::{AgentCatalog, ToolNames};
use rein_core::commands::Commands;
use rein_tools::skills::Skills;

use super::store::enabled;

/// `name` when it is free, else `plugin:name` when that is; None when
/// both are taken.
fn free_name(plugin: &str, name: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    if !taken(name) {
        return Some(name.to_string());
    }
    let spaced = format!("{plugin}:{name}");
    (!taken(&spaced)).then_some(spaced)
}

/// The line for an item neither of whose names is free.
fn both_taken(kind: &str, plugin: &str, name: &str) -> String {
    format!(
        "plugin {plugin}: its {kind} `{name}` is not used: `{name}` and `{plugin}:{name}` are both taken"
    )
}

/// Add the enabled plugins' commands of `home` to `found`; `reserved`
/// are rein's own command names.
pub fn add_commands(
    found: &mut Commands,
    home: &Path,
    reserved: &[&str],
    front_end: &FrontEndCommands,
) {
    for (plugin, root) in enabled(home) {
        let read = Commands::read_folder(&root.join("commands"), front_end);
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
    for (plugin, root) in enabled(home) {
        let read = AgentCatalog::read_folder(&root.join("agents"), tool_names);
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
    for (plugin, root) in enabled(home) {
        let read = Skills::read_folder(&root.join("skills"));
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
}
