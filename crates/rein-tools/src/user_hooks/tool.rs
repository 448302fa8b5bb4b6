//! The tool events, at the gate's one hook point: `PreToolUse` before a
//! call is decided on, `PermissionRequest` when the user would be asked,
//! `PostToolUse` after it ran (`PostToolUseFailure` when it failed).

use async_trait::async_trait;
use rein_core::{
    AfterCall, CallHook, HookRun, HookVerdict, NotificationKind, PermissionAnswer, ToolCall,
    ToolOutput,
};
use serde_json::{Value, json};

use super::{Handler, HookEvent, Ran, UserHooks, event_json, one_line, short_name};
use crate::claude_names::{claude_input, claude_name, rein_input};

/// The event JSON of a tool event, in Claude Code's words: the tool's
/// name and its arguments' keys as Claude names them.
fn tool_event(event: HookEvent, call: &ToolCall, args: &Value, run: &HookRun) -> Value {
    let mut input = event_json(event, run);
    input["tool_name"] = json!(claude_name(&call.name));
    input["tool_input"] = claude_input(&call.name, args);
    input["tool_use_id"] = json!(call.id);
    input
}

/// What a call gave back, as a PostToolUse hook reads it: rein's text
/// (`output`, `is_error`), and Claude's `success` and, for a file tool,
/// `filePath`.
fn tool_response(call: &ToolCall, args: &Value, output: &ToolOutput) -> Value {
    let mut response = json!({
        "output": output.content,
        "is_error": output.is_error,
        "success": !output.is_error,
    });
    if let Some(path) = claude_input(&call.name, args)["file_path"].as_str() {
        response["filePath"] = json!(path);
    }
    response
}

#[async_trait]
impl CallHook for UserHooks {
    async fn before_call(&self, _call: &ToolCall, _args: &Value) -> HookVerdict {
        HookVerdict::Continue
    }

    async fn before_call_in(&self, call: &ToolCall, args: &Value, run: &HookRun) -> HookVerdict {
        if !self.has(HookEvent::PreToolUse) {
            return HookVerdict::Continue;
        }
        let input = tool_event(HookEvent::PreToolUse, call, args, run);
        let ran = self
            .run(
                HookEvent::PreToolUse,
                Some(&call.name),
                &input,
                &run.workspace,
            )
            .await;
        strongest(ran.iter().map(|(h, r)| verdict(h, r, &call.name)).collect())
    }

    async fn after_call_in(
        &self,
        call: &ToolCall,
        args: &Value,
        output: &ToolOutput,
        run: &HookRun,
    ) -> AfterCall {
        let event = if output.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        if !self.has(event) {
            return AfterCall::Nothing;
        }
        let mut input = tool_event(event, call, args, run);
        input["tool_response"] = tool_response(call, args, output);
        let ran = self
            .run(event, Some(&call.name), &input, &run.workspace)
            .await;
        let (mut tell, mut warn) = (Vec::new(), Vec::new());
        for (handler, ran) in &ran {
            match after_verdict(handler, ran) {
                AfterCall::Halt(why) => return AfterCall::Halt(why),
                AfterCall::Tell(t) => tell.push(t),
                AfterCall::Warn(w) => warn.push(w),
                AfterCall::Nothing => {}
            }
        }
        if !tell.is_empty() {
            AfterCall::Tell(format!("[hook] {}", tell.join("\n[hook] ")))
        } else if !warn.is_empty() {
            AfterCall::Warn(warn.join("; "))
        } else {
            AfterCall::Nothing
        }
    }

    async fn permission_request(
        &self,
        call: &ToolCall,
        args: &Value,
        why: &str,
        run: &HookRun,
    ) -> Option<PermissionAnswer> {
        let answer = if self.has(HookEvent::PermissionRequest) {
            let input = tool_event(HookEvent::PermissionRequest, call, args, run);
            let ran = self
                .run(
                    HookEvent::PermissionRequest,
                    Some(&call.name),
                    &input,
                    &run.workspace,
                )
                .await;
            permission_answer(&ran)
        } else {
            None
        };
        if answer.is_none() && run.user_can_answer {
            self.notify(
                NotificationKind::PermissionPrompt,
                &format!("rein needs your permission to use {} ({why})", call.name),
                run,
            );
        }
        answer
    }
}

/// The PermissionRequest hooks' answer: a deny wins, then an allow; None
/// when no hook decided (the user is asked).
fn permission_answer(ran: &[(Handler, Ran)]) -> Option<PermissionAnswer> {
    let mut allowed = false;
    for (handler, ran) in ran {
        if let Some(message) = ran.blocked() {
            return Some(PermissionAnswer::Deny {
                message,
                interrupt: false,
            });
        }
        if let Some(why) = ran.failure() {
            if handler.fail_closed {
                return Some(PermissionAnswer::Deny {
                    message: format!(
                        "the hook `{}` failed ({why}) and fails closed",
                        short_name(handler)
                    ),
                    interrupt: false,
                });
            }
            continue;
        }
        let Some(out) = ran.json() else { continue };
        if out["continue"] == Value::Bool(false) {
            let message =
                text(&out["stopReason"]).unwrap_or_else(|| "a hook stopped the run".into());
            return Some(PermissionAnswer::Deny {
                message,
                interrupt: true,
            });
        }
        let decision = &out["hookSpecificOutput"]["decision"];
        match decision["behavior"].as_str() {
            Some("deny") => {
                return Some(PermissionAnswer::Deny {
                    message: text(&decision["message"])
                        .unwrap_or_else(|| "a hook denied it".into()),
                    interrupt: decision["interrupt"] == Value::Bool(true),
                });
            }
            Some("allow") => allowed = true,
            _ => {}
        }
    }
    allowed.then_some(PermissionAnswer::Allow)
}

