//! The engine driven by a script: an injected failure retried, and a
//! long script crossing compactions with the script's summaries.

use std::sync::Arc;
use std::time::Duration;

use rein_core::*;

use super::provider;

#[tokio::test]
async fn the_engine_retries_an_injected_failure_and_the_model_sees_the_tool_error() {
    let script = r#"{"turns": [
        {"error": {"kind": "unavailable", "message": "overloaded", "status": 529, "retry_after_ms": 1}},
        {"text": "Let me read it.", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{\"path\": "}]},
        {"text": "That tool does not exist here."}
    ]}"#;
    let p = Arc::new(provider(script));
    let engine = AgentEngine::builder(p.clone(), Arc::new(InMemorySessionStore::new()))
        .workspace(std::env::temp_dir())
        .retry_base_delay(Duration::from_millis(1))
        .build()
        .unwrap();
    let mut events: Vec<Event> = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("read a"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    assert_eq!(outcome.final_text, "That tool does not exist here.");
    assert!(events.iter().any(|e| matches!(e, Event::Retry { .. })));

    let requests = p.requests();
    assert_eq!(requests.len(), 3);
    let last = requests.last().unwrap();
    let observation = last
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool(r) => Some(r.clone()),
            _ => None,
        })
        .expect("the tool result reached the model");
    assert_eq!(observation.call_id, "c1");
    assert!(observation.is_error);
    assert_eq!(p.turns_remaining(), 0);
}

/// A tool that answers with a fixed block of text (to fill the context).
struct Filler;

#[async_trait::async_trait]
impl Tool for Filler {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "look".into(),
            description: "returns some text".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(
        &self,
        args: serde_json::Value,
        _ctx: ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        // New output each time: the loop guard sees progress.
        Ok(ToolOutput::ok(format!(
            "observation {}: {}",
            args["n"],
            "observed data line. ".repeat(40)
        )))
    }
}

#[tokio::test]
async fn a_long_script_crosses_compactions_with_summaries_from_the_script() {
    let mut turns: Vec<serde_json::Value> = (0..60)
        .map(|i| serde_json::json!({"tool_calls": [{"name": "look", "arguments": {"n": i}}]}))
        .collect();
    turns.push(serde_json::json!({"text": "all sixty looked at"}));
    let script = serde_json::json!({
        "context_window": 3000,
        "summaries": ["SUMMARY ONE: looked at the first part, nothing wrong yet.",
                      "SUMMARY TWO: looked further, still nothing wrong."],
        "turns": turns,
    });
    let provider = Arc::new(provider(&script.to_string()));
    let store = Arc::new(InMemorySessionStore::new());
    let engine = AgentEngine::builder(provider.clone(), store)
        .workspace(std::env::temp_dir())
        .tool(Arc::new(Filler))
        .mode(PermissionMode::Auto)
        .max_turns(100)
        .build()
        .unwrap();
    let mut events = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("look sixty times"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.final_text, "all sixty looked at");
    let compactions = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Compaction {
                    summarized: true,
                    ..
                }
            )
        })
        .count();
    assert!(compactions >= 2, "{compactions} compactions");
    // Every turn of the script was played, and the summaries took none.
    assert_eq!(provider.turns_remaining(), 0);
    let requests = provider.requests();
    let summary_requests = requests
        .iter()
        .filter(|r| r.system == rein_core::compaction::SUMMARY_SYSTEM)
        .count();
    assert_eq!(summary_requests, compactions);
    // The last request carries the latest summary and the task, not the
    // whole history.
    let last = requests.last().unwrap();
    let text: String = last
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(text.contains("SUMMARY TWO"), "{text}");
    assert!(text.contains("look sixty times"), "{text}");
    assert!(last.messages.len() < 30, "{} messages", last.messages.len());
}
