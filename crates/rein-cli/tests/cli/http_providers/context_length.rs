//! Each provider's context-length error compacts the session and retries
//! the turn once.

use rein_providers::mock_server::MockResponse;
use serde_json::{Value, json};

use super::{
    anthropic_text, assert_completed, exec, openai_env, openai_text_stream, responses_text, server,
    sse,
};
use crate::cli::support::*;

/// One protocol's streams for the context-length scenario.
struct Wire {
    provider: &'static str,
    call: fn(&str, &str) -> Vec<u8>,
    text: fn(&str) -> Vec<u8>,
    too_long: (u16, Value),
}

fn chat_call(id: &str, path: &str) -> Vec<u8> {
    let mut body = sse(
        &[
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "read_file", "arguments": json!({"path": path}).to_string()}}]}, "finish_reason": "tool_calls"}]}),
        ],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn responses_call(id: &str, path: &str) -> Vec<u8> {
    let args = json!({"path": path}).to_string();
    sse(
        &[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "read_file", "arguments": ""}}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "read_file", "arguments": args}}),
            json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 100, "output_tokens": 5}}}),
        ],
        true,
    )
}

fn anthropic_call(id: &str, path: &str) -> Vec<u8> {
    sse(
        &[
            json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 100, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": "read_file", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": json!({"path": path}).to_string()}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ],
        true,
    )
}

#[test]
fn each_providers_context_length_error_compacts_the_session_and_retries_the_turn_once() {
    let wires = [
        Wire {
            provider: "openai",
            call: chat_call,
            text: openai_text_stream,
            too_long: (
                400,
                json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            ),
        },
        Wire {
            provider: "openai-responses",
            call: responses_call,
            text: responses_text,
            too_long: (
                400,
                json!({"error": {"message": "Your input exceeds the context window of this model.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
            ),
        },
        Wire {
            provider: "anthropic",
            call: anthropic_call,
            text: anthropic_text,
            too_long: (
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"}}),
            ),
        },
    ];
    for w in wires {
        let (_rt, server) = server();
        server.push(MockResponse::sse((w.call)("call_1", "a.txt")));
        server.push(MockResponse::sse((w.call)("call_2", "b.txt")));
        server.push(MockResponse::json(w.too_long.0, &w.too_long.1));
        server.push(MockResponse::sse((w.text)(
            "## Goal\nRead the files.\n## Current state\na.txt was read.",
        )));
        server.push(MockResponse::sse((w.text)("done")));
        let env = Env::new();
        std::fs::write(env.path("b.txt"), "bee\n").unwrap();
        std::fs::write(
            env.home.path().join("config.toml"),
            "[compaction]\nkeep_turns = 1\n",
        )
        .unwrap();
        let vars: Vec<(&str, String)> = if w.provider == "anthropic" {
            vec![
                ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
                ("ANTHROPIC_API_KEY", "k".to_string()),
            ]
        } else {
            openai_env(&server, "k").to_vec()
        };
        let o = exec(&env, w.provider, &vars);
        let events = assert_completed(&o, "done");
        let compaction = events
            .iter()
            .find(|e| e["type"] == "compaction")
            .unwrap_or_else(|| panic!("{}: no compaction: {events:?}", w.provider));
        assert_eq!(
            compaction["reason"], "context_length_exceeded",
            "{}",
            w.provider
        );
        assert_eq!(compaction["summarized"], true, "{}", w.provider);
        let requests = server.requests();
        assert_eq!(requests.len(), 5, "{}: one retry only", w.provider);
        let retried = requests[4].json().to_string();
        assert!(
            retried.contains("earlier conversation compacted"),
            "{}: {retried}",
            w.provider
        );
        assert!(
            retried.contains("Read a.txt and missing.txt"),
            "{}",
            w.provider
        );
        // The ledger counted the summary call too.
        let last = events.last().unwrap();
        assert_eq!(last["totals"]["calls"], 5, "{}: {last}", w.provider);
    }
}
