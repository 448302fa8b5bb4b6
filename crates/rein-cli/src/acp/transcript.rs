//! A stored session replayed as ACP updates, for `session/load`: the
//! user's prompts, the answers, each tool call with its result, and the
//! todo list as the plan, in the order they were stored. A client that
//! restarts shows the conversation as it was.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use rein_core::{ContentPart, Message, Todo};

use super::updates::{self, Updates};

/// Stored user messages rein itself wrote (hook context, nudges, notes
/// for the model) start with this; they are not the user's words.
const HARNESS_PREFIX: &str = "[rein]";

/// The updates that replay `messages` (and then the plan of `todos`).
pub fn replay(workspace: &Path, messages: &[Message], todos: &[Todo]) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut calls = Updates::replaying(workspace);
    for message in messages {
        match message {
            Message::System { .. } => {}
            Message::User { content, .. } => {
                if !content.starts_with(HARNESS_PREFIX) {
                    out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::Text(TextContent::new(content.clone())),
                    )));
                }
            }
            Message::Assistant(answer) => {
                for part in &answer.content {
                    match part {
                        ContentPart::Text { text } if !text.is_empty() => {
                            out.push(updates::agent_text(text));
                        }
                        ContentPart::Reasoning(r) if !r.text.is_empty() => {
                            out.push(updates::thought(&r.text));
                        }
                        ContentPart::ToolCall(call) => {
                            out.extend(calls.of(&rein_core::Event::ToolStarted {
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                                arguments: call.arguments.clone(),
                            }));
                        }
                        _ => {}
                    }
                }
            }
            Message::Tool(result) => {
                let status = if result.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                out.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    result.call_id.clone(),
                    ToolCallUpdateFields::new().status(status),
                )));
                out.push(updates::output_update(&result.call_id, &result.output));
            }
        }
    }
    if !todos.is_empty() {
        out.push(updates::plan(todos));
    }
    out
}
