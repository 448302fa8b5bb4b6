//! `--otel` in `rein exec`, `rein serve`, the app and `rein acp`: the
//! runs' spans reach a local OTLP receiver (the one rein-telemetry's own
//! tests use) over HTTP/protobuf, with contents only when asked for; the
//! app tells a failed export in one notice, never over its screen.

use rein_telemetry::proto::Value as Any;
use rein_telemetry::proto::trace::Span;
use serde_json::json;

use super::support::*;
use super::tui::{Tmux, quit};

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

/// Run a one-tool task with `flags` and the variables `vars` against a
/// receiver the OTEL endpoint names; its spans.
fn traced(flags: &[&str], vars: &[(&str, &str)]) -> (Vec<Span>, String) {
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
        "--provider",
        "replay",
        "--script",
        &script,
    ])
    .args(flags)
    .envs(vars.iter().copied())
    .arg("read a.txt please")
    .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
    .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=rein");
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = session_id(&json_lines(&out));
    (receiver.spans(), id)
}

#[test]
fn exec_exports_nothing_unless_asked_even_with_an_endpoint_set_and_rein_otel_asks() {
    let (spans, _) = traced(&[], &[]);
    assert!(spans.is_empty(), "telemetry was on by default: {spans:#?}");
    for asked in ["1", "TRUE"] {
        let (spans, id) = traced(&[], &[("REIN_OTEL", asked)]);
        let run = spans.iter().find(|s| s.name == "invoke_agent rein");
        assert!(run.is_some(), "REIN_OTEL={asked}: {spans:#?}");
        assert_eq!(
            attr(run.unwrap(), "gen_ai.conversation.id").as_deref(),
            Some(id.as_str())
        );
    }
    // --otel-content alone turns it on, with contents.
    let (spans, _) = traced(&["--otel-content"], &[]);
    assert!(!spans.is_empty(), "--otel-content exported nothing");
}

#[test]
fn exec_with_otel_sends_a_genai_trace_of_the_run_without_contents() {
    let (spans, id) = traced(&["--otel"], &[]);
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
    let (spans, _) = traced(&["--otel", "--otel-content"], &[]);
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

/// A runtime for the receiver, kept alive as long as the test runs.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A one-tool task: `read_file a.txt`, then an answer.
fn read_task(env: &Env) -> String {
    std::fs::write(env.path("a.txt"), "hello\n").unwrap();
    env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"text": "It says hello."}
        ]}),
    )
}

/// The run's root span, checked to be the session's and to hold a model
/// call and the tool's span under it.
fn assert_one_tool_trace(spans: &[Span], session: &str) {
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let root = spans
        .iter()
        .find(|s| s.name == "invoke_agent rein")
        .unwrap_or_else(|| panic!("no invoke_agent span: {names:?}"));
    assert_eq!(
        attr(root, "gen_ai.conversation.id").as_deref(),
        Some(session)
    );
    let chat = spans
        .iter()
        .find(|s| s.name.starts_with("chat "))
        .unwrap_or_else(|| panic!("no chat span: {names:?}"));
    assert_eq!(chat.parent_span_id, root.span_id);
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool read_file")
        .unwrap_or_else(|| panic!("no tool span: {names:?}"));
    assert_eq!(tool.parent_span_id, root.span_id);
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
}

/// The session id in the app's parting line ("… continue with: rein
/// --resume ID").
fn resumed_id(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.contains("continue with: rein --resume "))
        .unwrap_or_else(|| panic!("no resume hint:\n{screen}"));
    line.rsplit(' ').next().unwrap().trim().to_string()
}

/// A file for the app's stderr, outside the workspace.
fn stderr_file(env: &Env) -> std::path::PathBuf {
    env.home.path().join("stderr.txt")
}

