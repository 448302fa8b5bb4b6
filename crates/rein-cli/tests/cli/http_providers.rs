//! `rein exec` against a local server speaking each real wire API: a
//! two-turn run with parallel tool calls, asserting the exact requests the
//! server got; retries on 429; a 401's message; a missing key. This module
//! holds the server and the streams the tests share; its submodules hold
//! the tests, one module per behaviour.

use rein_providers::mock_server::MockServer;
use serde_json::{Value, json};

use super::support::*;

mod context_length;
mod conversations;
mod images;
mod keys_and_prices;
mod retries;
mod small_profile;
mod structured;

fn server() -> (tokio::runtime::Runtime, MockServer) {
    mock_server()
}

fn sse(events: &[Value], named: bool) -> Vec<u8> {
    let mut out = String::new();
    for e in events {
        if named {
            out.push_str(&format!("event: {}\n", e["type"].as_str().unwrap()));
        }
        out.push_str(&format!("data: {e}\n\n"));
    }
    out.into_bytes()
}

/// Run `rein exec --json` with `env_vars` against the server.
fn exec(env: &Env, provider: &str, vars: &[(&str, String)]) -> std::process::Output {
    std::fs::write(env.path("a.txt"), "hello from a\n").unwrap();
    let mut cmd = env.command();
    cmd.args([
        "exec",
        "--json",
        "--provider",
        provider,
        "Read a.txt and missing.txt",
    ]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Environment pointing the built-in OpenAI providers at `server`.
fn openai_env(server: &MockServer, key: &str) -> [(&'static str, String); 2] {
    [
        ("OPENAI_BASE_URL", format!("{}/v1", server.url())),
        ("OPENAI_API_KEY", key.to_string()),
    ]
}

fn assert_completed(o: &std::process::Output, final_text: &str) -> Vec<Value> {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let events = json_lines(o);
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "completed");
    assert_eq!(last["final_text"], final_text);
    events
}

fn openai_text_stream(text: &str) -> Vec<u8> {
    let mut body = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]})],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn responses_text(text: &str) -> Vec<u8> {
    sse(
        &[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": text}),
            json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 100, "output_tokens": 5}}}),
        ],
        true,
    )
}

fn anthropic_text(text: &str) -> Vec<u8> {
    sse(
        &[
            json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 100, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
            json!({"type": "message_stop"}),
        ],
        true,
    )
}
