//! One session factory for every front end: the engine built from the
//! config with what a run adds to the built-in tools (memory, MCP servers,
//! skills, hooks, sub-agents), the MCP servers' tools followed as they
//! come and go, and how the session's prompts are prepared.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rein_core::{AgentEngine, Approvals, PermissionMode, Provider, SessionStore};

use crate::config::Config;
use crate::setup::engine::{LoadedExtras, engine_builder};
use crate::setup::prepare::CommandModels;
use crate::setup::prompt::{Attachments, CommandSet, Prompts};

/// What a session is made of.
pub struct Opening<'a> {
    pub cfg: &'a Config,
    pub workspace: &'a Path,
    pub mode: PermissionMode,
    pub provider: Arc<dyn Provider>,
    pub store: Arc<dyn SessionStore>,
    /// Who answers approvals: events for the app, acp and serve.
    pub approvals: Approvals,
}

/// A session's engine, its prompt preparation, and what keeps its tools
/// alive.
pub struct Session {
    pub engine: AgentEngine,
    pub prompts: Prompts,
    /// Memory, MCP servers, skills, hooks and sub-agents, with the notes
    /// the user should see about them (`extras.notes`).
    pub extras: LoadedExtras,
}

impl Session {
    /// Load the extras, build the engine, and follow the MCP servers'
    /// tools; `note` hears of servers that fail or change later.
    pub async fn open(
        o: Opening<'_>,
        note: impl Fn(String) + Send + 'static,
    ) -> anyhow::Result<Session> {
        let extras = LoadedExtras::load(o.cfg, o.workspace, o.provider.as_ref()).await;
        let shows_writes = !matches!(o.approvals, rein_core::Approvals::Refuse);
        let engine = engine_builder(
            o.cfg,
            o.workspace,
            o.mode,
            o.provider,
            o.store,
            &extras.extras(),
        )
        .approvals(o.approvals)
        .build()
        .context("cannot start the engine")?;
        if let Some(hub) = &extras.mcp {
            let lazy = crate::mcp::lazy_tools(o.cfg, &engine);
            crate::mcp::follow(hub, &engine, lazy, note);
        }
        let prompts = Prompts {
            commands: CommandSet::discover(o.cfg, o.workspace),
            attachments: Attachments {
                skills: extras.skills.clone(),
                mcp: extras.mcp.clone(),
            },
            models: CommandModels::new(o.cfg),
            shows_writes,
        };
        Ok(Session {
            engine,
            prompts,
            extras,
        })
    }
}
