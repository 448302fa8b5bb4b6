//! Custom commands for the terminal: found in the project's
//! `.rein/commands/` and `.claude/commands/` and in `$REIN_HOME/commands/`
//! (see [`rein_core::commands`]), run with `rein exec --command NAME ARGS`
//! and as `/NAME ARGS` in the app.

use std::path::Path;

use anyhow::anyhow;
use rein_core::commands::{Commands, CustomCommand};

use crate::config::Config;
use crate::exit::Failure;

/// The commands of `workspace` and the user's; rein's own slash commands
/// keep their names. In a folder the user has not trusted, the project's
/// choose no model and name no MCP resources.
pub fn discover(cfg: &Config, workspace: &Path) -> Commands {
    let reserved: Vec<&str> = rein_tui::complete::SLASH_COMMANDS
        .iter()
        .map(|(name, _)| name.trim_start_matches('/'))
        .collect();
    let user = cfg.home.join("commands");
    Commands::discover(
        workspace,
        Some(&user),
        &reserved,
        cfg.trusted,
        &crate::run_setup::front_end_commands(),
    )
}

/// The command `name` and the message it makes of `args`; an unknown name
/// is one line listing the known ones.
pub fn expand(
    cfg: &Config,
    workspace: &Path,
    name: &str,
    args: &str,
) -> Result<(CustomCommand, String), Failure> {
    let found = discover(cfg, workspace);
    for warning in &found.warnings {
        crate::output::err(&format!("note: {warning}"));
    }
    let name = name.trim_start_matches('/');
    let Some(command) = found.get(name) else {
        let known: Vec<&str> = found.commands.iter().map(|c| c.name.as_str()).collect();
        let list = if known.is_empty() {
            "none here (.rein/commands/NAME.md, .claude/commands/NAME.md or $REIN_HOME/commands/NAME.md)".to_string()
        } else {
            known.join(", ")
        };
        return Err(Failure::usage(anyhow!("no command named `{name}`: {list}")));
    };
    let message = command.expand(args);
    if message.trim().is_empty() {
        return Err(Failure::usage(anyhow!("the command `{name}` is empty")));
    }
    Ok((command.clone(), message))
}

/// What the app is given: each command's name, help line and text.
pub fn for_app(cfg: &Config, workspace: &Path) -> (Vec<CustomCommand>, Vec<String>) {
    let found = discover(cfg, workspace);
    (found.commands, found.warnings)
}
