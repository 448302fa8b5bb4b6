//! How runs start, turn and stop.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use rein_core::*;
use serde_json::json;

use super::support::*;

#[tokio::test]
async fn a_plain_answer_completes_in_one_turn_with_events_in_documented_order() {
    let h = harness(Scripted::new(vec![Ok(text("Hello there"))]), |b| b);
    let (outcome, events) = h.run(RunRequest::new("hi")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.turns, 1);
    assert_eq!(outcome.final_text, "Hello there");
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "message_committed",
            "turn_started",
            "text_delta",
            "message_committed",
            "token_update",
            "stopped"
        ]
    );
}

#[tokio::test]
async fn tool_turn_events_come_in_documented_order() {
    let provider = Scripted::new(vec![
        Ok(calls(&[
            ("a", "sleep", json!({"ms": 1, "label": "one"})),
            ("b", "sleep", json!({"ms": 1, "label": "two"})),
        ])),
        Ok(text("done")),
    ]);
    let h = harness(provider, |b| b);
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let k = kinds(&events);
    assert_eq!(
        k[..6],
        [
            "run_started",
            "message_committed",
            "turn_started",
            "message_committed",
            "token_update",
            "tool_started"
        ]
    );
    assert_eq!(k[6], "tool_started");
    // Each finish is followed by the commit of its result.
    assert_eq!(
        k[7..11],
        [
            "tool_finished",
            "message_committed",
            "tool_finished",
            "message_committed"
        ]
    );
    assert_eq!(k[11], "turn_started");
    assert_eq!(k.last().unwrap(), "stopped");
    let Event::TokenUpdate {
        estimated,
        actual,
        window,
        next_request,
    } = &events[4]
    else {
        panic!("expected token_update: {:?}", events[4]);
    };
    assert!(*estimated > 0);
    // The request's size as reported (input tokens; the output is not
    // part of the request), and the next one: that plus the answer.
    assert_eq!(*actual, Some(10));
    assert!(*next_request > 10, "{next_request}");
    assert_eq!(*window, Some(1000));
    assert_eq!(outcome.usage.input_tokens, 10);
}

#[tokio::test]
async fn max_turns_stops_the_run_with_max_turns() {
    let mut p = Scripted::build(vec![]);
    p.repeat = Some(calls(&[("x", "sleep", json!({"ms": 0}))]));
    let h = harness(Arc::new(p), |b| b.max_turns(3));
    let (outcome, events) = h.run(RunRequest::new("loop forever")).await;
    assert_eq!(outcome.reason, StopReason::MaxTurns);
    assert_eq!(outcome.turns, 3);
    assert_eq!(h.provider.requests().len(), 3);
    // Everything produced is kept: user + 3 x (assistant + result).
    assert_eq!(h.stored(&outcome).await.len(), 7);
    assert!(matches!(
        events.last(),
        Some(Event::Stopped {
            reason: StopReason::MaxTurns,
            ..
        })
    ));
}

#[tokio::test]
async fn a_pre_cancelled_token_stops_before_any_model_call() {
    let h = harness(Scripted::new(vec![Ok(text("never"))]), |b| b);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let mut events = Vec::new();
    let outcome = h
        .engine
        .run(RunRequest::new("hi"), cancel, &mut events)
        .await;
    assert_eq!(outcome.reason, StopReason::Cancelled);
    assert_eq!(outcome.turns, 0);
    assert!(h.provider.requests().is_empty());
    assert_eq!(kinds(&events), ["stopped"]);
}

