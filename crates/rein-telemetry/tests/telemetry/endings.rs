//! Runs that end badly: a provider error, a run that never started, an
//! observer dropped mid-run.

use rein_core::{Event, LedgerTotals, StopReason, Usage};
use rein_telemetry::proto::find;
use rein_telemetry::proto::trace::{Span, StatusCode};
use rein_telemetry::{Telemetry, semconv};

use crate::events::{SHUTDOWN, config, run_started, tool_started};
use crate::receiver::Receiver;

fn stop(reason: StopReason, error: &str) -> Event {
    Event::Stopped {
        reason,
        turns: 1,
        usage: Usage::default(),
        final_text: String::new(),
        error: Some(error.to_string()),
        totals: LedgerTotals::default(),
        refused: Vec::new(),
    }
}

fn error_type(span: &Span) -> Option<&str> {
    find(&span.attributes, semconv::ERROR_TYPE).and_then(|kv| kv.as_str())
}

fn is_error(span: &Span) -> bool {
    span.status
        .as_ref()
        .is_some_and(|s| s.code == StatusCode::Error as i32)
}

#[tokio::test]
async fn errors_and_unfinished_runs_end_their_spans_as_errors() {
    let receiver = Receiver::start(200).await;
    let endpoint = receiver.endpoint();
    let (config, _lines) = config(false, &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())]);
    let telemetry = Telemetry::start(config).unwrap();

    // A model call that failed after a retry.
    let mut observer = telemetry.observer();
    for event in [
        run_started("sess-failed"),
        Event::TurnStarted { turn: 1 },
        Event::Retry {
            attempt: 1,
            max_retries: 3,
            delay_ms: 10,
            error: "HTTP 503".to_string(),
            discarded: false,
        },
        stop(StopReason::ProviderError, "the provider answered HTTP 503"),
    ] {
        observer.observe(&event);
    }
    // A run that could not start: only its stop.
    observer.observe(&stop(StopReason::UsageError, "unknown session"));
    // A run whose task went away with a call running.
    observer.observe(&run_started("sess-dropped"));
    observer.observe(&tool_started("call_1", "shell", "{}"));
    drop(observer);
    telemetry.shutdown(SHUTDOWN).await;

    let spans = receiver.spans();
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(roots.len(), 3, "three runs, three traces");
    assert!(roots.iter().all(|r| is_error(r)));
    let traces: std::collections::HashSet<_> = roots.iter().map(|r| &r.trace_id).collect();
    assert_eq!(traces.len(), 3);

    let failed = roots
        .iter()
        .find(|r| {
            find(&r.attributes, semconv::CONVERSATION_ID).and_then(|kv| kv.as_str())
                == Some("sess-failed")
        })
        .unwrap();
    assert_eq!(error_type(failed), Some("provider_error"));
    // Capture is off: the provider's text may echo the prompt.
    assert_eq!(
        failed.status.as_ref().unwrap().message,
        "the run stopped: provider_error"
    );
    let chat = spans.iter().find(|s| s.name.starts_with("chat ")).unwrap();
    assert_eq!(chat.parent_span_id, failed.span_id);
    assert_eq!(error_type(chat), Some("provider_error"));
    assert_eq!(
        find(&chat.attributes, semconv::REIN_RETRIES).and_then(|kv| kv.as_int()),
        Some(1)
    );

    assert!(roots.iter().any(|r| error_type(r) == Some("usage_error")));

    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool shell")
        .unwrap();
    assert_eq!(error_type(tool), Some("unfinished"));
    assert!(is_error(tool));
}
