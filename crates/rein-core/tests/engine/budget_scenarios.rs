//! A run's own budgets inside whole runs (tokens, cost, wall time: each
//! stops the run, and the ledger sums match) and the loop guard's stop for
//! repeated calls.

use std::sync::Arc;
use std::time::Duration;

use rein_core::*;
use serde_json::json;

use super::long_task::*;
use super::support::*;

#[tokio::test]
async fn the_token_budget_stops_the_run_after_the_current_tools() {
    let h = harness(provider(long_task(20), 1_000_000), |b| {
        with_compaction(b).max_tokens(40)
    });
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    // Each turn reports 15 tokens: the third crosses 40.
    assert_eq!(outcome.reason, StopReason::MaxTokens);
    assert_eq!(outcome.turns, 3);
    assert_eq!(
        outcome.totals.input_tokens + outcome.totals.output_tokens,
        45
    );
    // The last turn's calls got their results before the stop.
    assert_paired(&ModelRequest {
        messages: h.stored(&outcome).await,
        ..Default::default()
    });
}

#[tokio::test]
async fn the_cost_budget_stops_the_run_and_the_ledger_sums_match() {
    let mut p = Scripted::build(long_task(20));
    p.window = 1_000_000;
    p.pricing = Some(Pricing {
        input: 1000.0,
        cached_input: 100.0,
        output: 2000.0,
    });
    let h = harness(Arc::new(p), |b| with_compaction(b).max_cost_usd(0.05));
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    // A turn costs 10 * 0.001 + 5 * 0.002 = 0.02 dollars.
    assert_eq!(outcome.reason, StopReason::MaxCost);
    assert_eq!(outcome.turns, 3);
    let id = outcome.session_id.clone().unwrap();
    let (entries, unreadable) = h.store.ledger(&id).await.unwrap();
    assert_eq!(unreadable, 0);
    assert_eq!(entries.len(), 3);
    let sum: f64 = entries.iter().map(|e| e.cost_usd.unwrap()).sum();
    assert!((sum - 0.06).abs() < 1e-9, "{sum}");
    assert_eq!(LedgerTotals::of(&entries), outcome.totals);
    match events.last().unwrap() {
        Event::Stopped { totals, reason, .. } => {
            assert_eq!(*reason, StopReason::MaxCost);
            assert_eq!(*totals, outcome.totals);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_wall_time_budget_stops_the_run() {
    let steps: Vec<Step> = (0..10)
        .map(|i| {
            Ok(calls(&[(
                &format!("s{i}"),
                "sleep",
                json!({"ms": 1000, "label": format!("{i}")}),
            )]))
        })
        .collect();
    let h = harness(Scripted::new(steps), |b| {
        b.max_wall_time(Duration::from_millis(2500))
    });
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::MaxWallTime);
    assert!(outcome.turns <= 4, "{}", outcome.turns);
}

#[tokio::test]
async fn the_same_call_gets_a_reminder_then_stops_the_run_for_repetition() {
    let same = || {
        Ok(calls(&[(
            "x",
            "sleep",
            json!({"ms": 1, "label": "nothing new"}),
        )]))
    };
    let h = harness(
        Scripted::new(vec![same(), same(), same(), same(), same()]),
        |b| b,
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Repetition);
    assert_eq!(outcome.turns, 4);
    let results = tool_results(&h.stored(&outcome).await);
    assert_eq!(results.len(), 4);
    assert!(results[2].output.contains("exact call 3 times in a row"));
    assert!(results[3].output.contains("not run"));
}
