//! The bounded queue between observers (on the run's side) and the
//! exporter task: a push never waits; a full queue drops and counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::mpsc;

use crate::FailureReporter;
use crate::metrics::Measurement;
use crate::proto::trace::Span;

/// What observers hand the exporter.
#[derive(Debug)]
pub(crate) enum Item {
    Span(Span),
    Measurement(Measurement),
}

/// Counts shared by the queue, the exporter and `Telemetry`.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub spans_exported: AtomicU64,
    /// Spans lost to a failed export.
    pub spans_failed: AtomicU64,
    /// Items (spans or measurements) dropped because the queue was full.
    pub dropped: AtomicU64,
    pub metric_exports: AtomicU64,
    pub metric_exports_failed: AtomicU64,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// The sending side, one clone per observer.
#[derive(Debug, Clone)]
pub(crate) struct Queue {
    tx: mpsc::Sender<Item>,
    counters: Arc<Counters>,
    reporter: FailureReporter,
}

impl Queue {
    pub fn new(tx: mpsc::Sender<Item>, counters: Arc<Counters>, reporter: FailureReporter) -> Self {
        Queue {
            tx,
            counters,
            reporter,
        }
    }

    /// Queue `item` without waiting. When the exporter is behind (a slow
    /// collector) the item is dropped and counted: the run never waits for
    /// telemetry. After shutdown items are silently ignored.
    pub fn push(&self, item: Item) {
        match self.tx.try_send(item) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                // Said once, at the first drop: nothing more on the run's
                // own thread while the collector stays down.
                if self
                    .counters
                    .dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    == 0
                {
                    self.reporter.report(
                    "queue-full",
                        "the export queue is full (the collector is slow or down); dropping spans and metrics",
                    );
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}
