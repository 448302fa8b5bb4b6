//! The replay provider: playing scripts, injected failures, cancellation,
//! recording, and precise script errors.
//!
//! Playing, timing and recording are tested here; script errors and runs
//! of the engine in the submodules.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rein_core::*;
use rein_providers::{ReplayProvider, ReplayScript, ReplayTurn};

mod engine_runs;
mod script_errors;

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
            images: true,
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