#[tokio::test]
async fn the_system_prompt_is_sent_but_never_persisted() {
    let dir = tempfile_dir();
    std::fs::write(dir.join("AGENTS.md"), "Always answer in haiku.").unwrap();
    let provider = Scripted::new(vec![Ok(text("ok"))]);
    let h = harness(provider, |b| b.workspace(&dir));
    let (outcome, _) = h.run(RunRequest::new("hi")).await;
    let sent = &h.provider.requests()[0];
    assert!(sent.system.contains("Always answer in haiku."));
    assert!(
        sent.system
            .contains(&dir.canonicalize().unwrap().display().to_string())
    );
    assert!(sent.messages.iter().all(|m| m.role() != Role::System));
    let stored = h.stored(&outcome).await;
    assert!(stored.iter().all(|m| m.role() != Role::System));
    assert!(stored.iter().all(|m| !m.text().contains("haiku")));
    std::fs::remove_dir_all(dir).unwrap();
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rein-core-test-{}-{}",
        std::process::id(),
        fastrand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fastrand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[tokio::test]
async fn retryable_provider_errors_are_retried_with_visible_events() {
    let overloaded = || {
        let mut e = ProviderError::new(ProviderErrorKind::Unavailable, "overloaded");
        e.status = Some(529);
        Err(e)
    };
    let h = harness(
        Scripted::new(vec![overloaded(), overloaded(), Ok(text("finally"))]),
        |b| b.provider_retries(2),
    );
    let (outcome, events) = h.run(RunRequest::new("hi")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.final_text, "finally");
    let retries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { attempt, error, .. } => Some((*attempt, error.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        retries,
        [(1, "overloaded".into()), (2, "overloaded".into())]
    );
}

#[tokio::test]
async fn retries_run_out_and_non_retryable_errors_stop_at_once() {
    let unavailable = || Err(ProviderError::new(ProviderErrorKind::Unavailable, "busy"));
    let h = harness(
        Scripted::new(vec![unavailable(), unavailable(), Ok(text("late"))]),
        |b| b.provider_retries(1),
    );
    let (outcome, _) = h.run(RunRequest::new("hi")).await;
    assert_eq!(outcome.reason, StopReason::ProviderError);
    assert_eq!(outcome.error.as_deref(), Some("busy"));

    let h = harness(
        Scripted::new(vec![Err(ProviderError::new(
            ProviderErrorKind::Auth,
            "bad key",
        ))]),
        |b| b.provider_retries(5),
    );
    let (outcome, events) = h.run(RunRequest::new("hi")).await;
    assert_eq!(outcome.reason, StopReason::ProviderError);
    assert_eq!(h.provider.requests().len(), 1);
    assert!(!kinds(&events).contains(&"retry".to_string()));
    // The prompt itself is kept so the session can be resumed.
    assert_eq!(h.stored(&outcome).await.len(), 1);
}

#[tokio::test]
async fn cancelling_mid_stream_keeps_the_text_produced_so_far() {
    let mut p = Scripted::build(vec![Ok(vec![
        StreamChunk::TextDelta("partial ".into()),
        StreamChunk::TextDelta("answer".into()),
        StreamChunk::TextDelta(" never".into()),
        StreamChunk::Done(FinishReason::Stop),
    ])]);
    p.chunk_delay = Duration::from_millis(40);
    let h = harness(Arc::new(p), |b| b);
    let cancel = CancellationToken::new();
    let seen = Arc::new(Mutex::new(0));
    let (c2, s2) = (cancel.clone(), seen.clone());
    let mut sink = FnSink(move |e: Event| {
        if let Event::TextDelta { .. } = e {
            let mut n = s2.lock().unwrap();
            *n += 1;
            if *n == 2 {
                c2.cancel();
            }
        }
    });
    let outcome = h.engine.run(RunRequest::new("hi"), cancel, &mut sink).await;
    assert_eq!(outcome.reason, StopReason::Cancelled);
    let stored = h.stored(&outcome).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1].text(), "partial answer");
}

#[tokio::test]
async fn run_stream_yields_the_same_events_as_run() {
    let script = || {
        vec![
            Ok(calls(&[("a", "sleep", json!({"ms": 1}))])),
            Ok(text("done")),
        ]
    };
    let h = harness(Scripted::new(script()), |b| b);
    let (_, from_run) = h.run(RunRequest::new("go")).await;
    let h2 = harness(Scripted::new(script()), |b| b);
    let from_stream: Vec<Event> = h2
        .engine
        .run_stream(RunRequest::new("go"), CancellationToken::new())
        .collect()
        .await;
    assert_eq!(kinds(&from_run), kinds(&from_stream));
    assert!(matches!(
        from_stream.last(),
        Some(Event::Stopped {
            reason: StopReason::Completed,
            ..
        })
    ));
}

