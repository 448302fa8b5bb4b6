//! The permission check of a call: the decision, the approval asked for
//! when one is needed, and approvals remembered for the session or the
//! project.

use serde_json::Value;

use super::{GateEvents, Registered, RunPolicy};
use crate::approval::{ApprovalDecision, ApprovalReply, ApprovalRequest, ApprovalScope, Approvals};
use crate::event::Event;
use crate::gate::Gate;
use crate::permission::{Assessment, ReadFence, Rule, Verdict};
use crate::schema::ToolCall;
use crate::tool::{ToolContext, ToolError};

/// A call's arguments as the hooks left them, and the reasons they gave
/// to ask about it in every mode.
pub(super) struct Checked<'a> {
    pub args: &'a Value,
    pub escalated: Vec<String>,
    /// A hook allowed the call: what would be asked is not.
    pub allowed: bool,
    /// The run, as hooks see it (None: there are no hooks).
    pub hook_run: Option<&'a super::HookRun>,
    /// Set when a hook that answered the question stopped the run.
    pub halt: &'a mut Option<String>,
}

impl Gate {
    /// The rules an approval of a file change remembers: a file approved
    /// for one tool that writes files is approved for all of them (after
    /// `s` on an edit of calc.py, rewriting calc.py does not ask again).
    fn for_every_writer(&self, entry: &Registered, rules: Vec<Rule>) -> Vec<Rule> {
        if entry.access != crate::tool::ToolAccess::Write {
            return rules;
        }
        // The call's own tool first, as the user reads it.
        let own = entry.spec.name.as_str();
        let writers: Vec<&str> = std::iter::once(own)
            .chain(
                self.tools
                    .iter()
                    .filter(|t| t.access == crate::tool::ToolAccess::Write)
                    .map(|t| t.spec.name.as_str())
                    .filter(|name| *name != own),
            )
            .collect();
        let mut out: Vec<Rule> = Vec::new();
        for rule in rules {
            for writer in &writers {
                let widened = Rule::new(*writer, rule.pattern.clone());
                if !out.contains(&widened) {
                    out.push(widened);
                }
            }
        }
        out
    }

    /// Decide the call; ask for approval when needed. `Ok` hands back the
    /// tool's assessment of it and how long the user took to answer (zero
    /// when nobody was asked); `Err` is the refusal the model sees.
    pub(super) async fn check_permission(
        &self,
        entry: &Registered,
        call: &ToolCall,
        checked: Checked<'_>,
        ctx: &ToolContext,
        policy: &RunPolicy,
        events: &GateEvents,
    ) -> Result<(Assessment, std::time::Duration), ToolError> {
        let args = checked.args;
        let mut assessment = entry.tool.assess(args, ctx);
        // A hook's reasons make it a high-risk call.
        if !checked.escalated.is_empty() {
            assessment.risk = crate::Risk::High;
            assessment.reasons.extend(checked.escalated);
        }
        // Reads in rein's state folder (but this session's saved outputs)
        // and in credential stores: refused before any rule is seen.
        let fenced = ReadFence::new(&ctx.sandbox, &ctx.workspace, &ctx.read_roots)
            .refused_reads(&assessment);
        let verdict = match fenced {
            Some(why) => Verdict::Deny { why },
            None => policy.permissions.decide(
                policy.mode,
                &call.name,
                entry.access,
                &assessment,
                &policy.granted(),
                &ctx.workspace,
            ),
        };
        let (why, suggested_rules, suggested_mode) = match verdict {
            Verdict::Allow => return Ok((assessment, std::time::Duration::ZERO)),
            // A hook of the user's said yes: no question (a deny stays).
            Verdict::Ask { .. } if checked.allowed => {
                return Ok((assessment, std::time::Duration::ZERO));
            }
            Verdict::Deny { why } => {
                events(Event::PermissionDenied {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: assessment.summary.clone(),
                    why: why.clone(),
                    needed_approval: false,
                    suggested_rules: Vec::new(),
                    suggested_mode: None,
                });
                return Err(ToolError(format!(
                    "permission denied: {why}. Do not retry this call; choose another way or \
                     tell the user what you need."
                )));
            }
            Verdict::Ask {
                why,
                suggested_rules,
                suggested_mode,
            } => (
                why,
                self.for_every_writer(entry, suggested_rules),
                suggested_mode,
            ),
        };
        // The user's hooks may answer in the user's place.
        if let Some(run) = checked.hook_run {
            match self.permission_hooks(call, args, &why, run).await {
                Some(super::PermissionAnswer::Allow) => {
                    return Ok((assessment, std::time::Duration::ZERO));
                }
                Some(super::PermissionAnswer::Deny { message, interrupt }) => {
                    if interrupt {
                        *checked.halt = Some(message.clone());
                    }
                    return Err(ToolError(format!("a hook denied this call: {message}")));
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
            suggested_rules: crate::approval::rule_strings(&suggested_rules),
            suggested_mode,
            mode: policy.mode,
        };
        let asked = std::time::Instant::now();
        let decision = match &policy.approvals {
            Approvals::Refuse => {
                events(Event::PermissionDenied {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    summary: assessment.summary,
                    why: why.clone(),
                    needed_approval: true,
                    suggested_rules: request.suggested_rules,
                    suggested_mode,
                });
                return Err(ToolError(format!(
                    "not run: this call needs the user's approval ({why}), and nobody can approve \
                     it in this run. Do not retry it; do what you can without it, and say in your \
                     answer what you could not run."
                )));
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
                        return Err(ToolError::new("cancelled while waiting for approval"));
                    }
                }
            }
            Approvals::With(approver) => tokio::select! {
                d = approver.decide(&request) => d,
                _ = ctx.cancel.cancelled() => {
                    return Err(ToolError::new("cancelled while waiting for approval"));
                }
            },
        };
        let waited = asked.elapsed();
        events(Event::ApprovalResolved {
            call_id: call.id.clone(),
            decision: decision.clone(),
        });
        match decision {
            ApprovalDecision::Deny { feedback } => Err(ToolError(match feedback {
                Some(f) if !f.trim().is_empty() => {
                    format!("the user denied this call, saying: {}", f.trim())
                }
                _ => "the user denied this call. Do not retry it; ask or try another way."
                    .to_string(),
            })),
            ApprovalDecision::Approve { scope } => {
                self.remember(scope, &suggested_rules, ctx, policy, events)
                    .await;
                Ok((assessment, waited))
            }
        }
    }

    /// Keep an approval for the session or the project.
    async fn remember(
        &self,
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
            if let Err(e) = ctx.store.add_grant(&ctx.session_id, rule).await {
                events(Event::Notice {
                    message: format!("could not remember `{text}` for this session: {e}"),
                });
            }
            if scope == ApprovalScope::Project {
                let saved = match &policy.project_rules {
                    Some(p) => p.add_allow(rule),
                    None => Err(crate::approval::ProjectRulesError::NoFile),
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
}
