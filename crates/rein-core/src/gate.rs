//! The gate: the one place every tool call passes through. A call goes
//! through these steps, in order, each returning `Err(ToolError)` to end
//! it with an observation for the model:
//!
//! 1. resolve: find the tool, waiting for one still arriving
//!    (`gate/registry.rs`);
//! 2. admit: the mode offers it, its arguments parse and fit the schema;
//! 3. hooks: the user's hooks let it through, rewrite or veto it
//!    (`gate/hooks.rs`);
//! 4. permit: the verdict of the read fence, the rules and the mode
//!    (`gate/permit.rs`), then the question, when one is needed, to the
//!    user's hooks and the user (`gate/approval.rs`);
//! 5. reserve: a place in the tool pool and the path locks
//!    (`gate/execute.rs`);
//! 6. execute: the tool runs in its own task, bounded by cancel and
//!    timeout.
//!
//! After a call that ran, hooks see its output, which is then bounded to
//! what a context holds (`gate/outputs.rs`). Every refusal is a
//! [`Refusal`], put into words in one place (`gate/refusal.rs`).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::sync::Semaphore;

use crate::approval::Approvals;
use crate::locks::PathLocks;
use crate::permission::PermissionMode;
use crate::schema::{ToolCall, ToolResult, ToolSpec};
use crate::schema_check;
use crate::tool::{LateTools, OutputSpill, Tool, ToolAccess, ToolContext, ToolError, ToolOutput};

mod approval;
mod execute;
mod hooks;
mod limits;
mod outputs;
mod permit;
mod policy;
mod refusal;
mod registry;

pub use hooks::{AfterCall, CallHook, HookRun, HookVerdict, PermissionAnswer};
pub use limits::{DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_MAX_TOOL_CALLS_PER_TURN, GateLimits};
pub use policy::{CallEffects, GateEvents, GateOutcome, RunPolicy, no_events};
pub use refusal::{INVALID_ARGUMENTS, NOT_JSON, Refusal, UNKNOWN_TOOL};
use registry::Registered;
pub use registry::ToolRegistry;

/// The tool gate of one engine: its tools, and the pipeline every call
/// to one of them passes.
#[derive(Clone)]
pub struct Gate {
    tools: ToolRegistry,
    /// Shared with the gates of child engines: a sub-agent's write waits
    /// for its parent's read of the same file, and the other way round.
    locks: Arc<PathLocks>,
    limits: GateLimits,
    semaphore: Option<Arc<Semaphore>>,
    spill: Option<Arc<dyn OutputSpill>>,
    hooks: Vec<Arc<dyn CallHook>>,
}

/// One call on its way through the steps: what every step reads.
struct Passage<'a> {
    call: &'a ToolCall,
    policy: &'a RunPolicy,
    events: &'a GateEvents,
    /// The run, as hooks see it (None: there are no hooks).
    hook_run: Option<&'a HookRun>,
}

impl Gate {
    /// A gate over `tools`; a later tool with the same name replaces an
    /// earlier one.
    pub fn new(tools: Vec<Arc<dyn Tool>>, limits: GateLimits) -> Self {
        Gate {
            tools: ToolRegistry::new(tools),
            locks: Arc::default(),
            semaphore: limits
                .max_concurrent_tools
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
            limits,
            spill: None,
            hooks: Vec::new(),
        }
    }

    /// The tools this gate offers.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// This gate over other tools, its pipeline (limits, hooks, output
    /// spill, concurrency cap, path locks) shared.
    fn over(&self, tools: ToolRegistry) -> Gate {
        Gate {
            tools,
            locks: self.locks.clone(),
            limits: self.limits.clone(),
            semaphore: self.semaphore.clone(),
            spill: self.spill.clone(),
            hooks: self.hooks.clone(),
        }
    }

    /// This gate with `tools` added (replacing any of the same name), its
    /// limits, hooks and path locks shared.
    pub fn with_added(&self, tools: Vec<Arc<dyn Tool>>) -> Gate {
        self.over(self.tools.with_added(tools))
    }

