//! The gate's caps and the engine's arithmetic under hostile model output:
//! too many calls in one answer, huge arguments (whole or streamed), calls
//! that need the user in every mode, and absurd reported usage.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rein_core::*;
use serde_json::{Value, json};

use super::support::*;

/// Counts its runs.
struct Count(Arc<Mutex<u32>>);

#[async_trait]
impl Tool for Count {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "count".into(),
            description: "counts".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        *self.0.lock().unwrap() += 1;
        Ok(ToolOutput::ok("counted"))
    }
}

fn counter() -> (Arc<Mutex<u32>>, Arc<dyn Tool>) {
    let n = Arc::new(Mutex::new(0));
    (n.clone(), Arc::new(Count(n)))
}

fn many_calls(n: usize) -> Vec<StreamChunk> {
    let list: Vec<(String, &str, Value)> = (0..n)
        .map(|i| (format!("c{i}"), "count", json!({})))
        .collect();
    let refs: Vec<(&str, &str, Value)> = list
        .iter()
        .map(|(id, name, v)| (id.as_str(), *name, v.clone()))
        .collect();
    calls(&refs)
}

#[tokio::test]
async fn calls_past_the_per_turn_cap_are_not_run_and_each_gets_an_error_and_the_run_goes_on() {
    let (ran, tool) = counter();
    let h = harness(
        Scripted::new(vec![Ok(many_calls(40)), Ok(text("done"))]),
        |b| b.tool(tool),
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(*ran.lock().unwrap(), 32, "the default cap is 32");
    let obs = tool_results(&h.provider.requests()[1].messages);
    assert_eq!(obs.len(), 40, "every call has an observation");
    for (i, r) in obs.iter().enumerate() {
        assert_eq!(r.call_id, format!("c{i}"), "order kept");
        if i < 32 {
            assert_eq!(r.output, "counted");
        } else {
            assert!(r.is_error);
            assert!(
                r.output.contains(
                    "too many tool calls in one turn: at most 32 run; this one was not run"
                ),
                "{}",
                r.output
            );
        }
    }
    assert_eq!(outcome.final_text, "done");
}

#[tokio::test]
async fn the_per_turn_cap_is_set_by_the_builder() {
    let (ran, tool) = counter();
    let h = harness(
        Scripted::new(vec![Ok(many_calls(5)), Ok(text("done"))]),
        |b| b.tool(tool).max_tool_calls_per_turn(2),
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(*ran.lock().unwrap(), 2);
    let obs = tool_results(&h.provider.requests()[1].messages);
    assert_eq!(obs.iter().filter(|r| r.is_error).count(), 3);
    assert!(obs[4].output.contains("at most 2 run"), "{}", obs[4].output);
}

#[tokio::test]
async fn arguments_over_the_cap_are_refused_before_parsing_and_the_other_calls_run() {
    let (ran, tool) = counter();
    let huge = format!("{{\"data\": \"{}\"}}", "x".repeat(5000));
    let mut chunks = calls(&[("small", "count", json!({}))]);
    // After the small call: an answer is cut where a call passes the cap.
    chunks.insert(
        1,
        StreamChunk::ToolCall(ToolCall {
            id: "big".into(),
            name: "count".into(),
            arguments: huge,
        }),
    );
    let h = harness(Scripted::new(vec![Ok(chunks), Ok(text("done"))]), |b| {
        b.tool(tool).max_argument_bytes(1024)
    });
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(*ran.lock().unwrap(), 1, "only the small call ran");
    let obs = tool_results(&h.provider.requests()[1].messages);
    assert_eq!(obs[0].output, "counted");
    assert!(obs[1].is_error);
    assert!(
        obs[1]
            .output
            .contains("the arguments of `count` are larger than the limit of 1024 bytes (1 KiB)"),
        "{}",
        obs[1].output
    );
    // The huge arguments were cut to the cap (plus one byte) as they
    // arrived, and never copied whole into an event.
    let stored = h.stored(&outcome).await;
    let kept = stored
        .iter()
        .find_map(|m| match m {
            Message::Assistant(a) => a.tool_calls().find(|c| c.id == "big").cloned(),
            _ => None,
        })
        .unwrap();
    assert_eq!(kept.arguments.len(), 1025);
    for e in &events {
        if let Event::ToolStarted { arguments, .. } = e {
            assert!(arguments.len() < 1024, "{}", arguments.len());
        }
    }
}

#[tokio::test]
async fn a_model_streaming_endless_arguments_is_cut_at_the_cap() {
    let (ran, tool) = counter();
    let mut chunks = vec![StreamChunk::ToolCallDelta {
        index: 0,
        id: Some("endless".into()),
        name: Some("count".into()),
        arguments: "{\"data\": \"".into(),
    }];
    // 4 MB in 64 KiB pieces; the cap is 100 KiB.
    for _ in 0..64 {
        chunks.push(StreamChunk::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: "é".repeat(32 * 1024),
        });
    }
    chunks.push(StreamChunk::TextDelta("never read".into()));
    chunks.push(StreamChunk::Done(FinishReason::ToolCalls));
    let h = harness(Scripted::new(vec![Ok(chunks), Ok(text("done"))]), |b| {
        b.tool(tool).max_argument_bytes(100 * 1024)
    });
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(*ran.lock().unwrap(), 0);
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { message }
            if message.starts_with("the model's answer was cut: a tool call's arguments passed"))),
        "{events:?}"
    );
    let stored = h.stored(&outcome).await;
    let Message::Assistant(answer) = &stored[1] else {
        panic!("{stored:?}")
    };
    assert!(
        !answer.text().contains("never read"),
        "the stream was not read on"
    );
    let call = answer.tool_calls().next().unwrap();
    assert!(
        call.arguments.len() <= 100 * 1024 + 4,
        "{}",
        call.arguments.len()
    );
    assert!(call.arguments.len() > 100 * 1024);
    let obs = tool_results(&stored);
    assert!(obs[0].is_error && obs[0].output.contains("larger than the limit"));
}

