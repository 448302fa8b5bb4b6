//! The scenario run exported over HTTP/protobuf: the spans' tree, ids,
//! attributes and statuses, content only when captured, and the metrics.

use rein_telemetry::proto::metrics::{Data, Metric, NumberValue};
use rein_telemetry::proto::trace::{Span, SpanKind, StatusCode};
use rein_telemetry::proto::{KeyValue, find};
use rein_telemetry::{Telemetry, semconv};

use crate::events::{PROMPT, SECRET_ARGS, SHUTDOWN, config, scenario};
use crate::receiver::Receiver;

/// Run the scenario through an observer into a fresh receiver.
pub(crate) async fn exported(capture: bool) -> Receiver {
    let receiver = Receiver::start(200).await;
    let endpoint = receiver.endpoint();
    let (config, lines) = config(
        capture,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=sekrit%3D"),
            ("OTEL_SERVICE_NAME", "rein-test"),
        ],
    );
    let telemetry = Telemetry::start(config).unwrap();
    let mut observer = telemetry.observer();
    for event in scenario() {
        observer.observe(&event);
    }
    drop(observer);
    let stats = telemetry.shutdown(SHUTDOWN).await;
    assert!(stats.flushed, "{stats:?}");
    assert_eq!(
        (stats.spans_exported, stats.spans_failed, stats.dropped),
        (11, 0, 0)
    );
    assert!(lines.lock().unwrap().is_empty(), "{lines:?}");
    receiver
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a KeyValue> {
    find(&span.attributes, key)
}

fn text<'a>(span: &'a Span, key: &str) -> &'a str {
    attr(span, key).and_then(|kv| kv.as_str()).unwrap_or("")
}

fn int(span: &Span, key: &str) -> i64 {
    attr(span, key)
        .and_then(|kv| kv.as_int())
        .unwrap_or_else(|| panic!("{} has no {key}", span.name))
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "{name} in {:?}", names(spans));
    found[0]
}