    /// Save big outputs here instead of cutting them.
    pub fn with_spill(mut self, spill: Arc<dyn OutputSpill>) -> Self {
        self.spill = Some(spill);
        self
    }

    /// Ask `late` for a tool a call names that this gate does not have.
    pub fn with_late_tools(mut self, late: Arc<dyn LateTools>) -> Self {
        self.tools.set_late_tools(late);
        self
    }

    /// This gate without the tools `drop` names, and with `tools` added.
    pub fn with_replaced(&self, drop: impl Fn(&str) -> bool, tools: Vec<Arc<dyn Tool>>) -> Gate {
        self.over(self.tools.with_replaced(drop, tools))
    }

    /// Run `hook` on every call, after the hooks added before it.
    pub fn with_hook(mut self, hook: Arc<dyn CallHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// A gate over the tools `keep` accepts, with this gate's limits,
    /// output spill, hooks, concurrency cap and path locks (shared, so a
    /// child engine's calls and its parent's exclude each other). Tools
    /// still arriving are not offered.
    pub fn narrowed(&self, keep: impl Fn(&str) -> bool) -> Gate {
        self.over(self.tools.narrowed(keep))
    }

    /// This gate narrowed for a child engine: the tools `keep` accepts,
    /// now and as they arrive.
    pub fn for_child(&self, keep: Arc<dyn Fn(&str) -> bool + Send + Sync>) -> Gate {
        self.over(self.tools.for_child(keep))
    }

    /// What the named tool does, if there is one.
    pub fn access(&self, name: &str) -> Option<ToolAccess> {
        self.tools.access(name)
    }

    /// Where the named tool says `args` work (see [`Tool::touches`]).
    pub fn touches(&self, name: &str, args: &Value) -> Vec<std::path::PathBuf> {
        self.tools.touches(name, args)
    }

    /// The tools the model may see: in plan mode none that write (programs
    /// run there in a read-only sandbox).
    pub fn specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.tools.specs(mode)
    }

    pub fn limits(&self) -> &GateLimits {
        &self.limits
    }

    /// Why `call` is refused before anything else looks at it: arguments
    /// larger than [`GateLimits::max_argument_bytes`]. Checked on the raw
    /// string, so a huge argument is never parsed or copied further.
    pub fn oversized(&self, call: &ToolCall) -> Option<String> {
        self.oversized_refusal(call).map(|r| r.observation())
    }

    fn oversized_refusal(&self, call: &ToolCall) -> Option<Refusal> {
        let max_bytes = self.limits.max_argument_bytes;
        (call.arguments.len() > max_bytes).then(|| Refusal::Oversized {
            tool: call.name.clone(),
            max_bytes,
        })
    }

    /// The error observation of a call past the per-turn cap.
    pub fn over_turn_cap(&self) -> String {
        Refusal::OverTurnCap {
            max_calls: self.limits.max_tool_calls_per_turn.max(1),
        }
        .observation()
    }

    /// Run one call through every check. Never fails: each problem becomes
    /// an error observation for the model.
    pub async fn run(
        &self,
        call: &ToolCall,
        ctx: ToolContext,
        policy: &RunPolicy,
        events: &GateEvents,
    ) -> GateOutcome {
        self.run_parsed(call, None, ctx, policy, events).await
    }

