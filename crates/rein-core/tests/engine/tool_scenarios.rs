//! How tool calls pass through the gate.

use std::sync::{Arc, Mutex};

use rein_core::*;
use serde_json::json;

use super::support::*;

/// The observations the model got on its second call.
fn observations(h: &Harness) -> Vec<ToolResult> {
    tool_results(&h.provider.requests()[1].messages)
}

#[tokio::test]
async fn a_tool_error_reaches_the_model_as_an_observation_on_the_next_call() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("f", "fail", json!({}))])),
            Ok(text("I see the disk is on fire")),
        ]),
        |b| b,
    );
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let obs = observations(&h);
    assert_eq!(obs.len(), 1);
    assert!(obs[0].is_error);
    assert_eq!(obs[0].output, "error: disk on fire");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolFinished { is_error: true, .. }))
    );
}

#[tokio::test]
async fn unknown_tools_bad_json_schema_mismatches_and_panics_become_error_observations() {
    let h = harness(
        Scripted::new(vec![
            Ok({
                let mut c = calls(&[
                    ("u", "teleport", json!({})),
                    ("s", "sleep", json!({"ms": "soon"})),
                    ("m", "sleep", json!({})),
                    ("p", "boom", json!({})),
                ]);
                c.insert(
                    0,
                    StreamChunk::ToolCall(ToolCall {
                        id: "j".into(),
                        name: "sleep".into(),
                        arguments: "{\"ms\": 1".into(),
                    }),
                );
                c
            }),
            Ok(text("recovered")),
        ]),
        |b| b,
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let obs = observations(&h);
    let by_id = |id: &str| obs.iter().find(|r| r.call_id == id).unwrap().clone();
    assert!(obs.iter().all(|r| r.is_error));
    assert!(
        by_id("j")
            .output
            .starts_with("error: the arguments of `sleep` are not valid JSON (EOF"),
        "{}",
        by_id("j").output
    );
    assert_eq!(
        by_id("u").output,
        "error: unknown tool `teleport`. Available tools: sleep, fail, boom."
    );
    assert_eq!(
        by_id("s").output,
        "error: invalid arguments for `sleep`: arguments.ms: expected integer, got string"
    );
    assert_eq!(
        by_id("m").output,
        "error: invalid arguments for `sleep`: arguments: missing required field `ms`"
    );
    assert!(by_id("p").output.contains("crashed (index out of range)"));
}

#[tokio::test]
async fn plan_mode_hides_write_tools_and_refuses_calls_to_them() {
    let runs = Arc::new(Mutex::new(0));
    let provider = Scripted::new(vec![
        Ok(calls(&[("w", "write", json!({"path": "a"}))])),
        Ok(text("1. plan")),
    ]);
    let writes = runs.clone();
    let h = harness(provider, move |b| b.tool(Arc::new(Writer(writes))));
    assert!(
        h.engine
            .tool_specs(rein_core::PermissionMode::Default)
            .iter()
            .any(|t| t.name == "write")
    );
    let (outcome, _) = h
        .run(RunRequest {
            prompt: "plan it".into(),
            images: Vec::new(),
            resume: None,
            mode: Some(rein_core::PermissionMode::Plan),
            control: None,
            scope: Default::default(),
        })
        .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let first = &h.provider.requests()[0];
    assert!(first.tools.iter().all(|t| t.name != "write"));
    assert!(first.system.contains("plan mode"));
    assert_eq!(*runs.lock().unwrap(), 0, "the write tool must not run");
    let obs = observations(&h);
    assert!(obs[0].is_error);
    assert!(
        obs[0]
            .output
            .contains("plan mode is read-only, so it is not available"),
        "{}",
        obs[0].output
    );
}

#[tokio::test(start_paused = true)]
async fn n_tool_calls_that_each_sleep_t_finish_in_about_t() {
    let n = 8;
    let list: Vec<(String, serde_json::Value)> = (0..n)
        .map(|i| (format!("c{i}"), json!({"ms": 1000})))
        .collect();
    let refs: Vec<(&str, &str, serde_json::Value)> = list
        .iter()
        .map(|(id, a)| (id.as_str(), "sleep", a.clone()))
        .collect();
    let h = harness(Scripted::new(vec![Ok(calls(&refs)), Ok(text("ok"))]), |b| b);
    let start = tokio::time::Instant::now();
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    let took = start.elapsed();
    assert_eq!(outcome.reason, StopReason::Completed);
    assert!(
        took < std::time::Duration::from_millis(1500),
        "took {took:?}"
    );
    assert!(took >= std::time::Duration::from_millis(1000));
}

#[tokio::test(start_paused = true)]
async fn max_concurrent_tools_bounds_how_many_run_at_once() {
    let refs: Vec<(&str, &str, serde_json::Value)> = vec![
        ("a", "sleep", json!({"ms": 1000})),
        ("b", "sleep", json!({"ms": 1000})),
        ("c", "sleep", json!({"ms": 1000})),
    ];
    let h = harness(Scripted::new(vec![Ok(calls(&refs)), Ok(text("ok"))]), |b| {
        b.max_concurrent_tools(1)
    });
    let start = tokio::time::Instant::now();
    h.run(RunRequest::new("go")).await;
    assert!(start.elapsed() >= std::time::Duration::from_millis(3000));
}

#[tokio::test(start_paused = true)]
async fn one_slow_tool_times_out_without_holding_back_the_others() {
    let refs: Vec<(&str, &str, serde_json::Value)> = vec![
        ("slow", "sleep", json!({"ms": 600_000, "stubborn": true})),
        ("fast", "sleep", json!({"ms": 10, "label": "quick"})),
    ];
    let h = harness(Scripted::new(vec![Ok(calls(&refs)), Ok(text("ok"))]), |b| {
        b.tool_timeout(std::time::Duration::from_secs(2))
    });
    let start = tokio::time::Instant::now();
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolFinished { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["fast", "slow"]);
    let obs = observations(&h);
    assert_eq!(obs[0].call_id, "slow");
    assert!(obs[0].is_error);
    assert_eq!(obs[0].output, "error: `sleep` timed out after 2 s");
    assert_eq!(obs[1].output, "quick");
}

#[tokio::test(start_paused = true)]
async fn results_keep_call_order_whatever_order_they_finish_in() {
    let refs: Vec<(&str, &str, serde_json::Value)> = vec![
        ("a", "sleep", json!({"ms": 300, "label": "A"})),
        ("b", "sleep", json!({"ms": 200, "label": "B"})),
        ("c", "sleep", json!({"ms": 100, "label": "C"})),
    ];
    let h = harness(Scripted::new(vec![Ok(calls(&refs)), Ok(text("ok"))]), |b| b);
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolFinished { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["c", "b", "a"]);
    let outputs: Vec<String> = observations(&h).into_iter().map(|r| r.output).collect();
    assert_eq!(outputs, ["A", "B", "C"]);
    // Reloading the stored session gives call order too.
    let id = outcome.session_id.unwrap();
    let repaired = rein_core::history::repair_history(h.store.messages(&id).await.unwrap());
    let stored: Vec<String> = tool_results(&repaired.messages)
        .into_iter()
        .map(|r| r.output)
        .collect();
    assert_eq!(stored, ["A", "B", "C"]);
}

#[tokio::test]
async fn cancelling_during_tools_lets_them_return_partial_output_and_persists_it() {
    let h = harness(
        Scripted::new(vec![Ok(calls(&[(
            "s",
            "sleep",
            json!({"ms": 60_000, "label": "work"}),
        )]))]),
        |b| b,
    );
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    let mut sink = FnSink(move |e: Event| {
        if let Event::ToolStarted { .. } = e {
            let c3 = c2.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                c3.cancel();
            });
        }
    });
    let outcome = h.engine.run(RunRequest::new("go"), cancel, &mut sink).await;
    assert_eq!(outcome.reason, StopReason::Cancelled);
    let stored = h.stored(&outcome).await;
    let results = tool_results(&stored);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0].output.contains("cancelled by the user"),
        "{}",
        results[0].output
    );
    assert!(results[0].output.contains("work (partial)"));
}

