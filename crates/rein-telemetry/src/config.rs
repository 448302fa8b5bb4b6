//! `TelemetryConfig`: where and how to export, from the standard OTEL_*
//! environment variables.
//!
//! Read: `OTEL_SDK_DISABLED`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_{ENDPOINT,PROTOCOL,HEADERS,TIMEOUT}` and their
//! `_TRACES_`/`_METRICS_` variants (a signal's own variable wins over the
//! general one), `OTEL_BSP_{SCHEDULE_DELAY,MAX_QUEUE_SIZE,MAX_EXPORT_BATCH_SIZE}`,
//! and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`. An empty
//! variable counts as unset, as the specification says.

mod parse;

use std::fmt;
use std::time::Duration;

use reqwest::Url;

use crate::{FailureReporter, TelemetryError};

/// The wire protocol of an OTLP exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Protobuf bodies POSTed over HTTP (the default; port 4318).
    HttpProtobuf,
    /// Unary gRPC calls over HTTP/2 (port 4317).
    Grpc,
}

impl Protocol {
    fn parse(var: &str, text: &str) -> Result<Protocol, TelemetryError> {
        match text.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(TelemetryError::InvalidProtocol {
                var: var.to_string(),
                value: other.to_string(),
            }),
        }
    }
}

/// Which data an exporter sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The word in variable names (`TRACES`) and in paths (`traces`).
    fn upper(self) -> &'static str {
        match self {
            Signal::Traces => "TRACES",
            Signal::Metrics => "METRICS",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Metrics => "metrics",
        }
    }

    /// The gRPC method of this signal's collector service.
    fn grpc_path(self) -> &'static str {
        match self {
            Signal::Traces => "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            Signal::Metrics => "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        }
    }
}

/// Where and how one signal is exported.
#[derive(Clone)]
pub struct SignalConfig {
    /// The URL requests go to: the HTTP path (`…/v1/traces`) or the gRPC
    /// method path (`…/TraceService/Export`) is already on it.
    pub url: Url,
    pub protocol: Protocol,
    /// Sent with every request (often an API key).
    pub headers: Vec<(String, String)>,
    /// A whole request's limit (`OTEL_EXPORTER_OTLP_TIMEOUT`, default 10 s).
    pub timeout: Duration,
}

impl fmt::Debug for SignalConfig {
    /// Header names only: their values can be API keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("SignalConfig")
            .field("url", &self.url.as_str())
            .field("protocol", &self.protocol)
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Everything `Telemetry::start` needs.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    pub traces: SignalConfig,
    pub metrics: SignalConfig,
    /// Resource attributes: `service.name` and the others every span and
    /// metric is tagged with.
    pub resource: Vec<(String, String)>,
    /// Record prompts, answers, tool arguments and results. Off unless
    /// asked for: they are the user's data.
    pub capture_content: bool,
    /// How often queued spans and metrics are sent (default 5 s).
    pub export_interval: Duration,
    /// Items waiting to be exported; more are dropped and counted
    /// (default 2048).
    pub max_queue: usize,
    /// Spans in one request; a full batch is sent at once (default 512).
    pub max_batch: usize,
    /// Where export failures are told (stderr by default).
    pub reporter: FailureReporter,
}

