//! `Telemetry`: the running exporter a front end starts once, makes
//! observers from, and shuts down at exit.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::batch::Worker;
use crate::export::Exporter;
use crate::queue::{Counters, Queue};
use crate::{FailureReporter, Observers, RunObserver, TelemetryConfig, TelemetryError};

/// Telemetry that is on: a background task exporting what observers queue.
#[derive(Debug)]
pub struct Telemetry {
    queue: Queue,
    capture: bool,
    counters: Arc<Counters>,
    reporter: FailureReporter,
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// What telemetry did, for a front end that wants to say so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TelemetryStats {
    pub spans_exported: u64,
    /// Spans lost because their export failed.
    pub spans_failed: u64,
    /// Spans and measurements dropped because the queue was full.
    pub dropped: u64,
    pub metric_exports: u64,
    pub metric_exports_failed: u64,
    /// False when `shutdown` ran out of time before everything was sent.
    pub flushed: bool,
}

impl Telemetry {
    /// Start the exporter task on the current tokio runtime.
    pub fn start(config: TelemetryConfig) -> Result<Telemetry, TelemetryError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| TelemetryError::NoRuntime)?;
        let exporter = Exporter::new(&config)?;
        let counters = Arc::new(Counters::default());
        let (tx, rx) = mpsc::channel(config.max_queue.max(1));
        let (shutdown, on_shutdown) = oneshot::channel();
        let worker = Worker::new(&config, rx, exporter, counters.clone());
        let task = runtime.spawn(worker.run(on_shutdown));
        Ok(Telemetry {
            queue: Queue::new(tx, counters.clone(), config.reporter.clone()),
            capture: config.capture_content,
            counters,
            reporter: config.reporter,
            shutdown,
            task,
        })
    }

    /// An observer for one run at a time (see `RunObserver`).
    pub fn observer(&self) -> RunObserver {
        RunObserver::new(self.queue.clone(), self.capture)
    }

    /// A cloneable maker of observers, for runs started away from here.
    /// (What its observers see after `shutdown` is not exported.)
    pub fn observers(&self) -> Observers {
        Observers::new(self.queue.clone(), self.capture)
    }

    /// The counts so far.
    pub fn stats(&self) -> TelemetryStats {
        read(&self.counters)
    }

    /// Send what is queued and stop, waiting at most `timeout` (then the
    /// rest is given up). Call it after the last run's `Stopped`, with the
    /// observers dropped (a dropped observer ends what it had open).
    pub async fn shutdown(self, timeout: Duration) -> TelemetryStats {
        let Telemetry {
            queue,
            counters,
            reporter,
            shutdown,
            mut task,
            ..
        } = self;
        drop(queue);
        let _ = shutdown.send(());
        let flushed = match tokio::time::timeout(timeout, &mut task).await {
            Ok(_) => true,
            Err(_) => {
                task.abort();
                reporter.report(
                    "shutdown-timeout",
                    &format!("gave up exporting after {} ms at exit", timeout.as_millis()),
                );
                false
            }
        };
        TelemetryStats {
            flushed,
            ..read(&counters)
        }
    }
}

fn read(c: &Counters) -> TelemetryStats {
    TelemetryStats {
        spans_exported: Counters::get(&c.spans_exported),
        spans_failed: Counters::get(&c.spans_failed),
        dropped: Counters::get(&c.dropped),
        metric_exports: Counters::get(&c.metric_exports),
        metric_exports_failed: Counters::get(&c.metric_exports_failed),
        flushed: false,
    }
}
