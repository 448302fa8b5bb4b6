//! `rein exec --otel`: the run's spans reach a local OTLP receiver (the
//! one rein-telemetry's own tests use) over HTTP/protobuf, with contents
//! only when asked for.

use rein_telemetry::proto::Value as Any;
use rein_telemetry::proto::trace::Span;
use serde_json::json;

use super::support::*;

#[allow(dead_code)]
#[path = "../../../rein-telemetry/tests/telemetry/receiver.rs"]
mod receiver;

fn attr(span: &Span, key: &str) -> Option<String> {
    let value = span
        .attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?;
    match value.value.as_ref()? {
        Any::StringValue(s) => Some(s.clone()),
        Any::IntValue(n) => Some(n.to_string()),
        other => Some(format!("{other:?}")),
    }
}

/// Run a one-tool task with `--otel` (and `extra`) against a receiver; its
/// spans.
fn traced(extra: &[&str]) -> (Vec<Span>, String) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let receiver = rt.block_on(receiver::Receiver::start(200));
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "SECRET CONTENTS\n").unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "It says hello."}
        ]}),
    );
    let mut cmd = env.command();
    cmd.args([
        "exec",
        "--json",
        "--otel",
        "--provider",
        "replay",
        "--script",
        &script,
    ])
    .args(extra)
    .arg("read a.txt please")
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
    .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=rein");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&json_lines(&out));
    (receiver.spans(), id)
}

#[test]
fn exec_with_otel_sends_a_genai_trace_of_the_run_without_contents() {
    let (spans, id) = traced(&[]);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let root = spans
        .iter()
        .find(|s| s.name == "invoke_agent rein")
        .unwrap_or_else(|| panic!("no invoke_agent span: {names:?}"));
    assert_eq!(
        attr(root, "gen_ai.conversation.id").as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        attr(root, "gen_ai.provider.name").as_deref(),
        Some("replay")
    );
    let chats: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 2, "{names:?}");
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool read_file")
        .unwrap_or_else(|| panic!("no tool span: {names:?}"));
    assert_eq!(attr(tool, "gen_ai.tool.call.id").as_deref(), Some("r1"));
    assert_eq!(tool.parent_span_id, root.span_id);
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
    let dump = format!("{spans:?}");
    assert!(
        !dump.contains("SECRET CONTENTS"),
        "contents sent without --otel-content"
    );
    assert!(
        !dump.contains("read a.txt please"),
        "the prompt sent without --otel-content"
    );
}

#[test]
fn exec_with_otel_content_puts_the_prompt_and_tool_result_in_the_spans() {
    let (spans, _) = traced(&["--otel-content"]);
    let dump = format!("{spans:?}");
    assert!(dump.contains("read a.txt please"), "{dump}");
    assert!(dump.contains("SECRET CONTENTS"), "{dump}");
}

#[test]
fn a_malformed_otel_variable_is_a_one_line_usage_error() {
    let env = Env::new();
    let out = env
        .command()
        .args(["exec", "--otel", "--provider", "replay", "hi"])
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
        .output()
        .unwrap();
    assert_clean_failure(&out, 2, "OTEL_EXPORTER_OTLP_PROTOCOL");
}

#[test]
fn serve_with_otel_traces_each_run_and_flushes_at_shutdown() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let receiver = rt.block_on(receiver::Receiver::start(200));
    let env = Env::new();
    let script = env.script(
        "s.json",
        &json!({"turns": [{"text": "Served and traced."}]}),
    );
    let endpoint = receiver.endpoint();
    let mut s = super::serve::Served::start_with(
        &env,
        &["--otel", "--script", &script],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    let (status, session) = s.call("POST", "/sessions", Some(json!({})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "hi"})),
    );
    s.events_until(&id, None, "stopped");
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    assert_eq!(s.child.wait().unwrap().code(), Some(0));
    let spans = receiver.spans();
    let root = spans
        .iter()
        .find(|s| s.name == "invoke_agent rein")
        .unwrap_or_else(|| panic!("no run span: {spans:?}"));
    assert_eq!(
        attr(root, "gen_ai.conversation.id").as_deref(),
        Some(id.as_str())
    );
}
