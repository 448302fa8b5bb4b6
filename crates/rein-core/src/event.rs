//! `Event`: the one stream every front end reads, and `StopReason`.

use serde::Serialize;
use tokio::sync::mpsc;

use crate::approval::{ApprovalDecision, ApprovalReply, ApprovalRequest};
use crate::compaction::CompactionReason;
use crate::permission::{PermissionMode, Rule};
use crate::schema::{Message, ModelProgress, Todo, Usage};
use crate::tokens::LedgerTotals;

/// Why a run stopped. Each reason maps to its own exit code in the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// The model answered without asking for tools.
    Completed,
    /// The turn limit was reached.
    MaxTurns,
    /// The caller cancelled the run.
    Cancelled,
    /// The model provider failed and retries did not help.
    ProviderError,
    /// The harness itself failed (for example the session store).
    HarnessError,
    /// The run's token budget (`max_tokens`) was used up.
    MaxTokens,
    /// The run's cost budget (`max_cost_usd`) was used up.
    MaxCost,
    /// The run's time budget (`max_wall_time`) ran out.
    MaxWallTime,
    /// The model repeated itself or made no progress, after a reminder.
    Repetition,
    /// A hook of the user's stopped the run: it refused the prompt, said
    /// `continue: false`, or denied a call with `interrupt`.
    HookStopped,
    /// The run could not start: a bad flag or configuration, no model, an
    /// unknown session to resume (front ends report it; the engine never
    /// stops with it).
    UsageError,
}

impl StopReason {
    /// Every reason, in declaration order.
    pub const ALL: [StopReason; 11] = [
        StopReason::Completed,
        StopReason::MaxTurns,
        StopReason::Cancelled,
        StopReason::ProviderError,
        StopReason::HarnessError,
        StopReason::MaxTokens,
        StopReason::MaxCost,
        StopReason::MaxWallTime,
        StopReason::Repetition,
        StopReason::HookStopped,
        StopReason::UsageError,
    ];

    /// The reason [`StopReason::as_str`] names.
    pub fn parse(text: &str) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Completed => "completed",
            StopReason::MaxTurns => "max_turns",
            StopReason::Cancelled => "cancelled",
            StopReason::ProviderError => "provider_error",
            StopReason::HarnessError => "harness_error",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxCost => "max_cost",
            StopReason::MaxWallTime => "max_wall_time",
            StopReason::Repetition => "repetition",
            StopReason::HookStopped => "hook_stopped",
            StopReason::UsageError => "usage_error",
        }
    }
}

