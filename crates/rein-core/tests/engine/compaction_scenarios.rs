//! Compaction inside whole runs: a long task compacts several times and
//! keeps its head, a resumed session starts from its last compaction, a
//! failed summary falls back to dropping turns, and a context-length error
//! compacts and retries once.

use std::sync::Arc;

use rein_core::*;

use super::long_task::*;
use super::support::*;

#[tokio::test]
async fn a_200_turn_task_compacts_several_times_and_keeps_its_head() {
    let instruction = "Rewrite the parser module.\nKeep the public API unchanged.";
    let h = harness(provider(unmeasured_task(200), 4000), with_compaction);
    let (outcome, events) = h.run(RunRequest::new(instruction)).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.turns, 201);

    let compactions: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Compaction { .. }))
        .collect();
    assert!(
        compactions.len() >= 3,
        "only {} compactions",
        compactions.len()
    );
    for c in &compactions {
        let Event::Compaction {
            summarized,
            tokens_before,
            tokens_after,
            ..
        } = c
        else {
            unreachable!()
        };
        assert!(*summarized);
        assert!(tokens_after < tokens_before);
    }
    // One summary per crossing, never one per turn.
    assert_eq!(
        *h.provider.summaries.lock().unwrap() as usize,
        compactions.len()
    );

    let requests = h.provider.requests();
    let mut after_compaction = 0;
    for req in &requests {
        assert_paired(req);
        let first = match req.messages.first() {
            Some(Message::User { content, .. }) => content.clone(),
            other => panic!("first message {other:?}"),
        };
        if first.starts_with(compaction::SUMMARY_MARKER) {
            after_compaction += 1;
            // The latest instruction verbatim, the todos, the files changed.
            assert!(
                first.contains("> Rewrite the parser module.\n> Keep the public API unchanged.")
            );
            assert!(first.contains("rewrite the parser (1)"));
            assert!(first.contains("- src/f3.rs: edit at turn"));
            // Later summaries build on the earlier ones.
            assert!(first.contains("## Summary"));
        }
    }
    assert!(after_compaction > 100, "{after_compaction}");
    // Nothing is lost from the store.
    let stored = h.stored(&outcome).await;
    assert_eq!(stored.len(), 1 + 200 * 2 + 1);
    let id = outcome.session_id.clone().unwrap();
    // What /context counts is what the next request sends: the latest
    // summary and what followed it, not the whole stored transcript.
    let sent = h.engine.model_messages(&id).await.unwrap();
    assert!(
        sent.len() < stored.len() / 4,
        "{} of {}",
        sent.len(),
        stored.len()
    );
    assert!(
        matches!(&sent[0], Message::User { content, .. } if content.starts_with(compaction::SUMMARY_MARKER))
    );
    let fixed = h.engine.fixed_tokens(PermissionMode::Default);
    assert!(
        fixed.system_prompt > 0 && fixed.tools > 0 && fixed.tool_count > 0,
        "{fixed:?}"
    );
    let records = h.store.compactions(&id).await.unwrap();
    assert_eq!(records.len(), compactions.len());
    assert!(records.windows(2).all(|w| w[0].upto_seq < w[1].upto_seq));
}

