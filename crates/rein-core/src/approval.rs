//! Approvals: who answers when the gate must ask.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use crate::permission::{PermissionMode, Risk, Rule};

/// One call waiting for a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub tool: String,
    /// What the call does: the parsed command, the file and the change.
    pub summary: String,
    pub risk: Risk,
    /// Why it needs approval.
    pub why: String,
    /// Precise rules that would allow it (written as in a rules file).
    pub suggested_rules: Vec<Rule>,
    /// A mode in which it would run without asking.
    pub suggested_mode: Option<PermissionMode>,
    /// The mode the run is in.
    pub mode: PermissionMode,
}

/// How long an approval lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only.
    Once,
    /// Calls matching the suggested rules, for the rest of this session
    /// (remembered in the session store, so a resumed session keeps it).
    Session,
    /// Calls matching the suggested rules, always, in this project (written
    /// to the project's rules file).
    Project,
}

/// The answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approve {
        scope: ApprovalScope,
    },
    /// Refuse; the feedback, if any, is shown to the model.
    Deny {
        feedback: Option<String>,
    },
}

impl ApprovalDecision {
    pub fn once() -> Self {
        ApprovalDecision::Approve {
            scope: ApprovalScope::Once,
        }
    }

    pub fn deny() -> Self {
        ApprovalDecision::Deny { feedback: None }
    }
}

/// Decides approval requests (a terminal prompt, a policy, a test).
#[async_trait]
pub trait Approver: Send + Sync {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision;
}

/// The reply handle carried by an `ApprovalRequired` event. Answer once;
/// a handle dropped unanswered denies the call.
#[derive(Clone)]
pub struct ApprovalReply {
    slot: Arc<Mutex<Option<oneshot::Sender<ApprovalDecision>>>>,
}

impl ApprovalReply {
    /// A handle and the receiver the gate waits on.
    pub fn channel() -> (ApprovalReply, oneshot::Receiver<ApprovalDecision>) {
        let (tx, rx) = oneshot::channel();
        (
            ApprovalReply {
                slot: Arc::new(Mutex::new(Some(tx))),
            },
            rx,
        )
    }

    /// Answer the request. Returns false when it was already answered or
    /// the run no longer waits for it.
    pub fn send(&self, decision: ApprovalDecision) -> bool {
        let sender = match self.slot.lock() {
            Ok(mut slot) => slot.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        match sender {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    pub fn approve(&self, scope: ApprovalScope) -> bool {
        self.send(ApprovalDecision::Approve { scope })
    }

    pub fn deny(&self, feedback: Option<String>) -> bool {
        self.send(ApprovalDecision::Deny { feedback })
    }
}

impl fmt::Debug for ApprovalReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalReply")
    }
}

impl PartialEq for ApprovalReply {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.slot, &other.slot)
    }
}

/// Who answers approval requests in a run.
#[derive(Clone, Default)]
pub enum Approvals {
    /// Nobody can: calls that need approval are refused, and the model is
    /// told why (headless runs).
    #[default]
    Refuse,
    /// An `ApprovalRequired` event with a reply handle goes out on the
    /// event stream, and the call waits for the answer.
    Events,
    /// This approver answers.
    With(Arc<dyn Approver>),
}

impl fmt::Debug for Approvals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Approvals::Refuse => f.write_str("Refuse"),
            Approvals::Events => f.write_str("Events"),
            Approvals::With(_) => f.write_str("With(..)"),
        }
    }
}

/// Writes "always for this project" approvals to the project's rules file.
pub trait ProjectRules: Send + Sync {
    fn add_allow(&self, rule: &Rule) -> Result<(), ProjectRulesError>;
}

/// Why an approval could not be saved for the project.
#[derive(Debug, thiserror::Error)]
pub enum ProjectRulesError {
    /// The run was built without a project rules file.
    #[error("this run has no project rules file")]
    NoFile,
    /// The file could not be read, parsed or written.
    #[error("{}: {reason}", path.display())]
    Unwritable {
        path: std::path::PathBuf,
        reason: String,
    },
}
