//! One session `rein serve` holds: its engine, its numbered events, the
//! prompt running now (one at a time), the approvals waiting for an
//! answer, and its permission mode.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rein_core::{
    ApprovalDecision, ApprovalReply, ApprovalRequest, CancellationToken, Event, EventSink, FnSink,
    PermissionMode, RunControl, RunRequest,
};
use serde::Serialize;
use tokio::sync::watch;

use super::events::EventWriter;
use crate::hosting::Hosted;
use crate::setup::prepare::Prepared;

/// A session being served.
pub struct Served {
    pub id: String,
    pub hosted: Hosted,
    /// Its events, on their way to the store.
    pub events: EventWriter,
    state: Mutex<State>,
    /// True while a prompt runs (shutdown waits on it).
    busy: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    mode: Option<PermissionMode>,
    running: Option<Running>,
    approvals: BTreeMap<String, Pending>,
}

struct Running {
    cancel: CancellationToken,
    control: RunControl,
}

struct Pending {
    request: ApprovalRequest,
    reply: ApprovalReply,
}

/// What `GET /sessions/{id}` says of a served session besides the store.
#[derive(Debug, Serialize)]
pub struct Status {
    pub running: bool,
    pub mode: PermissionMode,
    pub pending_approvals: Vec<ApprovalRequest>,
}

/// Why a request about a session's run cannot be served now.
#[derive(Debug, thiserror::Error)]
pub enum RunConflict {
    #[error("a prompt is already running in this session; cancel it or wait")]
    Busy,
    #[error("no approval is waiting for call {0}")]
    NotWaiting(String),
}

