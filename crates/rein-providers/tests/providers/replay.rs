//! The replay provider: playing scripts, injected failures, cancellation,
//! recording, and precise script errors.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rein_core::*;
use rein_providers::{ReplayError, ReplayProvider, ReplayScript, ReplayTurn};

fn provider(json: &str) -> ReplayProvider {
    ReplayProvider::new(ReplayScript::parse(json).unwrap())
}

fn request(prompt: &str) -> ModelRequest {
    ModelRequest {
        system: "sys".into(),
        messages: vec![Message::user(prompt)],
        ..Default::default()
    }
}

/// Every item of one call's stream, errors included.
async fn play(p: &ReplayProvider, prompt: &str) -> Vec<Result<StreamChunk, ProviderError>> {
    let stream = p
        .stream(&request(prompt), &CancellationToken::new())
        .await
        .unwrap();
    stream.collect().await
}

/// The chunks of one call, which must all be Ok.
async fn chunks(p: &ReplayProvider) -> Vec<StreamChunk> {
    play(p, "go")
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

fn assemble(chunks: Vec<StreamChunk>) -> AssistantMessage {
    let mut asm = AssistantAssembler::default();
    for c in chunks {
        if asm.push(c) {
            break;
        }
    }
    asm.finish()
}

fn parse_err(json: &str) -> String {
    ReplayScript::parse(json).unwrap_err().to_string()
}

// --- playing --------------------------------------------------------------

#[tokio::test]
async fn a_multi_turn_script_replays_one_turn_per_call_with_text_in_several_deltas() {
    let p = provider(
        r#"{"turns": [
            {"text": "The quick brown fox jumps over the lazy dog."},
            {"text": "Second answer here", "chunk_chars": 4}
        ]}"#,
    );
    let first = chunks(&p).await;
    let deltas: Vec<&str> = first
        .iter()
        .filter_map(|c| match c {
            StreamChunk::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() >= 3, "{deltas:?}");
    assert_eq!(
        deltas.concat(),
        "The quick brown fox jumps over the lazy dog."
    );
    assert_eq!(first.last(), Some(&StreamChunk::Done(FinishReason::Stop)));

    let second = chunks(&p).await;
    let deltas: Vec<String> = second
        .iter()
        .filter_map(|c| match c {
            StreamChunk::TextDelta(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, ["Seco", "nd a", "nswe", "r he", "re"]);
    assert_eq!(p.turns_played(), 2);
    assert_eq!(p.turns_remaining(), 0);
}

#[tokio::test]
async fn reasoning_and_its_signature_assemble_into_one_block_before_the_text() {
    let p = provider(
        r#"{"turns": [{"reasoning": "Let me think about this carefully.",
                       "reasoning_signature": "sig-abc==", "text": "Done."}]}"#,
    );
    let raw = chunks(&p).await;
    assert!(matches!(raw[0], StreamChunk::ReasoningDelta(_)));
    let msg = assemble(raw);
    let blocks: Vec<_> = msg.reasoning().collect();
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].text, "Let me think about this carefully.");
    assert_eq!(blocks[0].signature.as_deref(), Some("sig-abc=="));
    assert!(matches!(msg.content[0], ContentPart::Reasoning(_)));
    assert_eq!(msg.text(), "Done.");
}