#[tokio::test]
async fn resume_continues_a_session_with_its_history_and_repairs_dangling_calls() {
    let h = harness(
        Scripted::new(vec![Ok(text("first answer")), Ok(text("second answer"))]),
        |b| b,
    );
    let (first, _) = h.run(RunRequest::new("first question")).await;
    let id = first.session_id.clone().unwrap();
    // Simulate a crash after the model asked for a tool.
    h.store
        .append_message(
            &id,
            &Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "lost".into(),
                    name: "sleep".into(),
                    arguments: "{}".into(),
                })],
                ..Default::default()
            }),
        )
        .await
        .unwrap();
    let (second, events) = h
        .run(RunRequest {
            prompt: "second question".into(),
            images: Vec::new(),
            resume: Some(id[..12].to_string()),
            mode: None,
            control: None,
            scope: Default::default(),
        })
        .await;
    assert_eq!(second.session_id.as_deref(), Some(id.as_str()));
    assert!(matches!(
        &events[0],
        Event::RunStarted { resumed: true, .. }
    ));
    let sent = &h.provider.requests()[1].messages;
    let texts: Vec<String> = sent.iter().map(Message::text).collect();
    assert_eq!(texts[0], "first question");
    assert_eq!(texts[1], "first answer");
    assert!(texts[3].contains("interrupted"), "{texts:?}");
    assert_eq!(texts[4], "second question");
    // The repair is stored, so the transcript says what happened.
    let stored = h.store.messages(&id).await.unwrap();
    assert_eq!(stored.len(), 6);
}

#[tokio::test]
async fn resuming_an_unknown_session_is_a_harness_error_not_a_panic() {
    let h = harness(Scripted::new(vec![]), |b| b);
    let (outcome, events) = h
        .run(RunRequest {
            prompt: "x".into(),
            images: Vec::new(),
            resume: Some("nope".into()),
            mode: None,
            control: None,
            scope: Default::default(),
        })
        .await;
    assert_eq!(outcome.reason, StopReason::HarnessError);
    assert_eq!(outcome.error.as_deref(), Some("session nope not found"));
    assert_eq!(kinds(&events), ["stopped"]);
}

#[test]
fn a_missing_workspace_fails_the_build_with_a_clear_error() {
    let err = AgentEngine::builder(Scripted::new(vec![]), Arc::new(InMemorySessionStore::new()))
        .workspace("/definitely/not/here")
        .build()
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "workspace /definitely/not/here does not exist or is not a directory"
    );
}

/// Runs `request` with a sink that calls `on` for every event first.
async fn run_with_hook(
    h: &Harness,
    request: RunRequest,
    mut on: impl FnMut(&Event) + Send,
) -> (RunOutcome, Vec<Event>) {
    let mut events = Vec::new();
    let mut sink = FnSink(|e: Event| {
        on(&e);
        events.push(e);
    });
    let outcome = h
        .engine
        .run(request, CancellationToken::new(), &mut sink)
        .await;
    (outcome, events)
}

fn user_texts(req: &ModelRequest) -> Vec<String> {
    req.messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_message_queued_while_tools_run_reaches_the_model_at_the_next_turn() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "sleep", json!({"ms": 1, "label": "one"}))])),
        Ok(text("done, and also the docs")),
    ]);
    let h = harness(provider, |b| b);
    let control = RunControl::new();
    let steer = control.clone();
    let request = RunRequest {
        control: Some(control),
        ..RunRequest::new("fix the bug")
    };
    let (outcome, events) = run_with_hook(&h, request, move |e| {
        if matches!(e, Event::ToolStarted { .. }) {
            steer.queue("also update the docs");
        }
    })
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.turns, 2);
    let reqs = h.provider.requests();
    assert_eq!(user_texts(&reqs[0]), ["fix the bug"]);
    assert_eq!(
        user_texts(&reqs[1]),
        ["fix the bug", "also update the docs"]
    );
    // It comes after the tool result, so every call keeps its result.
    assert!(matches!(
        reqs[1].messages.last(),
        Some(Message::User { .. })
    ));
    // Stored in the session like any message, and shown as committed.
    let stored = h.stored(&outcome).await;
    assert_eq!(
        stored
            .iter()
            .filter(|m| matches!(m, Message::User { .. }))
            .count(),
        2
    );
    assert!(events.iter().any(|e| matches!(e,
        Event::MessageCommitted { message: Message::User { content, .. }, .. } if content == "also update the docs")));
}

