//! OpenTelemetry for `rein exec` and `rein serve`: off unless `--otel`
//! or `REIN_OTEL=1`; where to send it comes from the standard `OTEL_*`
//! variables (see [`rein_telemetry`]). Contents (prompts, answers, tool
//! arguments and results) only with `--otel-content` or
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.

use std::time::Duration;

use anyhow::anyhow;
use clap::Args;
use rein_telemetry::{Telemetry, TelemetryConfig};

use crate::exit::Failure;

/// How long the last spans may take to leave at exit.
const FLUSH: Duration = Duration::from_secs(3);

/// The telemetry flags.
#[derive(Debug, Args, Default, Clone, Copy)]
pub struct OtelArgs {
    /// Export traces and metrics over OTLP (to `OTEL_EXPORTER_OTLP_ENDPOINT`,
    /// default localhost:4318); also `REIN_OTEL=1`.
    #[arg(long)]
    pub otel: bool,
    /// Put prompts, answers, tool arguments and results in the spans.
    #[arg(long, requires = "otel")]
    pub otel_content: bool,
}

/// Telemetry started when asked for; a malformed `OTEL_*` variable is a
/// usage error (one line, never a header's value).
pub fn start(args: OtelArgs) -> Result<Option<Telemetry>, Failure> {
    let enabled =
        args.otel || std::env::var("REIN_OTEL").is_ok_and(|v| matches!(v.as_str(), "1" | "true"));
    let config = TelemetryConfig::from_env(enabled, args.otel_content)
        .map_err(|e| Failure::usage(anyhow!("telemetry: {e}")))?;
    config
        .map(Telemetry::start)
        .transpose()
        .map_err(|e| Failure::harness(anyhow!("telemetry: {e}")))
}

/// Send what is left, waiting at most a few seconds.
pub async fn finish(telemetry: Option<Telemetry>) {
    if let Some(t) = telemetry {
        t.shutdown(FLUSH).await;
    }
}
