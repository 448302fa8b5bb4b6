//! The app's messages, prepared as in every front end: a custom command
//! checked as it is typed ([`expand_command`]), then every message
//! prepared in its run ([`prepare`]): the command's `!` lines run and its
//! `@path` files read through the session's gate (an approval they need
//! reaches the app's modal), its scope, and the skills and resources the
//! text names.

use std::sync::Arc;

use rein_core::AgentEngine;

use crate::setup::command_context::{self, LiveRun};
use crate::setup::images;
use crate::setup::prompt::{Expanded, Prompts};

/// `/NAME ARGS` expanded (or refused) by the shared preparation, and
/// whether it needs a run of its own.
pub fn expand_command(prompts: &Prompts) -> rein_tui::ExpandCommand {
    let commands = prompts.commands.clone();
    Arc::new(move |name: &str, args: &str| {
        let expanded = commands
            .expand_named(name, args)
            .map_err(|e| e.to_string())?;
        let own_run = own_run(&expanded);
        Ok(rein_tui::CommandText {
            text: expanded.text,
            own_run,
        })
    })
}

/// Whether a command's message needs a run of its own: it makes calls
/// before it is sent (context lines, files), or sets its run's tools or
/// model.
fn own_run(expanded: &Expanded) -> bool {
    let Some(command) = &expanded.command else {
        return false;
    };
    command_context::makes_calls(command, &expanded.text)
        || command.model.is_some()
        || !command.allowed_tools.is_empty()
}

/// The images a message names (`@shot.png`, a pasted absolute path), read
/// and checked as `rein exec --image` reads them; refused in one line when
/// one is no image or the model takes none.
fn typed_images(text: &str, engine: &AgentEngine) -> Result<Vec<rein_core::Image>, String> {
    let paths = images::named_in(text, engine.workspace());
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    images::refused_by(engine.provider().as_ref()).map_err(|e| e.to_string())?;
    images::read_all(&paths).map_err(|e| e.to_string())
}

/// Each message the app sends, prepared in `engine`'s session.
pub fn prepare(prompts: &Prompts, engine: &AgentEngine) -> rein_tui::Prepare {
    let (prompts, engine) = (prompts.clone(), engine.clone());
    Arc::new(move |call: rein_tui::PromptCall| {
        let (prompts, engine) = (prompts.clone(), engine.clone());
        Box::pin(async move {
            let expanded = prompts
                .commands
                .expand(&call.text)
                .map_err(|e| e.to_string())?;
            let live = LiveRun {
                engine: &engine,
                session_id: call.session_id.as_deref(),
                mode: call.mode,
                events: call.events,
                cancel: call.cancel,
            };
            let images = typed_images(&call.text, &engine)?;
            let prepared = (prompts.prepare(&expanded, &live).await).map_err(|e| e.to_string())?;
            let mut notes = prepared.notes;
            for image in &images {
                notes.push(format!(
                    "attached {} ({} bytes)",
                    image.media_type,
                    image.data.len() / 4 * 3
                ));
            }
            Ok(rein_tui::PreparedPrompt {
                text: prepared.text,
                scope: prepared.scope,
                notes,
                session: prepared.session,
                images,
            })
        }) as rein_tui::McpFuture<Result<rein_tui::PreparedPrompt, String>>
    })
}
