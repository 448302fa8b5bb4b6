//! The gate: the one place every tool call passes through. It finds the
//! tool, enforces plan mode, checks the arguments, decides permissions (and
//! asks for approval when it must), takes path locks, bounds concurrency,
//! time and output, and turns every failure into an error observation.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinError;

use crate::approval::{Approvals, ProjectRules};
use crate::event::Event;
use crate::locks::PathLocks;
use crate::permission::{PermissionMode, Permissions, Rule};
use crate::schema::{ToolCall, ToolResult, ToolSpec};
use crate::schema_check;
use crate::tool::{LateTools, OutputSpill, Tool, ToolAccess, ToolContext, ToolError, ToolOutput};

/// How a call's error starts when the model named no offered tool (eval
/// reports count these).
pub const UNKNOWN_TOOL: &str = "unknown tool `";
/// How a call's error starts when its arguments break the tool's schema.
pub const INVALID_ARGUMENTS: &str = "invalid arguments for `";
/// Part of a call's error when its arguments are not JSON.
pub const NOT_JSON: &str = "are not valid JSON";

mod approval;
mod hooks;
mod outputs;

pub use hooks::{AfterCall, CallHook, HookRun, HookVerdict, PermissionAnswer};

/// How long a cancelled or timed-out tool gets to return what it has.
const GRACE: Duration = Duration::from_secs(3);

/// Limits the gate enforces.
#[derive(Debug, Clone)]
pub struct GateLimits {
    pub tool_timeout: Duration,
    pub max_concurrent_tools: Option<usize>,
    /// Largest observation passed to the model, in bytes.
    pub max_output_bytes: usize,
    /// Outputs larger than this are saved to a file (when the engine has
    /// somewhere to save them) and the model gets a head/tail preview and
    /// the file's path instead.
    pub spill_bytes: usize,
    /// Most tool calls run from one model answer; the rest get an error
    /// observation and are not run.
    pub max_tool_calls_per_turn: usize,
    /// Largest raw arguments of one call, in bytes, checked before they are
    /// parsed (parsing multiplies their size in memory). The engine also
    /// stops reading a model's answer once one call's arguments pass it.
    pub max_argument_bytes: usize,
}

/// Default of [`GateLimits::max_tool_calls_per_turn`].
pub const DEFAULT_MAX_TOOL_CALLS_PER_TURN: usize = 32;
/// Default of [`GateLimits::max_argument_bytes`]: 16 MiB.
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 16 * 1024 * 1024;

impl Default for GateLimits {
    fn default() -> Self {
        GateLimits {
            tool_timeout: Duration::from_secs(120),
            max_concurrent_tools: None,
            max_output_bytes: 64 * 1024,
            spill_bytes: 16 * 1024,
            max_tool_calls_per_turn: DEFAULT_MAX_TOOL_CALLS_PER_TURN,
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
        }
    }
}

struct Registered {
    tool: Arc<dyn Tool>,
    spec: ToolSpec,
    access: ToolAccess,
}

/// The tool gate of one engine.
pub struct Gate {
    tools: Vec<Registered>,
    by_name: HashMap<String, usize>,
    /// Shared with the gates of child engines: a sub-agent's write waits
    /// for its parent's read of the same file, and the other way round.
    locks: Arc<PathLocks>,
    limits: GateLimits,
    semaphore: Option<Arc<Semaphore>>,
    spill: Option<Arc<dyn OutputSpill>>,
    hooks: Vec<Arc<dyn CallHook>>,
    /// Where a call naming a tool the gate lacks waits for it to arrive.
    late: Option<Arc<dyn LateTools>>,
}

