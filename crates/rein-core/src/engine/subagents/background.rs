//! Sub-agents in the background: a `task` call with `background: true`
//! returns at once with the sub-agent's id; `task_status`, `task_wait`,
//! `task_cancel` and `task_steer` follow it. A background sub-agent cannot
//! ask the user anything (what needs an approval is refused), its events
//! wait for the parent's next turn, and the parent's run does not end
//! while one it started still runs: the engine waits for it and hands the
//! model its report.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::engine::{AgentEngine, RunControl, RunOutcome, RunRequest};
use crate::event::{Event, EventSink};
use crate::tool::{Tool, ToolAccess, ToolContext, ToolError, ToolOutput};

/// One sub-agent running (or done) in the background.
struct Running {
    /// The parent session that started it.
    session: String,
    agent: String,
    description: String,
    cancel: CancellationToken,
    control: RunControl,
    /// Its report once it ended (`None` while it runs).
    done: watch::Receiver<Option<Result<ToolOutput, ToolError>>>,
    /// Its events, until the parent's loop passes them on.
    events: Arc<Mutex<Vec<Event>>>,
    /// The report was handed to the model already.
    reported: bool,
}

/// The background sub-agents of one engine, by id.
#[derive(Default)]
pub(crate) struct Background {
    running: Mutex<BTreeMap<String, Running>>,
}

impl Background {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start `child` on `prompt` in the background; `finish` makes its
    /// report from its outcome.
    pub fn start(
        self: &Arc<Self>,
        child: AgentEngine,
        prompt: String,
        tag: (&str, &str, &str),
        ctx: &ToolContext,
        finish: impl FnOnce(RunOutcome) -> Result<ToolOutput, ToolError> + Send + 'static,
    ) {
        let (id, agent, description) = tag;
        let (tx, rx) = watch::channel(None);
        let cancel = ctx.cancel.child_token();
        let control = RunControl::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut sink = BufferSink {
            events: events.clone(),
            nest: (
                id.to_string(),
                agent.to_string(),
                description.to_string(),
                ctx.call_id.clone(),
            ),
        };
        let request = RunRequest {
            control: Some(control.clone()),
            ..RunRequest::new(prompt)
        };
        let run_cancel = cancel.clone();
        tokio::spawn(async move {
            let outcome = child.run(request, run_cancel, &mut sink).await;
            let _ = tx.send(Some(finish(outcome)));
        });
        self.lock().insert(
            id.to_string(),
            Running {
                session: ctx.session_id.clone(),
                agent: agent.to_string(),
                description: description.to_string(),
                cancel,
                control,
                done: rx,
                events,
                reported: false,
            },
        );
    }

    /// Stop every sub-agent `session` started (its run ended without
    /// waiting for them: a limit, an error, a cancel).
    pub fn cancel_session(&self, session: &str) {
        for r in self.lock().values().filter(|r| r.session == session) {
            r.cancel.cancel();
        }
    }

    /// Events of `session`'s background sub-agents since the last call.
    pub fn take_events(&self, session: &str) -> Vec<Event> {
        let running = self.lock();
        running
            .values()
            .filter(|r| r.session == session)
            .flat_map(|r| std::mem::take(&mut *r.events.lock().unwrap_or_else(|p| p.into_inner())))
            .collect()
    }

    /// The ids of `session`'s sub-agents whose report the model has not
    /// had yet (running or done).
    pub fn unreported(&self, session: &str) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|(_, r)| r.session == session && !r.reported)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Wait for sub-agent `id` to end (or `cancel`), and mark its report
    /// as handed over.
    pub async fn wait(
        &self,
        id: &str,
        cancel: &CancellationToken,
    ) -> Result<Result<ToolOutput, ToolError>, ToolError> {
        let mut done = match self.lock().get(id) {
            Some(r) => r.done.clone(),
            None => return Err(self.unknown(id)),
        };
        let report = tokio::select! {
            r = done.wait_for(Option::is_some) => r.map(|v| v.clone()).ok().flatten(),
            _ = cancel.cancelled() => return Err(ToolError::new("cancelled while waiting")),
        };
        if let Some(r) = self.lock().get_mut(id) {
            r.reported = true;
        }
        Ok(report.unwrap_or_else(|| Err(ToolError::new("the sub-agent's task vanished"))))
    }

    fn unknown(&self, id: &str) -> ToolError {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        ToolError::new(format!(
            "there is no background sub-agent `{id}`; the ids are: {}",
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        ))
    }

    /// One line per sub-agent of `session`.
    fn status(&self, session: &str) -> String {
        let running = self.lock();
        let lines: Vec<String> = running
            .iter()
            .filter(|(_, r)| r.session == session)
            .map(|(id, r)| {
                let state = match &*r.done.borrow() {
                    None => "running",
                    Some(Ok(out)) if !out.is_error => "finished",
                    Some(_) => "failed",
                };
                format!("{id} ({}: {}): {state}", r.agent, r.description)
            })
            .collect();
        if lines.is_empty() {
            "no background sub-agents".into()
        } else {
            lines.join("\n")
        }
    }
}