#[tokio::test]
async fn tool_calls_stream_as_fragments_that_assemble_into_the_scripted_calls() {
    let p = provider(
        r#"{"turns": [
            {"text": "ok"},
            {"text": "Reading both.", "tool_calls": [
                {"id": "toolu_1", "name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "glob", "arguments": {"pattern": "**/*.rs"}},
                {"name": "todo_read"}
            ]}
        ]}"#,
    );
    chunks(&p).await;
    let raw = chunks(&p).await;

    // Each call arrives in 2-3 fragments; only the first carries id and name.
    for index in 0..3 {
        let fragments: Vec<_> = raw
            .iter()
            .filter_map(|c| match c {
                StreamChunk::ToolCallDelta {
                    index: i, id, name, ..
                } if *i == index => Some((id.is_some(), name.is_some())),
                _ => None,
            })
            .collect();
        assert!(
            (2..=3).contains(&fragments.len()),
            "call {index}: {fragments:?}"
        );
        assert_eq!(fragments[0], (true, true));
        assert!(fragments[1..].iter().all(|f| *f == (false, false)));
    }

    let msg = assemble(raw);
    let calls: Vec<ToolCall> = msg.tool_calls().cloned().collect();
    assert_eq!(
        calls,
        [
            ToolCall {
                id: "toolu_1".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"a.txt"}"#.into(),
            },
            ToolCall {
                id: "call_2_2".into(),
                name: "glob".into(),
                arguments: r#"{"pattern":"**/*.rs"}"#.into(),
            },
            ToolCall {
                id: "call_2_3".into(),
                name: "todo_read".into(),
                arguments: "{}".into(),
            },
        ]
    );
    assert_eq!(msg.text(), "Reading both.");
    assert_eq!(msg.finish, Some(FinishReason::ToolCalls));
}

#[tokio::test]
async fn string_arguments_pass_through_verbatim_even_when_malformed() {
    let p = provider(
        r#"{"turns": [{"tool_calls": [
            {"name": "read_file", "arguments": "{\"path\": \"a.txt\""},
            {"name": "bash", "arguments": "  {\"command\" : \"ls\"}  "}
        ]}]}"#,
    );
    let msg = assemble(chunks(&p).await);
    let args: Vec<&str> = msg.tool_calls().map(|c| c.arguments.as_str()).collect();
    assert_eq!(args, ["{\"path\": \"a.txt\"", "  {\"command\" : \"ls\"}  "]);
}

#[tokio::test]
async fn usage_and_finish_reason_are_reported_before_done() {
    let p = provider(
        r#"{"turns": [
            {"text": "cut", "finish": "length",
             "usage": {"input_tokens": 100, "output_tokens": 20, "cached_input_tokens": 60, "reasoning_tokens": 5}},
            {"text": "no", "finish": "content_filter"},
            {"tool_calls": [{"name": "glob"}], "finish": "stop"}
        ]}"#,
    );
    let raw = chunks(&p).await;
    let n = raw.len();
    assert_eq!(
        raw[n - 2],
        StreamChunk::Usage(Usage {
            input_tokens: 100,
            output_tokens: 20,
            cached_input_tokens: 60,
            reasoning_tokens: 5,
        })
    );
    assert_eq!(raw[n - 1], StreamChunk::Done(FinishReason::Length));
    let msg = assemble(raw);
    assert_eq!(msg.usage.map(|u| u.input_tokens), Some(100));

    let raw = chunks(&p).await;
    assert!(!raw.iter().any(|c| matches!(c, StreamChunk::Usage(_))));
    assert_eq!(
        raw.last(),
        Some(&StreamChunk::Done(FinishReason::ContentFilter))
    );

    let raw = chunks(&p).await;
    assert_eq!(raw.last(), Some(&StreamChunk::Done(FinishReason::Stop)));
}