#[tokio::test]
async fn huge_observations_are_capped_by_the_gate() {
    struct Flood;
    #[async_trait::async_trait]
    impl Tool for Flood {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "flood".into(),
                description: "floods".into(),
                parameters: json!({"type": "object"}),
            }
        }
        fn access(&self) -> ToolAccess {
            ToolAccess::Read
        }
        async fn call(
            &self,
            _: serde_json::Value,
            _: ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::ok("x".repeat(1_000_000)))
        }
    }
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("f", "flood", json!({}))])),
            Ok(text("ok")),
        ]),
        |b| b.tool(Arc::new(Flood)).max_output_bytes(10_000),
    );
    h.run(RunRequest::new("go")).await;
    let obs = observations(&h);
    assert!(obs[0].output.len() < 10_200);
    assert!(
        obs[0]
            .output
            .contains("cut from the middle of 1000000 bytes")
    );
}

/// Vetoes `fail`, and makes every `sleep` call sleep 1 ms with a new label.
struct Policy;

#[async_trait::async_trait]
impl CallHook for Policy {
    async fn before_call(&self, call: &ToolCall, args: &serde_json::Value) -> HookVerdict {
        match call.name.as_str() {
            "fail" => HookVerdict::Veto("failing tools are off today".into()),
            "sleep" if args["label"] == "bad" => HookVerdict::Rewrite(json!({"ms": "soon"})),
            "sleep" => HookVerdict::Rewrite(json!({"ms": 1, "label": "rewritten"})),
            _ => HookVerdict::Continue,
        }
    }
}

