//! Closing the stream of a run whose server died after committing its
//! answer but before storing its `stopped` event. The server that takes
//! the orphaned session's lease and finds the run finished (see
//! [`super::leases`]) closes the stream for it, holding the lease, so no
//! other server does at the same time:
//!
//! 1. read the stored log backwards, a page at a time, to the run's
//!    `run_started` (the newest one of the session, not a sub-agent's);
//!    a `stopped` after it means the stream is closed already: nothing
//!    to do (a server killed after storing `stopped` but before giving
//!    its lease back);
//! 2. build the `stopped` the run would have emitted from what is stored:
//!    `completed` with the answer's text (a `harness_error` saying so when
//!    the stored answer was cut short, as a cancel or a failure leaves it), the run's turns and the usage
//!    of its committed answers from its events, the calls the gate
//!    refused, and the totals of the ledger entries made since the run
//!    started (the same server's clock wrote both);
//! 3. record the stop for `sessions list` and append the event, numbered
//!    after the last stored one.

use rein_core::{
    Event, FinishReason, LedgerTotals, Message, RefusedCall, StopReason, StoreError, Usage,
};
use rein_store::StoredEvent;
use serde_json::Value;

use super::state::Server;

/// The most events read at once going backwards.
const PAGE: u64 = 500;

/// Close session `id`'s stream with a `stopped` event when its last run
/// has none; whether one was appended. The session's lease must be held
/// and its run finished (its last message the answer).
pub async fn close_finished_run(server: &Server, id: &str) -> Result<bool, StoreError> {
    let Some((started, run)) = unclosed_run(server, id).await? else {
        return Ok(false);
    };
    let store = server.host.store();
    let messages = store.messages(id).await?;
    let Some(Message::Assistant(answer)) = messages.last() else {
        return Ok(false); // not finished after all
    };
    let (ledger, _) = store.ledger(id).await?;
    let since: Vec<_> = ledger.into_iter().filter(|e| e.at >= started).collect();
    let mut stopped = summary(&run);
    let Event::Stopped {
        reason,
        final_text,
        totals,
        error,
        ..
    } = &mut stopped
    else {
        unreachable!("summary is a stopped event");
    };
    *final_text = answer.text();
    *totals = LedgerTotals::of(&since);
    // A whole answer completed the run; a cut one (cancelled, failed)
    // stopped it for a reason nothing stored.
    if answer.finish != Some(FinishReason::Stop) {
        *reason = StopReason::HarnessError;
        *error = Some(
            "the server running this session stopped after storing a partial answer, \
             before recording why the run ended"
                .into(),
        );
    }
    store.set_last_stop(id, *reason).await?;
    let json = serde_json::to_string(&stopped).map_err(|e| StoreError::Other(e.to_string()))?;
    server.feed.store_events(id, vec![json]).await?;
    Ok(true)
}

/// The events of the session's last run (from its `run_started` on, the
/// time it was stored), when that run has no `stopped`.
async fn unclosed_run(server: &Server, id: &str) -> Result<Option<(i64, Vec<Value>)>, StoreError> {
    let log = server.feed.events();
    let last = log.events_after(id, u64::MAX, 0).await?.last;
    let mut run: Vec<StoredEvent> = Vec::new();
    let mut end = last;
    while end > 0 {
        let start = end.saturating_sub(PAGE);
        let page = log.events_after(id, start, (end - start) as usize).await?;
        let mut events = page.events;
        events.retain(|e| e.seq <= end);
        end = start;
        while let Some(event) = events.pop() {
            match kind(&event.body).as_deref() {
                Some("stopped") => return Ok(None),
                Some("run_started") => {
                    let started = event.created_at;
                    run.push(event);
                    run.reverse();
                    let bodies = run
                        .iter()
                        .filter_map(|e| serde_json::from_str(&e.body).ok());
                    return Ok(Some((started, bodies.collect())));
                }
                _ => run.push(event),
            }
        }
    }
    // No run in what the retention kept: nothing known to close.
    Ok(None)
}

/// An event's `type`.
fn kind(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Kind {
        #[serde(rename = "type")]
        kind: String,
    }
    serde_json::from_str::<Kind>(body).ok().map(|k| k.kind)
}

/// The `stopped` of a run that completed, from its stored events: its
/// turns, the usage of its committed answers and the calls the gate
/// refused (final text and totals left for the caller).
fn summary(run: &[Value]) -> Event {
    let mut turns = 0;
    let mut usage = Usage::default();
    let mut refused = Vec::new();
    for event in run {
        match event["type"].as_str() {
            Some("turn_started") => turns += 1,
            Some("message_committed") => {
                let message = serde_json::from_value::<Message>(event["message"].clone());
                if let Ok(Message::Assistant(a)) = message
                    && let Some(u) = &a.usage
                {
                    usage.add(u);
                }
            }
            Some("permission_denied") => {
                let text = |key: &str| event[key].as_str().unwrap_or_default().to_string();
                refused.push(RefusedCall::new(
                    &text("tool"),
                    &text("summary"),
                    &text("why"),
                    event["needed_approval"].as_bool().unwrap_or(false),
                ));
            }
            _ => {}
        }
    }
    Event::Stopped {
        reason: StopReason::Completed,
        turns,
        usage,
        final_text: String::new(),
        error: None,
        totals: LedgerTotals::default(),
        refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_completed_run_is_summed_from_its_top_level_events_only() {
        let answer = |input: u64| {
            json!({"type": "message_committed", "seq": 2, "message": {"role": "assistant",
                "content": [{"type": "text", "text": "x"}],
                "usage": {"input_tokens": input, "output_tokens": 1}}})
        };
        let run = vec![
            json!({"type": "run_started"}),
            json!({"type": "turn_started", "turn": 1}),
            answer(10),
            json!({"type": "permission_denied", "call_id": "c", "tool": "bash",
                   "summary": "rm -rf /", "why": "a deny rule", "needed_approval": false}),
            // A sub-agent's turns are its own.
            json!({"type": "subagent", "event": {"type": "turn_started", "turn": 1}}),
            json!({"type": "turn_started", "turn": 2}),
            answer(20),
        ];
        let Event::Stopped {
            reason,
            turns,
            usage,
            refused,
            ..
        } = summary(&run)
        else {
            panic!("not a stopped event");
        };
        assert_eq!(reason, StopReason::Completed);
        assert_eq!(turns, 2);
        assert_eq!((usage.input_tokens, usage.output_tokens), (30, 2));
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].tool, "bash");
    }
}
