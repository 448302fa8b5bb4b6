//! Watchers of runs: something outside the app (telemetry) that sees
//! every event of each run the app starts, sub-agents' included, before
//! the app does. The app never knows what watches.

use rein_core::{Event, EventSink};
use tokio::sync::mpsc;

/// Sees one run's events, in order (one per run: a watcher may keep the
/// run's state, and is dropped when the run's task ends).
pub type RunWatcher = Box<dyn FnMut(&Event) + Send>;

/// Makes the watcher of each run.
pub type WatchRuns = std::sync::Arc<dyn Fn() -> RunWatcher + Send + Sync>;

/// A run's sink: its watcher (if any) sees each event, then the event
/// goes on to the app's loop.
pub(super) struct WatchedSink {
    watcher: Option<RunWatcher>,
    app: mpsc::UnboundedSender<Event>,
}

impl WatchedSink {
    /// The sink of a new run: a fresh watcher from `watch`, when set.
    pub(super) fn new(app: mpsc::UnboundedSender<Event>, watch: Option<&WatchRuns>) -> Self {
        WatchedSink {
            watcher: watch.map(|make| make()),
            app,
        }
    }
}

impl EventSink for WatchedSink {
    fn emit(&mut self, event: Event) {
        if let Some(watch) = self.watcher.as_mut() {
            watch(&event);
        }
        // The app gone (quitting): the event has nowhere to go.
        let _ = self.app.send(event);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn each_run_gets_its_own_watcher_that_sees_events_before_the_app() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let made = Arc::new(Mutex::new(0));
        let (seen_w, made_w) = (seen.clone(), made.clone());
        let watch: WatchRuns = Arc::new(move || {
            *made_w.lock().unwrap() += 1;
            let seen = seen_w.clone();
            Box::new(move |e: &Event| {
                if let Event::Notice { message } = e {
                    seen.lock().unwrap().push(message.clone());
                }
            })
        });
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut first = WatchedSink::new(tx.clone(), Some(&watch));
        first.emit(Event::Notice {
            message: "one".into(),
        });
        let _second = WatchedSink::new(tx.clone(), Some(&watch));
        assert_eq!(*made.lock().unwrap(), 2);
        assert_eq!(*seen.lock().unwrap(), vec!["one".to_string()]);
        assert!(matches!(rx.try_recv(), Ok(Event::Notice { .. })));
        // Without a watcher, events go straight on.
        let mut plain = WatchedSink::new(tx, None);
        plain.emit(Event::Notice {
            message: "two".into(),
        });
        assert!(matches!(rx.try_recv(), Ok(Event::Notice { .. })));
        assert_eq!(seen.lock().unwrap().len(), 1);
    }
}
