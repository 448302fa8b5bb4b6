//! A two-turn run with parallel tool calls on each wire API, asserting the
//! exact requests the server got: OpenAI chat, OpenAI responses (reasoning
//! and call outputs replayed), Anthropic (signed thinking replayed, cache
//! points marked).

use rein_providers::mock_server::{MockResponse, MockServer, RecordedRequest};
use serde_json::{Value, json};

use super::{assert_completed, exec, openai_env, server, sse};
use crate::cli::support::*;

fn tool_names(tools: &Value, key: &str) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.pointer(key).and_then(Value::as_str).unwrap().to_string())
        .collect()
}

fn two_requests(server: &MockServer) -> (RecordedRequest, RecordedRequest) {
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    (reqs[0].clone(), reqs[1].clone())
}

#[test]
fn openai_chat_conversation_sends_the_right_requests() {
    let (_rt, server) = server();
    let chunk = |delta: Value, finish: Value| json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut turn1 = sse(
        &[
            chunk(
                json!({"role": "assistant", "content": "Reading both."}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":\"a.txt\"}"}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 1, "function": {"arguments": "\"missing.txt\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}}),
        ],
        false,
    );
    turn1.extend_from_slice(b"data: [DONE]\n\n");
    let mut turn2 = sse(
        &[
            chunk(json!({"content": "a.txt says hello."}), Value::Null),
            chunk(json!({}), json!("stop")),
            json!({"choices": [], "usage": {"prompt_tokens": 150, "completion_tokens": 5}}),
        ],
        false,
    );
    turn2.extend_from_slice(b"data: [DONE]\n\n");
    server.push(MockResponse::sse(turn1));
    server.push(MockResponse::sse(turn2));
    let env = Env::new();
    let o = exec(&env, "openai", &openai_env(&server, "sk-test-key"));
    let events = assert_completed(&o, "a.txt says hello.");
    assert_eq!(events.last().unwrap()["usage"]["input_tokens"], 250);

    let (first, second) = two_requests(&server);
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.header("authorization"), Some("Bearer sk-test-key"));
    let b1 = first.json();
    assert_eq!(b1["model"], "gpt-4.1");
    assert_eq!(b1["stream"], true);
    assert_eq!(b1["stream_options"]["include_usage"], true);
    assert_eq!(b1["messages"][0]["role"], "system");
    assert!(
        b1["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("Working directory")
    );
    assert_eq!(
        b1["messages"][1],
        json!({"role": "user", "content": "Read a.txt and missing.txt"})
    );
    let names = tool_names(&b1["tools"], "/function/name");
    assert!(
        names.contains(&"read_file".to_string()) && names.contains(&"bash".to_string()),
        "{names:?}"
    );
    let read_file = b1["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "read_file")
        .unwrap();
    assert_eq!(
        read_file["function"]["parameters"]["required"],
        json!(["path"])
    );

    let m = second.json()["messages"].clone();
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["tool_calls"][0]["id"], "call_a");
    assert_eq!(
        m[2]["tool_calls"][1]["function"]["arguments"],
        "{\"path\":\"missing.txt\"}"
    );
    assert_eq!(m[3]["role"], "tool");
    assert_eq!(m[3]["tool_call_id"], "call_a");
    assert!(m[3]["content"].as_str().unwrap().contains("hello from a"));
    assert_eq!(m[4]["tool_call_id"], "call_b");
    assert!(
        m[4]["content"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .starts_with("error"),
        "{}",
        m[4]["content"]
    );
}

#[test]
fn openai_responses_conversation_replays_reasoning_and_call_outputs() {
    let (_rt, server) = server();
    let turn1 = sse(
        &[
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "Need both files."}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need both files."}], "encrypted_content": "ENC123"}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "read_file", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "item_id": "fc_1", "delta": "{\"path\":\"a.txt\"}"}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}),
            json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "read_file", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_2", "delta": "{\"path\":\"missing.txt\"}"}),
            json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "read_file", "arguments": "{\"path\":\"missing.txt\"}"}}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 100, "output_tokens": 20, "input_tokens_details": {"cached_tokens": 40}, "output_tokens_details": {"reasoning_tokens": 5}}}}),
        ],
        true,
    );
    let turn2 = sse(
        &[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "a.txt says hello."}),
            json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 150, "output_tokens": 5}}}),
        ],
        true,
    );
    server.push(MockResponse::sse(turn1));
    server.push(MockResponse::sse(turn2));
    let env = Env::new();
    let o = exec(
        &env,
        "openai-responses",
        &openai_env(&server, "sk-test-key"),
    );
    let events = assert_completed(&o, "a.txt says hello.");
    assert_eq!(events.last().unwrap()["usage"]["cached_input_tokens"], 40);

    let (first, second) = two_requests(&server);
    assert_eq!(first.path, "/v1/responses");
    let b1 = first.json();
    assert_eq!(b1["store"], false);
    assert_eq!(b1["stream"], true);
    assert!(
        b1["instructions"]
            .as_str()
            .unwrap()
            .contains("Working directory")
    );
    assert!(tool_names(&b1["tools"], "/name").contains(&"read_file".to_string()));

    let input = second.json()["input"].as_array().unwrap().clone();
    let of_type = |t: &str| {
        input
            .iter()
            .filter(|i| i["type"] == t)
            .cloned()
            .collect::<Vec<_>>()
    };
    let reasoning = of_type("reasoning");
    assert_eq!(reasoning.len(), 1, "{input:?}");
    assert_eq!(reasoning[0]["encrypted_content"], "ENC123");
    let calls = of_type("function_call");
    assert_eq!(
        calls
            .iter()
            .map(|c| c["call_id"].clone())
            .collect::<Vec<_>>(),
        [json!("call_a"), json!("call_b")]
    );
    let outputs = of_type("function_call_output");
    assert_eq!(outputs[0]["call_id"], "call_a");
    assert!(
        outputs[0]["output"]
            .as_str()
            .unwrap()
            .contains("hello from a")
    );
    assert_eq!(outputs[1]["call_id"], "call_b");
    assert!(
        outputs[1]["output"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .starts_with("error")
    );
}