    /// As [`Gate::run`], with the arguments already parsed by the caller
    /// (the engine parses each call once); None: parse them here (and say
    /// why they do not parse).
    pub async fn run_parsed(
        &self,
        call: &ToolCall,
        parsed: Option<Value>,
        mut ctx: ToolContext,
        policy: &RunPolicy,
        events: &GateEvents,
    ) -> GateOutcome {
        let started = Instant::now();
        if let Some(refusal) = self.oversized_refusal(call) {
            return GateOutcome::refused(ToolResult {
                images: Vec::new(),
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: refusal.observation(),
                is_error: true,
            });
        }
        let session_id = ctx.session_id.clone();
        if let Some(spill) = &self.spill {
            ctx.read_roots.push(spill.dir(&session_id));
        }
        // Made only when there are hooks to tell.
        let hook_run = (!self.hooks.is_empty()).then(|| HookRun {
            session_id: session_id.clone(),
            workspace: ctx.workspace.clone(),
            mode: policy.mode,
            agent_id: policy.agent_id.clone(),
            user_can_answer: !matches!(policy.approvals, Approvals::Refuse),
        });
        let pass = Passage {
            call,
            policy,
            events,
            hook_run: hook_run.as_ref(),
        };
        let mut effects = CallEffects::default();
        let mut output = match self.steps(&pass, parsed, ctx, &mut effects).await {
            Ok(out) => out,
            Err(e) => {
                effects.denied = matches!(&e, ToolError::Refused(r) if r.is_denial());
                ToolOutput::error(format!("error: {e}"))
            }
        };
        // Only a call the gate let through ran (its access is known then).
        if let Some(run) = &hook_run
            && effects.access.is_some()
            && let Some(why) = self.after_hooks(call, run, &mut output, events).await
        {
            effects.halt = Some(why);
        }
        GateOutcome {
            duration: started.elapsed().saturating_sub(effects.waited),
            effects,
            result: ToolResult {
                images: output.images,
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: self.bound_output(&session_id, &call.id, output.content),
                is_error: output.is_error,
            },
        }
    }

    /// The steps of one call, in order (see the module doc). `effects`
    /// say what the call touched once it is permitted, and why the run
    /// stops if a hook said so.
    async fn steps(
        &self,
        pass: &Passage<'_>,
        parsed: Option<Value>,
        mut ctx: ToolContext,
        effects: &mut CallEffects,
    ) -> Result<ToolOutput, ToolError> {
        let entry = self.resolve(pass).await?;
        let args = admit(&entry, pass, parsed)?;
        let hooked = self
            .before_hooks(pass, &entry, args, &mut effects.halt)
            .await?;
        ctx.sandbox = pass.policy.permissions.sandbox(pass.policy.mode);
        let args = self.permit(&entry, pass, hooked, &ctx, effects).await?;
        let reserved = self.reserve(&entry, &args, &ctx).await?;
        self.execute(&pass.call.name, &entry, args, ctx, reserved)
            .await
    }

    /// The resolve step: the named tool, or the unknown-tool refusal
    /// listing those the mode offers.
    async fn resolve(&self, pass: &Passage<'_>) -> Result<Arc<Registered>, ToolError> {
        match self.tools.find(&pass.call.name).await {
            Some(entry) => Ok(entry),
            None => Err(Refusal::UnknownTool {
                tool: pass.call.name.clone(),
                available: self
                    .specs(pass.policy.mode)
                    .into_iter()
                    .map(|s| s.name)
                    .collect(),
            }
            .into()),
        }
    }
}

/// The admit step: the mode offers the tool, and the arguments (parsed
/// here when the caller did not) fit its schema.
fn admit(
    entry: &Registered,
    pass: &Passage<'_>,
    parsed: Option<Value>,
) -> Result<Value, ToolError> {
    let call = pass.call;
    if !pass.policy.mode.offers(entry.access) {
        return Err(Refusal::NotOffered {
            tool: call.name.clone(),
        }
        .into());
    }
    let args = match parsed {
        Some(args) => args,
        None => {
            parse_arguments(call).map_err(|e| Refusal::not_json(&call.name, e, &call.arguments))?
        }
    };
    schema_check::check(&args, &entry.spec.parameters).map_err(|error| {
        Refusal::InvalidArguments {
            tool: call.name.clone(),
            error: error.to_string(),
        }
    })?;
    Ok(args)
}

/// A call's arguments as JSON; empty arguments are an empty object.
pub fn parse_arguments(call: &ToolCall) -> Result<Value, serde_json::Error> {
    match call.arguments.trim() {
        "" => Ok(Value::Object(Default::default())),
        raw => serde_json::from_str(raw),
    }
}
