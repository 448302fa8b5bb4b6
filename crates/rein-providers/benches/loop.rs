//! The agent loop's own cost per turn: the replay provider answers instantly
//! and the tools do nothing, so what is measured is the engine (assembly,
//! events, the gate, the in-memory store).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rein_core::{
    AgentEngine, CancellationToken, InMemorySessionStore, NullSink, RunRequest, StopReason, Tool,
    ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use rein_providers::{ReplayProvider, ReplayScript, ReplayTurn};
use serde_json::{Value, json};

struct Noop;

#[async_trait]
impl Tool for Noop {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "noop".into(),
            description: "does nothing".into(),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::ok(format!("ok {}", args["n"])))
    }
}

/// `turns` turns of text plus `calls` no-op calls, then a final answer.
/// Every call has its own argument (as an agent's calls do), so the loop
/// guard sees progress and never stops the run.
fn script(turns: usize, calls: usize) -> ReplayScript {
    let mut list = Vec::with_capacity(turns + 1);
    for t in 0..turns {
        let mut turn = ReplayTurn::text(format!("Step {t}: looking at the next part of the code."));
        for c in 0..calls {
            turn.tool_calls.extend(
                ReplayTurn::call("noop", format!("{{\"n\":{}}}", t * calls + c)).tool_calls,
            );
        }
        list.push(turn);
    }
    list.push(ReplayTurn::text("All done."));
    ReplayScript::new(list)
}

fn bench_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("loop");
    for (turns, calls) in [(20usize, 1usize), (20, 4), (100, 1)] {
        group.throughput(Throughput::Elements(turns as u64 + 1));
        let name = format!("{turns}_turns_x_{calls}_calls");
        let template = script(turns, calls);
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let provider = Arc::new(ReplayProvider::new(template.clone()));
                    AgentEngine::builder(provider, Arc::new(InMemorySessionStore::new()))
                        .workspace(dir.path())
                        .tool(Arc::new(Noop))
                        .max_turns(10_000)
                        .build()
                        .unwrap()
                },
                |engine| {
                    let outcome = rt.block_on(engine.run(
                        RunRequest::new("benchmark"),
                        CancellationToken::new(),
                        &mut NullSink,
                    ));
                    assert_eq!(outcome.reason, StopReason::Completed);
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// Answers instantly without looking at (or copying) the request: a call to
/// `noop` with a new argument each time, then a final answer.
struct Canned {
    turns: u64,
    calls: std::sync::atomic::AtomicU64,
}

#[async_trait]
impl rein_core::Provider for Canned {
    fn name(&self) -> &str {
        "canned"
    }
    fn model(&self) -> &str {
        "canned"
    }
    fn capabilities(&self) -> rein_core::Capabilities {
        rein_core::Capabilities::default()
    }
    async fn stream(
        &self,
        _request: &rein_core::ModelRequest,
        _cancel: &CancellationToken,
    ) -> Result<rein_core::ChunkStream, rein_core::ProviderError> {
        use rein_core::{FinishReason, StreamChunk, ToolCall, Usage};
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut chunks = vec![StreamChunk::TextDelta(format!("step {n}"))];
        if n < self.turns {
            chunks.push(StreamChunk::ToolCall(ToolCall {
                id: format!("c{n}"),
                name: "noop".into(),
                arguments: format!("{{\"n\":{n}}}"),
            }));
        }
        chunks.push(StreamChunk::Usage(Usage {
            input_tokens: 1000,
            output_tokens: 10,
            ..Default::default()
        }));
        chunks.push(StreamChunk::Done(if n < self.turns {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        }));
        Ok(Box::pin(futures_util::stream::iter(
            chunks.into_iter().map(Ok),
        )))
    }
}

/// A stored session with `messages` messages of history (user prompt, then
/// assistant calls and results).
async fn session_with_history(store: &InMemorySessionStore, messages: usize) -> String {
    use rein_core::{
        AssistantMessage, ContentPart, Message, NewSession, SessionStore, ToolCall, ToolResult,
    };
    let info = store.create_session(NewSession::default()).await.unwrap();
    store
        .append_message(&info.id, &Message::user("start"))
        .await
        .unwrap();
    let mut i = 1;
    while i < messages {
        let id = format!("h{i}");
        let call = Message::Assistant(AssistantMessage {
            content: vec![
                ContentPart::Text {
                    text: format!("Looking at part {i} of the code."),
                },
                ContentPart::ToolCall(ToolCall {
                    id: id.clone(),
                    name: "noop".into(),
                    arguments: format!("{{\"n\":{i}}}"),
                }),
            ],
            ..Default::default()
        });
        let result = Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: id,
            name: "noop".into(),
            output: format!("result {i}: {}", "some output line\n".repeat(10)),
            is_error: false,
        });
        store.append_message(&info.id, &call).await.unwrap();
        store.append_message(&info.id, &result).await.unwrap();
        i += 2;
    }
    info.id
}

/// The harness's own work per turn at 10, 100 and 1000 messages of
/// history: a resumed session runs `turns` turns; per-turn cost is the
/// difference between 110 and 10 turns, divided by 100. (A difference over
/// 20 turns, 30 minus 10, was dominated by per-run costs that did not
/// cancel at 1000 messages.)
fn bench_history(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("history");
    for history in [10usize, 100, 1000] {
        for turns in [10u64, 110] {
            let name = format!("{history}_messages_{turns}_turns");
            group.bench_function(name, |b| {
                b.iter_batched(
                    || {
                        let store = Arc::new(InMemorySessionStore::new());
                        let id = rt.block_on(session_with_history(&store, history));
                        let provider = Arc::new(Canned {
                            turns,
                            calls: Default::default(),
                        });
                        let engine = AgentEngine::builder(provider, store)
                            .workspace(dir.path())
                            .tool(Arc::new(Noop))
                            .max_turns(10_000)
                            .build()
                            .unwrap();
                        (engine, id)
                    },
                    |(engine, id)| {
                        let outcome = rt.block_on(engine.run(
                            RunRequest {
                                prompt: "continue".into(),
                                images: Vec::new(),
                                resume: Some(id),
                                mode: None,
                                control: None,
                                scope: Default::default(),
                            },
                            CancellationToken::new(),
                            &mut NullSink,
                        ));
                        assert_eq!(outcome.reason, StopReason::Completed);
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_loop, bench_history);
criterion_main!(benches);