/// Keeps a background child's events (nested) for the parent's loop.
struct BufferSink {
    events: Arc<Mutex<Vec<Event>>>,
    /// Agent id, agent, description, the starting call's id.
    nest: (String, String, String, String),
}

impl EventSink for BufferSink {
    fn emit(&mut self, event: Event) {
        // Deltas are noise for a child nobody watches live.
        if matches!(
            event,
            Event::TextDelta { .. } | Event::ReasoningDelta { .. } | Event::ModelProgress { .. }
        ) {
            return;
        }
        let (agent_id, agent, description, call_id) = self.nest.clone();
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Event::Subagent {
                agent_id,
                agent,
                description,
                call_id,
                event: Box::new(event),
            });
    }
}

/// Which of the four control tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    Status,
    Wait,
    Cancel,
    Steer,
}

/// `task_status`, `task_wait`, `task_cancel` or `task_steer`.
pub(crate) struct ControlTool {
    pub background: Arc<Background>,
    pub which: Control,
}

impl ControlTool {
    pub fn all(background: &Arc<Background>) -> Vec<Arc<dyn Tool>> {
        [
            Control::Status,
            Control::Wait,
            Control::Cancel,
            Control::Steer,
        ]
        .into_iter()
        .map(|which| {
            Arc::new(ControlTool {
                background: background.clone(),
                which,
            }) as Arc<dyn Tool>
        })
        .collect()
    }
}

#[async_trait::async_trait]
impl Tool for ControlTool {
    fn spec(&self) -> crate::ToolSpec {
        let id = json!({"type": "string", "description": "the sub-agent's id, from the task call"});
        let (name, description, properties, required) = match self.which {
            Control::Status => (
                "task_status",
                "List the background sub-agents you started and whether each is running.",
                json!({}),
                json!([]),
            ),
            Control::Wait => (
                "task_wait",
                "Wait for a background sub-agent to finish and get its report.",
                json!({"id": id}),
                json!(["id"]),
            ),
            Control::Cancel => (
                "task_cancel",
                "Stop a background sub-agent.",
                json!({"id": id}),
                json!(["id"]),
            ),
            Control::Steer => (
                "task_steer",
                "Send a background sub-agent a message it reads at its next turn.",
                json!({"id": id, "message": {"type": "string"}}),
                json!(["id", "message"]),
            ),
        };
        crate::ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": properties, "required": required}),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn timeout(&self, _args: &Value) -> Option<Duration> {
        // Waiting is bounded by the sub-agent's own deadline.
        (self.which == Control::Wait).then(|| Duration::from_secs(3600))
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let id = args["id"].as_str().unwrap_or("");
        let bg = &self.background;
        match self.which {
            Control::Status => Ok(ToolOutput::ok(bg.status(&ctx.session_id))),
            Control::Wait => bg.wait(id, &ctx.cancel).await?,
            Control::Cancel => {
                let cancel = match bg.lock().get(id) {
                    Some(r) if r.session == ctx.session_id => r.cancel.clone(),
                    _ => return Err(bg.unknown(id)),
                };
                cancel.cancel();
                let said = match bg.wait(id, &ctx.cancel).await? {
                    Ok(out) => out.content,
                    Err(e) => e.to_string(),
                };
                Ok(ToolOutput::ok(format!("cancelled {id}.\n{said}")))
            }
            Control::Steer => {
                let message = args["message"].as_str().unwrap_or("").to_string();
                let running = bg.lock();
                match running.get(id) {
                    Some(r) if r.session == ctx.session_id && r.done.borrow().is_none() => {
                        r.control.queue(message);
                        Ok(ToolOutput::ok(format!("{id} reads it at its next turn")))
                    }
                    Some(r) if r.session == ctx.session_id => {
                        Err(ToolError::new(format!("{id} has already finished")))
                    }
                    _ => Err(bg.unknown(id)),
                }
            }
        }
    }
}
