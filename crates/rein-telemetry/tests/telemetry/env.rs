//! The OTEL_* variables: defaults, overrides, headers, errors, the off
//! switches.

use std::collections::HashMap;
use std::time::Duration;

use rein_telemetry::{Protocol, TelemetryConfig, TelemetryError};

fn parse(vars: &[(&str, &str)]) -> Result<Option<TelemetryConfig>, TelemetryError> {
    let vars: HashMap<&str, &str> = vars.iter().copied().collect();
    TelemetryConfig::from_vars(true, false, |k| vars.get(k).map(|v| v.to_string()))
}

fn config(vars: &[(&str, &str)]) -> TelemetryConfig {
    parse(vars).unwrap().unwrap()
}

fn resource<'a>(c: &'a TelemetryConfig, key: &str) -> Option<&'a str> {
    c.resource
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_defaults_are_the_specifications() {
    let c = config(&[]);
    assert_eq!(c.traces.url.as_str(), "http://localhost:4318/v1/traces");
    assert_eq!(c.metrics.url.as_str(), "http://localhost:4318/v1/metrics");
    assert_eq!(c.traces.protocol, Protocol::HttpProtobuf);
    assert_eq!(c.traces.timeout, Duration::from_secs(10));
    assert!(c.traces.headers.is_empty());
    assert!(!c.capture_content);
    assert_eq!(resource(&c, "service.name"), Some("rein"));
    assert_eq!(c.export_interval, Duration::from_secs(5));
    assert_eq!((c.max_queue, c.max_batch), (2048, 512));

    let grpc = config(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
    assert_eq!(grpc.traces.protocol, Protocol::Grpc);
    assert_eq!(
        grpc.traces.url.as_str(),
        "http://localhost:4317/opentelemetry.proto.collector.trace.v1.TraceService/Export"
    );
    assert_eq!(
        grpc.metrics.url.as_str(),
        "http://localhost:4317/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
    );
}

#[test]
fn a_signals_own_variables_win_over_the_general_ones() {
    let c = config(&[
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "https://collector.example:4318/otlp/",
        ),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://traces.example:9999/custom/path",
        ),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ("OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "700"),
        ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "a=1"),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"),
    ]);
    // A signal's own HTTP endpoint is used as it is.
    assert_eq!(
        c.traces.url.as_str(),
        "http://traces.example:9999/custom/path"
    );
    assert_eq!(c.traces.timeout, Duration::from_millis(2500));
    assert_eq!(c.traces.headers, vec![("b".to_string(), "2".to_string())]);
    assert_eq!(c.metrics.protocol, Protocol::Grpc);
    assert_eq!(
        c.metrics.url.as_str(),
        "https://collector.example:4318/otlp/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
    );
    assert_eq!(c.metrics.timeout, Duration::from_millis(700));
    assert_eq!(c.metrics.headers, vec![("a".to_string(), "1".to_string())]);

    let base = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/otlp/")]);
    assert_eq!(base.metrics.url.as_str(), "http://c:4318/otlp/v1/metrics");
}

#[test]
fn headers_are_percent_decoded_and_never_shown() {
    let c = config(&[(
        "OTEL_EXPORTER_OTLP_HEADERS",
        " api-key = abc%3D%3D , x-team=dev%20ops,,",
    )]);
    assert_eq!(
        c.traces.headers,
        vec![
            ("api-key".to_string(), "abc==".to_string()),
            ("x-team".to_string(), "dev ops".to_string()),
        ]
    );
    let shown = format!("{c:?}");
    assert!(
        shown.contains("api-key") && !shown.contains("abc=="),
        "{shown}"
    );
}

#[test]
fn malformed_variables_are_one_line_errors_that_do_not_quote_secrets() {
    let err = parse(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).unwrap_err();
    assert!(matches!(err, TelemetryError::InvalidProtocol { .. }));
    assert_eq!(
        err.to_string(),
        "OTEL_EXPORTER_OTLP_PROTOCOL must be `http/protobuf` or `grpc`, not `http/json`"
    );
    let err = parse(&[("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "udp")]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
    );

    for bad in ["localhost:4318", "ftp://c/x", "not a url"] {
        let err = parse(&[("OTEL_EXPORTER_OTLP_ENDPOINT", bad)]).unwrap_err();
        assert!(
            matches!(err, TelemetryError::InvalidEndpoint { .. }),
            "{bad}: {err}"
        );
        assert!(!err.to_string().contains('\n'));
    }

    let err = parse(&[("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s3cret,broken")]).unwrap_err();
    assert!(matches!(err, TelemetryError::InvalidHeaders { .. }));
    assert!(!err.to_string().contains("s3cret"), "{err}");
    let err = parse(&[("OTEL_EXPORTER_OTLP_HEADERS", "api-key=bad%0Avalue-s3cret")]).unwrap_err();
    assert!(!err.to_string().contains("s3cret"), "{err}");

    let err = parse(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]).unwrap_err();
    assert!(matches!(err, TelemetryError::InvalidNumber { .. }));
}

#[test]
fn telemetry_is_off_unless_enabled_and_not_disabled_by_the_sdk_switch() {
    assert!(
        TelemetryConfig::from_vars(false, true, |_| None)
            .unwrap()
            .is_none()
    );
    assert!(parse(&[("OTEL_SDK_DISABLED", "TRUE")]).unwrap().is_none());
    assert!(parse(&[("OTEL_SDK_DISABLED", "false")]).unwrap().is_some());
    // Disabled wins even over a malformed variable.
    assert!(
        parse(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "x")
        ])
        .unwrap()
        .is_none()
    );
}

#[test]
fn content_capture_follows_the_flag_or_the_standard_variable() {
    assert!(!config(&[]).capture_content);
    let c = config(&[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "True")]);
    assert!(c.capture_content);
    let on = TelemetryConfig::from_vars(true, true, |_| None)
        .unwrap()
        .unwrap();
    assert!(on.capture_content);
}

#[test]
fn the_service_name_variable_wins_over_resource_attributes() {
    let c = config(&[
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "service.name=x,deployment.environment=dev%20box",
        ),
        ("OTEL_SERVICE_NAME", "my-agent"),
    ]);
    assert_eq!(resource(&c, "service.name"), Some("my-agent"));
    assert_eq!(resource(&c, "deployment.environment"), Some("dev box"));
    let c = config(&[("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs")]);
    assert_eq!(resource(&c, "service.name"), Some("from-attrs"));
    assert!(parse(&[("OTEL_RESOURCE_ATTRIBUTES", "oops")]).is_err());
}
