//! Content attributes (prompts, answers) in the GenAI conventions' JSON
//! message shapes. Only built when capture is on.

use rein_core::{AssistantMessage, ContentPart, FinishReason};
use serde_json::{Value, json};

/// The value of `gen_ai.response.finish_reasons` for one reason.
pub(crate) fn finish_reason(reason: &FinishReason) -> String {
    match reason {
        FinishReason::Stop => "stop".to_string(),
        FinishReason::ToolCalls => "tool_calls".to_string(),
        FinishReason::Length => "length".to_string(),
        FinishReason::ContentFilter => "content_filter".to_string(),
        FinishReason::Other(other) => other.clone(),
    }
}

/// `gen_ai.input.messages` for the user's messages of a run.
pub(crate) fn user_messages(prompts: &[String]) -> String {
    let messages: Vec<Value> = prompts
        .iter()
        .map(|p| json!({"role": "user", "parts": [{"type": "text", "content": p}]}))
        .collect();
    Value::Array(messages).to_string()
}

/// `gen_ai.output.messages` for one assistant message: its text,
/// reasoning and tool calls (arguments as JSON when they parse).
pub(crate) fn assistant_message(message: &AssistantMessage) -> String {
    let parts: Vec<Value> = message
        .content
        .iter()
        .map(|part| match part {
            ContentPart::Text { text } => json!({"type": "text", "content": text}),
            ContentPart::Reasoning(r) => json!({"type": "reasoning", "content": r.text}),
            ContentPart::ToolCall(call) => json!({
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": serde_json::from_str::<Value>(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone())),
            }),
        })
        .collect();
    let mut out = json!({"role": "assistant", "parts": parts});
    if let Some(reason) = &message.finish {
        out["finish_reason"] = Value::String(finish_reason(reason));
    }
    Value::Array(vec![out]).to_string()
}

/// `gen_ai.output.messages` for a run's final answer.
pub(crate) fn final_answer(text: &str) -> String {
    json!([{
        "role": "assistant",
        "parts": [{"type": "text", "content": text}],
        "finish_reason": "stop",
    }])
    .to_string()
}