fn names(spans: &[Span]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

fn failed(span: &Span) -> bool {
    span.status
        .as_ref()
        .is_some_and(|s| s.code == StatusCode::Error as i32)
}

#[tokio::test]
async fn a_run_is_one_trace_of_genai_spans_parented_by_the_events() {
    let receiver = exported(false).await;
    assert_sent_as_protobuf_with_the_headers_and_resource(&receiver);
    let spans = receiver.spans();
    assert_one_trace(&spans);
    let root = assert_the_run_span(&spans);
    assert_the_runs_model_calls(&spans, root);
    assert_the_concurrent_tool_calls(&spans, root);
    assert_the_sub_agent_sits_under_its_task_call(&spans);
    assert_no_content_without_capture(&spans);
}

/// Traces reached `/v1/traces`; every request was protobuf with the
/// configured header, under the configured service name.
fn assert_sent_as_protobuf_with_the_headers_and_resource(receiver: &Receiver) {
    let requests = receiver.requests();
    let traces: Vec<_> = requests.iter().filter(|r| r.path == "/v1/traces").collect();
    assert!(!traces.is_empty(), "{requests:?}");
    for r in &requests {
        assert_eq!(r.content_type, "application/x-protobuf");
        assert!(
            r.headers.contains(&("x-api-key".into(), "sekrit=".into())),
            "{r:?}"
        );
    }
    let resource = receiver.received.lock().unwrap().traces[0].resource_spans[0]
        .resource
        .clone()
        .unwrap();
    assert_eq!(
        find(&resource.attributes, "service.name").and_then(|kv| kv.as_str()),
        Some("rein-test")
    );
}

/// Eleven spans of one trace, with well-formed ids and times.
fn assert_one_trace(spans: &[Span]) {
    assert_eq!(spans.len(), 11, "{:?}", names(spans));
    let trace = &spans[0].trace_id;
    assert_eq!(trace.len(), 16);
    assert!(spans.iter().all(|s| &s.trace_id == trace), "one trace");
    assert!(spans.iter().all(|s| s.span_id.len() == 8));
    assert!(
        spans
            .iter()
            .all(|s| s.end_time_unix_nano >= s.start_time_unix_nano)
    );
}

/// The run is the one root span, with the run's attributes and usage.
fn assert_the_run_span(spans: &[Span]) -> &Span {
    let root = one(spans, "invoke_agent rein");
    assert!(root.parent_span_id.is_empty());
    assert_eq!(
        spans.iter().filter(|s| s.parent_span_id.is_empty()).count(),
        1
    );
    assert_eq!(root.kind, SpanKind::Internal as i32);
    assert_eq!(text(root, semconv::OPERATION_NAME), "invoke_agent");
    assert_eq!(text(root, semconv::AGENT_NAME), "rein");
    assert_eq!(text(root, semconv::PROVIDER_NAME), "openai");
    assert_eq!(text(root, semconv::REQUEST_MODEL), "gpt-test");
    assert_eq!(text(root, semconv::CONVERSATION_ID), "sess-1");
    assert_eq!(text(root, semconv::REIN_STOP_REASON), "completed");
    assert_eq!(int(root, semconv::USAGE_INPUT_TOKENS), 3400);
    assert_eq!(int(root, semconv::USAGE_OUTPUT_TOKENS), 170);
    assert_eq!(int(root, semconv::USAGE_CACHE_READ_INPUT_TOKENS), 2200);
    assert!(!failed(root));
    root
}

/// Two model calls of the run, under it, with their usage.
fn assert_the_runs_model_calls(spans: &[Span], root: &Span) {
    let chats = named(spans, "chat gpt-test");
    assert_eq!(chats.len(), 4, "two of the run, two of the sub-agent");
    let mine: Vec<_> = chats
        .iter()
        .filter(|c| c.parent_span_id == root.span_id)
        .collect();
    assert_eq!(mine.len(), 2);
    let first = mine
        .iter()
        .find(|c| int(c, semconv::REIN_TURN) == 1)
        .unwrap();
    assert_eq!(first.kind, SpanKind::Client as i32);
    assert_eq!(text(first, semconv::OPERATION_NAME), "chat");
    assert_eq!(int(first, semconv::USAGE_INPUT_TOKENS), 1200);
    assert_eq!(int(first, semconv::USAGE_OUTPUT_TOKENS), 80);
    assert_eq!(int(first, semconv::USAGE_CACHE_READ_INPUT_TOKENS), 1000);
    assert_eq!(int(first, semconv::USAGE_REASONING_OUTPUT_TOKENS), 20);
    let reasons = attr(first, semconv::RESPONSE_FINISH_REASONS).unwrap();
    assert_eq!(
        format!("{:?}", reasons.value),
        format!(
            "{:?}",
            KeyValue::strings("x", ["tool_calls".to_string()]).value
        )
    );
}

/// The concurrent calls: each its own span under the run, by call id,
/// failed with the kind of its failure.
fn assert_the_concurrent_tool_calls(spans: &[Span], root: &Span) {
    for (name, id) in [
        ("execute_tool read", "call_read"),
        ("execute_tool shell", "call_sh"),
        ("execute_tool write", "call_write"),
        ("execute_tool task", "call_task"),
    ] {
        let tool = one(spans, name);
        assert_eq!(tool.parent_span_id, root.span_id, "{name}");
        assert_eq!(text(tool, semconv::TOOL_CALL_ID), id);
        assert_eq!(text(tool, semconv::OPERATION_NAME), "execute_tool");
    }
    let read = one(spans, "execute_tool read");
    assert!(!failed(read) && attr(read, semconv::ERROR_TYPE).is_none());
    let shell = one(spans, "execute_tool shell");
    assert!(failed(shell));
    assert_eq!(text(shell, semconv::ERROR_TYPE), "tool_error");
    let write = one(spans, "execute_tool write");
    assert!(failed(write));
    assert_eq!(text(write, semconv::ERROR_TYPE), "permission_denied");
}

/// The sub-agent's run sits under the task call that started it, with its
/// own tool and model calls under it.
fn assert_the_sub_agent_sits_under_its_task_call(spans: &[Span]) {
    let chats = named(spans, "chat gpt-test");
    let task = one(spans, "execute_tool task");
    let child = one(spans, "invoke_agent explore");
    assert_eq!(child.parent_span_id, task.span_id);
    assert_eq!(text(child, semconv::AGENT_NAME), "explore");
    assert_eq!(text(child, semconv::CONVERSATION_ID), "sess-child");
    let grep = one(spans, "execute_tool grep");
    assert_eq!(grep.parent_span_id, child.span_id);
    assert_eq!(
        chats
            .iter()
            .filter(|c| c.parent_span_id == child.span_id)
            .count(),
        2
    );
}

/// No content attribute, and no file name from the tool arguments, when
/// content is not captured.
fn assert_no_content_without_capture(spans: &[Span]) {
    for span in spans {
        for key in semconv::CONTENT_ATTRIBUTES {
            assert!(attr(span, key).is_none(), "{} has {key}", span.name);
        }
        for kv in &span.attributes {
            let value = format!("{:?}", kv.value);
            assert!(!value.contains("calc.py"), "{} leaks {value}", span.name);
        }
    }
}

#[tokio::test]
async fn captured_content_holds_the_prompt_the_answer_and_the_tool_arguments() {
    let spans = exported(true).await.spans();
    let root = one(&spans, "invoke_agent rein");
    assert!(text(root, semconv::INPUT_MESSAGES).contains(PROMPT));
    assert!(text(root, semconv::OUTPUT_MESSAGES).contains("Fixed."));
    let read = one(&spans, "execute_tool read");
    assert_eq!(text(read, semconv::TOOL_CALL_ARGUMENTS), SECRET_ARGS);
    assert_eq!(text(read, semconv::TOOL_CALL_RESULT), "def add(a, b): ...");
    let child = one(&spans, "invoke_agent explore");
    assert_eq!(
        text(child, semconv::AGENT_DESCRIPTION),
        "find the callers of add"
    );
}

fn metric<'a>(metrics: &'a [Metric], name: &str) -> &'a Metric {
    metrics.iter().find(|m| m.name == name).unwrap_or_else(|| {
        panic!(
            "no {name} in {:?}",
            metrics.iter().map(|m| &m.name).collect::<Vec<_>>()
        )
    })
}

