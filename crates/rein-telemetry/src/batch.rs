//! The exporter task: takes queued spans and measurements, and sends
//! spans in batches (when a batch fills, and every interval) and the
//! metrics' cumulative totals (every interval, when something changed).
//! On shutdown it sends what is left.

use std::sync::Arc;

use prost::Message as _;
use tokio::sync::{mpsc, oneshot};

use crate::config::{Signal, SignalConfig};
use crate::export::Exporter;
use crate::metrics::Aggregator;
use crate::proto::metrics::{ExportMetricsServiceRequest, ResourceMetrics, ScopeMetrics};
use crate::proto::trace::{ExportTraceServiceRequest, ResourceSpans, ScopeSpans, Span};
use crate::proto::{InstrumentationScope, KeyValue, Resource};
use crate::queue::{Counters, Item};
use crate::span::now_nanos;
use crate::{FailureReporter, TelemetryConfig};

/// The exporter task's state.
pub(crate) struct Worker {
    pub rx: mpsc::Receiver<Item>,
    pub exporter: Exporter,
    pub traces: SignalConfig,
    pub metrics: SignalConfig,
    pub resource: Resource,
    pub scope: InstrumentationScope,
    pub counters: Arc<Counters>,
    pub reporter: FailureReporter,
    pub aggregator: Aggregator,
    pub batch: Vec<Span>,
    pub max_batch: usize,
    pub interval: std::time::Duration,
}

impl Worker {
    pub fn new(
        config: &TelemetryConfig,
        rx: mpsc::Receiver<Item>,
        exporter: Exporter,
        counters: Arc<Counters>,
    ) -> Worker {
        let resource = Resource {
            attributes: config
                .resource
                .iter()
                .map(|(k, v)| KeyValue::string(k, v.as_str()))
                .collect(),
            dropped_attributes_count: 0,
        };
        Worker {
            rx,
            exporter,
            traces: config.traces.clone(),
            metrics: config.metrics.clone(),
            resource,
            scope: InstrumentationScope {
                name: "rein".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                ..Default::default()
            },
            counters,
            reporter: config.reporter.clone(),
            aggregator: Aggregator::new(now_nanos()),
            batch: Vec::new(),
            max_batch: config.max_batch,
            interval: config.export_interval,
        }
    }

    /// Run until `shutdown` fires (or its sender is dropped), then flush.
    pub async fn run(mut self, mut shutdown: oneshot::Receiver<()>) {
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                biased;
                _ = &mut shutdown => break,
                item = self.rx.recv() => match item {
                    Some(item) => self.take(item).await,
                    None => break,
                },
                _ = tick.tick() => {
                    self.export_spans().await;
                    self.export_metrics().await;
                }
            }
        }
        // Whatever observers queued before the end is sent; later pushes
        // find the queue closed and are ignored.
        self.rx.close();
        while let Some(item) = self.rx.recv().await {
            self.take(item).await;
        }
        self.export_spans().await;
        self.export_metrics().await;
    }

    async fn take(&mut self, item: Item) {
        match item {
            Item::Span(span) => {
                self.batch.push(span);
                if self.batch.len() >= self.max_batch {
                    self.export_spans().await;
                }
            }
            Item::Measurement(m) => self.aggregator.record(m),
        }
    }

    async fn export_spans(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.batch);
        let n = spans.len() as u64;
        let request = ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(self.resource.clone()),
                scope_spans: vec![ScopeSpans {
                    scope: Some(self.scope.clone()),
                    spans,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        // A failed batch is dropped, not retried: spans of a session are
        // worth less than a bounded memory and a prompt exit.
        match self
            .exporter
            .send(&self.traces, request.encode_to_vec())
            .await
        {
            Ok(()) => Counters::add(&self.counters.spans_exported, n),
            Err(failure) => {
                Counters::add(&self.counters.spans_failed, n);
                let (kind, line) = failure.report(Signal::Traces, &self.traces.url);
                self.reporter.report(&kind, &line);
            }
        }
    }

    async fn export_metrics(&mut self) {
        if !self.aggregator.changed() {
            return;
        }
        let metrics = self.aggregator.snapshot(now_nanos());
        let request = ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(self.resource.clone()),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(self.scope.clone()),
                    metrics,
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        match self
            .exporter
            .send(&self.metrics, request.encode_to_vec())
            .await
        {
            Ok(()) => Counters::add(&self.counters.metric_exports, 1),
            Err(failure) => {
                // Totals are cumulative: the next export carries them.
                self.aggregator.mark_changed();
                Counters::add(&self.counters.metric_exports_failed, 1);
                let (kind, line) = failure.report(Signal::Metrics, &self.metrics.url);
                self.reporter.report(&kind, &line);
            }
        }
    }
}