#[tokio::test]
async fn complete_assembles_a_whole_turn() {
    let p = provider(
        r#"{"turns": [{"reasoning": "hm", "text": "Hello world, nice day.",
                       "tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]}]}"#,
    );
    let msg = p
        .complete(&request("hi"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(msg.text(), "Hello world, nice day.");
    assert_eq!(msg.reasoning().next().unwrap().text, "hm");
    assert_eq!(msg.tool_calls().next().unwrap().id, "call_1_1");
}

#[tokio::test]
async fn an_exhausted_script_fails_with_a_config_error_naming_the_counts() {
    let p = provider(r#"{"turns": [{"text": "a"}, {"text": "b"}, {"text": "c"}]}"#);
    for _ in 0..3 {
        chunks(&p).await;
    }
    let err = p
        .stream(&request("more"), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Config);
    assert!(!err.is_retryable());
    assert_eq!(
        err.message,
        "replay script exhausted: it has 3 turns and turn 4 was requested"
    );
    // The failed call was still recorded.
    assert_eq!(p.requests().len(), 4);
}

#[tokio::test]
async fn an_injected_immediate_error_has_its_kind_status_and_retry_after_and_is_retryable() {
    let p = provider(
        r#"{"turns": [
            {"error": {"kind": "unavailable", "message": "overloaded", "status": 529, "retry_after_ms": 10}},
            {"text": "recovered"}
        ]}"#,
    );
    let err = p
        .stream(&request("hi"), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Unavailable);
    assert_eq!(err.message, "overloaded");
    assert_eq!(err.status, Some(529));
    assert_eq!(err.retry_after, Some(Duration::from_millis(10)));
    assert!(err.is_retryable());
    // A retry gets the next turn.
    assert_eq!(assemble(chunks(&p).await).text(), "recovered");
}

#[tokio::test]
async fn every_error_kind_is_injected_with_the_matching_retryability() {
    let cases = [
        ("transport", ProviderErrorKind::Transport, true),
        ("unavailable", ProviderErrorKind::Unavailable, true),
        ("idle", ProviderErrorKind::Idle, true),
        ("auth", ProviderErrorKind::Auth, false),
        ("invalid_request", ProviderErrorKind::InvalidRequest, false),
        (
            "context_length_exceeded",
            ProviderErrorKind::ContextLengthExceeded,
            false,
        ),
        ("protocol", ProviderErrorKind::Protocol, true),
        ("stream", ProviderErrorKind::Stream, false),
    ];
    for (name, kind, retryable) in cases {
        let p = provider(&format!(
            r#"{{"turns": [{{"error": {{"kind": "{name}"}}}}]}}"#
        ));
        let err = p
            .stream(&request("hi"), &CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, kind, "{name}");
        assert_eq!(err.is_retryable(), retryable, "{name}");
        assert_eq!(err.message, format!("replayed {name} error"));
        assert_eq!(err.status, None);
    }
}

#[tokio::test]
async fn a_mid_stream_error_follows_the_reasoning_and_text_then_the_stream_ends() {
    let p = provider(
        r#"{"turns": [{"reasoning": "thinking", "text": "Partial answer so far",
                       "tool_calls": [{"name": "glob"}],
                       "error": {"kind": "stream", "message": "connection dropped", "after_text": true}}]}"#,
    );
    let items = play(&p, "hi").await;
    let (last, before) = items.split_last().unwrap();
    let err = last.as_ref().err().unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Stream);
    assert_eq!(err.message, "connection dropped");
    let before: Vec<StreamChunk> = before.iter().cloned().map(Result::unwrap).collect();
    assert!(before.iter().all(|c| matches!(
        c,
        StreamChunk::TextDelta(_) | StreamChunk::ReasoningDelta(_)
    )));
    let msg = assemble(before);
    assert_eq!(msg.text(), "Partial answer so far");
    assert!(!msg.has_tool_calls());
}

// --- timing and cancellation ------------------------------------------------

