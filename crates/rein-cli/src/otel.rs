//! OpenTelemetry for `rein exec`, `rein serve`, `rein acp` and the
//! interactive app: off unless `--otel` or `REIN_OTEL=1`; where to send it
//! comes from the standard `OTEL_*` variables (see [`rein_telemetry`]).
//! Contents (prompts, answers, tool arguments and results) only with
//! `--otel-content` or
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::anyhow;
use clap::Args;
use rein_core::Event;
use rein_telemetry::{FailureReporter, Observers, RunObserver, Telemetry, TelemetryConfig};
use tokio::sync::mpsc;

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
    /// Put prompts, answers, tool arguments and results in the spans
    /// (turns telemetry on).
    #[arg(long)]
    pub otel_content: bool,
}

/// Telemetry started when asked for, export failures told on stderr; a
/// malformed `OTEL_*` variable is a usage error (one line, never a
/// header's value).
pub fn start(args: OtelArgs) -> Result<Option<Telemetry>, Failure> {
    start_reporting(args, FailureReporter::stderr())
}

/// As [`start`], export failures told to `reporter`.
pub fn start_reporting(
    args: OtelArgs,
    reporter: FailureReporter,
) -> Result<Option<Telemetry>, Failure> {
    // `--otel-content` asks for telemetry too: contents without spans
    // would be nothing.
    let enabled = args.otel
        || args.otel_content
        || std::env::var("REIN_OTEL")
            .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true"));
    let config = TelemetryConfig::from_env(enabled, args.otel_content)
        .map_err(|e| Failure::usage(anyhow!("telemetry: {e}")))?;
    config
        .map(|c| Telemetry::start(c.with_reporter(reporter)))
        .transpose()
        .map_err(|e| Failure::harness(anyhow!("telemetry: {e}")))
}

/// Send what is left, waiting at most a few seconds.
pub async fn finish(telemetry: Option<Telemetry>) {
    if let Some(t) = telemetry {
        t.shutdown(FLUSH).await;
    }
}

/// Show `event` to the run's observer, when there is one.
pub fn observe(observer: &mut Option<RunObserver>, event: &Event) {
    if let Some(o) = observer.as_mut() {
        o.observe(event);
    }
}

/// Export failures for the interactive app, which owns the terminal: the
/// first becomes one notice in the app (the lines come out of the
/// receiver); later ones go to stderr, which the app points at its log
/// file while it runs. Once the app has closed (the receiver dropped),
/// they go to stderr as `rein exec`'s do.
pub fn app_reporter() -> (FailureReporter, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (FailureReporter::new(first_as_notice(tx)), rx)
}

/// Writes a reporter's lines: the first into `notices`, the rest (and the
/// first, when nobody reads `notices` any more) to stderr.
fn first_as_notice(notices: mpsc::UnboundedSender<String>) -> impl Fn(&str) + Send + Sync {
    let noticed = AtomicBool::new(false);
    move |line| {
        // Only the first failure of any kind is a notice.
        let first = !noticed.swap(true, Ordering::SeqCst);
        if !(first && notices.send(app_notice(line)).is_ok()) {
            eprintln!("{}", rein_telemetry::stderr_line(line));
        }
    }
}

/// A failure's reason as the app's notice: it says export failed, and
/// that no more will be shown.
fn app_notice(reason: &str) -> String {
    format!("telemetry export failed: {reason} (further export failures are not shown)")
}

/// The app's watcher of each run: a telemetry observer of its own, which
/// sees sub-agents' events nested in the run's.
pub fn app_watch(observers: Observers) -> rein_tui::WatchRuns {
    Arc::new(move || {
        let mut observer = observers.observer();
        Box::new(move |event: &Event| observer.observe(event)) as rein_tui::RunWatcher
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_notice_says_export_failed_and_that_no_more_are_shown() {
        let reason = "cannot export traces to http://127.0.0.1:9/v1/traces: connection refused";
        assert_eq!(
            app_notice(reason),
            "telemetry export failed: cannot export traces to http://127.0.0.1:9/v1/traces: \
             connection refused (further export failures are not shown)"
        );
    }

    #[test]
    fn the_app_hears_of_the_first_failure_only() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let write = first_as_notice(tx);
        write("cannot export traces to X: refused");
        write("cannot export metrics to Y: refused");
        let notice = rx.try_recv().unwrap();
        assert!(notice.starts_with("telemetry export failed: cannot export traces to X"));
        assert!(rx.try_recv().is_err(), "a second notice");
    }
}
