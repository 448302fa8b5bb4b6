//! A run's scope (a custom command's `allowed-tools` and `model`): only
//! its tools are offered and reachable, its allow rules pre-approve for
//! that run alone, its model answers that run alone; the session's next
//! run is the engine's again; its ask rules ask in a mode that would let
//! the call run.

use std::sync::{Arc, Mutex};

use rein_core::*;
use serde_json::json;

use super::permission_scenarios::Shell;
use super::support::*;

/// An engine in default mode (a command asks) with the shell and the
/// harness's tools, whose own model is `engine_model`.
fn engine_with_shell(engine_model: Arc<Scripted>) -> (Harness, Arc<Mutex<Vec<String>>>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let h = harness(engine_model, move |b| {
        b.tool(Arc::new(Shell(r)))
            .mode(PermissionMode::Default)
            .approvals(Approvals::Events)
    });
    (h, ran)
}

/// Run, denying every approval asked; the events.
async fn run_denying(h: &Harness, request: RunRequest) -> (RunOutcome, Vec<Event>) {
    let mut events = Vec::new();
    let mut sink = FnSink(|e: Event| {
        if let Event::ApprovalRequired { reply, .. } = &e {
            assert!(reply.send(ApprovalDecision::deny()));
        }
        events.push(e);
    });
    let outcome = (h.engine.run(request, CancellationToken::new(), &mut sink)).await;
    (outcome, events)
}

fn offered(request: &rein_core::ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test]
async fn a_scope_offers_only_its_tools_pre_approves_and_answers_for_its_run_alone() {
    let engine_model = Scripted::new(vec![
        Ok(calls(&[("c2", "shell", json!({"cmd": "cargo test"}))])),
        Ok(text("engine model done")),
    ]);
    let command_model = Scripted::new(vec![
        Ok(calls(&[
            ("c0", "shell", json!({"cmd": "cargo test"})),
            ("c1", "sleep", json!({"ms": 1})),
        ])),
        Ok(text("command model done")),
    ]);
    let (h, ran) = engine_with_shell(engine_model.clone());
    let scope = RunScope {
        tools: Some(vec!["shell".to_string()].into()),
        allow: vec!["shell(cargo test)".parse().unwrap()],
        provider: Some(command_model.clone()),
        ..Default::default()
    };
    let request = RunRequest {
        scope,
        ..RunRequest::new("run the tests")
    };
    let (outcome, events) = run_denying(&h, request).await;
    assert_eq!(
        outcome.reason,
        StopReason::Completed,
        "{:?}",
        kinds(&events)
    );
    assert_eq!(outcome.final_text, "command model done");
    // Pre-approved: it ran without asking; the tool the scope leaves out
    // never ran and its call was told it does not exist.
    assert!(!kinds(&events).contains(&"approval_required".to_string()));
    assert_eq!(*ran.lock().unwrap(), ["cargo test"]);
    let results = tool_results(&h.stored(&outcome).await);
    let sleep = results.iter().find(|r| r.call_id == "c1").unwrap();
    assert!(sleep.is_error, "{results:?}");
    assert!(sleep.output.contains("unknown tool `sleep`"), "{results:?}");
    // Only the command's model was asked, offered only the shell.
    assert!(engine_model.requests().is_empty());
    for request in command_model.requests() {
        assert_eq!(offered(&request), ["shell"]);
    }
    // Nothing of the scope was stored as the session's approvals.
    let id = outcome.session_id.clone().unwrap();
    assert_eq!(h.store.grants(&id).await.unwrap(), (Vec::new(), 0));

    // The session's next run: the engine's model and every tool, and the
    // same command asks again (denied here, so it does not run).
    let (outcome, events) = run_denying(
        &h,
        RunRequest {
            resume: Some(id),
            ..RunRequest::new("again")
        },
    )
    .await;
    assert_eq!(outcome.final_text, "engine model done");
    assert!(kinds(&events).contains(&"approval_required".to_string()));
    assert_eq!(*ran.lock().unwrap(), ["cargo test"]);
    let tools = offered(&engine_model.requests()[0]);
    assert!(tools.contains(&"shell".to_string()) && tools.contains(&"sleep".to_string()));
}

#[tokio::test]
async fn a_scopes_allow_rules_never_get_past_a_deny_rule() {
    let model = Scripted::new(vec![
        Ok(calls(&[("c0", "shell", json!({"cmd": "rm -rf /"}))])),
        Ok(text("done")),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let h = harness(model, move |b| {
        let mut permissions = Permissions::default();
        permissions.rules.deny.push("shell(rm *)".parse().unwrap());
        b.tool(Arc::new(Shell(r)))
            .permissions(permissions)
            .mode(PermissionMode::Default)
            .approvals(Approvals::Events)
    });
    let request = RunRequest {
        scope: RunScope {
            allow: vec!["shell".parse().unwrap()],
            ..Default::default()
        },
        ..RunRequest::new("clean up")
    };
    let (outcome, _) = run_denying(&h, request).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert!(ran.lock().unwrap().is_empty());
    assert_eq!(outcome.refused.len(), 1, "{:?}", outcome.refused);
}

#[tokio::test]
async fn a_scopes_ask_rule_asks_though_the_mode_and_an_allow_rule_would_let_it_run() {
    let model = Scripted::new(vec![
        Ok(calls(&[
            ("c0", "shell", json!({"cmd": "cargo test"})),
            ("c1", "shell", json!({"cmd": "ls"})),
        ])),
        Ok(text("done")),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let h = harness(model, move |b| {
        b.tool(Arc::new(Shell(r)))
            .mode(PermissionMode::Auto)
            .approvals(Approvals::Events)
    });
    let request = RunRequest {
        scope: RunScope {
            allow: vec!["shell(cargo test)".parse().unwrap()],
            ask: vec!["shell(cargo test)".parse().unwrap()],
            ..Default::default()
        },
        ..RunRequest::new("test")
    };
    let (outcome, events) = run_denying(&h, request).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    // The call the ask rule names asked and, denied, did not run; the
    // other ran as the mode lets it.
    let asked = kinds(&events)
        .iter()
        .filter(|k| *k == "approval_required")
        .count();
    assert_eq!(asked, 1, "{:?}", kinds(&events));
    assert_eq!(*ran.lock().unwrap(), ["ls"]);
}
