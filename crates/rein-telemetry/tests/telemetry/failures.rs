//! A collector that is down, failing, or stuck: the run never waits, the
//! queue stays bounded, shutdown keeps its deadline, and each kind of
//! failure is said once, without the headers' values.

use std::time::{Duration, Instant};

use rein_telemetry::Telemetry;
use tokio::net::TcpListener;

use crate::events::{Lines, config, scenario};
use crate::grpc_receiver::GrpcReceiver;
use crate::receiver::Receiver;

/// Feed the scenario `runs` times; returns how long observing took.
fn feed(telemetry: &Telemetry, runs: usize) -> Duration {
    let events = scenario();
    let started = Instant::now();
    for _ in 0..runs {
        let mut observer = telemetry.observer();
        for event in &events {
            observer.observe(event);
        }
    }
    started.elapsed()
}

fn said(lines: &Lines) -> Vec<String> {
    lines.lock().unwrap().clone()
}

fn assert_said_once_each(lines: &[String]) {
    let mut unique = lines.to_vec();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "{lines:#?}");
    for line in lines {
        assert!(!line.contains("sekrit"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }
}

/// A port nothing listens on.
async fn closed_port() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

#[tokio::test]
async fn a_collector_that_is_down_costs_the_run_nothing_and_is_said_once() {
    let endpoint = closed_port().await;
    let (config, lines) = config(
        false,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=sekrit"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "64"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "16"),
            ("OTEL_BSP_SCHEDULE_DELAY", "20"),
        ],
    );
    let telemetry = Telemetry::start(config).unwrap();
    // 200 runs: about 4,000 spans and measurements into a queue of 64.
    let took = feed(&telemetry, 200);
    assert!(took < Duration::from_secs(2), "observing took {took:?}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let stats = telemetry.shutdown(Duration::from_secs(3)).await;
    assert!(started.elapsed() < Duration::from_millis(3500));
    assert!(stats.dropped > 0, "{stats:?}");
    assert!(stats.spans_failed > 0, "{stats:?}");
    assert_eq!(stats.spans_exported, 0);
    let lines = said(&lines);
    assert_said_once_each(&lines);
    let traces: Vec<_> = lines
        .iter()
        .filter(|l| l.contains("export traces"))
        .collect();
    assert_eq!(traces.len(), 1, "{lines:#?}");
    assert!(traces[0].contains("cannot connect"), "{}", traces[0]);
    assert!(
        lines.iter().any(|l| l.contains("queue is full")),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn an_http_500_is_said_once_however_often_it_happens() {
    let receiver = Receiver::start(500).await;
    let endpoint = receiver.endpoint();
    let (config, lines) = config(
        false,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=sekrit"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
        ],
    );
    let telemetry = Telemetry::start(config).unwrap();
    feed(&telemetry, 3);
    let stats = telemetry.shutdown(Duration::from_secs(5)).await;
    assert!(stats.flushed);
    assert_eq!(stats.spans_failed, 33);
    assert!(receiver.requests().len() > 2, "several exports failed");
    let lines = said(&lines);
    assert_said_once_each(&lines);
    assert_eq!(
        lines.len(),
        2,
        "one for traces, one for metrics: {lines:#?}"
    );
    assert!(lines[0].contains("HTTP 500"), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("/v1/metrics")));
}

#[tokio::test]
async fn a_grpc_unavailable_status_is_a_failure_said_once() {
    let receiver = GrpcReceiver::start(14).await;
    let endpoint = receiver.endpoint();
    let (config, lines) = config(
        false,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=sekrit"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
        ],
    );
    let telemetry = Telemetry::start(config).unwrap();
    feed(&telemetry, 2);
    let stats = telemetry.shutdown(Duration::from_secs(5)).await;
    assert_eq!((stats.spans_exported, stats.spans_failed), (0, 22));
    assert_eq!(stats.metric_exports_failed, 1);
    let lines = said(&lines);
    assert_said_once_each(&lines);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].contains("grpc-status 14: collector unavailable"),
        "{lines:#?}"
    );
}

#[tokio::test]
async fn shutdown_keeps_its_deadline_when_the_collector_never_answers() {
    // Accepts connections and never reads or answers.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            open.push(stream);
        }
    });
    let (config, lines) = config(false, &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())]);
    let telemetry = Telemetry::start(config).unwrap();
    feed(&telemetry, 1);
    let started = Instant::now();
    let stats = telemetry.shutdown(Duration::from_millis(300)).await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(800), "shutdown took {took:?}");
    assert!(!stats.flushed);
    let lines = said(&lines);
    assert!(
        lines.iter().any(|l| l.contains("gave up exporting")),
        "{lines:#?}"
    );
    held.abort();
}