/// The permission state of one run, shared by its calls.
pub struct RunPolicy {
    pub mode: PermissionMode,
    pub permissions: Arc<Permissions>,
    /// Allow rules granted by approvals in this session.
    pub granted: Mutex<Vec<Rule>>,
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
            approvals: Approvals::Refuse,
            project_rules: None,
            agent_id: None,
        }
    }

    pub fn with_approvals(mut self, approvals: Approvals) -> RunPolicy {
        self.approvals = approvals;
        self
    }

    fn granted(&self) -> Vec<Rule> {
        match self.granted.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn grant(&self, rules: &[Rule]) {
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
}

impl Gate {
    /// A gate over `tools`; a later tool with the same name replaces an
    /// earlier one.
    pub fn new(tools: Vec<Arc<dyn Tool>>, limits: GateLimits) -> Self {
        let mut gate = Gate {
            tools: Vec::new(),
            by_name: HashMap::new(),
            locks: Arc::default(),
            semaphore: limits
                .max_concurrent_tools
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
            limits,
            spill: None,
            hooks: Vec::new(),
            late: None,
        };
        for tool in tools {
            gate.register(tool);
        }
        gate
    }

    /// Add `tool`; one with the same name is replaced.
    fn register(&mut self, tool: Arc<dyn Tool>) {
        let entry = Registered {
            access: tool.access(),
            spec: tool.spec(),
            tool,
        };
        match self.by_name.get(&entry.spec.name) {
            Some(&i) => self.tools[i] = entry,
            None => {
                self.by_name
                    .insert(entry.spec.name.clone(), self.tools.len());
                self.tools.push(entry);
            }
        }
    }

    /// This gate with `tools` added (replacing any of the same name), its
    /// limits, hooks and path locks shared.
    pub fn with_added(&self, tools: Vec<Arc<dyn Tool>>) -> Gate {
        self.with_replaced(|_| false, tools)
    }

    /// Save big outputs here instead of cutting them.
    pub fn with_spill(mut self, spill: Arc<dyn OutputSpill>) -> Self {
        self.spill = Some(spill);
        self
    }

    /// Ask `late` for a tool a call names that this gate does not have.
    pub fn with_late_tools(mut self, late: Arc<dyn LateTools>) -> Self {
        self.late = Some(late);
        self
    }

    /// This gate without the tools `drop` names, and with `tools` added.
    pub fn with_replaced(&self, drop: impl Fn(&str) -> bool, tools: Vec<Arc<dyn Tool>>) -> Gate {
        let mut gate = self.narrowed(|name| !drop(name));
        // The same gate, its tools swapped: tools still arriving stay.
        gate.late = self.late.clone();
        for tool in tools {
            gate.register(tool);
        }
        gate
    }

    /// Run `hook` on every call, after the hooks added before it.
    pub fn with_hook(mut self, hook: Arc<dyn CallHook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// A gate over the tools `keep` accepts, with this gate's limits,
    /// output spill, hooks, concurrency cap and path locks (shared, so a
    /// child engine's calls and its parent's exclude each other).
    pub fn narrowed(&self, keep: impl Fn(&str) -> bool) -> Gate {
        let mut gate = Gate {
            tools: Vec::new(),
            by_name: HashMap::new(),
            locks: self.locks.clone(),
            limits: self.limits.clone(),
            semaphore: self.semaphore.clone(),
            spill: self.spill.clone(),
            hooks: self.hooks.clone(),
            // Tools still arriving are not offered: a call naming one would
            // pass by `keep`. (Those that arrived are in `tools`.)
            late: None,
        };
        for t in self.tools.iter().filter(|t| keep(&t.spec.name)) {
            gate.by_name.insert(t.spec.name.clone(), gate.tools.len());
            gate.tools.push(Registered {
                tool: t.tool.clone(),
                spec: t.spec.clone(),
                access: t.access,
            });
        }
        gate
    }

    /// What the named tool does, if there is one.
    pub fn access(&self, name: &str) -> Option<ToolAccess> {
        self.by_name.get(name).map(|&i| self.tools[i].access)
    }

    /// The tools the model may see: in plan mode none that write (programs
    /// run there in a read-only sandbox).
    pub fn specs(&self, mode: PermissionMode) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| mode.offers(t.access))
            .map(|t| t.spec.clone())
            .collect()
    }

    pub fn limits(&self) -> &GateLimits {
        &self.limits
    }

    /// Why `call` is refused before anything else looks at it: arguments
    /// larger than [`GateLimits::max_argument_bytes`]. Checked on the raw
    /// string, so a huge argument is never parsed or copied further.
    pub fn oversized(&self, call: &ToolCall) -> Option<String> {
        let max = self.limits.max_argument_bytes;
        (call.arguments.len() > max).then(|| {
            format!(
                "error: the arguments of `{}` are larger than the limit of {max} bytes ({}), so \
                 the call was not run. Write big content in several smaller pieces (for example \
                 several files, or appends with a command), or produce it with a command.",
                crate::text::preview(&call.name, 1, 64),
                human_bytes(max)
            )
        })
    }

    /// The error observation of a call past the per-turn cap.
    pub fn over_turn_cap(&self) -> String {
        format!(
            "error: too many tool calls in one turn: at most {} run; this one was not run. Make \
             fewer calls per answer (batch the work, or wait for these results first).",
            self.limits.max_tool_calls_per_turn.max(1)
        )
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
        ctx: ToolContext,
        policy: &RunPolicy,
        events: &GateEvents,
    ) -> GateOutcome {
        let started = Instant::now();
        if let Some(refusal) = self.oversized(call) {
            return GateOutcome::refused(ToolResult {
                images: Vec::new(),
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: refusal,
                is_error: true,
            });
        }
        let mut ctx = ctx;
        let session_id = ctx.session_id.clone();
        if let Some(spill) = &self.spill {
            ctx.read_roots.push(spill.dir(&session_id));
        }
        // Made only when there are hooks to tell.
        let hook_run = (!self.hooks.is_empty()).then(|| hooks::HookRun {
            session_id: session_id.clone(),
            workspace: ctx.workspace.clone(),
            mode: policy.mode,
            agent_id: policy.agent_id.clone(),
            user_can_answer: !matches!(policy.approvals, Approvals::Refuse),
        });
        let mut effects = CallEffects::default();
        let mut output = match self
            .run_inner(
                call,
                parsed,
                ctx,
                (policy, hook_run.as_ref()),
                events,
                &mut effects,
            )
            .await
        {
            Ok(out) => out,
            Err(e) => ToolOutput::error(format!("error: {e}")),
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

    async fn run_inner(
        &self,
        call: &ToolCall,
        parsed: Option<Value>,
        mut ctx: ToolContext,
        (policy, hook_run): (&RunPolicy, Option<&hooks::HookRun>),
        events: &GateEvents,
        effects: &mut CallEffects,
    ) -> Result<ToolOutput, ToolError> {
        // Boxed, so the common case (a tool the gate has) does not carry
        // a whole entry in this future.
        let arrived: Box<Registered>;
        let entry = match self.by_name.get(&call.name) {
            Some(&i) => &self.tools[i],
            None => {
                arrived = self.late_entry(call, policy).await?;
                &arrived
            }
        };
        if !policy.mode.offers(entry.access) {
            return Err(ToolError(policy.mode.not_offered(&call.name)));
        }
        let args = match parsed {
            Some(args) => args,
            None => parse_arguments(call).map_err(|e| {
                ToolError(format!(
                    "the arguments of `{}` {NOT_JSON} ({e}). Arguments received: {}",
                    call.name,
                    crate::text::preview(&call.arguments, 5, 300)
                ))
            })?,
        };
        schema_check::check(&args, &entry.spec.parameters)
            .map_err(|e| ToolError(format!("{INVALID_ARGUMENTS}{}`: {e}", call.name)))?;
        let hooks::Hooked {
            args,
            escalated,
            allowed,
            warnings,
            halt,
        } = self.run_hooks(call, args, entry, hook_run).await?;
        for message in warnings {
            events(Event::Notice { message });
        }
        if let Some(why) = halt {
            effects.halt = Some(why.clone());
            return Err(ToolError(format!("not run: a hook stopped the run: {why}")));
        }

        ctx.sandbox = policy.permissions.sandbox(policy.mode);
        let (assessment, waited) = self
            .check_permission(
                entry,
                call,
                approval::Checked {
                    args: &args,
                    escalated,
                    allowed,
                    hook_run,
                    halt: &mut effects.halt,
                },
                &ctx,
                policy,
                events,
            )
            .await?;
        *effects = CallEffects {
            access: Some(entry.access),
            writes: assessment.writes,
            test_command: assessment.test_command,
            waited,
            halt: None,
        };

        let cancel = ctx.cancel.clone();
        let _permit = match &self.semaphore {
            Some(sem) => Some(tokio::select! {
                p = sem.clone().acquire_owned() => p.map_err(|_| ToolError::new("tool pool closed"))?,
                _ = cancel.cancelled() => return Err(ToolError::new("cancelled before it started")),
            }),
            None => None,
        };
        let wanted = entry.tool.locks(&args, &ctx)?;
        let _guard = tokio::select! {
            g = self.locks.acquire(wanted) => g,
            _ = cancel.cancelled() => return Err(ToolError::new("cancelled before it started")),
        };

        // The tool sees its own token: cancelled on run cancel or timeout.
        let tool_cancel = cancel.child_token();
        let tool_ctx = ToolContext {
            cancel: tool_cancel.clone(),
            ..ctx
        };
        let timeout = entry
            .tool
            .timeout(&args)
            .unwrap_or(self.limits.tool_timeout);
        let tool = entry.tool.clone();
        let mut handle = tokio::spawn(async move { tool.call(args, tool_ctx).await });
        // Biased: a tool that returns because it saw the cancel must still be
        // reported as cancelled, not as finished.
        let stopped_why = tokio::select! {
            biased;
            _ = cancel.cancelled() => "cancelled by the user".to_string(),
            _ = tokio::time::sleep(timeout) => format!("timed out after {}", human_secs(timeout)),
            joined = &mut handle => return flatten(&call.name, joined),
        };
        tool_cancel.cancel();
        match tokio::time::timeout(GRACE, &mut handle).await {
            Ok(joined) => {
                let partial = flatten(&call.name, joined)
                    .map(|o| o.content)
                    .unwrap_or_else(|e| e.0);
                Ok(ToolOutput::error(format!(
                    "error: `{}` {stopped_why}.\n{partial}",
                    call.name
                )))
            }
            Err(_) => {
                handle.abort();
                Err(ToolError(format!("`{}` {stopped_why}", call.name)))
            }
        }
    }
}

/// A call's arguments as JSON; empty arguments are an empty object.
pub fn parse_arguments(call: &ToolCall) -> Result<Value, serde_json::Error> {
    match call.arguments.trim() {
        "" => Ok(Value::Object(Default::default())),
        raw => serde_json::from_str(raw),
    }
}

/// `n` bytes for people: "16 MiB", "512 KiB", "100 bytes".
fn human_bytes(n: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

fn human_secs(d: Duration) -> String {
    if d.as_millis().is_multiple_of(1000) {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn flatten(
    name: &str,
    joined: Result<Result<ToolOutput, ToolError>, JoinError>,
) -> Result<ToolOutput, ToolError> {
    match joined {
        Ok(r) => r,
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(ToolError(format!(
                "the tool `{name}` crashed ({msg}). This is a fault in the tool, not in your \
                 call; try another way."
            )))
        }
        Err(_) => Err(ToolError(format!("the tool `{name}` was stopped"))),
    }
}
