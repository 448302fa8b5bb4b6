//! Child engines (sub-agents): whatever a child asks for, it never gets more
//! than its parent.

use std::sync::{Arc, Mutex};

use rein_core::*;
use serde_json::json;

use super::support::*;

/// The mode a run announced.
fn started_mode(events: &[Event]) -> PermissionMode {
    events
        .iter()
        .find_map(|e| match e {
            Event::RunStarted { mode, .. } => Some(*mode),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_child_never_gets_a_looser_mode_more_tools_or_more_turns_than_its_parent() {
    let wrote = Arc::new(Mutex::new(0));
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[
                ("w", "write", json!({"path": "x"})),
                ("s", "sleep", json!({"ms": 1})),
            ])),
            Ok(text("done")),
        ]),
        |b| {
            b.mode(PermissionMode::Default)
                .tool(Arc::new(Writer(wrote.clone())))
                .max_turns(5)
        },
    );
    // Asks for bypass, every tool and 100 turns.
    let child = h.engine.child(ChildPolicy {
        mode: Some(PermissionMode::Bypass),
        tools: Some(vec!["sleep".into(), "teleport".into()]),
        max_turns: Some(100),
        ..Default::default()
    });
    let names: Vec<String> = child
        .tool_specs(PermissionMode::Default)
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["sleep"]);
    assert_eq!(child.permissions().mode, PermissionMode::Default);

    // A run of the child asking for auto mode still runs in default.
    let mut request = RunRequest::new("go");
    request.mode = Some(PermissionMode::Auto);
    let mut events = Vec::new();
    let outcome = child
        .run(request, CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(started_mode(&events), PermissionMode::Default);
    let obs = tool_results(&h.provider.requests()[1].messages);
    assert!(
        obs[0].output.contains("unknown tool `write`"),
        "{}",
        obs[0].output
    );
    assert_eq!(
        *wrote.lock().unwrap(),
        0,
        "the parent's write tool never ran"
    );
    assert_eq!(obs[1].output, "slept");
}

#[tokio::test]
async fn a_child_can_narrow_its_parent_to_plan_mode_and_its_runs_cannot_leave_it() {
    let h = harness(Scripted::new(vec![Ok(text("planned"))]), |b| b);
    let child = h.engine.child(ChildPolicy {
        mode: Some(PermissionMode::Plan),
        ..Default::default()
    });
    let control = RunControl::new();
    control.set_mode(PermissionMode::Bypass);
    let request = RunRequest {
        control: Some(control),
        ..RunRequest::new("plan it")
    };
    let mut events = Vec::new();
    let outcome = child
        .run(request, CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(started_mode(&events), PermissionMode::Plan);
    // The switch to bypass was lowered to plan: no change to announce.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ModeChanged { .. }))
    );
    assert!(
        h.provider.requests()[0]
            .tools
            .iter()
            .all(|t| t.name != "write")
    );
}

#[tokio::test]
async fn a_child_asking_for_more_turns_than_its_parent_stops_at_the_parents_limit() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("s", "sleep", json!({"ms": 1}))])),
            Ok(text("done")),
        ]),
        |b| b.max_turns(1),
    );
    let child = h.engine.child(ChildPolicy {
        max_turns: Some(100),
        ..Default::default()
    });
    let mut events = Vec::new();
    let outcome = child
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::MaxTurns);
    assert_eq!(outcome.turns, 1);
}
