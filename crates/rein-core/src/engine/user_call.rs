//! One tool call made on the user's behalf, outside a run: a custom
//! command's `` !`cmd` `` context line runs as a `bash` call through the
//! same gate as the model's calls (its mode, rules, hooks and sandbox),
//! so nothing the model could not run runs this way.

use tokio_util::sync::CancellationToken;

use crate::engine::{AgentEngine, RunScope};
use crate::event::NullSink;
use crate::gate::{GateEvents, GateOutcome};
use crate::permission::PermissionMode;
use crate::schema::ToolCall;
use crate::tool::{SessionHandle, ToolContext};

impl AgentEngine {
    /// Run `call` through the gate in `mode`, as a call of a run in
    /// session `session_id` with `scope` would be (its earlier approvals
    /// count; a new session, None, has none; a tool the scope does not
    /// offer is unknown). `events` gets the gate's events (approvals
    /// asked, refusals). Never fails: a refusal is an error result.
    pub async fn run_call_for_user(
        &self,
        session_id: Option<&str>,
        mode: PermissionMode,
        scope: &RunScope,
        call: &ToolCall,
        events: GateEvents,
        cancel: CancellationToken,
    ) -> GateOutcome {
        let mode = self.capped(mode);
        let policy = match session_id {
            Some(id) => self.run_policy(id, mode, scope, &mut NullSink).await.ok(),
            None => None,
        };
        let policy = policy.unwrap_or_else(|| {
            let mut fresh = self.fresh_policy(mode);
            fresh.for_run = scope.allow.clone();
            fresh.ask_for_run = scope.ask.clone();
            fresh
        });
        let session = session_id.unwrap_or_default();
        let ctx = ToolContext {
            workspace: self.inner.workspace.clone(),
            session_id: session.to_string(),
            call_id: call.id.clone(),
            cancel,
            session: SessionHandle::new(self.inner.store.clone(), session),
            sandbox: Default::default(),
            read_roots: Vec::new(),
            events: Some(events.clone()),
        };
        let gate = scope.narrow(self.gate());
        gate.run(call, ctx, &policy, &events).await
    }
}
