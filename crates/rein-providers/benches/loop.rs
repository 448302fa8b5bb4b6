//! The agent loop's own cost per turn: the replay provider answers instantly
//! and the tools do nothing, so what is measured is the engine (assembly,
//! events, the gate, the in-memory store).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rein_core::{
    AgentEngine, CancellationToken, MemoryStore, NullSink, RunRequest, StopReason, Tool,
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
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::ok("ok"))
    }
}

/// `turns` turns of text plus `calls` no-op calls, then a final answer.
fn script(turns: usize, calls: usize) -> ReplayScript {
    let mut list = Vec::with_capacity(turns + 1);
    for t in 0..turns {
        let mut turn = ReplayTurn::text(format!("Step {t}: looking at the next part of the code."));
        for c in 0..calls {
            turn.tool_calls
                .extend(ReplayTurn::call("noop", format!("{{\"n\":{c}}}")).tool_calls);
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
                    AgentEngine::builder(provider, Arc::new(MemoryStore::new()))
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

criterion_group!(benches, bench_loop);
criterion_main!(benches);
