//! What one run may narrow or loosen of its engine: a custom command's
//! `allowed-tools` (the only tools offered, some pre-approved) and its
//! `model`. An engine serves many runs (the app's, a hosted session's),
//! so none of this is set on the engine: it travels with the run's
//! request ([`super::RunRequest::scope`]) and with a call made for the
//! user before it ([`super::AgentEngine::run_call_for_user`]).

use std::fmt;
use std::sync::Arc;

use crate::gate::Gate;
use crate::permission::Rule;
use crate::provider::Provider;

/// One run's narrowing of its engine. The default narrows nothing.
#[derive(Clone, Default)]
pub struct RunScope {
    /// The only tools offered to the model, and the only ones its calls
    /// may reach (rein's names); None: every tool of the engine, those
    /// that arrive later (MCP servers) included.
    pub tools: Option<Arc<[String]>>,
    /// Allow rules for this run alone: what they cover runs without
    /// asking. A deny rule, a protected path and the mode still refuse.
    pub allow: Vec<Rule>,
    /// Ask rules for this run alone: what they cover asks first in every
    /// mode, though an allow rule or the mode would let it run (the app's
    /// `/init` shows its change to AGENTS.md before it is written).
    pub ask: Vec<Rule>,
    /// The model this run talks to; None: the engine's.
    pub provider: Option<Arc<dyn Provider>>,
    /// The JSON Schema this run's answer must meet (see
    /// [`crate::ModelRequest::answer_schema`]).
    pub answer_schema: Option<Arc<serde_json::Value>>,
}

impl fmt::Debug for RunScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunScope")
            .field("tools", &self.tools)
            .field("allow", &self.allow)
            .field("ask", &self.ask)
            .field("model", &self.provider.as_ref().map(|p| p.model()))
            .field("answer_schema", &self.answer_schema.is_some())
            .finish()
    }
}

impl RunScope {
    /// Whether the scope narrows or loosens anything.
    pub fn is_empty(&self) -> bool {
        self.tools.is_none()
            && self.allow.is_empty()
            && self.ask.is_empty()
            && self.provider.is_none()
            && self.answer_schema.is_none()
    }

    /// `gate` as this run sees it: only the scope's tools, those that
    /// arrive later included. The gate itself when nothing is narrowed.
    pub(crate) fn narrow(&self, gate: Arc<Gate>) -> Arc<Gate> {
        match &self.tools {
            None => gate,
            Some(tools) => {
                let tools = tools.clone();
                let keep = move |name: &str| tools.iter().any(|t| t == name);
                Arc::new(gate.for_child(Arc::new(keep)))
            }
        }
    }
}