/// A JSON string on one line.
fn text(v: &Value) -> Option<String> {
    v.as_str().map(|s| one_line(s, 2000))
}

/// What a PostToolUse handler's outcome adds: exit 2's stderr, or the
/// JSON's `reason` (with `decision: "block"`) and `additionalContext`, for
/// the model; a failure, for the user; `continue: false` stops the run.
fn after_verdict(handler: &Handler, ran: &Ran) -> AfterCall {
    if let Some(why) = ran.failure() {
        return AfterCall::Warn(format!("hook `{}` failed: {why}", short_name(handler)));
    }
    if let Some(stderr) = ran.blocked() {
        return AfterCall::Tell(stderr).non_empty();
    }
    let Some(out) = ran.json() else {
        return AfterCall::Nothing;
    };
    if out["continue"] == Value::Bool(false) {
        return AfterCall::Halt(
            text(&out["stopReason"]).unwrap_or_else(|| "a PostToolUse hook said so".into()),
        );
    }
    let mut parts = Vec::new();
    if out["decision"] == "block"
        && let Some(r) = text(&out["reason"])
    {
        parts.push(r);
    }
    if let Some(c) = text(&out["hookSpecificOutput"]["additionalContext"]) {
        parts.push(c);
    }
    AfterCall::Tell(parts.join(" ")).non_empty()
}

trait NonEmpty {
    fn non_empty(self) -> AfterCall;
}

impl NonEmpty for AfterCall {
    /// `Nothing` for a `Tell` with nothing to say.
    fn non_empty(self) -> AfterCall {
        match self {
            AfterCall::Tell(t) if t.trim().is_empty() => AfterCall::Nothing,
            other => other,
        }
    }
}

/// What one PreToolUse handler's outcome means for a call of `tool`.
pub(super) fn verdict(handler: &Handler, ran: &Ran, tool: &str) -> HookVerdict {
    let name = short_name(handler);
    if let Some(why) = ran.failure() {
        return if handler.fail_closed {
            HookVerdict::Veto(format!("the hook `{name}` failed ({why}) and fails closed"))
        } else {
            HookVerdict::Warn(format!("hook `{name}` failed: {why}; the call went on"))
        };
    }
    if let Some(stderr) = ran.blocked() {
        return HookVerdict::Veto(
            Some(stderr)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("blocked by the hook `{name}`")),
        );
    }
    ran.json()
        .map_or(HookVerdict::Continue, |out| from_json(&out, tool))
}

/// A successful PreToolUse hook's JSON, as Claude Code documents it: a
/// stop (`continue: false`), then `permissionDecision` (or the older
/// `decision`) with its reason, `updatedInput` in Claude's keys (with
/// `allow`, the new input runs without asking), `systemMessage`.
fn from_json(out: &Value, tool: &str) -> HookVerdict {
    let specific = &out["hookSpecificOutput"];
    let reason = text(&specific["permissionDecisionReason"])
        .or_else(|| text(&out["reason"]))
        .unwrap_or_else(|| "a hook decided so".into());
    if out["continue"] == Value::Bool(false) {
        return HookVerdict::Halt(text(&out["stopReason"]).unwrap_or(reason));
    }
    let decision = specific["permissionDecision"]
        .as_str()
        .or_else(|| out["decision"].as_str());
    match decision {
        Some("deny" | "block") => return HookVerdict::Veto(reason),
        Some("ask") => return HookVerdict::Escalate(reason),
        _ => {}
    }
    let allow = matches!(decision, Some("allow" | "approve"));
    if let Some(input) = specific.get("updatedInput").filter(|v| v.is_object()) {
        let args = rein_input(tool, input);
        return if allow {
            HookVerdict::AllowRewritten(args)
        } else {
            HookVerdict::Rewrite(args)
        };
    }
    if allow {
        return HookVerdict::Allow;
    }
    match text(&out["systemMessage"]) {
        Some(message) => HookVerdict::Warn(message),
        None => HookVerdict::Continue,
    }
}

/// Several hooks' verdicts as one: a stop wins, then a block, a question,
/// a rewrite, an allow, a warning.
fn strongest(verdicts: Vec<HookVerdict>) -> HookVerdict {
    let rank = |v: &HookVerdict| match v {
        HookVerdict::Halt(_) => 6,
        HookVerdict::Veto(_) => 5,
        HookVerdict::Escalate(_) => 4,
        HookVerdict::Rewrite(_) | HookVerdict::AllowRewritten(_) => 3,
        HookVerdict::Allow => 2,
        HookVerdict::Warn(_) => 1,
        HookVerdict::Continue => 0,
    };
    verdicts
        .into_iter()
        .max_by_key(rank)
        .unwrap_or(HookVerdict::Continue)
}
