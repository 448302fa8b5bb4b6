//! One tool call made on the user's behalf, outside a run: a custom
//! command's `` !`cmd` `` context line runs as a `bash` call through the
//! same gate as the model's calls (its mode, rules, hooks and sandbox),
//! so nothing the model could not run runs this way.

use tokio_util::sync::CancellationToken;

use crate::engine::AgentEngine;
use crate::event::NullSink;
use crate::gate::{GateEvents, GateOutcome};
use crate::permission::PermissionMode;
use crate::schema::ToolCall;
use crate::tool::{SessionHandle, ToolContext};

impl AgentEngine {
    /// Run `call` through the gate in `mode`, as a call of a run in
    /// session `session_id` would be (its earlier approvals count; a new
    /// session, None, has none). `events` gets the gate's events
    /// (approvals asked, refusals). Never fails: a refusal is an error
    /// result.
    pub async fn run_call_for_user(
        &self,
        session_id: Option<&str>,
        mode: PermissionMode,
        call: &ToolCall,
        events: GateEvents,
        cancel: CancellationToken,
    ) -> GateOutcome {
        let mode = self.capped(mode);
        let policy = match session_id {
            Some(id) => match self.run_policy(id, mode, &mut NullSink).await {
                Ok(policy) => policy,
                Err(_) => self.fresh_policy(mode),
            },
            None => self.fresh_policy(mode),
        };
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
        self.gate().run(call, ctx, &policy, &events).await
    }
}