#[tokio::test]
async fn a_message_queued_during_the_final_answer_keeps_the_run_going() {
    let provider = Scripted::new(vec![Ok(text("all done")), Ok(text("docs updated too"))]);
    let h = harness(provider, |b| b);
    let control = RunControl::new();
    let steer = control.clone();
    let mut once = true;
    let request = RunRequest {
        control: Some(control),
        ..RunRequest::new("fix the bug")
    };
    let (outcome, _) = run_with_hook(&h, request, move |e| {
        if matches!(e, Event::TextDelta { .. }) && once {
            once = false;
            steer.queue("and the docs");
        }
    })
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.final_text, "docs updated too");
    let reqs = h.provider.requests();
    assert_eq!(user_texts(&reqs[1]), ["fix the bug", "and the docs"]);
}

#[tokio::test]
async fn a_mode_change_mid_run_changes_the_tools_the_next_turn_offers() {
    let provider = Scripted::new(vec![
        Ok(calls(&[("a", "sleep", json!({"ms": 1, "label": "one"}))])),
        Ok(text("planned")),
    ]);
    let written = Arc::new(Mutex::new(0));
    let h = harness(provider, |b| b.tool(Arc::new(Writer(written.clone()))));
    let control = RunControl::new();
    let switch = control.clone();
    let request = RunRequest {
        control: Some(control),
        ..RunRequest::new("look around")
    };
    let (outcome, events) = run_with_hook(&h, request, move |e| {
        if matches!(e, Event::ToolStarted { .. }) {
            switch.set_mode(PermissionMode::Plan);
        }
    })
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let reqs = h.provider.requests();
    let names = |r: &ModelRequest| r.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert!(names(&reqs[0]).contains(&"write".to_string()));
    assert!(!names(&reqs[1]).contains(&"write".to_string()));
    assert_ne!(
        reqs[0].system, reqs[1].system,
        "the plan-mode prompt differs"
    );
    let changed: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModeChanged { mode } => Some(*mode),
            _ => None,
        })
        .collect();
    assert_eq!(changed, [PermissionMode::Plan]);
}

#[tokio::test]
async fn a_title_call_names_the_session_and_is_recorded_in_the_ledger() {
    let provider = Scripted::new(vec![
        Ok(text("fixed it")),
        Ok(text("\"Fix the parser bug.\"")),
    ]);
    let h = harness(provider, |b| b);
    let (outcome, _) = h
        .run(RunRequest::new("the parser crashes on empty input, fix it"))
        .await;
    let id = outcome.session_id.clone().unwrap();
    let title = h
        .engine
        .title_session(&id, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(title, "Fix the parser bug");
    assert_eq!(
        h.store.get_session(&id).await.unwrap().title,
        "Fix the parser bug"
    );
    let (ledger, _) = h.store.ledger(&id).await.unwrap();
    assert_eq!(ledger.last().unwrap().kind, CallKind::Title);
    let title_req = h.provider.requests().pop().unwrap();
    assert!(title_req.tools.is_empty());
    assert_eq!(
        user_texts(&title_req),
        ["the parser crashes on empty input, fix it"]
    );
}

#[tokio::test]
async fn a_provider_switched_mid_run_answers_from_the_next_turn() {
    let first = Scripted::new(vec![Ok(calls(&[(
        "a",
        "sleep",
        json!({"ms": 1, "label": "one"}),
    )]))]);
    let second = Scripted::new(vec![Ok(text("answered by the second model"))]);
    let h = harness(first.clone(), |b| b);
    let engine = h.engine.clone();
    let next: Arc<dyn Provider> = second.clone();
    let (outcome, _) = run_with_hook(&h, RunRequest::new("go"), move |e| {
        if matches!(e, Event::ToolStarted { .. }) {
            engine.set_provider(next.clone());
        }
    })
    .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.final_text, "answered by the second model");
    assert_eq!(first.requests().len(), 1);
    assert_eq!(second.requests().len(), 1);
    // The second model sees the whole conversation so far.
    assert_eq!(user_texts(&second.requests()[0]), ["go"]);
    assert!(
        second.requests()[0]
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool(_)))
    );
}
