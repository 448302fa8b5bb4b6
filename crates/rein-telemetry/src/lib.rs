//! OpenTelemetry for rein: spans and metrics in the GenAI semantic
//! conventions, built from rein's event stream and exported over OTLP
//! (HTTP/protobuf or gRPC).
//!
//! Off by default, and free when off: nothing here runs unless a front end
//! starts it. When on, the front end puts a [`RunObserver`] in front of its
//! event sink; the observer turns events into spans and measurements and
//! queues them without waiting, and a background task exports them.
//!
//! ```no_run
//! # async fn demo(
//! #     engine: rein_core::AgentEngine,
//! #     request: rein_core::RunRequest,
//! # ) -> Result<(), rein_telemetry::TelemetryError> {
//! use rein_telemetry::{Telemetry, TelemetryConfig};
//!
//! // At start-up: `None` unless switched on (and not OTEL_SDK_DISABLED).
//! let telemetry = TelemetryConfig::from_env(true, false)?
//!     .map(Telemetry::start)
//!     .transpose()?;
//! // Per run: the observer sees each event before the front end's sink.
//! let sink = rein_core::NullSink;
//! match &telemetry {
//!     Some(t) => {
//!         let mut sink = t.observer().wrap(sink);
//!         engine.run(request, Default::default(), &mut sink).await;
//!     }
//!     None => {
//!         let mut sink = sink;
//!         engine.run(request, Default::default(), &mut sink).await;
//!     }
//! }
//! // At exit: send what is left, waiting at most 3 s.
//! if let Some(t) = telemetry {
//!     t.shutdown(std::time::Duration::from_secs(3)).await;
//! }
//! # Ok(()) }
//! ```
//!
//! What is recorded:
//! - `invoke_agent rein` (INTERNAL), one trace per run, with the session id
//!   as `gen_ai.conversation.id`, the run's token totals, its stop reason
//!   (`rein.stop_reason`) and, for provider, harness and usage errors,
//!   `error.type` and an ERROR status;
//! - `chat {model}` (CLIENT) per model call, with its usage and finish
//!   reason;
//! - `execute_tool {tool}` (INTERNAL) per tool call, failed when the tool
//!   reported an error or the gate refused it;
//! - a sub-agent's run as `invoke_agent {agent}` under its `execute_tool
//!   task` span;
//! - metrics `gen_ai.client.token.usage`, `gen_ai.client.operation.duration`,
//!   `rein.tool.duration`, `rein.tool.errors` and `rein.cost.usd`
//!   (cumulative, see [Metrics](#metrics)).
//!
//! Prompts, answers, tool arguments and results are recorded only when
//! `capture_content` is on.
//!
//! # Metrics
//!
//! Cumulative temporality: each export carries the totals since telemetry
//! started, so a failed export loses nothing.

mod batch;
mod config;
mod content;
mod error;
mod export;
mod grpc;
mod metrics;
mod observer;
pub mod proto;
mod queue;
mod report;
mod run;
pub mod semconv;
mod span;
mod telemetry;

pub use config::{Protocol, Signal, SignalConfig, TelemetryConfig};
pub use error::TelemetryError;
pub use observer::{ObservedSink, Observers, RunObserver};
pub use report::{FailureReporter, stderr_line};
pub use telemetry::{Telemetry, TelemetryStats};
