//! Hooks: the one point inside the gate where a call can be let through,
//! rewritten or vetoed by code outside rein's own checks.

use serde_json::Value;

use super::registry::Registered;
use super::{Gate, Passage, Refusal};
use crate::event::Event;
use crate::schema::ToolCall;
use crate::schema_check;
use crate::tool::ToolError;

/// A check every call passes inside the gate, after its arguments are
/// parsed and checked against the schema and before permissions and
/// approval decide on it (plan mode has refused write tools already): the
/// one point where a hook can
/// let a call through, rewrite its arguments (checked again, then decided
/// on as if the model had sent them), or veto it. Hooks see built-in and
/// added tools alike.
#[async_trait::async_trait]
pub trait CallHook: Send + Sync {
    async fn before_call(&self, call: &ToolCall, args: &Value) -> HookVerdict;

    /// The same, knowing the run the call is part of (what a user's hook
    /// command is told); by default [`CallHook::before_call`].
    async fn before_call_in(&self, call: &ToolCall, args: &Value, _run: &HookRun) -> HookVerdict {
        self.before_call(call, args).await
    }

    /// After a call the gate let through has run (whether it succeeded or
    /// failed): something to add to its result for the model, or to tell
    /// the user. By default nothing.
    async fn after_call_in(
        &self,
        _call: &ToolCall,
        _args: &Value,
        _output: &crate::tool::ToolOutput,
        _run: &HookRun,
    ) -> AfterCall {
        AfterCall::Nothing
    }

    /// When the call would be put to the user (no rule or hook decided
    /// it): answer for them, or None to ask them. `why` is what the
    /// question says. By default None.
    async fn permission_request(
        &self,
        _call: &ToolCall,
        _args: &Value,
        _why: &str,
        _run: &HookRun,
    ) -> Option<PermissionAnswer> {
        None
    }
}

/// A hook's answer in the user's place to a call's approval question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    Allow,
    /// Refused; the model gets the message. With `interrupt`, the run
    /// stops too.
    Deny {
        message: String,
        interrupt: bool,
    },
}

/// What a hook made of a call that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterCall {
    Nothing,
    /// Added to the call's result, for the model.
    Tell(String),
    /// Told to the user.
    Warn(String),
    /// The run stops after this call (the hook said `continue: false`).
    Halt(String),
}

/// The run a call is part of, as hooks see it.
#[derive(Debug, Clone)]
pub struct HookRun {
    pub session_id: String,
    pub workspace: std::path::PathBuf,
    pub mode: crate::PermissionMode,
    /// The sub-agent the call is part of (None: the main agent).
    pub agent_id: Option<String>,
    /// Someone can answer approval questions (false: headless, where
    /// what needs one is refused).
    pub user_can_answer: bool,
}

/// What a [`CallHook`] decided about a call.
#[derive(Debug, Clone, PartialEq)]
pub enum HookVerdict {
    /// Go on with the call as it is.
    Continue,
    /// Go on with these arguments instead.
    Rewrite(Value),
    /// Go on with these arguments instead, without asking the user (a
    /// deny rule or plan mode still refuse it).
    AllowRewritten(Value),
    /// Do not run it; the model gets this reason as an error observation.
    Veto(String),
    /// Go on, but as a high-risk call: it is asked about in every mode
    /// unless a rule names it exactly; the reason is shown with the
    /// question.
    Escalate(String),
    /// Go on without asking the user (a deny rule or plan mode still
    /// refuse it).
    Allow,
    /// Go on, and tell the user this (a hook that failed without
    /// blocking).
    Warn(String),
    /// Do not run it, and stop the run (the hook said `continue: false`).
    Halt(String),
}

/// What the hooks made of a call: its arguments, and the reasons any of
/// them gave to ask about it in every mode.
pub(super) struct Hooked {
    pub args: Value,
    pub escalated: Vec<String>,
    /// A hook allowed the call: it is not asked about.
    pub allowed: bool,
}

impl Hooked {
    /// A call no hook looked at.
    fn untouched(args: Value) -> Hooked {
        Hooked {
            args,
            escalated: Vec::new(),
            allowed: false,
        }
    }
}

impl Gate {
    /// Pass a call that ran through every hook's after-call check: what
    /// they tell the model is added to its output, what they tell the user
    /// is a notice. Returns why a hook stopped the run, if one did.
    pub(super) async fn after_hooks(
        &self,
        call: &ToolCall,
        run: &HookRun,
        output: &mut crate::tool::ToolOutput,
        events: &super::GateEvents,
    ) -> Option<String> {
        let args = super::parse_arguments(call).unwrap_or(Value::Null);
        let mut halt = None;
        for hook in &self.hooks {
            match hook.after_call_in(call, &args, output, run).await {
                AfterCall::Nothing => {}
                AfterCall::Tell(text) => {
                    output.content.push_str("\n\n");
                    output.content.push_str(&text);
                }
                AfterCall::Warn(message) => events(crate::event::Event::Notice { message }),
                AfterCall::Halt(why) => halt = halt.or(Some(why)),
            }
        }
        halt
    }

    /// Ask the hooks to answer a call's approval question for the user;
    /// the first that answers decides.
    pub(super) async fn permission_hooks(
        &self,
        call: &ToolCall,
        args: &Value,
        why: &str,
        run: &HookRun,
    ) -> Option<PermissionAnswer> {
        for hook in &self.hooks {
            if let Some(answer) = hook.permission_request(call, args, why, run).await {
                return Some(answer);
            }
        }
        None
    }

    /// The hooks step: pass the call through every hook in order. A
    /// rewrite is checked against the schema again; a veto or a stop ends
    /// the call (a stop also ends the run, through `halt`). What hooks that
    /// failed without blocking said goes to the user.
    pub(super) async fn before_hooks(
        &self,
        pass: &Passage<'_>,
        entry: &Registered,
        mut args: Value,
        halt: &mut Option<String>,
    ) -> Result<Hooked, ToolError> {
        let Some(run) = pass.hook_run else {
            return Ok(Hooked::untouched(args));
        };
        let call = pass.call;
        let (mut escalated, mut allowed, mut warnings) = (Vec::new(), false, Vec::new());
        let mut halted = None;
        for hook in &self.hooks {
            match hook.before_call_in(call, &args, run).await {
                HookVerdict::Continue => {}
                HookVerdict::Escalate(why) => escalated.push(why),
                HookVerdict::Allow => allowed = true,
                HookVerdict::Warn(what) => warnings.push(what),
                HookVerdict::Veto(why) => return Err(Refusal::HookVetoed { why }.into()),
                HookVerdict::Halt(why) => {
                    halted = Some(why);
                    break;
                }
                HookVerdict::Rewrite(new) => args = checked(call, entry, new)?,
                HookVerdict::AllowRewritten(new) => {
                    args = checked(call, entry, new)?;
                    allowed = true;
                }
            }
        }
        for message in warnings {
            (pass.events)(Event::Notice { message });
        }
        if let Some(why) = halted {
            *halt = Some(why.clone());
            return Err(Refusal::HookHalted { why }.into());
        }
        Ok(Hooked {
            args,
            escalated,
            allowed,
        })
    }
}

/// A hook's new arguments for a call, checked against the tool's schema.
fn checked(call: &ToolCall, entry: &Registered, new: Value) -> Result<Value, ToolError> {
    schema_check::check(&new, &entry.spec.parameters).map_err(|error| {
        Refusal::HookRewroteInvalid {
            tool: call.name.clone(),
            error: error.to_string(),
        }
    })?;
    Ok(new)
}
