//! `TelemetryError`: what can stop telemetry from starting. Export
//! failures are never errors of the run; they are reported (see
//! `report`) and the data is dropped.

/// Why telemetry could not be configured or started. Each message is one
/// line and never quotes a header's value (headers hold API keys).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// An endpoint variable is not an absolute `http://` or `https://` URL.
    #[error("{var} is not an http:// or https:// URL: {reason}")]
    InvalidEndpoint { var: String, reason: String },
    /// A protocol variable names a protocol rein does not speak.
    #[error("{var} must be `http/protobuf` or `grpc`, not `{value}`")]
    InvalidProtocol { var: String, value: String },
    /// A headers variable is not a comma-separated list of `key=value`.
    #[error("{var}: {reason}")]
    InvalidHeaders { var: String, reason: String },
    /// `OTEL_RESOURCE_ATTRIBUTES` is not a list of `key=value`.
    #[error("{var}: {reason}")]
    InvalidResourceAttributes { var: String, reason: String },
    /// A timeout or size variable is not a whole number.
    #[error("{var} must be a whole number, not `{value}`")]
    InvalidNumber { var: String, value: String },
    /// `Telemetry::start` was called outside a tokio runtime.
    #[error("telemetry needs a tokio runtime to export from")]
    NoRuntime,
    /// The HTTP client could not be built.
    #[error("cannot set up HTTP for telemetry: {0}")]
    Http(String),
}
