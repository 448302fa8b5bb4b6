//! The permit step's I/O: a call's question put to the user's hooks, then
//! to whoever approves in this run, and approvals remembered for the
//! session or the project.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::permit::Question;
use super::{Gate, GateEvents, Passage, PermissionAnswer, Refusal, RunPolicy};
use crate::approval::{
    ApprovalDecision, ApprovalReply, ApprovalRequest, ApprovalScope, Approvals, ProjectRulesError,
};
use crate::event::Event;
use crate::permission::{Assessment, Rule};
use crate::tool::{ToolContext, ToolError};

impl Gate {
    /// Ask about a call: the user's hooks may answer in the user's place,
    /// else whoever approves in this run. `Ok` is how long the user took
    /// (zero when a hook answered); `halt` is set when a hook's no stopped
    /// the run.
    pub(super) async fn ask(
        &self,
        pass: &Passage<'_>,
        args: &Value,
        question: Question,
        assessment: &Assessment,
        ctx: &ToolContext,
        halt: &mut Option<String>,
    ) -> Result<Duration, ToolError> {
        let (call, policy, events) = (pass.call, pass.policy, pass.events);
        let Question { why, rules, mode } = question;
        if let Some(run) = pass.hook_run {
            match self.permission_hooks(call, args, &why, run).await {
                Some(PermissionAnswer::Allow) => return Ok(Duration::ZERO),
                Some(PermissionAnswer::Deny { message, interrupt }) => {
                    if interrupt {
                        *halt = Some(message.clone());
                    }
                    return Err(Refusal::HookDenied { message }.into());
                }
                None => {}
            }
        }
        let request = ApprovalRequest {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            summary: assessment.summary.clone(),
            risk: assessment.risk,
            why: why.clone(),
            suggested_rules: rules.clone(),
            suggested_mode: mode,
            mode: policy.mode,
        };
        let asked = Instant::now();
        let decision = match &policy.approvals {
            Approvals::Refuse => {
                events(Event::PermissionDenied {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: assessment.summary.clone(),
                    why: why.clone(),
                    needed_approval: true,
                    suggested_rules: request.suggested_rules,
                    suggested_mode: mode,
                });
                return Err(Refusal::NobodyToAsk { why }.into());
            }
            Approvals::Events => {
                let (reply, answer) = ApprovalReply::channel();
                events(Event::ApprovalRequired {
                    request: request.clone(),
                    reply,
                });
                tokio::select! {
                    d = answer => d.unwrap_or(ApprovalDecision::deny()),
                    _ = ctx.cancel.cancelled() => {
                        return Err(Refusal::CancelledAwaitingApproval.into());
                    }
                }
            }
            Approvals::With(approver) => tokio::select! {
                d = approver.decide(&request) => d,
                _ = ctx.cancel.cancelled() => {
                    return Err(Refusal::CancelledAwaitingApproval.into());
                }
            },
        };
        let waited = asked.elapsed();
        events(Event::ApprovalResolved {
            call_id: call.id.clone(),
            decision: decision.clone(),
        });
        match decision {
            ApprovalDecision::Deny { feedback } => Err(Refusal::UserDenied { feedback }.into()),
            ApprovalDecision::Approve { scope } => {
                remember(scope, &rules, ctx, policy, events).await;
                Ok(waited)
            }
        }
    }
}

/// Keep an approval for the session or the project.
async fn remember(
    scope: ApprovalScope,
    rules: &[Rule],
    ctx: &ToolContext,
    policy: &RunPolicy,
    events: &GateEvents,
) {
    if scope == ApprovalScope::Once || rules.is_empty() {
        return;
    }
    policy.grant(rules);
    for rule in rules {
        let text = rule.to_string();
        if let Err(e) = ctx.session.store().add_grant(ctx.session.id(), rule).await {
            events(Event::Notice {
                message: format!("could not remember `{text}` for this session: {e}"),
            });
        }
        if scope == ApprovalScope::Project {
            let saved = match &policy.project_rules {
                Some(p) => p.add_allow(rule),
                None => Err(ProjectRulesError::NoFile),
            };
            if let Err(e) = saved {
                events(Event::Notice {
                    message: format!(
                        "`{text}` is allowed for this session only: saving it for the project failed ({e})"
                    ),
                });
            }
        }
    }
}