#[tokio::test]
async fn a_hook_in_the_gate_can_veto_a_call_or_rewrite_its_arguments_and_a_bad_rewrite_is_refused()
{
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[
                ("f", "fail", json!({})),
                ("s", "sleep", json!({"ms": 60000, "label": "slow"})),
                ("b", "sleep", json!({"ms": 1, "label": "bad"})),
            ])),
            Ok(text("done")),
        ]),
        |b| b.hook(Arc::new(Policy)),
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let obs = observations(&h);
    assert_eq!(
        obs[0].output,
        "error: a hook refused this call: failing tools are off today"
    );
    assert!(obs[0].is_error);
    // The tool ran with the rewritten arguments: 1 ms, not a minute.
    assert_eq!(obs[1].output, "rewritten");
    assert!(!obs[1].is_error);
    assert!(
        obs[2]
            .output
            .contains("rewrote the arguments of `sleep` into invalid ones"),
        "{}",
        obs[2].output
    );
}

/// A tool that adds the `write` tool to the engine while a run goes on (as
/// an MCP server that finishes starting would).
struct Installer(Arc<std::sync::OnceLock<AgentEngine>>);

#[async_trait::async_trait]
impl Tool for Installer {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "install".into(),
            description: "adds a tool".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(
        &self,
        _args: serde_json::Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let writer = Writer(Arc::new(Mutex::new(0)));
        self.0.get().unwrap().add_tools(vec![Arc::new(writer)]);
        Ok(ToolOutput::ok("installed"))
    }
}

#[tokio::test]
async fn tools_added_while_a_run_goes_on_are_offered_and_run_from_the_next_turn() {
    let engine_cell = Arc::new(std::sync::OnceLock::new());
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("i", "install", json!({}))])),
            Ok(calls(&[("w", "write", json!({"path": "x"}))])),
            Ok(text("done")),
        ]),
        |b| b.tool(Arc::new(Installer(engine_cell.clone()))),
    );
    engine_cell.set(h.engine.clone()).ok().unwrap();
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    let requests = h.provider.requests();
    let offered =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    let write = "write".to_string();
    assert!(!offered(0).contains(&write), "{:?}", offered(0));
    assert!(offered(1).contains(&write), "{:?}", offered(1));
    let obs = tool_results(&requests[2].messages);
    assert_eq!(obs.last().unwrap().output, "written");
}

/// A source of tools that arrive late: `write` after a moment, nothing
/// else ever.
struct SlowServer;

#[async_trait::async_trait]
impl LateTools for SlowServer {
    async fn wait_for(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if name != "write" {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Some(Arc::new(Writer(Arc::new(Mutex::new(0)))))
    }
}

/// A call to a tool whose server is still starting waits for it and runs;
/// a call to a tool nothing will offer fails at once as unknown.
#[tokio::test]
async fn a_call_to_a_tool_that_arrives_late_waits_for_it() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[
                ("w", "write", json!({"path": "x"})),
                ("n", "nowhere", json!({})),
            ])),
            Ok(text("done")),
        ]),
        |b| b.late_tools(Arc::new(SlowServer)),
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    let obs = tool_results(&h.provider.requests()[1].messages);
    assert_eq!(obs[0].output, "written");
    assert!(!obs[0].is_error);
    assert!(obs[1].is_error);
    assert!(
        obs[1].output.contains("unknown tool `nowhere`"),
        "{}",
        obs[1].output
    );
}

/// Replacing tools (a server's list changed) drops the old ones and
/// offers the new ones from the next request.
#[tokio::test]
async fn replaced_tools_are_gone_and_the_new_ones_offered() {
    let h = harness(Scripted::new(vec![Ok(text("a")), Ok(text("b"))]), |b| b);
    h.run(RunRequest::new("one")).await;
    h.engine.replace_tools(
        |name| name == "sleep",
        vec![Arc::new(Writer(Arc::new(Mutex::new(0))))],
    );
    h.run(RunRequest::new("two")).await;
    let names = |i: usize| -> Vec<String> {
        h.provider.requests()[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert!(names(0).contains(&"sleep".to_string()), "{:?}", names(0));
    assert!(!names(1).contains(&"sleep".to_string()), "{:?}", names(1));
    assert!(names(1).contains(&"write".to_string()), "{:?}", names(1));
}

/// A small model repeats `call_1` every turn (and may leave an id empty):
/// the ids are made unique as the answer is committed, so each stored
/// result pairs with its own call (what resume, hooks and telemetry read).
#[tokio::test]
async fn repeated_or_empty_call_ids_are_made_unique_before_they_are_committed() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[(
                "call_1",
                "sleep",
                json!({"ms": 1, "label": "first"}),
            )])),
            Ok(calls(&[
                ("call_1", "sleep", json!({"ms": 1, "label": "second"})),
                ("", "sleep", json!({"ms": 1, "label": "third"})),
                ("", "sleep", json!({"ms": 1, "label": "fourth"})),
            ])),
            Ok(text("done")),
        ]),
        |b| b,
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let stored = h.stored(&outcome).await;
    let ids: Vec<String> = stored
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => Some(a.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(ids, ["call_1", "call_1_2", "call_2", "call_3"]);
    // Each result names its own call, and carries that call's label.
    let results = tool_results(&stored);
    for (id, label) in ids.iter().zip(["first", "second", "third", "fourth"]) {
        let result = results.iter().find(|r| &r.call_id == id).unwrap();
        assert_eq!(result.output, label, "{results:?}");
    }
}
