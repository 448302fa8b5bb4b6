//! Budgets as a tree: sub-agents spend from what their parent's run has
//! left, their spending is charged to it as it happens, and the children
//! running in one tree (foreground and background) count against one cap.
//!
//! The attack these stand for: a 1,000-token run that fans out into 32
//! `task` calls, each child given the whole budget again, spent 1.6 M
//! tokens in one turn; 64 background children ran at once.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::{StreamExt, stream};
use rein_core::*;
use serde_json::json;

use super::support::*;

/// Tokens of every call a child makes (the support's `calls` usage).
const CHILD_CALL_TOKENS: u64 = 15;

/// Answers the main agent from a script; every sub-agent with `child`
/// (again and again), after `child_delay`. Counts what it served and how
/// many sub-agent calls were under way at once.
struct Tree {
    main: Arc<Scripted>,
    child: Vec<StreamChunk>,
    child_delay: Duration,
    pricing: Pricing,
    served_tokens: Arc<AtomicU64>,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    child_sessions: Mutex<std::collections::HashSet<String>>,
}

/// One sub-agent call under way (counted until its stream is dropped).
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Tree {
    fn new(main: Vec<Step>, child: Vec<StreamChunk>, child_delay: Duration) -> Arc<Tree> {
        Arc::new(Tree {
            main: Scripted::new(main),
            child,
            child_delay,
            // $100 per million tokens: one child call (15 tokens) costs
            // $0.0015.
            pricing: Pricing {
                input: 100.0,
                cached_input: 100.0,
                output: 100.0,
            },
            served_tokens: Default::default(),
            in_flight: Default::default(),
            peak: Default::default(),
            child_sessions: Default::default(),
        })
    }

    fn served(&self) -> u64 {
        self.served_tokens.load(Ordering::SeqCst)
    }
}

fn tokens_of(chunks: &[StreamChunk]) -> u64 {
    chunks
        .iter()
        .map(|c| match c {
            StreamChunk::Usage(u) => u.input_tokens + u.output_tokens,
            _ => 0,
        })
        .sum()
}

#[async_trait]
impl Provider for Tree {
    fn name(&self) -> &str {
        "tree"
    }
    fn model(&self) -> &str {
        "test-model"
    }
    fn capabilities(&self) -> Capabilities {
        self.main.capabilities()
    }
    fn pricing(&self) -> Option<Pricing> {
        Some(self.pricing)
    }
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        if rein_core::agents::agent_of(&request.system).is_none() {
            let served = self.served_tokens.clone();
            let answer = self.main.stream(request, cancel).await?;
            return Ok(Box::pin(answer.inspect(move |c| {
                if let Ok(StreamChunk::Usage(u)) = c {
                    served.fetch_add(u.input_tokens + u.output_tokens, Ordering::SeqCst);
                }
            })));
        }
        self.child_sessions
            .lock()
            .unwrap()
            .insert(request.system.clone());
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let guard = InFlight(self.in_flight.clone());
        self.served_tokens
            .fetch_add(tokens_of(&self.child), Ordering::SeqCst);
        let (chunks, delay) = (self.child.clone(), self.child_delay);
        Ok(Box::pin(stream::unfold(
            (chunks.into_iter(), Some(delay), guard),
            |(mut it, delay, guard)| async move {
                if let Some(d) = delay {
                    tokio::time::sleep(d).await;
                }
                let next = it.next()?;
                Some((Ok(next), (it, None, guard)))
            },
        )))
    }
}

