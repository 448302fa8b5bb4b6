//! What every step of a run reads and updates ([`RunCtx`]), and how a run
//! ends ([`Stop`]): the session, the cancel token, where events go, the
//! store every message and model call is written to, and the run's counts.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::engine::RunOutcome;
use crate::engine::budget::Budget;
use crate::engine::state::Conversation;
use crate::event::{Event, EventSink, StopReason};
use crate::provider::{Provider, ProviderError, ProviderErrorKind};
use crate::schema::{AssistantMessage, Message, Usage};
use crate::store::{SessionStore, StoreError};
use crate::tokens::{CallKind, LedgerEntry, LedgerTotals, TokenCounter};

/// How a run ends: the reason and, for errors, what went wrong.
#[derive(Debug)]
pub(crate) struct Stop {
    pub reason: StopReason,
    pub error: Option<String>,
}

impl Stop {
    pub fn new(reason: StopReason) -> Stop {
        Stop {
            reason,
            error: None,
        }
    }

    pub fn with_error(reason: StopReason, error: impl Into<String>) -> Stop {
        Stop {
            reason,
            error: Some(error.into()),
        }
    }
}

/// A store that cannot be written is the harness's own fault: the run stops.
impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Stop {
        Stop::with_error(StopReason::HarnessError, e.to_string())
    }
}

/// What a model turn that did not produce a whole answer leaves: the part
/// that streamed before a cancel (kept), and why the run stops.
pub(crate) struct TurnFailure {
    pub partial: AssistantMessage,
    pub stop: Stop,
    /// The service said the request did not fit its context window.
    pub context_overflow: bool,
}

impl TurnFailure {
    pub fn cancelled(partial: AssistantMessage) -> TurnFailure {
        TurnFailure {
            partial,
            stop: Stop::new(StopReason::Cancelled),
            context_overflow: false,
        }
    }

    pub fn provider(error: ProviderError, partial: AssistantMessage) -> TurnFailure {
        TurnFailure {
            context_overflow: error.kind == ProviderErrorKind::ContextLengthExceeded,
            partial,
            stop: Stop::with_error(StopReason::ProviderError, error.to_string()),
        }
    }
}

/// The counts a run keeps; they become its outcome.
#[derive(Debug, Default)]
pub(crate) struct RunState {
    pub turns: u32,
    pub usage: Usage,
    pub final_text: String,
    pub totals: LedgerTotals,
}

/// What every step of a run reads and updates: its session, its cancel
/// token, where its events go, the store, its token counter and its
/// counts. Side calls (titles, `rein compact`, session hooks outside a
/// run) get one too, so every model call is recorded the same way.
pub(crate) struct RunCtx<'a> {
    pub session_id: String,
    pub cancel: &'a CancellationToken,
    pub sink: &'a mut dyn EventSink,
    pub store: Arc<dyn SessionStore>,
    pub counter: Arc<dyn TokenCounter>,
    pub st: RunState,
    /// The run's account in its budget tree (None for side calls outside
    /// a run).
    pub budget: Option<Arc<Budget>>,
}

impl<'a> RunCtx<'a> {
    pub fn new(
        session_id: String,
        cancel: &'a CancellationToken,
        sink: &'a mut dyn EventSink,
        store: Arc<dyn SessionStore>,
        counter: Arc<dyn TokenCounter>,
    ) -> RunCtx<'a> {
        RunCtx {
            session_id,
            cancel,
            sink,
            store,
            counter,
            st: RunState::default(),
            budget: None,
        }
    }

    pub fn emit(&mut self, event: Event) {
        self.sink.emit(event);
    }

    /// Store a message and announce it; returns its sequence number.
    pub async fn commit(&mut self, message: &Message) -> Result<u64, StoreError> {
        let seq = self.store.append_message(&self.session_id, message).await?;
        self.sink.emit(Event::MessageCommitted {
            seq,
            message: message.clone(),
        });
        Ok(seq)
    }

    /// Store a message, announce it, and add it to the conversation.
    pub async fn commit_to(
        &mut self,
        conv: &mut Conversation,
        message: Message,
    ) -> Result<(), StoreError> {
        let seq = self.commit(&message).await?;
        conv.push(message, Some(seq), self.counter.as_ref());
        Ok(())
    }

    /// Record one model call to `provider` in the session's ledger, the
    /// run's totals and its account. A ledger that cannot be written is a
    /// notice, never a stop.
    pub async fn record_call(
        &mut self,
        provider: &dyn Provider,
        kind: CallKind,
        usage: Usage,
        ok: bool,
        began: Instant,
    ) {
        let entry = LedgerEntry {
            kind,
            provider: provider.name().to_string(),
            model: provider.model().to_string(),
            usage,
            cost_usd: provider.pricing().map(|p| p.cost(&usage)),
            ok,
            duration_ms: began.elapsed().as_millis() as u64,
            at: crate::time::now_millis(),
        };
        self.st.totals.add(&entry);
        if let Some(account) = &self.budget {
            account.charge(&entry);
        }
        if let Err(e) = self.store.add_ledger(&self.session_id, &entry).await {
            self.emit(Event::Notice {
                message: format!("the cost ledger could not record a model call: {e}"),
            });
        }
    }

    /// The run's outcome, ended by `stop`.
    pub fn outcome(self, stop: Stop) -> RunOutcome {
        RunOutcome {
            session_id: Some(self.session_id),
            reason: stop.reason,
            turns: self.st.turns,
            usage: self.st.usage,
            final_text: self.st.final_text,
            error: stop.error,
            totals: self.st.totals,
            refused: Vec::new(),
        }
    }
}

impl RunOutcome {
    /// A run that stopped before it had a session.
    pub(crate) fn before_session(stop: Stop) -> RunOutcome {
        RunOutcome {
            session_id: None,
            reason: stop.reason,
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            error: stop.error,
            totals: LedgerTotals::default(),
            refused: Vec::new(),
        }
    }
}
