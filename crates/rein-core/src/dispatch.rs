//! The gate: the one place every tool call passes through. It finds the
//! tool, enforces plan mode, checks the arguments, takes path locks, bounds
//! concurrency, time and output, and turns every failure into an error
//! observation.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinError;

use crate::locks::PathLocks;
use crate::schema::{ToolCall, ToolResult, ToolSpec};
use crate::schema_check;
use crate::text::truncate_middle;
use crate::tool::{Tool, ToolAccess, ToolContext, ToolError, ToolOutput};

/// How long a cancelled or timed-out tool gets to return what it has.
const GRACE: Duration = Duration::from_secs(3);

/// Limits the gate enforces.
#[derive(Debug, Clone)]
pub struct GateLimits {
    pub tool_timeout: Duration,
    pub max_concurrent_tools: Option<usize>,
    /// Largest observation passed to the model, in bytes.
    pub max_output_bytes: usize,
}

impl Default for GateLimits {
    fn default() -> Self {
        GateLimits {
            tool_timeout: Duration::from_secs(120),
            max_concurrent_tools: None,
            max_output_bytes: 64 * 1024,
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
    locks: PathLocks,
    limits: GateLimits,
    semaphore: Option<Arc<Semaphore>>,
}

/// What a gated call produced.
#[derive(Debug, Clone)]
pub struct GateOutcome {
    pub result: ToolResult,
    pub duration: Duration,
}

impl Gate {
    /// A gate over `tools`; a later tool with the same name replaces an
    /// earlier one.
    pub fn new(tools: Vec<Arc<dyn Tool>>, limits: GateLimits) -> Self {
        let mut gate = Gate {
            tools: Vec::new(),
            by_name: HashMap::new(),
            locks: PathLocks::default(),
            semaphore: limits
                .max_concurrent_tools
                .map(|n| Arc::new(Semaphore::new(n.max(1)))),
            limits,
        };
        for tool in tools {
            let spec = tool.spec();
            let entry = Registered {
                access: tool.access(),
                spec,
                tool,
            };
            match gate.by_name.get(&entry.spec.name) {
                Some(&i) => gate.tools[i] = entry,
                None => {
                    gate.by_name
                        .insert(entry.spec.name.clone(), gate.tools.len());
                    gate.tools.push(entry);
                }
            }
        }
        gate
    }

    /// The tools the model may see: in plan mode only those that read.
    pub fn specs(&self, plan: bool) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|t| !plan || t.access == ToolAccess::Read)
            .map(|t| t.spec.clone())
            .collect()
    }

    pub fn limits(&self) -> &GateLimits {
        &self.limits
    }

    /// Run one call through every check. Never fails: each problem becomes
    /// an error observation for the model.
    pub async fn run(&self, call: &ToolCall, ctx: ToolContext, plan: bool) -> GateOutcome {
        let started = Instant::now();
        let output = match self.run_inner(call, ctx, plan).await {
            Ok(out) => out,
            Err(e) => ToolOutput::error(format!("error: {e}")),
        };
        GateOutcome {
            result: ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: truncate_middle(&output.content, self.limits.max_output_bytes),
                is_error: output.is_error,
            },
            duration: started.elapsed(),
        }
    }

    async fn run_inner(
        &self,
        call: &ToolCall,
        ctx: ToolContext,
        plan: bool,
    ) -> Result<ToolOutput, ToolError> {
        let Some(entry) = self.by_name.get(&call.name).map(|&i| &self.tools[i]) else {
            let available: Vec<String> = self.specs(plan).into_iter().map(|s| s.name).collect();
            return Err(ToolError(format!(
                "unknown tool `{}`. Available tools: {}.",
                call.name,
                available.join(", ")
            )));
        };
        if plan && entry.access != ToolAccess::Read {
            return Err(ToolError(format!(
                "`{}` is not available in plan mode: plan mode is read-only, so only tools \
                 that read can run. Finish the plan; the user will switch modes to carry it out.",
                call.name
            )));
        }
        let raw = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let args: Value = serde_json::from_str(raw).map_err(|e| {
            ToolError(format!(
                "the arguments of `{}` are not valid JSON ({e}). Arguments received: {}",
                call.name,
                crate::text::preview(raw, 5, 300)
            ))
        })?;
        schema_check::check(&args, &entry.spec.parameters)
            .map_err(|e| ToolError(format!("invalid arguments for `{}`: {e}", call.name)))?;

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