impl Served {
    /// The session's notes (see [`crate::hosting::Notes`]) become
    /// `notice` events of it, between runs too.
    pub fn new(id: String, hosted: Hosted, events: EventWriter) -> Served {
        let log = events.clone();
        hosted.notes.forward(move |message| {
            if let Ok(json) = serde_json::to_string(&Event::Notice { message }) {
                log.push(json);
            }
        });
        Served {
            id,
            hosted,
            events,
            state: Mutex::new(State::default()),
            busy: watch::channel(false).0,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn mode(&self) -> PermissionMode {
        self.state().mode.unwrap_or(self.hosted.mode)
    }

    pub fn status(&self) -> Status {
        let state = self.state();
        Status {
            running: state.running.is_some(),
            mode: state.mode.unwrap_or(self.hosted.mode),
            pending_approvals: state
                .approvals
                .values()
                .map(|p| p.request.clone())
                .collect(),
        }
    }

    /// Take the session's one run slot, or say it is taken. The slot is
    /// given back when the [`Reservation`] is dropped unlaunched, or when
    /// its run ends.
    pub fn reserve(self: &Arc<Self>) -> Result<Reservation, RunConflict> {
        let cancel = CancellationToken::new();
        let control = RunControl::new();
        let mut state = self.state();
        if state.running.is_some() {
            return Err(RunConflict::Busy);
        }
        state.running = Some(Running {
            cancel: cancel.clone(),
            control: control.clone(),
        });
        self.busy.send_replace(true);
        Ok(Reservation {
            served: Some(self.clone()),
            cancel,
            control,
        })
    }

    /// Give the run slot back.
    fn release_slot(&self) {
        {
            let mut state = self.state();
            state.running = None;
            // A run that ended left nobody to answer.
            state.approvals.clear();
        }
        self.events.waiting("[]".into());
        self.busy.send_replace(false);
    }

    /// Keep and number one event; approvals wait in the session until
    /// answered.
    fn on_event(&self, event: Event) {
        match &event {
            Event::ApprovalRequired { request, reply } => {
                self.state().approvals.insert(
                    request.call_id.clone(),
                    Pending {
                        request: request.clone(),
                        reply: reply.clone(),
                    },
                );
            }
            Event::ApprovalResolved { call_id, .. } => {
                self.state().approvals.remove(call_id);
            }
            Event::ModeChanged { mode } => self.state().mode = Some(*mode),
            _ => {}
        }
        if matches!(
            event,
            Event::ApprovalRequired { .. } | Event::ApprovalResolved { .. }
        ) {
            let waiting = self.status().pending_approvals;
            self.events
                .waiting(serde_json::to_string(&waiting).unwrap_or_else(|_| "[]".into()));
        }
        match serde_json::to_string(&event) {
            Ok(json) => self.events.push(json),
            Err(e) => crate::output::err(&format!("rein serve: cannot encode an event: {e}")),
        }
    }

    /// Stop the running prompt, if any.
    pub fn cancel(&self) {
        if let Some(running) = &self.state().running {
            running.cancel.cancel();
        }
    }

    /// Answer the approval waiting for `call_id`.
    pub fn answer(&self, call_id: &str, decision: ApprovalDecision) -> Result<(), RunConflict> {
        let pending = self.state().approvals.remove(call_id);
        match pending {
            Some(p) if p.reply.send(decision) => Ok(()),
            _ => Err(RunConflict::NotWaiting(call_id.to_string())),
        }
    }

    /// The next prompt's mode; a running one switches at its next turn.
    pub fn set_mode(&self, mode: PermissionMode) {
        let mut state = self.state();
        state.mode = Some(mode);
        if let Some(running) = &state.running {
            running.control.set_mode(mode);
        }
    }

    /// Wait until no prompt runs.
    pub async fn idle(&self) {
        let mut busy = self.busy.subscribe();
        let _ = busy.wait_for(|b| !*b).await;
    }
}

/// What a run does.
pub enum Work {
    /// The user's prompt, prepared (its command's live parts, scope,
    /// skills and resources).
    Prompt(Box<Prepared>),
    /// Go on with a run another server left unfinished.
    Continue,
}

/// A session's run slot, taken.
pub struct Reservation {
    served: Option<Arc<Served>>,
    cancel: CancellationToken,
    control: RunControl,
}

impl Reservation {
    /// What cancels the reserved run (`/cancel` on the session), also
    /// while it is being prepared.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Run `work` in the background. `lost` (a lease taken over) cancels
    /// it; telemetry, when on, sees its events; `done` runs when it has
    /// ended.
    pub fn launch(
        mut self,
        work: Work,
        lost: Option<CancellationToken>,
        done: impl FnOnce() + Send + 'static,
    ) {
        let Some(served) = self.served.take() else {
            return;
        };
        let mode = served.mode();
        let control = self.control.clone();
        let cancel = self.cancel.clone();
        tokio::spawn(async move {
            let (mut request, notes) = match work {
                Work::Prompt(prepared) => {
                    let Prepared {
                        text, scope, notes, ..
                    } = *prepared;
                    let request = RunRequest {
                        scope,
                        ..RunRequest::new(text)
                    };
                    (request, notes)
                }
                Work::Continue => (RunRequest::default(), Vec::new()),
            };
            request.resume = Some(served.id.clone());
            request.mode = Some(mode);
            request.control = Some(control);
            let ended = CancellationToken::new();
            let lease_lost = lost.clone();
            if let Some(lost) = lost {
                let (ended, cancel) = (ended.clone(), cancel.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = lost.cancelled() => cancel.cancel(),
                        _ = ended.cancelled() => {}
                    }
                });
            }
            let mut observer = served.hosted.observer();
            let lost_now = lease_lost.clone();
            let mut sink = FnSink(|event: Event| {
                crate::otel::observe(&mut observer, &event);
                // A run whose lease was lost no longer speaks for its
                // session: the server that took it over does, and this
                // run's last events (its `stopped: cancelled`) would land
                // among the other run's.
                if !lost_now.as_ref().is_some_and(|l| l.is_cancelled()) {
                    served.on_event(event)
                }
            });
            for message in notes {
                sink.emit(Event::Notice { message });
            }
            let outcome = served.hosted.engine.run(request, cancel, &mut sink).await;
            // The operator hears of a run the harness could not finish
            // (its store gone, its lease lost): its `stopped` may not be
            // storable.
            let why = if lease_lost.is_some_and(|l| l.is_cancelled()) {
                Some("its lease was lost (another server may take it over)")
            } else if outcome.reason == rein_core::StopReason::HarnessError {
                Some(outcome.error.as_deref().unwrap_or("a harness error"))
            } else {
                None
            };
            if let Some(why) = why {
                crate::output::err(&format!(
                    "rein serve: the run of session {} stopped: {why}",
                    served.id
                ));
            }
            ended.cancel();
            done();
            served.release_slot();
        });
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(served) = self.served.take() {
            served.release_slot();
        }
    }
}
