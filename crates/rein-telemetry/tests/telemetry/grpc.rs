//! The scenario exported over gRPC (h2c) to a real HTTP/2 server.

use rein_telemetry::Telemetry;

use crate::events::{SHUTDOWN, config, scenario};
use crate::grpc_receiver::GrpcReceiver;

#[tokio::test]
async fn grpc_export_sends_framed_requests_to_both_services() {
    let receiver = GrpcReceiver::start(0).await;
    let endpoint = receiver.endpoint();
    let (config, lines) = config(
        false,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    let telemetry = Telemetry::start(config).unwrap();
    let mut observer = telemetry.observer();
    for event in scenario() {
        observer.observe(&event);
    }
    drop(observer);
    let stats = telemetry.shutdown(SHUTDOWN).await;
    assert!(stats.flushed);
    assert!(lines.lock().unwrap().is_empty(), "{lines:?}");
    assert_eq!((stats.spans_exported, stats.spans_failed), (11, 0));
    assert_eq!((stats.metric_exports, stats.metric_exports_failed), (1, 0));
    let calls = receiver.calls.lock().unwrap();
    assert!(calls.faults.is_empty(), "{:?}", calls.faults);
    assert_eq!(calls.metrics.len(), 1);
    drop(calls);
    let spans = receiver.spans();
    assert_eq!(spans.len(), 11);
    assert!(spans.iter().any(|s| s.name == "invoke_agent explore"));
}
