//! The permit step's verdict: what the tool says the call does, what the
//! read fence, the rules and the mode make of it, and what the hooks said.
//! Pure: nobody is asked and nothing is told here (that is
//! `gate/approval.rs`).

use std::time::Duration;

use serde_json::Value;

use super::hooks::Hooked;
use super::registry::Registered;
use super::{CallEffects, Gate, Passage, Refusal};
use crate::event::Event;
use crate::permission::{Assessment, PermissionMode, ReadFence, Risk, Rule, Verdict};
use crate::tool::{ToolAccess, ToolContext, ToolError};

/// What the gate makes of a call before anyone is asked.
pub(super) enum Permit {
    Allow,
    Deny { why: String },
    Ask(Question),
}

/// The question a call puts to the user's hooks, then to the user.
pub(super) struct Question {
    pub why: String,
    /// Rules an approval for the session or the project remembers.
    pub rules: Vec<Rule>,
    /// A mode in which the call would run without asking.
    pub mode: Option<PermissionMode>,
}

impl Gate {
    /// The permit step: judge the call, then ask when the verdict says so.
    /// `Ok` hands back the arguments the call runs with; the effects say
    /// what it will touch and how long the user took to answer.
    pub(super) async fn permit(
        &self,
        entry: &Registered,
        pass: &Passage<'_>,
        hooked: Hooked,
        ctx: &ToolContext,
        effects: &mut CallEffects,
    ) -> Result<Value, ToolError> {
        let (assessment, permit) = self.judge(entry, pass, &hooked, ctx);
        let waited = match permit {
            Permit::Allow => Duration::ZERO,
            Permit::Deny { why } => {
                (pass.events)(Event::PermissionDenied {
                    call_id: pass.call.id.clone(),
                    tool: pass.call.name.clone(),
                    summary: assessment.summary.clone(),
                    why: why.clone(),
                    needed_approval: false,
                    suggested_rules: Vec::new(),
                    suggested_mode: None,
                });
                return Err(Refusal::Denied { why }.into());
            }
            Permit::Ask(question) => {
                // A denial's duration leaves out the user's time too.
                let asked_at = std::time::Instant::now();
                let answer = self.ask(
                    pass,
                    &hooked.args,
                    question,
                    &assessment,
                    ctx,
                    &mut effects.halt,
                );
                match answer.await {
                    Ok(waited) => waited,
                    Err(e) => {
                        effects.waited = asked_at.elapsed();
                        return Err(e);
                    }
                }
            }
        };
        *effects = CallEffects {
            access: Some(entry.access),
            writes: assessment.writes,
            test_command: assessment.test_command,
            waited,
            halt: None,
            denied: false,
        };
        Ok(hooked.args)
    }

    /// The verdict on a call as the hooks left it: the tool's assessment
    /// (a hook's reasons make it high-risk), reads the fence refuses, the
    /// rules and the mode. A hook's allow answers a question (a deny
    /// stays).
    fn judge(
        &self,
        entry: &Registered,
        pass: &Passage<'_>,
        hooked: &Hooked,
        ctx: &ToolContext,
    ) -> (Assessment, Permit) {
        let policy = pass.policy;
        let mut assessment = entry.tool.assess(&hooked.args, ctx);
        if !hooked.escalated.is_empty() {
            assessment.risk = Risk::High;
            assessment.reasons.extend(hooked.escalated.iter().cloned());
        }
        // Reads in rein's state folder (but this session's saved outputs)
        // and in credential stores: refused before any rule is seen.
        let fenced = ReadFence::new(&ctx.sandbox, &ctx.workspace, &ctx.read_roots)
            .refused_reads(&assessment);
        let verdict = match fenced {
            Some(why) => Verdict::Deny { why },
            None => policy.permissions.decide(
                policy.mode,
                &pass.call.name,
                entry.access,
                &assessment,
                &policy.granted(),
                &ctx.workspace,
            ),
        };
        let verdict = match verdict {
            Verdict::Allow => policy
                .permissions
                .run_asks(&pass.call.name, &assessment, &policy.ask_for_run)
                .unwrap_or(Verdict::Allow),
            other => other,
        };
        let permit = match verdict {
            Verdict::Allow => Permit::Allow,
            Verdict::Ask { .. } if hooked.allowed => Permit::Allow,
            Verdict::Deny { why } => Permit::Deny { why },
            Verdict::Ask {
                why,
                suggested_rules,
                suggested_mode,
            } => Permit::Ask(Question {
                why,
                rules: self.for_every_writer(entry, suggested_rules),
                mode: suggested_mode,
            }),
        };
        (assessment, permit)
    }

    /// The rules an approval of a file change remembers: a file approved
    /// for one tool that writes files is approved for all of them (after
    /// `s` on an edit of calc.py, rewriting calc.py does not ask again).
    fn for_every_writer(&self, entry: &Registered, rules: Vec<Rule>) -> Vec<Rule> {
        if entry.access != ToolAccess::Write {
            return rules;
        }
        // The call's own tool first, as the user reads it.
        let own = entry.spec.name.as_str();
        let writers: Vec<&str> = std::iter::once(own)
            .chain(self.tools.writers().filter(|name| *name != own))
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
}
