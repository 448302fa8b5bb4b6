//! Sub-agents through the `task` tool: children run side by side with
//! their own scripts, their final answer is the result, their events come
//! nested, their cost counts for the parent; a child that fails, hangs or
//! asks for more than its parent gets is contained; cancel reaches it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rein_core::agents::{AgentCatalog, AgentDef, AgentSource};
use rein_core::*;
use serde_json::json;

use super::support::*;

/// Answers each sub-agent from its own script (by the marker in its
/// system prompt), the main agent from `main`.
struct Routed {
    main: Arc<Scripted>,
    agents: HashMap<String, Arc<Scripted>>,
}

#[async_trait]
impl Provider for Routed {
    fn name(&self) -> &str {
        "routed"
    }
    fn model(&self) -> &str {
        "test-model"
    }
    fn capabilities(&self) -> Capabilities {
        self.main.capabilities()
    }
    fn pricing(&self) -> Option<Pricing> {
        Some(Pricing {
            input: 1.0,
            cached_input: 1.0,
            output: 1.0,
        })
    }
    async fn stream(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        let who = rein_core::agents::agent_of(&request.system)
            .and_then(|name| self.agents.get(name))
            .unwrap_or(&self.main);
        who.stream(request, cancel).await
    }
}

/// An answer streamed in many small pieces (slow with a chunk delay).
fn many_chunks(n: usize) -> Vec<StreamChunk> {
    (0..n)
        .map(|_| StreamChunk::TextDelta("slow ".into()))
        .collect()
}

/// Tool results in call order.
fn results_in_order(mut r: Vec<ToolResult>) -> Vec<ToolResult> {
    r.sort_by(|a, b| a.call_id.cmp(&b.call_id));
    r
}

fn with_usage(mut chunks: Vec<StreamChunk>, input: u64) -> Vec<StreamChunk> {
    let at = chunks.len() - 1;
    chunks.insert(
        at,
        StreamChunk::Usage(Usage {
            input_tokens: input,
            output_tokens: 10,
            ..Default::default()
        }),
    );
    chunks
}

fn task(id: &str, agent: &str, prompt: &str) -> (String, String, serde_json::Value) {
    (
        id.to_string(),
        "task".to_string(),
        json!({"agent": agent, "description": format!("{agent} job"), "prompt": prompt}),
    )
}

fn task_calls(list: &[(String, String, serde_json::Value)]) -> Vec<StreamChunk> {
    let borrowed: Vec<(&str, &str, serde_json::Value)> = list
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.clone()))
        .collect();
    calls(&borrowed)
}

struct Setup {
    engine: AgentEngine,
    store: Arc<InMemorySessionStore>,
}

fn setup(
    main: Vec<Step>,
    agents: Vec<(&str, Arc<Scripted>)>,
    configure: impl FnOnce(AgentEngineBuilder) -> AgentEngineBuilder,
) -> Setup {
    let provider = Arc::new(Routed {
        main: Scripted::new(main),
        agents: agents
            .into_iter()
            .map(|(n, s)| (n.to_string(), s))
            .collect(),
    });
    let store = Arc::new(InMemorySessionStore::new());
    let builder = AgentEngine::builder(provider, store.clone())
        .workspace(std::env::temp_dir())
        .tools(tools())
        .mode(PermissionMode::Auto)
        .retry_base_delay(Duration::from_millis(1))
        .provider_retries(0);
    Setup {
        engine: configure(builder).build().unwrap(),
        store,
    }
}

