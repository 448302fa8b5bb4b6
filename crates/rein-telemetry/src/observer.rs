//! `RunObserver`: turns a run's events into spans and metrics, and
//! `ObservedSink`, which puts one in front of any `EventSink`.

use rein_core::{Event, EventSink};

use crate::queue::Queue;
use crate::run::{Ctx, Placement, RunState};
use crate::span::new_trace_id;

/// The agent name of a top-level run.
const AGENT: &str = "rein";

/// Watches the events of runs, one after another (each run is a trace of
/// its own; sub-agents' runs are in their parent's). Cheap per event: it
/// builds a span when one ends and queues it without waiting.
///
/// Give each concurrent run its own observer (`Telemetry::observer`).
#[derive(Debug)]
pub struct RunObserver {
    queue: Queue,
    capture: bool,
    run: Option<RunState>,
}

impl RunObserver {
    pub(crate) fn new(queue: Queue, capture: bool) -> Self {
        RunObserver {
            queue,
            capture,
            run: None,
        }
    }

    /// Take in one event of the run (call it for every event, in order).
    pub fn observe(&mut self, event: &Event) {
        let ctx = Ctx {
            queue: &self.queue,
            capture: self.capture,
        };
        let top = || Placement {
            trace_id: new_trace_id(),
            parent: None,
            agent: AGENT,
            subagent: None,
        };
        match event {
            Event::RunStarted { .. } => {
                if let Some(old) = self.run.take() {
                    old.abandon("a new run started before it stopped", &ctx);
                }
                self.run = Some(RunState::start(event, top(), &ctx));
            }
            Event::Stopped { .. } => match self.run.take() {
                Some(run) => run.stop(event, &ctx),
                None => RunState::stopped_before_start(event, top(), &ctx),
            },
            _ => {
                if let Some(run) = &mut self.run {
                    run.observe(event, &ctx);
                }
            }
        }
    }

    /// `sink`, with this observer seeing every event before it does.
    pub fn wrap<S: EventSink>(self, sink: S) -> ObservedSink<S> {
        ObservedSink {
            observer: self,
            inner: sink,
        }
    }
}

impl Drop for RunObserver {
    /// A run that never said `Stopped` (its task was dropped) still has
    /// its spans exported, failed as `unfinished`.
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            let ctx = Ctx {
                queue: &self.queue,
                capture: self.capture,
            };
            run.abandon("the run ended without a stop event", &ctx);
        }
    }
}

/// Makes a `RunObserver` for each run: cheap to clone, for a front end
/// that starts runs from many places (the terminal app's prompts, an
/// editor's sessions) while `Telemetry` itself waits for the shutdown.
#[derive(Debug, Clone)]
pub struct Observers {
    queue: Queue,
    capture: bool,
}

impl Observers {
    pub(crate) fn new(queue: Queue, capture: bool) -> Self {
        Observers { queue, capture }
    }

    /// An observer for one run at a time (see `RunObserver`).
    pub fn observer(&self) -> RunObserver {
        RunObserver::new(self.queue.clone(), self.capture)
    }
}

/// An `EventSink` that shows each event to a `RunObserver`, then passes it
/// on unchanged.
#[derive(Debug)]
pub struct ObservedSink<S> {
    observer: RunObserver,
    inner: S,
}

impl<S> ObservedSink<S> {
    /// The wrapped sink back (the observer is dropped, ending what is open).
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: EventSink> EventSink for ObservedSink<S> {
    fn emit(&mut self, event: Event) {
        self.observer.observe(&event);
        self.inner.emit(event);
    }
}

// A front end moves its sink (and so the observer) into a run's task.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<RunObserver>();
    send::<Observers>();
    send::<ObservedSink<rein_core::NullSink>>();
};
