//! Repairing a stored conversation so that any provider accepts it.

use std::collections::{HashMap, HashSet};

use crate::schema::{Message, ToolResult};

/// The observation given for a call whose result was never recorded.
pub const INTERRUPTED: &str = "error: this tool call was interrupted before it finished (the run was stopped); its effects, if any, are unknown";

/// Result of `repair_history`.
#[derive(Debug, Default)]
pub struct Repaired {
    pub messages: Vec<Message>,
    /// Results made up for calls that had none, with the index each one has
    /// in `messages`.
    pub added: Vec<(usize, ToolResult)>,
}

/// Pair every tool call with exactly one result, placed right after the
/// assistant message in call order: missing results become "interrupted"
/// errors, results for unknown or already answered calls are dropped.
pub fn repair_history(stored: Vec<Message>) -> Repaired {
    let mut out = Vec::with_capacity(stored.len());
    let mut added = Vec::new();
    let mut iter = stored.into_iter().peekable();
    while let Some(msg) = iter.next() {
        match msg {
            Message::Assistant(assistant) => {
                let calls: Vec<(String, String)> = assistant
                    .tool_calls()
                    .map(|c| (c.id.clone(), c.name.clone()))
                    .collect();
                out.push(Message::Assistant(assistant));
                let mut results: HashMap<String, ToolResult> = HashMap::new();
                while let Some(Message::Tool(_)) = iter.peek() {
                    if let Some(Message::Tool(r)) = iter.next() {
                        results.entry(r.call_id.clone()).or_insert(r);
                    }
                }
                let mut seen = HashSet::new();
                for (id, name) in calls {
                    if !seen.insert(id.clone()) {
                        continue;
                    }
                    match results.remove(&id) {
                        Some(r) => out.push(Message::Tool(r)),
                        None => {
                            let r = ToolResult {
                                images: Vec::new(),
                                call_id: id,
                                name,
                                output: INTERRUPTED.to_string(),
                                is_error: true,
                            };
                            added.push((out.len(), r.clone()));
                            out.push(Message::Tool(r));
                        }
                    }
                }
            }
            // A result with no assistant message before it is an orphan.
            Message::Tool(_) => {}
            other => out.push(other),
        }
    }
    Repaired {
        messages: out,
        added,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{AssistantMessage, ContentPart, ToolCall};

    fn call(id: &str) -> ContentPart {
        ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        })
    }

    fn result(id: &str) -> Message {
        Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: id.into(),
            name: "bash".into(),
            output: format!("out {id}"),
            is_error: false,
        })
    }

    #[test]
    fn missing_results_become_interrupted_errors_in_call_order() {
        let stored = vec![
            Message::user("go"),
            Message::Assistant(AssistantMessage {
                content: vec![call("a"), call("b"), call("c")],
                ..Default::default()
            }),
            result("c"),
            result("a"),
        ];
        let r = repair_history(stored);
        let ids: Vec<_> = r
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool(t) => Some((t.call_id.clone(), t.is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(
            ids,
            vec![
                ("a".to_string(), false),
                ("b".to_string(), true),
                ("c".to_string(), false)
            ]
        );
        assert_eq!(r.added.len(), 1);
        assert_eq!(r.added[0].0, 3);
    }

    #[test]
    fn orphan_and_duplicate_results_are_dropped() {
        let stored = vec![
            result("zz"),
            Message::user("go"),
            Message::Assistant(AssistantMessage {
                content: vec![call("a")],
                ..Default::default()
            }),
            result("a"),
            result("a"),
            result("b"),
        ];
        let r = repair_history(stored);
        assert_eq!(r.messages.len(), 3);
        assert!(r.added.is_empty());
    }
}