fn nested(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Subagent { agent, event, .. } => Some((
                agent.clone(),
                serde_json::to_value(event.as_ref()).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn children_run_side_by_side_and_only_their_answers_and_costs_come_back() {
    let explore = Scripted::new(vec![
        Ok(calls(&[("s", "sleep", json!({"ms": 50}))])),
        Ok(with_usage(text("found it in src/lib.rs:12"), 1000)),
    ]);
    let general = Scripted::new(vec![Ok(with_usage(text("renamed the function"), 2000))]);
    let s = setup(
        vec![
            Ok(task_calls(&[
                task("t1", "explore", "where is parse?"),
                task("t2", "general", "rename it"),
            ])),
            Ok(text("all done")),
        ],
        vec![("explore", explore.clone()), ("general", general.clone())],
        |b| b.subagents(SubagentConfig::default()),
    );
    let mut events = Vec::new();
    let outcome = s
        .engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    let results = results_in_order(tool_results(
        &s.store
            .messages(outcome.session_id.as_deref().unwrap())
            .await
            .unwrap(),
    ));
    assert!(
        results[0]
            .output
            .starts_with("found it in src/lib.rs:12\n\n[sub-agent explore · session "),
        "{results:?}"
    );
    assert!(
        results[1].output.starts_with("renamed the function"),
        "{results:?}"
    );
    // Only the answer: the child's own tool call is not in the result.
    assert!(!results[0].output.contains("sleep"));
    // Both children's whole runs came nested, in order for each.
    let n = nested(&events);
    for agent in ["explore", "general"] {
        let kinds: Vec<&str> = n
            .iter()
            .filter(|(a, _)| a == agent)
            .map(|(_, k)| k.as_str())
            .collect();
        assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
        assert_eq!(kinds.last(), Some(&"stopped"), "{kinds:?}");
    }
    // The children's tokens count in the parent's run (1000 + 2000 in).
    assert!(outcome.totals.input_tokens >= 3000, "{:?}", outcome.totals);
    // The child was told its task and who it is; it was not offered `task`.
    let req = &explore.requests()[0];
    assert!(req.system.contains("[rein sub-agent: explore]"));
    assert!(req.system.contains("Your task: explore job"));
    let requests = general.requests();
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        !offered.contains(&"task") && offered.contains(&"sleep"),
        "{offered:?}"
    );
}

#[tokio::test]
async fn a_child_that_fails_or_hangs_is_an_error_result_and_the_parent_goes_on() {
    let failing = Scripted::new(vec![Err(ProviderError::new(
        ProviderErrorKind::Auth,
        "the key was revoked",
    ))]);
    let mut slow = Scripted::build(vec![Ok(many_chunks(200))]);
    slow.chunk_delay = Duration::from_millis(50);
    let s = setup(
        vec![
            Ok(task_calls(&[
                task("t1", "explore", "look"),
                task("t2", "general", "work"),
            ])),
            Ok(text("the parent goes on")),
        ],
        vec![("explore", failing), ("general", Arc::new(slow))],
        |b| {
            b.subagents(SubagentConfig {
                deadline: Duration::from_millis(300),
                ..Default::default()
            })
        },
    );
    let (outcome, results) = {
        let mut events = Vec::new();
        let o = s
            .engine
            .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
            .await;
        let r = results_in_order(tool_results(
            &s.store
                .messages(o.session_id.as_deref().unwrap())
                .await
                .unwrap(),
        ));
        (o, r)
    };
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.final_text, "the parent goes on");
    assert!(
        results[0].is_error && results[0].output.contains("provider_error"),
        "{results:?}"
    );
    assert!(
        results[0].output.contains("the key was revoked"),
        "{results:?}"
    );
    assert!(results[1].is_error, "{results:?}");
    assert!(
        results[1].output.contains("timed out") || results[1].output.contains("max_wall_time"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_child_asking_for_more_than_its_parent_gets_no_more() {
    // A definition asking for bypass, under a parent in default mode run
    // headless: the child's write needs an approval nobody can give.
    let wild = AgentDef {
        name: "wild".into(),
        description: "asks for everything".into(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: None,
        mode: Some(PermissionMode::Bypass),
        max_turns: Some(1000),
        prompt: "do anything".into(),
        source: AgentSource::BuiltIn,
        worktree: false,
    };
    let wrote = Arc::new(Mutex::new(0));
    let child = Scripted::new(vec![
        Ok(calls(&[("w", "write", json!({"path": "x"}))])),
        Ok(calls(&[(
            "t",
            "task",
            json!({"description": "d", "prompt": "p"}),
        )])),
        Ok(text("tried")),
    ]);
    let s = setup(
        vec![
            Ok(task_calls(&[task("t1", "wild", "do it")])),
            Ok(text("done")),
        ],
        vec![("wild", child.clone())],
        |b| {
            b.mode(PermissionMode::Default)
                .tool(Arc::new(Writer(wrote.clone())))
                .subagents(SubagentConfig {
                    catalog: AgentCatalog {
                        agents: vec![wild],
                        warnings: Vec::new(),
                    },
                    ..Default::default()
                })
        },
    );
    let mut events = Vec::new();
    s.engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    assert_eq!(*wrote.lock().unwrap(), 0);
    let started_mode = events.iter().find_map(|e| match e {
        Event::Subagent { event, .. } => match event.as_ref() {
            Event::RunStarted { mode, .. } => Some(*mode),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(started_mode, Some(PermissionMode::Default));
    // Its results: the write refused, `task` unknown to it.
    let outputs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Subagent { event, .. } => match event.as_ref() {
                Event::ToolFinished { output_preview, .. } => Some(output_preview.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(outputs[0].contains("approval"), "{outputs:?}");
    assert!(outputs[1].contains("unknown tool"), "{outputs:?}");
}

#[tokio::test]
async fn cancelling_the_parent_cancels_the_child() {
    let mut slow = Scripted::build(vec![Ok(many_chunks(400))]);
    slow.chunk_delay = Duration::from_millis(20);
    let s = setup(
        vec![
            Ok(task_calls(&[task("t1", "general", "work")])),
            Ok(text("never")),
        ],
        vec![("general", Arc::new(slow))],
        |b| b.subagents(SubagentConfig::default()),
    );
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.cancel();
    });
    let mut events = Vec::new();
    let started = std::time::Instant::now();
    let outcome = s
        .engine
        .run(RunRequest::new("go"), cancel, &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    let child_stop = events.iter().find_map(|e| match e {
        Event::Subagent { event, .. } => match event.as_ref() {
            Event::Stopped { reason, .. } => Some(*reason),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(child_stop, Some(StopReason::Cancelled));
}

#[tokio::test]
async fn a_background_child_is_followed_steered_and_waited_for_before_the_run_ends() {
    // The child answers after a slow first turn; the parent checks on it,
    // steers it, then answers without waiting: the engine waits for it.
    let mut child = Scripted::build(vec![
        Ok(calls(&[("s", "sleep", json!({"ms": 300}))])),
        Ok(with_usage(text("background work done"), 500)),
    ]);
    child.chunk_delay = Duration::from_millis(1);
    let child = Arc::new(child);
    let bg = json!({"agent": "general", "description": "long job", "prompt": "work", "background": true});
    let s = setup(
        vec![
            Ok(calls(&[("t1", "task", bg)])),
            Ok(calls(&[("st", "task_status", json!({}))])),
            Ok(calls(&[(
                "sr",
                "task_steer",
                json!({"id": "agent-1", "message": "also check the tests"}),
            )])),
            Ok(text("I will let it finish")),
            Ok(text("all reported")),
        ],
        vec![("general", child.clone())],
        |b| b.subagents(SubagentConfig::default()),
    );
    let mut events = Vec::new();
    let outcome = s
        .engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    assert_eq!(outcome.final_text, "all reported");
    let messages = s
        .store
        .messages(outcome.session_id.as_deref().unwrap())
        .await
        .unwrap();
    let results = tool_results(&messages);
    assert!(
        results[0].output.contains("in the background"),
        "{results:?}"
    );
    assert!(
        results[1].output.contains("(general: long job): running"),
        "{results:?}"
    );
    let handed = messages.iter().any(|m| matches!(m,
        Message::User { content, .. } if content.contains("Background sub-agents you started have finished")
            && content.contains("background work done")));
    assert!(handed, "{messages:?}");
    assert!(
        results[2].output.contains("reads it at its next turn"),
        "{results:?}"
    );
    // The child read the steering message at its next turn.
    let second = &child.requests()[1];
    assert!(
        second.messages.iter().any(|m| matches!(m,
            Message::User { content, .. } if content == "also check the tests")),
        "{:?}",
        second.messages
    );
    // Its events and its cost reached the parent's run.
    assert!(
        nested(&events)
            .iter()
            .any(|(a, k)| a == "general" && k == "stopped")
    );
    assert!(outcome.totals.input_tokens >= 500, "{:?}", outcome.totals);
}

#[tokio::test]
async fn a_background_child_can_be_cancelled_and_cannot_ask_for_approval() {
    let wrote = Arc::new(Mutex::new(0));
    let mut child = Scripted::build(vec![
        Ok(calls(&[("w", "write", json!({"path": "x"}))])),
        Ok(calls(&[("s", "sleep", json!({"ms": 5000}))])),
        Ok(text("never")),
    ]);
    child.chunk_delay = Duration::from_millis(1);
    let bg =
        json!({"agent": "general", "description": "job", "prompt": "work", "background": true});
    let s = setup(
        vec![
            Ok(calls(&[("t1", "task", bg)])),
            Ok(calls(&[("s", "sleep", json!({"ms": 200}))])),
            Ok(calls(&[("c", "task_cancel", json!({"id": "agent-1"}))])),
            Ok(text("stopped it")),
        ],
        vec![("general", Arc::new(child))],
        |b| {
            b.mode(PermissionMode::Default)
                .approvals(Approvals::Events)
                .tool(Arc::new(Writer(wrote.clone())))
                .subagents(SubagentConfig::default())
        },
    );
    let mut events = Vec::new();
    let started = std::time::Instant::now();
    let outcome = s
        .engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(*wrote.lock().unwrap(), 0);
    // Nothing asked the user: the child's write was refused outright.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequired { .. }))
    );
    let results = results_in_order(tool_results(
        &s.store
            .messages(outcome.session_id.as_deref().unwrap())
            .await
            .unwrap(),
    ));
    let cancel = results.iter().find(|r| r.call_id == "c").unwrap();
    assert!(
        cancel.output.starts_with("cancelled agent-1."),
        "{results:?}"
    );
    assert!(cancel.output.contains("cancelled"), "{results:?}");
}

/// Gives one provider for the model `small`; anything else is unknown.
struct OneModel(Arc<Scripted>);

impl rein_core::agents::ModelSource for OneModel {
    fn provider_for(
        &self,
        model: &str,
    ) -> Result<Arc<dyn Provider>, rein_core::agents::ModelUnavailable> {
        match model {
            "small" => Ok(self.0.clone()),
            other => Err(rein_core::agents::ModelUnavailable(format!(
                "no provider serves `{other}`"
            ))),
        }
    }
}

#[tokio::test]
async fn a_definitions_model_is_used_when_it_can_be_and_said_when_it_cannot() {
    let def = |name: &str, model: &str| AgentDef {
        name: name.into(),
        description: "d".into(),
        tools: None,
        disallowed_tools: Vec::new(),
        model: Some(model.into()),
        mode: None,
        max_turns: None,
        prompt: "p".into(),
        source: AgentSource::BuiltIn,
        worktree: false,
    };
    let small = Scripted::new(vec![Ok(text("from the small model"))]);
    let fallback = Scripted::new(vec![
        Ok(text("parent model, alias")),
        Ok(text("parent model, unknown")),
    ]);
    let s = setup(
        vec![
            Ok(task_calls(&[task("t1", "cheap", "a")])),
            Ok(task_calls(&[task("t2", "aliased", "b")])),
            Ok(task_calls(&[task("t3", "missing", "c")])),
            Ok(text("done")),
        ],
        vec![("aliased", fallback.clone()), ("missing", fallback.clone())],
        |b| {
            b.subagents(SubagentConfig {
                catalog: AgentCatalog {
                    agents: vec![
                        def("cheap", "small"),
                        def("aliased", "sonnet"),
                        def("missing", "gpt-9"),
                    ],
                    warnings: Vec::new(),
                },
                models: Some(Arc::new(OneModel(small.clone()))),
                ..Default::default()
            })
        },
    );
    let mut events = Vec::new();
    let outcome = s
        .engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    let r = results_in_order(tool_results(
        &s.store
            .messages(outcome.session_id.as_deref().unwrap())
            .await
            .unwrap(),
    ));
    assert!(r[0].output.starts_with("from the small model"), "{r:?}");
    assert_eq!(small.requests().len(), 1);
    assert!(
        r[1].output
            .contains("`model: sonnet` is a Claude Code alias"),
        "{r:?}"
    );
    assert!(
        r[2].output
            .contains("model `gpt-9` unavailable (no provider serves `gpt-9`)"),
        "{r:?}"
    );
}