#[test]
fn the_app_with_otel_exports_the_prompts_trace_as_its_session_and_flushes_it_at_quit() {
    let rt = runtime();
    let receiver = rt.block_on(receiver::Receiver::start(200));
    let env = Env::new();
    let script = read_task(&env);
    // Nothing leaves before the app quits: the batch interval is long.
    let before = format!(
        "export OTEL_EXPORTER_OTLP_ENDPOINT={} OTEL_BSP_SCHEDULE_DELAY=600000",
        receiver.endpoint()
    );
    let app = Tmux::start_after(
        &env,
        &before,
        &[
            "--otel",
            "--provider",
            "replay",
            "--script",
            &script,
            "read a.txt please",
        ],
    );
    app.wait_for("It says hello.");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(receiver.spans().is_empty(), "spans left before the quit");
    quit(&app);
    let id = resumed_id(&app.capture());
    assert_one_tool_trace(&receiver.spans(), &id);
}

#[test]
fn the_app_with_the_collector_down_works_and_one_notice_says_export_failed() {
    let env = Env::new();
    let script = read_task(&env);
    // A port nobody listens on.
    let closed_port = rein_test_support::ports::ClosedPort::new();
    let closed = closed_port.port();
    let err = stderr_file(&env);
    let before = format!(
        "exec 2>'{}'; export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:{closed} \
         OTEL_BSP_SCHEDULE_DELAY=100",
        err.display()
    );
    let app = Tmux::start_after(
        &env,
        &before,
        &["--otel", "--provider", "replay", "--script", &script],
    );
    app.wait_for("ask rein to do something");
    app.type_text("read a.txt please");
    app.keys(&["Enter"]);
    app.wait_for("It says hello.");
    app.wait_for("telemetry export failed");
    // Several more export rounds fail (traces and metrics): still one.
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let screen = app.capture();
    assert_eq!(
        screen.matches("telemetry export failed").count(),
        1,
        "{screen}"
    );
    assert!(screen.contains(&format!("127.0.0.1:{closed}")), "{screen}");
    quit(&app);
    // The terminal's stderr got only the parting line.
    let written = std::fs::read_to_string(&err).unwrap();
    assert!(!written.contains("telemetry"), "{written}");
    assert!(
        written.contains("continue with: rein --resume"),
        "{written}"
    );
}

#[test]
fn the_app_with_a_malformed_otel_variable_fails_in_one_line_before_taking_the_terminal() {
    let env = Env::new();
    let err = stderr_file(&env);
    let before = format!(
        "exec 2>'{}'; export OTEL_EXPORTER_OTLP_PROTOCOL=carrier-pigeon",
        err.display()
    );
    let app = Tmux::start_after(&env, &before, &["--otel", "--provider", "replay"]);
    let screen = app.wait_for("rein exited with");
    assert!(screen.contains("rein exited with 2"), "{screen}");
    assert!(!screen.contains("ask rein to do something"), "{screen}");
    let written = std::fs::read_to_string(&err).unwrap();
    assert_eq!(written.lines().count(), 1, "{written}");
    assert!(written.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{written}");
}

#[test]
fn acp_with_otel_exports_the_prompts_trace_as_its_session() {
    use std::io::{BufRead, BufReader, Write};
    let rt = runtime();
    let receiver = rt.block_on(receiver::Receiver::start(200));
    let env = Env::new();
    let script = read_task(&env);
    let mut child = env
        .command()
        .args(["acp", "--otel", "--provider", "replay", "--script", &script])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // A request, then the lines until its answer (notifications skipped).
    let mut call = |id: u64, method: &str, params: serde_json::Value| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").unwrap();
        loop {
            let line = lines.next().expect("rein acp closed stdout").unwrap();
            let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id && reply.get("method").is_none() {
                return reply;
            }
        }
    };
    call(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let opened = call(
        2,
        "session/new",
        json!({"cwd": env.ws.path(), "mcpServers": []}),
    );
    let id = opened["result"]["sessionId"].as_str().unwrap().to_string();
    let prompt = json!({"sessionId": id, "prompt": [{"type": "text", "text": "read a.txt"}]});
    let answer = call(3, "session/prompt", prompt);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    // The client goes: what is left is sent before rein acp exits.
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_one_tool_trace(&receiver.spans(), &id);
}