/// The default endpoints of the OTLP specification.
const DEFAULT_HTTP: &str = "http://localhost:4318";
const DEFAULT_GRPC: &str = "http://localhost:4317";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl TelemetryConfig {
    /// The configuration from the process environment. `None` when
    /// telemetry is not `enabled` or `OTEL_SDK_DISABLED=true`;
    /// `capture_content` is also switched on by
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
    pub fn from_env(
        enabled: bool,
        capture_content: bool,
    ) -> Result<Option<TelemetryConfig>, TelemetryError> {
        TelemetryConfig::from_vars(enabled, capture_content, |name| std::env::var(name).ok())
    }

    /// As `from_env`, reading variables through `var` (tests, or a front
    /// end that layers its own configuration over the environment).
    pub fn from_vars(
        enabled: bool,
        capture_content: bool,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<TelemetryConfig>, TelemetryError> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if !enabled || parse::is_true(var("OTEL_SDK_DISABLED").as_deref()) {
            return Ok(None);
        }
        let capture = capture_content
            || parse::is_true(var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").as_deref());
        let bsp = |name: &str, default: u64| -> Result<u64, TelemetryError> {
            var(name).map_or(Ok(default), |v| parse::number(name, &v))
        };
        Ok(Some(TelemetryConfig {
            traces: signal(Signal::Traces, &var)?,
            metrics: signal(Signal::Metrics, &var)?,
            resource: resource(&var)?,
            capture_content: capture,
            export_interval: Duration::from_millis(bsp("OTEL_BSP_SCHEDULE_DELAY", 5000)?.max(1)),
            max_queue: bsp("OTEL_BSP_MAX_QUEUE_SIZE", 2048)?.max(1) as usize,
            max_batch: bsp("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)?.max(1) as usize,
            reporter: FailureReporter::stderr(),
        }))
    }

    /// This configuration, telling export failures to `reporter`.
    pub fn with_reporter(mut self, reporter: FailureReporter) -> TelemetryConfig {
        self.reporter = reporter;
        self
    }
}

/// One signal's settings: its own variable, else the general one, else
/// the default.
fn signal(
    signal: Signal,
    var: &impl Fn(&str) -> Option<String>,
) -> Result<SignalConfig, TelemetryError> {
    let own = |what: &str| format!("OTEL_EXPORTER_OTLP_{}_{what}", signal.upper());
    let general = |what: &str| format!("OTEL_EXPORTER_OTLP_{what}");
    let pick = |what: &str| {
        let own = own(what);
        match var(&own) {
            Some(v) => Some((own, v)),
            None => var(&general(what)).map(|v| (general(what), v)),
        }
    };
    let protocol = match pick("PROTOCOL") {
        Some((name, v)) => Protocol::parse(&name, &v)?,
        None => Protocol::HttpProtobuf,
    };
    let url = if let Some(v) = var(&own("ENDPOINT")) {
        let url = parse::endpoint(&own("ENDPOINT"), &v)?;
        // A signal's own HTTP endpoint is the whole URL; gRPC has one
        // method path per service whatever the endpoint.
        match protocol {
            Protocol::HttpProtobuf => url,
            Protocol::Grpc => parse::join(&url, signal.grpc_path()),
        }
    } else {
        let base = match var(&general("ENDPOINT")) {
            Some(v) => parse::endpoint(&general("ENDPOINT"), &v)?,
            None => {
                let default = match protocol {
                    Protocol::HttpProtobuf => DEFAULT_HTTP,
                    Protocol::Grpc => DEFAULT_GRPC,
                };
                parse::endpoint("the default endpoint", default)?
            }
        };
        match protocol {
            Protocol::HttpProtobuf => parse::join(&base, &format!("/v1/{}", signal.as_str())),
            Protocol::Grpc => parse::join(&base, signal.grpc_path()),
        }
    };
    let headers = match pick("HEADERS") {
        Some((name, v)) => parse::headers(&name, &v)?,
        None => Vec::new(),
    };
    let timeout = match pick("TIMEOUT") {
        Some((name, v)) => parse::millis(&name, &v)?,
        None => DEFAULT_TIMEOUT,
    };
    Ok(SignalConfig {
        url,
        protocol,
        headers,
        timeout,
    })
}

/// `OTEL_RESOURCE_ATTRIBUTES`, then `service.name` from `OTEL_SERVICE_NAME`
/// (it wins), else `rein`; the SDK's own attributes are added.
fn resource(
    var: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, TelemetryError> {
    const VAR: &str = "OTEL_RESOURCE_ATTRIBUTES";
    let mut attrs = match var(VAR) {
        Some(v) => {
            parse::key_values(&v).map_err(|reason| TelemetryError::InvalidResourceAttributes {
                var: VAR.to_string(),
                reason,
            })?
        }
        None => Vec::new(),
    };
    let mut set =
        |key: &str, value: String, wins: bool| match attrs.iter_mut().find(|(k, _)| k == key) {
            Some(slot) if wins => slot.1 = value,
            Some(_) => {}
            None => attrs.push((key.to_string(), value)),
        };
    if let Some(name) = var("OTEL_SERVICE_NAME") {
        set("service.name", name, true);
    }
    set("service.name", "rein".to_string(), false);
    set(
        "service.version",
        env!("CARGO_PKG_VERSION").to_string(),
        false,
    );
    set("telemetry.sdk.name", "rein-telemetry".to_string(), true);
    set("telemetry.sdk.language", "rust".to_string(), true);
    set(
        "telemetry.sdk.version",
        env!("CARGO_PKG_VERSION").to_string(),
        true,
    );
    Ok(attrs)
}