/// Anthropic's two turns: signed thinking and two parallel reads (the
/// second read's arguments in one piece), then the answer.
fn anthropic_thinking_reads_then_answer() -> (Vec<u8>, Vec<u8>) {
    let block =
        |i: u32, b: Value| json!({"type": "content_block_start", "index": i, "content_block": b});
    let delta = |i: u32, d: Value| json!({"type": "content_block_delta", "index": i, "delta": d});
    let stop = |i: u32| json!({"type": "content_block_stop", "index": i});
    let turn1 = sse(
        &[
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 90, "cache_read_input_tokens": 10, "output_tokens": 1}}}),
            block(
                0,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
            ),
            delta(
                0,
                json!({"type": "thinking_delta", "thinking": "Need both files."}),
            ),
            delta(
                0,
                json!({"type": "signature_delta", "signature": "SIG-abc/123=="}),
            ),
            stop(0),
            json!({"type": "ping"}),
            block(
                1,
                json!({"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}),
            ),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "{\"path\": "}),
            ),
            delta(
                1,
                json!({"type": "input_json_delta", "partial_json": "\"a.txt\"}"}),
            ),
            stop(1),
            block(
                2,
                json!({"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {}}),
            ),
            delta(
                2,
                json!({"type": "input_json_delta", "partial_json": "{\"path\": \"missing.txt\"}"}),
            ),
            stop(2),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            json!({"type": "message_stop"}),
        ],
        true,
    );
    let turn2 = sse(
        &[
            json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 150, "output_tokens": 1}}}),
            block(0, json!({"type": "text", "text": ""})),
            delta(
                0,
                json!({"type": "text_delta", "text": "a.txt says hello."}),
            ),
            stop(0),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 6}}),
            json!({"type": "message_stop"}),
        ],
        true,
    );
    (turn1, turn2)
}

#[test]
fn anthropic_conversation_replays_the_signed_thinking_and_marks_cache_points() {
    let (_rt, server) = server();
    let (turn1, turn2) = anthropic_thinking_reads_then_answer();
    server.push(MockResponse::sse(turn1));
    server.push(MockResponse::sse(turn2));
    let env = Env::new();
    let o = exec(
        &env,
        "anthropic",
        &[
            ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
            ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
        ],
    );
    let events = assert_completed(&o, "a.txt says hello.");
    assert_eq!(events.last().unwrap()["usage"]["output_tokens"], 36);

    let (first, second) = two_requests(&server);
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(first.header("anthropic-version"), Some("2023-06-01"));
    let b1 = first.json();
    assert_eq!(b1["system"][0]["type"], "text");
    assert!(
        b1["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Working directory")
    );
    assert_eq!(
        b1["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let tools = b1["tools"].as_array().unwrap();
    assert_eq!(
        tools.last().unwrap()["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "read_file" && t["input_schema"]["required"] == json!(["path"]))
    );
    assert!(b1["max_tokens"].as_u64().unwrap() > 0);

    let m = second.json()["messages"].clone();
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(
        m[1]["content"][0],
        json!({"type": "thinking", "thinking": "Need both files.", "signature": "SIG-abc/123=="})
    );
    assert_eq!(m[1]["content"][1]["type"], "tool_use");
    assert_eq!(m[1]["content"][1]["input"], json!({"path": "a.txt"}));
    assert_eq!(m[2]["role"], "user");
    let results = m[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["tool_use_id"], "toolu_a");
    assert!(results[0].get("is_error").is_none_or(|v| v == false));
    assert_eq!(results[1]["tool_use_id"], "toolu_b");
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(
        results.last().unwrap()["cache_control"],
        json!({"type": "ephemeral"})
    );
}