/// `n` task calls (ids t1..tn), in the background when `background`.
fn fan_out(n: usize, first: usize, background: bool) -> Vec<StreamChunk> {
    let list: Vec<(String, serde_json::Value)> = (first..first + n)
        .map(|i| {
            (
                format!("t{i}"),
                json!({"agent": "general", "description": format!("part {i}"),
                       "prompt": "do your part", "background": background}),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str, serde_json::Value)> = list
        .iter()
        .map(|(id, args)| (id.as_str(), "task", args.clone()))
        .collect();
    calls(&borrowed)
}

fn engine(
    provider: Arc<Tree>,
    store: Arc<InMemorySessionStore>,
    max_parallel: usize,
    configure: impl FnOnce(AgentEngineBuilder) -> AgentEngineBuilder,
) -> AgentEngine {
    let builder = AgentEngine::builder(provider, store)
        .workspace(std::env::temp_dir())
        .tools(tools())
        .mode(PermissionMode::Auto)
        // Children that call the same tool again and again are what is
        // measured here, not the loop guard.
        .loop_guard(rein_core::LoopGuardConfig {
            repeat_limit: 0,
            no_progress_turns: None,
        })
        .max_turns(60)
        .compaction(rein_core::compaction::CompactionConfig {
            enabled: false,
            ..Default::default()
        })
        .retry_base_delay(Duration::from_millis(1))
        .provider_retries(0)
        .subagents(SubagentConfig {
            max_parallel,
            ..Default::default()
        });
    configure(builder).build().unwrap()
}

/// The fan-out attack under one budget: what the whole tree spent, the
/// parent's outcome and its stored tool results.
async fn fan_out_under(
    configure: impl FnOnce(AgentEngineBuilder) -> AgentEngineBuilder,
) -> (Arc<Tree>, RunOutcome, Vec<ToolResult>) {
    // Every child works forever: one tool call after another.
    let child = calls(&[("s1", "sleep", json!({"ms": 1}))]);
    let provider = Tree::new(
        vec![Ok(fan_out(32, 1, false)), Ok(text("all parts done"))],
        child,
        Duration::from_millis(2),
    );
    let store = Arc::new(InMemorySessionStore::new());
    let engine = engine(provider.clone(), store.clone(), 32, configure);
    let mut events = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("split the work"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    let messages = store
        .messages(outcome.session_id.as_deref().unwrap())
        .await
        .unwrap();
    (provider, outcome, tool_results(&messages))
}

#[tokio::test]
async fn a_fan_out_of_32_children_spends_at_most_the_token_budget_plus_one_call_per_child() {
    let (provider, outcome, results) = fan_out_under(|b| b.max_tokens(1000)).await;
    // The bound: the budget, plus the calls under way when it ran out: at
    // most one per child (the parent waits in its `task` calls then).
    let spent = provider.served();
    let bound = 1000 + 32 * CHILD_CALL_TOKENS;
    assert!(
        spent <= bound,
        "the tree spent {spent} tokens (bound {bound})"
    );
    // Every child was stopped by the budget, and said so.
    assert_eq!(results.len(), 32, "{results:?}");
    for r in &results {
        assert!(r.is_error, "{r:?}");
        assert!(r.output.contains("max_tokens"), "{r:?}");
    }
    // The parent stopped for the budget at its next step, and its totals
    // hold what its children spent.
    assert_eq!(outcome.reason, StopReason::MaxTokens, "{outcome:?}");
    let totals = outcome.totals.input_tokens + outcome.totals.output_tokens;
    assert_eq!(totals, spent, "{:?}", outcome.totals);
}

#[tokio::test]
async fn a_fan_out_of_32_children_spends_at_most_the_cost_budget_plus_one_call_per_child() {
    let (provider, outcome, results) =
        fan_out_under(|b| b.max_cost_usd(0.01).max_tokens(1_000_000)).await;
    let per_token = 100.0 / 1_000_000.0;
    let spent = provider.served() as f64 * per_token;
    let bound = 0.01 + (32 * CHILD_CALL_TOKENS) as f64 * per_token;
    assert!(
        spent <= bound + 1e-9,
        "the tree spent ${spent} (bound ${bound})"
    );
    assert!(
        results.iter().all(|r| r.output.contains("max_cost")),
        "{results:?}"
    );
    assert_eq!(outcome.reason, StopReason::MaxCost, "{outcome:?}");
    assert!(
        (outcome.totals.known_cost_usd - spent).abs() < 1e-9,
        "{:?} vs {spent}",
        outcome.totals
    );
}

#[tokio::test]
async fn sixty_four_background_tasks_run_at_most_the_cap_and_the_rest_are_refused() {
    // Each child answers after a while: all 64 calls come while the
    // first ones still run.
    let child = text("my part is done");
    let provider = Tree::new(
        vec![
            Ok(fan_out(32, 1, true)),
            Ok(fan_out(32, 33, true)),
            Ok(text("waiting for the parts")),
            Ok(text("all parts done")),
        ],
        child,
        Duration::from_millis(1500),
    );
    let store = Arc::new(InMemorySessionStore::new());
    let engine = engine(provider.clone(), store.clone(), 8, |b| b);
    let mut events = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("split the work"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    let results = tool_results(
        &store
            .messages(outcome.session_id.as_deref().unwrap())
            .await
            .unwrap(),
    );
    assert_eq!(results.len(), 64);
    let started = results
        .iter()
        .filter(|r| !r.is_error && r.output.starts_with("started sub-agent"))
        .count();
    let refused: Vec<&ToolResult> = results.iter().filter(|r| r.is_error).collect();
    assert_eq!(started, 8, "{results:?}");
    assert_eq!(refused.len(), 56, "{results:?}");
    for r in refused {
        assert!(
            r.output
                .contains("8 sub-agents are already running in this run"),
            "{r:?}"
        );
    }
    // Never more than the cap under way at once.
    assert!(provider.peak.load(Ordering::SeqCst) <= 8);
    assert_eq!(provider.child_sessions.lock().unwrap().len(), 8);
}

#[tokio::test]
async fn a_background_childs_spending_stops_the_parent_while_the_child_runs() {
    // The child spends as it goes; the parent's guard sees it at its next
    // step, before the child has reported.
    let child = calls(&[("s1", "sleep", json!({"ms": 1}))]);
    let provider = Tree::new(
        vec![
            Ok(fan_out(1, 1, true)),
            Ok(calls(&[("p1", "sleep", json!({"ms": 300}))])),
            Ok(calls(&[("p2", "sleep", json!({"ms": 300}))])),
            Ok(text("done")),
        ],
        child,
        Duration::from_millis(5),
    );
    let store = Arc::new(InMemorySessionStore::new());
    let engine = engine(provider.clone(), store, 8, |b| b.max_tokens(200));
    let mut events = Vec::new();
    let outcome = engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::MaxTokens, "{outcome:?}");
    // The parent's own calls are far below the budget: the child's
    // spending stopped it before its third turn, while the child ran.
    assert_eq!(outcome.turns, 2, "{outcome:?}");
    // One call per agent under way when the budget ran out.
    let bound = 200 + 2 * CHILD_CALL_TOKENS;
    assert!(provider.served() <= bound, "{}", provider.served());
}