#[tokio::test]
async fn a_resumed_session_starts_from_its_last_compaction() {
    let mut steps = unmeasured_task(40);
    steps.push(Ok(text("resumed answer")));
    let h = harness(provider(steps, 3000), with_compaction);
    let (first, _) = h.run(RunRequest::new("do the long thing")).await;
    assert_eq!(first.reason, StopReason::Completed);
    let id = first.session_id.clone().unwrap();
    let records = h.store.compactions(&id).await.unwrap();
    assert!(!records.is_empty());
    let last = records.last().unwrap();
    let (second, _) = h
        .run(RunRequest {
            prompt: "and now the docs".into(),
            images: Vec::new(),
            resume: Some(id.clone()),
            mode: None,
            control: None,
            scope: Default::default(),
        })
        .await;
    assert_eq!(second.reason, StopReason::Completed);
    let req = h.provider.requests().last().unwrap().clone();
    assert_eq!(req.messages[0], last.summary);
    let stored = h.store.messages(&id).await.unwrap();
    // The summary, then every stored message after it but the final answer.
    assert_eq!(
        req.messages.len(),
        1 + stored.len() - last.upto_seq as usize - 1
    );
    assert_paired(&req);
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_dropping_turns_and_says_so() {
    let mut p = Scripted::build(unmeasured_task(30));
    // Small: the scripted usage teaches the estimator about 12 characters a
    // token.
    p.window = 1500;
    p.summary_reply = Some(Ok("   ".into()));
    let h = harness(Arc::new(p), with_compaction);
    let (outcome, events) = h.run(RunRequest::new("task")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let notes: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Compaction {
                summarized: false,
                note,
                ..
            } => note.clone(),
            _ => None,
        })
        .collect();
    assert!(!notes.is_empty());
    assert!(notes[0].contains("empty"), "{}", notes[0]);
    for req in h.provider.requests() {
        assert_paired(&req);
    }
    // The ledger is still in the request after a fallback.
    let last = h.provider.requests().last().unwrap().clone();
    let Message::User { content, .. } = &last.messages[0] else {
        panic!()
    };
    assert!(content.contains("dropped without a summary"));
    assert!(content.contains("> task"));
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries_the_turn_once() {
    let mut steps = unmeasured_task(8);
    let last = steps.pop().unwrap();
    steps.push(Err(ProviderError::new(
        ProviderErrorKind::ContextLengthExceeded,
        "prompt is too long: 250000 tokens > 200000 maximum",
    )));
    steps.push(last);
    // A big window: only the error makes it compact.
    let h = harness(provider(steps, 1_000_000), with_compaction);
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Compaction { reason, .. } => Some(format!("{reason:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, ["ContextLengthExceeded"]);
    let retried = h.provider.requests().last().unwrap().clone();
    assert!(
        matches!(&retried.messages[0], Message::User { content, .. } if content.starts_with(compaction::SUMMARY_MARKER))
    );
}

/// The threshold follows the provider's count of the request (one
/// accounting), not rein's estimate: a service that reports a request at
/// 90% of its window gets a compaction before the next turn, though the
/// estimate of these few short messages is far below it; without reports
/// the same task never compacts.
#[tokio::test]
async fn the_compaction_threshold_follows_the_providers_reported_size() {
    let reported = |steps: Vec<Step>| -> Vec<Step> {
        steps
            .into_iter()
            .map(|step| {
                step.map(|chunks| {
                    chunks
                        .into_iter()
                        .map(|c| match c {
                            StreamChunk::Usage(_) => StreamChunk::Usage(Usage {
                                input_tokens: 9_000,
                                output_tokens: 5,
                                ..Default::default()
                            }),
                            other => other,
                        })
                        .collect()
                })
            })
            .collect()
    };
    let compactions = |events: &[Event]| {
        events
            .iter()
            .filter(|e| matches!(e, Event::Compaction { .. }))
            .count()
    };
    let h = harness(provider(reported(long_task(6)), 10_000), with_compaction);
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert!(compactions(&events) > 0, "no compaction at 90% reported");
    let h = harness(provider(unmeasured_task(6), 10_000), with_compaction);
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(compactions(&events), 0, "the estimate alone is far below");
}

/// Counts a token a byte (four times rein's first estimate), and
/// remembers being used: a tokenizer whose tables cost something to load.
struct Tables(std::sync::atomic::AtomicBool);
impl TokenCounter for Tables {
    fn count(&self, text: &str) -> u64 {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        text.len() as u64
    }
    fn exact(&self) -> bool {
        true
    }
}

/// A provider whose tokenizer loads on demand (OpenAI's tables): a short
/// run never loads it; a long one loads it once its requests near the
/// compaction threshold, and the threshold is then decided on its exact
/// counts, which here compact sooner than the estimate would.
#[tokio::test]
async fn a_tokenizer_that_loads_on_demand_loads_only_near_the_compaction_threshold() {
    let run = |turns: usize, exact: bool| async move {
        let tables = Arc::new(Tables(Default::default()));
        let mut p = Scripted::build(unmeasured_task(turns));
        p.window = 8_000;
        if exact {
            p.counter = Some(Arc::new(ExactOnDemand::new(tables.clone())));
        }
        let h = harness(Arc::new(p), with_compaction);
        let (outcome, events) = h.run(RunRequest::new("go")).await;
        assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
        let compactions = events
            .iter()
            .filter(|e| matches!(e, Event::Compaction { .. }))
            .count();
        (
            tables.0.load(std::sync::atomic::Ordering::SeqCst),
            compactions,
        )
    };
    let (loaded, compactions) = run(3, true).await;
    assert!(!loaded, "a short run loaded the tables");
    assert_eq!(compactions, 0);
    let (loaded, exact_compactions) = run(60, true).await;
    assert!(loaded, "a long run never counted exactly");
    let (_, estimated_compactions) = run(60, false).await;
    assert!(
        exact_compactions > estimated_compactions,
        "exact counts {exact_compactions}, estimates {estimated_compactions}"
    );
}