/// A tool whose every call reaches past the project: it needs the user.
struct Global(Arc<Mutex<u32>>);

#[async_trait]
impl Tool for Global {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "global_note".into(),
            description: "writes for every project".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    fn assess(&self, _args: &Value, _ctx: &ToolContext) -> Assessment {
        Assessment {
            subjects: vec!["global".into()],
            risk: Risk::High,
            needs_user: true,
            reasons: vec!["it enters every project's prompt".into()],
            summary: "a global note".into(),
            ..Assessment::default()
        }
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        *self.0.lock().unwrap() += 1;
        Ok(ToolOutput::ok("noted for every project"))
    }
}

/// Approves everything and records what it was asked.
struct Yes(Arc<Mutex<Vec<ApprovalRequest>>>);

#[async_trait]
impl Approver for Yes {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().push(request.clone());
        ApprovalDecision::once()
    }
}

#[tokio::test]
async fn a_call_that_needs_the_user_is_refused_headless_in_every_mode_and_asks_when_someone_can_answer()
 {
    for mode in PermissionMode::ALL {
        let ran = Arc::new(Mutex::new(0));
        let tool: Arc<dyn Tool> = Arc::new(Global(ran.clone()));
        let h = harness(
            Scripted::new(vec![
                Ok(calls(&[("g", "global_note", json!({}))])),
                Ok(text("done")),
            ]),
            |b| b.tool(tool).mode(mode),
        );
        let (outcome, events) = h.run(RunRequest::new("go")).await;
        assert_eq!(outcome.reason, StopReason::Completed, "{mode}");
        assert_eq!(*ran.lock().unwrap(), 0, "{mode}: ran without the user");
        let obs = tool_results(&h.stored(&outcome).await);
        assert!(
            obs[0]
                .output
                .contains("needs the user's approval (it enters every project's prompt)"),
            "{mode}: {}",
            obs[0].output
        );
        let suggested = events.iter().find_map(|e| match e {
            Event::PermissionDenied {
                suggested_rules, ..
            } => Some(suggested_rules.clone()),
            _ => None,
        });
        assert_eq!(
            suggested,
            Some(vec![
                "global_note(global)".parse::<rein_core::Rule>().unwrap()
            ]),
            "{mode}"
        );

        let asked = Arc::new(Mutex::new(Vec::new()));
        let ran = Arc::new(Mutex::new(0));
        let tool: Arc<dyn Tool> = Arc::new(Global(ran.clone()));
        let approver = Approvals::With(Arc::new(Yes(asked.clone())));
        let h = harness(
            Scripted::new(vec![
                Ok(calls(&[("g", "global_note", json!({}))])),
                Ok(text("done")),
            ]),
            |b| b.tool(tool).mode(mode).approvals(approver),
        );
        let (outcome, _) = h.run(RunRequest::new("go")).await;
        assert_eq!(outcome.reason, StopReason::Completed, "{mode}");
        assert_eq!(*ran.lock().unwrap(), 1, "{mode}: approved, so it ran");
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "{mode}");
        assert_eq!(asked[0].summary, "a global note");
    }
}

/// `chunks` with the usage they report replaced by an absurd one.
fn with_absurd_usage(chunks: Vec<StreamChunk>) -> Vec<StreamChunk> {
    let mut out: Vec<StreamChunk> = chunks
        .into_iter()
        .filter(|c| !matches!(c, StreamChunk::Usage(_)))
        .collect();
    out.insert(0, absurd_usage());
    out
}

fn absurd_usage() -> StreamChunk {
    StreamChunk::Usage(Usage {
        input_tokens: u64::MAX - 5,
        output_tokens: u64::MAX,
        cached_input_tokens: u64::MAX,
        reasoning_tokens: u64::MAX,
    })
}

#[tokio::test]
async fn absurd_reported_usage_saturates_instead_of_wrapping_or_panicking() {
    let (_, tool) = counter();
    let first = with_absurd_usage(calls(&[("a", "count", json!({}))]));
    let second = with_absurd_usage(text("done"));
    let mut provider = Scripted::build(vec![Ok(first), Ok(second)]);
    provider.pricing = Some(Pricing {
        input: 15.0,
        cached_input: 1.5,
        output: 75.0,
    });
    let h = harness(Arc::new(provider), |b| b.tool(tool));
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.usage.input_tokens, u64::MAX);
    assert_eq!(outcome.usage.output_tokens, u64::MAX);
    assert_eq!(outcome.usage.total(), u64::MAX);
    assert_eq!(outcome.totals.input_tokens, u64::MAX);
    assert_eq!(outcome.totals.output_tokens, u64::MAX);
    assert_eq!(outcome.totals.calls, 2);
    assert!(
        outcome.totals.known_cost_usd.is_finite(),
        "{}",
        outcome.totals.known_cost_usd
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::TokenUpdate {
            actual: Some(n),
            next_request: u64::MAX,
            ..
        } if *n == u64::MAX - 5
    )));
}

#[tokio::test]
async fn absurd_usage_trips_a_token_budget_instead_of_wrapping_past_it() {
    let (_, tool) = counter();
    let first = with_absurd_usage(calls(&[("a", "count", json!({}))]));
    let h = harness(Scripted::new(vec![Ok(first), Ok(text("never"))]), |b| {
        b.tool(tool).max_tokens(1_000)
    });
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::MaxTokens);
}
