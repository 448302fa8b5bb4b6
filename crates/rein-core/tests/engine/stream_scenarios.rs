//! Model calls that break off part-way: the partial answer is thrown away,
//! never stored and never acted on, and the turn is asked for again.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::stream;
use rein_core::*;
use serde_json::json;

use super::support::*;

/// One scripted call: what it streams, in order, errors included.
type Call = Vec<Result<StreamChunk, ProviderError>>;

/// A provider whose streams can fail after they started.
struct Breaking {
    calls: Mutex<Vec<Call>>,
    made: Mutex<u32>,
}

impl Breaking {
    fn new(mut calls: Vec<Call>) -> Arc<Self> {
        calls.reverse();
        Arc::new(Breaking {
            calls: Mutex::new(calls),
            made: Mutex::new(0),
        })
    }

    fn made(&self) -> u32 {
        *self.made.lock().unwrap()
    }
}

#[async_trait]
impl Provider for Breaking {
    fn name(&self) -> &str {
        "breaking"
    }
    fn model(&self) -> &str {
        "test-model"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        *self.made.lock().unwrap() += 1;
        let call = self.calls.lock().unwrap().pop().unwrap_or_default();
        Ok(Box::pin(stream::iter(call)))
    }
}

fn cut() -> Result<StreamChunk, ProviderError> {
    Err(ProviderError::new(
        ProviderErrorKind::Transport,
        "the stream ended before the answer was complete",
    ))
}

fn answer(t: &str) -> Call {
    text(t).into_iter().map(Ok).collect()
}

struct Run {
    outcome: RunOutcome,
    events: Vec<Event>,
    stored: Vec<Message>,
    ledger: Vec<LedgerEntry>,
}

async fn run(provider: Arc<Breaking>, ran: Arc<Mutex<u32>>, retries: u32) -> Run {
    let store = Arc::new(InMemorySessionStore::new());
    let engine = AgentEngine::builder(provider, store.clone())
        .workspace(std::env::temp_dir())
        .tools(vec![Arc::new(Writer(ran)) as Arc<dyn Tool>])
        .mode(PermissionMode::Auto)
        .provider_retries(retries)
        .retry_base_delay(std::time::Duration::from_millis(1))
        .build()
        .unwrap();
    let mut events = Vec::new();
    let outcome = engine
        .run(RunRequest::new("go"), CancellationToken::new(), &mut events)
        .await;
    let id = outcome.session_id.clone().unwrap();
    Run {
        stored: store.messages(&id).await.unwrap(),
        ledger: store.ledger(&id).await.unwrap().0,
        outcome,
        events,
    }
}

fn retries(events: &[Event]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { discarded, .. } => Some(*discarded),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_stream_cut_after_partial_text_is_retried_and_the_partial_never_stored() {
    let provider = Breaking::new(vec![
        vec![Ok(StreamChunk::TextDelta("Half an ans".into())), cut()],
        answer("The whole answer."),
    ]);
    let r = run(provider.clone(), Arc::default(), 4).await;
    assert_eq!(r.outcome.reason, StopReason::Completed, "{:?}", r.outcome);
    assert_eq!(r.outcome.final_text, "The whole answer.");
    assert_eq!(provider.made(), 2);
    assert_eq!(
        retries(&r.events),
        [true],
        "the retry says the partial was discarded"
    );
    let texts: Vec<String> = r.stored.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["go", "The whole answer."], "{:?}", r.stored);
    let kinds: Vec<CallKind> = r.ledger.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [CallKind::Retry, CallKind::Turn],
        "one ledger entry per attempt"
    );
    assert!(!r.ledger[0].ok && r.ledger[1].ok);
}

