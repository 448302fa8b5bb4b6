//! rein as a library: an engine with the built-in tools, a session store,
//! approvals answered in code, and a run read as a stream of events while
//! it is steered.
//!
//! `cargo run -p rein-cli --example library` runs it against the replay
//! provider (no model needed) in a temporary workspace.

use std::sync::Arc;

use futures_util::StreamExt;
use rein_core::{
    AgentEngine, Approvals, CancellationToken, Event, PermissionMode, RunControl, RunRequest,
};
use rein_providers::replay::{ReplayProvider, ReplayScript, ReplayTurn};
use rein_store::SqliteStore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let workspace = tempfile::tempdir()?;
    std::fs::write(
        workspace.path().join("notes.txt"),
        "the build runs with make\n",
    )?;

    // Any `Provider` works here: an HTTP one from rein-providers, the local
    // model, or this scripted one.
    let provider = Arc::new(ReplayProvider::new(ReplayScript::new(vec![
        ReplayTurn::call("read_file", r#"{"path": "notes.txt"}"#),
        ReplayTurn::text("The notes say the build runs with make."),
    ])));
    // SQLite keeps each message the moment it exists (InMemorySessionStore is the
    // in-memory alternative).
    let store = Arc::new(SqliteStore::open(&workspace.path().join("sessions.db"))?);

    let engine = AgentEngine::builder(provider, store)
        .workspace(workspace.path())
        .tools(rein_tools::builtin_tools())
        .mode(PermissionMode::Default)
        // ApprovalRequired events carry a reply handle; `Refuse` (the
        // default) denies what needs approval, `With(..)` asks your code.
        .approvals(Approvals::Events)
        .max_turns(10)
        .build()?;

    let control = RunControl::new();
    let request = RunRequest {
        control: Some(control.clone()),
        ..RunRequest::new("What do the notes say about the build?")
    };
    let mut events = engine.run_stream(request, CancellationToken::new());
    while let Some(event) = events.next().await {
        match event {
            Event::ToolStarted {
                name, arguments, ..
            } => println!("tool {name} {arguments}"),
            Event::ApprovalRequired { request, reply } => {
                println!("approving {}: {}", request.tool, request.summary);
                reply.approve(rein_core::ApprovalScope::Once);
            }
            Event::ToolFinished { name, is_error, .. } => {
                println!("tool {name} done (error: {is_error})")
            }
            Event::Stopped {
                reason, final_text, ..
            } => println!("stopped ({}): {final_text}", reason.as_str()),
            _ => {}
        }
    }
    // `control.queue("…")` during the run would have reached the model at
    // its next turn; `control.set_mode(..)` switches the mode the same way.
    drop(control);
    Ok(())
}