/// Something that happened in a run. Serialised with a `type` tag, one
/// object per line in `rein exec --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The run has a session and is about to send the first turn.
    RunStarted {
        session_id: String,
        provider: String,
        model: String,
        workspace: String,
        resumed: bool,
        /// The permission mode (`plan` is true in plan mode).
        mode: PermissionMode,
        plan: bool,
        /// What the model is told and how much it is helped.
        profile: crate::profile::Profile,
        /// Levers of the profile switched off (`--without`), if any.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        without: Vec<crate::profile::Lever>,
    },
    /// A model call is about to be made (turns count from 1).
    TurnStarted { turn: u32 },
    /// Visible answer text as the model streams it.
    TextDelta { text: String },
    /// Reasoning text as the model streams it.
    ReasoningDelta { text: String },
    /// How far a model running on this machine has got with the current
    /// request (a few a second at most; hosted providers send none).
    ModelProgress { progress: ModelProgress },
    /// A failed model call is being retried after `delay_ms`.
    Retry {
        attempt: u32,
        max_retries: u32,
        delay_ms: u64,
        error: String,
        /// The call had streamed part of an answer before it failed; that
        /// part was thrown away (never stored, no tool call of it run), and
        /// front ends showing it should take it back.
        discarded: bool,
    },
    /// A tool call passed to the gate.
    ToolStarted {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// A tool call ended (successfully or not).
    ToolFinished {
        call_id: String,
        name: String,
        duration_ms: u64,
        is_error: bool,
        output_preview: String,
    },
    /// A call needs approval. Answer through `reply` (a dropped handle
    /// denies); `rein exec --json` shows the request, never the handle.
    ApprovalRequired {
        request: ApprovalRequest,
        #[serde(skip)]
        reply: ApprovalReply,
    },
    /// An approval request was answered.
    ApprovalResolved {
        call_id: String,
        decision: ApprovalDecision,
    },
    /// The gate refused a call (a deny rule, a protected path, or an
    /// approval nobody could give). `suggested_*` say what would allow it.
    PermissionDenied {
        call_id: String,
        tool: String,
        summary: String,
        why: String,
        /// True when the call only needed an approval that could not be
        /// asked for (headless); false when a rule or protection forbids it.
        needed_approval: bool,
        suggested_rules: Vec<Rule>,
        suggested_mode: Option<PermissionMode>,
    },
    /// Older turns were replaced by a summary (or dropped, when `summarized`
    /// is false; `note` says why).
    Compaction {
        reason: CompactionReason,
        summarized: bool,
        replaced_messages: u64,
        tokens_before: u64,
        tokens_after: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The permission mode changed at a turn boundary (see `RunControl`).
    ModeChanged { mode: PermissionMode },
    /// The todo list changed.
    TodosUpdated { todos: Vec<Todo> },
    /// Something the user should know that is not an error of the run.
    Notice { message: String },
    /// Context size after a turn: `estimated` is rein's estimate of the
    /// request just sent and `actual` its input tokens as the provider
    /// reported them; `next_request` is the size of the next request in
    /// the one accounting ([`crate::request_size`]: the report plus what
    /// was added since), the figure the status line and `/context` show;
    /// `window` is the model's window when known.
    TokenUpdate {
        estimated: u64,
        actual: Option<u64>,
        window: Option<u64>,
        #[serde(default)]
        next_request: u64,
    },
    /// A message was durably stored in the session (`seq` is its position).
    MessageCommitted { seq: u64, message: Message },
    /// The run ended. Always the last event.
    Stopped {
        reason: StopReason,
        turns: u32,
        usage: Usage,
        /// The text of the last assistant message, if any.
        final_text: String,
        /// What went wrong, for provider and harness errors.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// This run's model calls from the ledger: tokens and cost.
        totals: LedgerTotals,
        /// The calls the gate refused in this run, in order (empty when
        /// everything the model asked for was allowed).
        refused: Vec<RefusedCall>,
    },
    /// An event of a sub-agent's run (started by the `task` call
    /// `call_id`), nested whole: its own `run_started` ... `stopped`.
    Subagent {
        /// Unique per sub-agent run.
        agent_id: String,
        /// Its definition's name.
        agent: String,
        /// The task's short description.
        description: String,
        /// The `task` call of the parent that started it.
        call_id: String,
        event: Box<Event>,
    },
}

/// A call the gate refused, as `Stopped` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefusedCall {
    pub tool: String,
    pub summary: String,
    pub why: String,
    /// It only needed an approval nobody could give (headless); false
    /// when a rule or a protection forbids it.
    pub needed_approval: bool,
}

impl RefusedCall {
    /// A refusal as `Stopped` lists it, bounded: a summary quotes the
    /// call, which may be huge.
    pub fn new(tool: &str, summary: &str, why: &str, needed_approval: bool) -> RefusedCall {
        RefusedCall {
            tool: crate::text::preview(tool, 1, 100),
            summary: crate::text::preview(summary, 2, 300),
            why: crate::text::preview(why, 2, 300),
            needed_approval,
        }
    }
}

/// A sink that passes every event on and keeps the refusals among them.
pub(crate) struct NotingRefusals<'a> {
    pub inner: &'a mut dyn EventSink,
    pub refused: Vec<RefusedCall>,
}

impl EventSink for NotingRefusals<'_> {
    fn emit(&mut self, event: Event) {
        if let Event::PermissionDenied {
            tool,
            summary,
            why,
            needed_approval,
            ..
        } = &event
        {
            self.refused
                .push(RefusedCall::new(tool, summary, why, *needed_approval));
        }
        self.inner.emit(event);
    }
}

/// Where a run sends its events.
pub trait EventSink: Send {
    fn emit(&mut self, event: Event);
}

impl EventSink for mpsc::UnboundedSender<Event> {
    fn emit(&mut self, event: Event) {
        // A receiver that went away just stops listening; the run goes on.
        let _ = self.send(event);
    }
}

impl EventSink for Vec<Event> {
    fn emit(&mut self, event: Event) {
        self.push(event);
    }
}

/// Adapts a closure into an `EventSink`.
pub struct FnSink<F>(pub F);

impl<F: FnMut(Event) + Send> EventSink for FnSink<F> {
    fn emit(&mut self, event: Event) {
        (self.0)(event)
    }
}

/// A sink that drops everything.
pub struct NullSink;

impl EventSink for NullSink {
    fn emit(&mut self, _event: Event) {}
}
