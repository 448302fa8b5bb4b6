//! What a sub-agent leaves its parent: the call's report, one ledger
//! entry for its whole run, its worktree closed, and its events nested in
//! the parent's.

use std::sync::Arc;
use std::time::Instant;

use crate::agents::{AgentDef, Worktree, WorktreeEnd, Worktrees};
use crate::engine::RunOutcome;
use crate::event::{Event, EventSink, StopReason};
use crate::gate::GateEvents;
use crate::provider::Provider;
use crate::schema::Usage;
use crate::tokens::{CallKind, LedgerEntry};
use crate::tool::{ToolError, ToolOutput};

/// Close a sub-agent's worktree; what the parent is told about it
/// (`lister`: the front end's command that lists kept worktrees).
pub(super) fn close_worktree(
    worktrees: Option<&Arc<dyn Worktrees>>,
    workspace: &std::path::Path,
    wt: &Worktree,
    lister: Option<&String>,
) -> String {
    let Some(worktrees) = worktrees else {
        return String::new();
    };
    match worktrees.finish(workspace, wt) {
        Ok(WorktreeEnd::Removed { commits: 0 }) => {
            "it changed nothing (its worktree is removed)".into()
        }
        Ok(WorktreeEnd::Removed { commits }) => format!(
            "its {commits} commit(s) are on branch {} (its worktree is removed)",
            wt.branch
        ),
        Ok(WorktreeEnd::Kept { changed, commits }) => format!(
            "its changes are in the worktree {} on branch {} ({changed} uncommitted file(s), \
             {commits} commit(s)){}",
            wt.path.display(),
            wt.branch,
            lister
                .map(|c| format!("; {c} lists it"))
                .unwrap_or_default()
        ),
        Err(e) => format!(
            "its worktree {} could not be closed: {e}",
            wt.path.display()
        ),
    }
}

/// Where a finished call's spending waits for its run: call ids repeat
/// from one session to another, so the session is part of the key.
pub(super) fn spent_key(session: &str, call_id: &str) -> String {
    format!("{session}\u{0}{call_id}")
}

/// Two optional notes as one.
pub(super) fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if !b.is_empty() => Some(format!("{a} · {b}")),
        (a, Some(b)) if !b.is_empty() => a.or(Some(b)),
        (a, _) => a,
    }
}

/// One ledger entry for a sub-agent's whole run.
pub(super) fn spent_entry(
    provider: &dyn Provider,
    outcome: &RunOutcome,
    began: Instant,
) -> LedgerEntry {
    let totals = &outcome.totals;
    LedgerEntry {
        kind: CallKind::Subagent,
        provider: provider.name().to_string(),
        model: provider.model().to_string(),
        usage: Usage {
            input_tokens: totals.input_tokens,
            output_tokens: totals.output_tokens,
            cached_input_tokens: totals.cached_input_tokens,
            reasoning_tokens: totals.reasoning_tokens,
        },
        cost_usd: (totals.unpriced_calls == 0).then_some(totals.known_cost_usd),
        ok: outcome.reason == StopReason::Completed,
        duration_ms: began.elapsed().as_millis() as u64,
        at: crate::time::now_millis(),
    }
}

/// The call's result: the child's final answer (and a line naming its
/// session), or why it stopped.
pub(super) fn report(
    agent: &AgentDef,
    outcome: &RunOutcome,
    note: Option<&str>,
) -> Result<ToolOutput, ToolError> {
    let session = outcome.session_id.as_deref().unwrap_or("none");
    let note = note.map(|n| format!(" · {n}")).unwrap_or_default();
    let footer = format!(
        "[sub-agent {} · session {session} · {} turns{note}]",
        agent.name, outcome.turns
    );
    if outcome.reason == StopReason::Completed {
        return Ok(ToolOutput::ok(format!(
            "{}\n\n{footer}",
            outcome.final_text.trim()
        )));
    }
    let why = outcome
        .error
        .as_deref()
        .map(|e| format!(": {e}"))
        .unwrap_or_default();
    let last = match outcome.final_text.trim() {
        "" => String::new(),
        t => format!("\nIts last words: {}", crate::text::preview(t, 20, 2000)),
    };
    Ok(ToolOutput::error(format!(
        "the sub-agent stopped before it finished ({}{why}){last}\n\n{footer}",
        outcome.reason.as_str()
    )))
}

/// Passes a child's events to the parent's, each nested in
/// [`Event::Subagent`].
pub(super) struct NestingSink {
    pub events: Option<GateEvents>,
    pub agent_id: String,
    pub agent: String,
    pub description: String,
    pub call_id: String,
}

impl EventSink for NestingSink {
    fn emit(&mut self, event: Event) {
        if let Some(events) = &self.events {
            events(Event::Subagent {
                agent_id: self.agent_id.clone(),
                agent: self.agent.clone(),
                description: self.description.clone(),
                call_id: self.call_id.clone(),
                event: Box::new(event),
            });
        }
    }
}