#[tokio::test]
async fn cancelling_during_a_delay_ends_the_stream_promptly() {
    let p = provider(r#"{"turns": [{"text": "slow words here and there", "delay_ms": 60000}]}"#);
    let cancel = CancellationToken::new();
    let mut stream = p.stream(&request("hi"), &cancel).await.unwrap();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let item = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the delay ignored the cancel token");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        item.unwrap().unwrap_err().kind,
        ProviderErrorKind::Cancelled
    );
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn cancelling_during_the_delay_of_an_immediate_error_returns_cancelled() {
    let p = provider(r#"{"turns": [{"error": {"kind": "unavailable"}, "delay_ms": 60000}]}"#);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let result = tokio::time::timeout(Duration::from_secs(5), p.stream(&request("hi"), &cancel))
        .await
        .expect("the delay ignored the cancel token");
    assert_eq!(result.err().unwrap().kind, ProviderErrorKind::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn the_delay_comes_before_every_chunk() {
    let p = provider(r#"{"turns": [{"text": "abcdef", "chunk_chars": 2, "delay_ms": 100}]}"#);
    let start = tokio::time::Instant::now();
    let items = play(&p, "hi").await;
    // Three text deltas and Done, each after 100 ms.
    assert_eq!(items.len(), 4);
    assert_eq!(start.elapsed(), Duration::from_millis(400));
}

#[tokio::test]
async fn an_already_cancelled_call_fails_without_using_a_turn() {
    let p = provider(r#"{"turns": [{"text": "a"}]}"#);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = p.stream(&request("hi"), &cancel).await.err().unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Cancelled);
    assert_eq!(p.turns_remaining(), 1);
    assert!(p.requests().is_empty());
}

// --- recording and metadata -------------------------------------------------

#[tokio::test]
async fn every_request_is_recorded_in_order() {
    let p = provider(r#"{"turns": [{"text": "a"}, {"text": "b"}]}"#);
    play(&p, "first").await;
    play(&p, "second").await;
    let prompts: Vec<String> = p.requests().iter().map(|r| r.messages[0].text()).collect();
    assert_eq!(prompts, ["first", "second"]);
    assert_eq!(p.requests()[0].system, "sys");
}

#[test]
fn name_model_and_capabilities_come_from_the_script() {
    let p = provider(
        r#"{"model": "claude-replay", "context_window": 200000, "turns": [{"text": "a"}]}"#,
    );
    assert_eq!(p.name(), "replay");
    assert_eq!(p.model(), "claude-replay");
    assert_eq!(
        p.capabilities(),
        Capabilities {
            parallel_tool_calls: true,
            reasoning: true,
            prompt_caching: false,
            session_titles: false,
            context_window: Some(200000),
        }
    );
    let p = provider(r#"{"turns": [{"text": "a"}]}"#);
    assert_eq!(p.model(), "replay");
    assert_eq!(p.capabilities().context_window, None);
}

#[test]
fn the_provider_is_send_and_sync_and_usable_as_a_trait_object() {
    fn check<T: Send + Sync + 'static>() {}
    check::<ReplayProvider>();
    let _: Arc<dyn Provider> = Arc::new(ReplayProvider::new(ReplayScript::new(vec![
        ReplayTurn::text("hi"),
    ])));
}

#[tokio::test]
async fn scripts_built_in_code_play_like_parsed_ones() {
    let p = ReplayProvider::new(ReplayScript::new(vec![
        ReplayTurn::failure(ProviderErrorKind::Transport, "reset"),
        ReplayTurn::call("bash", "{\"command\":\"ls\"}"),
        ReplayTurn::text("done"),
    ]));
    let err = p
        .stream(&request("hi"), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ProviderErrorKind::Transport);
    let msg = assemble(chunks(&p).await);
    assert_eq!(
        msg.tool_calls().next().unwrap().arguments,
        "{\"command\":\"ls\"}"
    );
    assert_eq!(msg.tool_calls().next().unwrap().id, "call_2_1");
    assert_eq!(assemble(chunks(&p).await).text(), "done");
}

// --- the engine, driven by a script -------------------------------------------

#[tokio::test]
async fn the_engine_retries_an_injected_failure_and_the_model_sees_the_tool_error() {
    let script = r#"{"turns": [
        {"error": {"kind": "unavailable", "message": "overloaded", "status": 529, "retry_after_ms": 1}},
        {"text": "Let me read it.", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\": "}]},
        {"text": "That tool does not exist here."}
    ]}"#;
    let p = Arc::new(provider(script));
    let engine = AgentEngine::builder(p.clone(), Arc::new(InMemorySessionStore::new()))
        .workspace(std::env::temp_dir())
        .retry_base_delay(Duration::from_millis(1))
        .build()
        .unwrap();
    let mut events: Vec<Event> = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("read a"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    assert_eq!(outcome.final_text, "That tool does not exist here.");
    assert!(events.iter().any(|e| matches!(e, Event::Retry { .. })));

    let requests = p.requests();
    assert_eq!(requests.len(), 3);
    let last = requests.last().unwrap();
    let observation = last
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool(r) => Some(r.clone()),
            _ => None,
        })
        .expect("the tool result reached the model");
    assert_eq!(observation.call_id, "c1");
    assert!(observation.is_error);
    assert_eq!(p.turns_remaining(), 0);
}

// --- script errors ------------------------------------------------------------

#[test]
fn a_full_script_parses_into_its_turns() {
    let script = ReplayScript::parse(
        r#"{"description": "demo", "model": "m", "context_window": 10, "turns": [
            {"reasoning": "r", "reasoning_signature": "s", "text": "t",
             "tool_calls": [{"id": "x", "name": "n", "arguments": [1, 2]}],
             "usage": {"output_tokens": 3}, "finish": "tool_calls", "chunk_chars": 2, "delay_ms": 5},
            {"error": {"kind": "auth", "message": "bad key", "status": 401, "after_text": false}}
        ]}"#,
    )
    .unwrap();
    assert_eq!(script.description.as_deref(), Some("demo"));
    assert_eq!(script.turns.len(), 2);
    let t = &script.turns[0];
    assert_eq!(t.tool_calls[0].arguments, "[1,2]");
    assert_eq!(t.usage.unwrap().output_tokens, 3);
    assert_eq!(t.delay, Duration::from_millis(5));
    assert_eq!(t.chunk_chars, Some(2));
    let e = script.turns[1].error.as_ref().unwrap();
    assert_eq!((e.kind, e.status), (ProviderErrorKind::Auth, Some(401)));
}

#[test]
fn an_unknown_turn_field_is_rejected_naming_the_turn_field_and_position() {
    let msg = parse_err("{\"turns\": [\n  {\"text\": \"a\"},\n  {\"txt\": \"b\"}\n]}");
    assert!(msg.contains("turn 2"), "{msg}");
    assert!(msg.contains("unknown field `txt`"), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");
}

#[test]
fn an_unknown_tool_call_field_is_rejected_naming_the_turn() {
    let msg = parse_err(r#"{"turns": [{"tool_calls": [{"name": "glob", "args": {}}]}]}"#);
    assert!(msg.contains("turn 1"), "{msg}");
    assert!(msg.contains("unknown field `args`"), "{msg}");
}

#[test]
fn an_unknown_usage_field_is_rejected() {
    let msg = parse_err(r#"{"turns": [{"text": "a", "usage": {"input": 3}}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("unknown field `input`"),
        "{msg}"
    );
}

#[test]
fn an_unknown_error_kind_is_rejected_listing_the_valid_kinds() {
    let msg = parse_err(r#"{"turns": [{"text": "a"}, {"error": {"kind": "overloaded"}}]}"#);
    assert!(msg.contains("turn 2"), "{msg}");
    assert!(msg.contains("unknown error kind \"overloaded\""), "{msg}");
    assert!(msg.contains("unavailable"), "{msg}");
}

#[test]
fn an_unknown_finish_reason_is_rejected() {
    let msg = parse_err(r#"{"turns": [{"text": "a", "finish": "end_turn"}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("unknown finish reason \"end_turn\""),
        "{msg}"
    );
}

#[test]
fn empty_turns_are_rejected() {
    let msg = parse_err(r#"{"turns": []}"#);
    assert!(msg.contains("`turns` is empty"), "{msg}");
    let msg = parse_err(r#"{"model": "x"}"#);
    assert!(msg.contains("missing field `turns`"), "{msg}");
}

#[test]
fn a_turn_with_nothing_in_it_is_rejected_naming_the_turn() {
    let msg = parse_err(
        r#"{"turns": [{"text": "a"}, {"usage": {"input_tokens": 1}, "tool_calls": []}]}"#,
    );
    assert!(
        msg.contains("turn 2") && msg.contains("nothing to play"),
        "{msg}"
    );
}

#[test]
fn a_tool_call_without_a_name_is_rejected_naming_the_turn() {
    let msg = parse_err(r#"{"turns": [{"tool_calls": [{"arguments": {}}]}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("missing field `name`"),
        "{msg}"
    );
    let msg =
        parse_err(r#"{"turns": [{"text": "a"}, {"tool_calls": [{"name": "a"}, {"name": " "}]}]}"#);
    assert!(
        msg.contains("turn 2") && msg.contains("tool call 2 has an empty `name`"),
        "{msg}"
    );
}

#[test]
fn zero_chunk_chars_and_empty_ids_are_rejected() {
    let msg = parse_err(r#"{"turns": [{"text": "a", "chunk_chars": 0}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("`chunk_chars` must be at least 1"),
        "{msg}"
    );
    let msg = parse_err(r#"{"turns": [{"tool_calls": [{"id": "", "name": "a"}]}]}"#);
    assert!(msg.contains("empty `id`"), "{msg}");
}

#[test]
fn malformed_json_is_reported_with_line_and_column() {
    let err = ReplayScript::parse("{\"turns\": [\n  {\"text\": \"a\",}\n]}").unwrap_err();
    match &err {
        ReplayError::Json { line, column, .. } => {
            assert_eq!(*line, 2);
            assert!(*column > 0);
        }
        other => panic!("expected a JSON error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("malformed JSON at line 2 column"), "{msg}");
    let msg = parse_err("");
    assert!(msg.contains("malformed JSON at line 1"), "{msg}");
}

#[test]
fn a_missing_file_is_reported_with_its_path_and_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.json");
    let err = ReplayProvider::from_file(&path).unwrap_err();
    assert!(matches!(err, ReplayError::Read { .. }));
    let msg = err.to_string();
    assert!(msg.contains("nope.json"), "{msg}");
    let os = std::io::Error::from(std::io::ErrorKind::NotFound).to_string();
    assert!(
        msg.contains(&os) || msg.to_lowercase().contains("no such file"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_script_file_loads_and_its_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"turns": [{"text": "from a file"}]}"#).unwrap();
    let p = ReplayProvider::from_file(&good).unwrap();
    assert_eq!(assemble(chunks(&p).await).text(), "from a file");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"turns": [{"text": "a", "delay": 5}]}"#).unwrap();
    let msg = ReplayProvider::from_file(&bad).unwrap_err().to_string();
    assert!(msg.contains("bad.json") && msg.contains("turn 1"), "{msg}");
    assert!(msg.contains("unknown field `delay`"), "{msg}");
}

/// A tool that answers with a fixed block of text (to fill the context).
struct Filler;

#[async_trait::async_trait]
impl Tool for Filler {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "look".into(),
            description: "returns some text".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(
        &self,
        args: serde_json::Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // New output each time: the loop guard sees progress.
        Ok(ToolOutput::ok(format!(
            "observation {}: {}",
            args["n"],
            "observed data line. ".repeat(40)
        )))
    }
}

#[tokio::test]
async fn a_long_script_crosses_compactions_with_summaries_from_the_script() {
    let mut turns: Vec<serde_json::Value> = (0..60)
        .map(|i| serde_json::json!({"tool_calls": [{"name": "look", "arguments": {"n": i}}]}))
        .collect();
    turns.push(serde_json::json!({"text": "all sixty looked at"}));
    let script = serde_json::json!({
        "context_window": 3000,
        "summaries": ["SUMMARY ONE: looked at the first part, nothing wrong yet.",
                      "SUMMARY TWO: looked further, still nothing wrong."],
        "turns": turns,
    });
    let provider = Arc::new(provider(&script.to_string()));
    let store = Arc::new(InMemorySessionStore::new());
    let engine = AgentEngine::builder(provider.clone(), store)
        .workspace(std::env::temp_dir())
        .tool(Arc::new(Filler))
        .mode(PermissionMode::Auto)
        .max_turns(100)
        .build()
        .unwrap();
    let mut events = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("look sixty times"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.final_text, "all sixty looked at");
    let compactions = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Compaction {
                    summarized: true,
                    ..
                }
            )
        })
        .count();
    assert!(compactions >= 2, "{compactions} compactions");
    // Every turn of the script was played, and the summaries took none.
    assert_eq!(provider.turns_remaining(), 0);
    let requests = provider.requests();
    let summary_requests = requests
        .iter()
        .filter(|r| r.system == rein_core::compaction::SUMMARY_SYSTEM)
        .count();
    assert_eq!(summary_requests, compactions);
    // The last request carries the latest summary and the task, not the
    // whole history.
    let last = requests.last().unwrap();
    let text: String = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.contains("SUMMARY TWO"), "{text}");
    assert!(text.contains("look sixty times"), "{text}");
    assert!(last.messages.len() < 30, "{} messages", last.messages.len());
}

#[test]
fn an_empty_summary_text_is_a_script_error() {
    let err = parse_err(r#"{"turns": [{"text": "x"}], "summaries": [" "]}"#);
    assert!(err.contains("summaries"), "{err}");
}