fn has(attrs: &[KeyValue], key: &str, value: &str) -> bool {
    find(attrs, key).and_then(|kv| kv.as_str()) == Some(value)
}

#[tokio::test]
async fn metrics_count_tokens_durations_tool_errors_and_cost() {
    let receiver = exported(false).await;
    assert!(receiver.requests().iter().any(|r| r.path == "/v1/metrics"));
    let metrics = receiver.latest_metrics();

    let tokens = metric(&metrics, "gen_ai.client.token.usage");
    assert_eq!(tokens.unit, "{token}");
    let Some(Data::Histogram(h)) = &tokens.data else {
        panic!("{tokens:?}")
    };
    assert_eq!(h.aggregation_temporality, 2, "cumulative");
    let input = h
        .data_points
        .iter()
        .find(|p| has(&p.attributes, semconv::TOKEN_TYPE, "input"))
        .unwrap();
    assert!(has(&input.attributes, semconv::PROVIDER_NAME, "openai"));
    assert!(has(&input.attributes, semconv::OPERATION_NAME, "chat"));
    assert_eq!(input.count, 4, "four model calls");
    assert_eq!(input.sum, Some(1200.0 + 300.0 + 400.0 + 1500.0));
    assert_eq!(input.bucket_counts.iter().sum::<u64>(), 4);
    let output = h
        .data_points
        .iter()
        .find(|p| has(&p.attributes, semconv::TOKEN_TYPE, "output"))
        .unwrap();
    assert_eq!(output.sum, Some(80.0 + 20.0 + 40.0 + 30.0));

    let duration = metric(&metrics, "gen_ai.client.operation.duration");
    assert_eq!(duration.unit, "s");
    let Some(Data::Histogram(h)) = &duration.data else {
        panic!()
    };
    assert_eq!(h.data_points.iter().map(|p| p.count).sum::<u64>(), 4);

    let tools = metric(&metrics, "rein.tool.duration");
    let Some(Data::Histogram(h)) = &tools.data else {
        panic!()
    };
    let shell = h
        .data_points
        .iter()
        .find(|p| has(&p.attributes, semconv::TOOL_NAME, "shell"))
        .unwrap();
    assert_eq!(shell.sum, Some(0.25), "the tool's own duration");
    assert!(has(&shell.attributes, semconv::ERROR_TYPE, "tool_error"));

    let errors = metric(&metrics, "rein.tool.errors");
    let Some(Data::Sum(s)) = &errors.data else {
        panic!()
    };
    assert!(s.is_monotonic);
    let mut counted: Vec<(String, Option<NumberValue>)> = s
        .data_points
        .iter()
        .map(|p| {
            let tool = find(&p.attributes, semconv::TOOL_NAME).and_then(|kv| kv.as_str());
            (tool.unwrap_or("").to_string(), p.value.clone())
        })
        .collect();
    counted.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        counted,
        vec![
            ("shell".to_string(), Some(NumberValue::AsInt(1))),
            ("write".to_string(), Some(NumberValue::AsInt(1))),
        ]
    );

    let cost = metric(&metrics, "rein.cost.usd");
    assert_eq!(cost.unit, "USD");
    let Some(Data::Sum(s)) = &cost.data else {
        panic!()
    };
    assert_eq!(s.data_points.len(), 1, "only the top-level run's cost");
    assert_eq!(s.data_points[0].value, Some(NumberValue::AsDouble(0.0123)));
}