#[tokio::test]
async fn a_whole_tool_call_in_a_stream_that_breaks_off_is_never_run() {
    let call = StreamChunk::ToolCall(ToolCall {
        id: "c1".into(),
        name: "write".into(),
        arguments: json!({"path": "x"}).to_string(),
    });
    let provider = Breaking::new(vec![vec![Ok(call), cut()], answer("Nothing to do.")]);
    let ran = Arc::new(Mutex::new(0));
    let r = run(provider, ran.clone(), 4).await;
    assert_eq!(r.outcome.reason, StopReason::Completed);
    assert_eq!(*ran.lock().unwrap(), 0, "the broken stream's call ran");
    assert!(r.stored.iter().all(|m| !matches!(m, Message::Tool(_))));
    assert!(
        r.stored.iter().all(|m| match m {
            Message::Assistant(a) => !a.has_tool_calls(),
            _ => true,
        }),
        "{:?}",
        r.stored
    );
}

#[tokio::test]
async fn when_retries_run_out_after_partial_output_the_run_stops_without_running_calls() {
    let call = || {
        Ok(StreamChunk::ToolCall(ToolCall {
            id: "c1".into(),
            name: "write".into(),
            arguments: "{}".into(),
        }))
    };
    let provider = Breaking::new(vec![
        vec![call(), cut()],
        vec![call(), cut()],
        vec![call(), cut()],
    ]);
    let ran = Arc::new(Mutex::new(0));
    let r = run(provider.clone(), ran.clone(), 2).await;
    assert_eq!(r.outcome.reason, StopReason::ProviderError);
    assert_eq!(provider.made(), 3);
    assert_eq!(*ran.lock().unwrap(), 0);
    assert_eq!(retries(&r.events), [true, true]);
    assert_eq!(r.ledger.len(), 3, "{:?}", r.ledger);
    assert!(r.stored.iter().all(|m| !matches!(m, Message::Tool(_))));
}

#[tokio::test]
async fn a_service_error_after_partial_output_is_not_retried_and_keeps_the_text() {
    let provider = Breaking::new(vec![
        vec![
            Ok(StreamChunk::TextDelta("Half".into())),
            Err(ProviderError::new(
                ProviderErrorKind::Stream,
                "content policy",
            )),
        ],
        answer("never asked"),
    ]);
    let r = run(provider.clone(), Arc::default(), 4).await;
    assert_eq!(r.outcome.reason, StopReason::ProviderError);
    assert_eq!(provider.made(), 1);
    assert!(retries(&r.events).is_empty());
    assert_eq!(r.stored.last().map(|m| m.text()), Some("Half".to_string()));
}

/// A local model's progress reaches the event stream as it comes, and is
/// never part of the stored answer; a stream that broke off after progress
/// only (nothing of the answer) is retried as one with nothing streamed.
#[tokio::test]
async fn progress_chunks_become_events_and_never_part_of_the_answer() {
    let progress = |done| {
        Ok(StreamChunk::Progress(ModelProgress::Prompt {
            done,
            total: 512,
            elapsed_ms: 10,
        }))
    };
    let mut second = vec![progress(0), progress(512)];
    second.extend(answer("Done."));
    let provider = Breaking::new(vec![vec![progress(0), cut()], second]);
    let r = run(provider.clone(), Arc::default(), 4).await;
    assert_eq!(r.outcome.reason, StopReason::Completed, "{:?}", r.outcome);
    assert_eq!(provider.made(), 2);
    assert_eq!(
        retries(&r.events),
        [false],
        "progress is not a partial answer"
    );
    let shown: Vec<u64> = r
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ModelProgress {
                progress: ModelProgress::Prompt { done, .. },
            } => Some(*done),
            _ => None,
        })
        .collect();
    assert_eq!(shown, [0, 0, 512]);
    let texts: Vec<String> = r.stored.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["go", "Done."]);
    let json = serde_json::to_value(
        r.events
            .iter()
            .find(|e| matches!(e, Event::ModelProgress { .. }))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        json,
        json!({"type": "model_progress", "progress": {"stage": "prompt", "done": 0, "total": 512, "elapsed_ms": 10}})
    );
}
