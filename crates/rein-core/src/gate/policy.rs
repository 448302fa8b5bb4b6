//! What the gate keeps of one run (its mode, rules, grants and who
//! approves) and what it hands back for one call (its result and effects).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::approval::{Approvals, ProjectRules};
use crate::event::Event;
use crate::permission::{PermissionMode, Permissions, Rule};
use crate::schema::ToolResult;
use crate::tool::ToolAccess;

/// The permission state of one run, shared by its calls.
pub struct RunPolicy {
    pub mode: PermissionMode,
    pub permissions: Arc<Permissions>,
    /// Allow rules granted by approvals in this session.
    pub granted: Mutex<Vec<Rule>>,
    /// Allow rules of this run alone (a custom command's
    /// `allowed-tools`): never stored as approvals.
    pub for_run: Vec<Rule>,
    /// Ask rules of this run alone: a call they match asks even when
    /// the rules and the mode allow it.
    pub ask_for_run: Vec<Rule>,
    pub approvals: Approvals,
    pub project_rules: Option<Arc<dyn ProjectRules>>,
    /// The sub-agent the run is (hooks are told); None: the main agent.
    pub agent_id: Option<String>,
}

impl RunPolicy {
    /// A policy with no earlier approvals, refusing what needs one.
    pub fn new(mode: PermissionMode, permissions: Permissions) -> RunPolicy {
        RunPolicy {
            mode,
            permissions: Arc::new(permissions),
            granted: Mutex::new(Vec::new()),
            for_run: Vec::new(),
            ask_for_run: Vec::new(),
            approvals: Approvals::Refuse,
            project_rules: None,
            agent_id: None,
        }
    }

    pub fn with_approvals(mut self, approvals: Approvals) -> RunPolicy {
        self.approvals = approvals;
        self
    }

    /// The allow rules besides the configured ones: the session's
    /// approvals, then this run's own.
    pub(super) fn granted(&self) -> Vec<Rule> {
        let mut rules = match self.granted.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        rules.extend(self.for_run.iter().cloned());
        rules
    }

    pub(super) fn grant(&self, rules: &[Rule]) {
        let mut g = match self.granted.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        for r in rules {
            if !g.contains(r) {
                g.push(r.clone());
            }
        }
    }
}

/// Where the gate sends the events of a call (approvals, refusals).
pub type GateEvents = Arc<dyn Fn(Event) + Send + Sync>;

/// Events that go nowhere.
pub fn no_events() -> GateEvents {
    Arc::new(|_| {})
}

/// What a gated call produced.
#[derive(Debug, Clone)]
pub struct GateOutcome {
    pub result: ToolResult,
    pub duration: Duration,
    /// What the call touched; empty when it never reached its tool.
    pub effects: CallEffects,
}

impl GateOutcome {
    /// A call refused before it reached the gate's checks.
    pub fn refused(result: ToolResult) -> GateOutcome {
        GateOutcome {
            result,
            duration: Duration::ZERO,
            effects: CallEffects::default(),
        }
    }
}

/// What a call that ran touched, as its tool assessed it. The engine keeps
/// its task ledger and loop guard from this, so no tool's argument names
/// are known outside the tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallEffects {
    /// What the tool does; None when the call reached no tool.
    pub access: Option<ToolAccess>,
    /// Files the call writes (absolute).
    pub writes: Vec<PathBuf>,
    /// The test command the call runs, when it runs tests.
    pub test_command: Option<String>,
    /// Time spent waiting for the user's approval: not part of the call's
    /// duration.
    pub waited: Duration,
    /// A hook said the run must stop, for this reason.
    pub halt: Option<String>,
    /// The user's policy refused the call ([`super::Refusal::is_denial`]):
    /// it is not to be retried as it was.
    pub denied: bool,
}
