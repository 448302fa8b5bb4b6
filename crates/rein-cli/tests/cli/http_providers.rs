//! `rein exec` against a local server speaking each real wire API: a
//! two-turn run with parallel tool calls, asserting the exact requests the
//! server got; retries on 429; a 401's message; a missing key.

use std::time::Duration;

use rein_providers::mock_server::{MockResponse, MockServer, RecordedRequest};
use serde_json::{Value, json};

use super::support::*;

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

fn tool_names(tools: &Value, key: &str) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.pointer(key).and_then(Value::as_str).unwrap().to_string())
        .collect()
}

fn assert_completed(o: &std::process::Output, final_text: &str) -> Vec<Value> {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let events = json_lines(o);
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "completed");
    assert_eq!(last["final_text"], final_text);
    events
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

#[test]
fn anthropic_conversation_replays_the_signed_thinking_and_marks_cache_points() {
    let (_rt, server) = server();
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

#[test]
fn a_429_with_retry_after_is_retried_and_shown_as_a_retry_event() {
    let (_rt, server) = server();
    server.push(
        MockResponse::json(
            429,
            &json!({"error": {"message": "Rate limit reached", "type": "rate_limit"}}),
        )
        .with_header("retry-after", "1"),
    );
    let mut body = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    server.push(MockResponse::sse(body));
    let env = Env::new();
    let started = std::time::Instant::now();
    let o = exec(&env, "openai", &openai_env(&server, "k"));
    let events = assert_completed(&o, "ok");
    let retry = events
        .iter()
        .find(|e| e["type"] == "retry")
        .expect("a retry event");
    assert_eq!(retry["delay_ms"], 1000);
    assert_eq!(retry["attempt"], 1);
    assert!(
        retry["error"]
            .as_str()
            .unwrap()
            .contains("Rate limit reached")
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_401_ends_the_run_with_the_services_message_and_no_retry() {
    let (_rt, server) = server();
    server.push(MockResponse::json(
        401,
        &json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
    ));
    let env = Env::new();
    let o = exec(
        &env,
        "anthropic",
        &[
            ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
            ("ANTHROPIC_API_KEY", "sk-ant-wrong-SECRET".into()),
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let events = json_lines(&o);
    let error = events.last().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("401") && error.contains("invalid x-api-key"),
        "{error}"
    );
    assert!(!stdout(&o).contains("SECRET") && !stderr(&o).contains("SECRET"));
    assert!(events.iter().all(|e| e["type"] != "retry"));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_missing_key_is_one_line_naming_the_variable() {
    let env = Env::new();
    let o = env.rein(&["exec", "--provider", "anthropic", "hi"]);
    assert_clean_failure(
        &o,
        2,
        "the anthropic provider needs an API key: set ANTHROPIC_API_KEY",
    );
    let o = env.rein(&["exec", "--provider", "openai", "hi"]);
    assert_clean_failure(&o, 2, "set OPENAI_API_KEY");
}

#[test]
fn a_configured_compatible_server_needs_no_key_on_loopback() {
    let (_rt, server) = server();
    let mut body = sse(
        &[
            json!({"choices": [{"index": 0, "delta": {"reasoning_content": "hmm", "content": "local ok"}, "finish_reason": "stop"}]}),
        ],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    server.push(MockResponse::sse(body));
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "provider = \"llamacpp\"\n[providers.llamacpp]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"LLAMA_KEY\"\nmodel = \"qwen\"\ncontext_window = 8192\n[providers.llamacpp.headers]\nx-team = \"rein\"\n",
            server.url()
        ),
    )
    .unwrap();
    let o = env.rein(&["exec", "--json", "hi"]);
    let events = assert_completed(&o, "local ok");
    assert_eq!(events[0]["provider"], "llamacpp");
    assert_eq!(events[0]["model"], "qwen");
    let token = events.iter().find(|e| e["type"] == "token_update").unwrap();
    assert_eq!(token["window"], 8192);
    let req = &server.requests()[0];
    assert_eq!(req.header("x-team"), Some("rein"));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.json()["model"], "qwen");
}

fn openai_text_stream(text: &str) -> Vec<u8> {
    let mut body = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]})],
        false,
    );
    body.extend_from_slice(b"data: [DONE]\n\n");
    body
}

fn config_with_idle_timeout(env: &Env, secs: u64) {
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("stream_idle_timeout_secs = {secs}\nprovider_retries = 2\n"),
    )
    .unwrap();
}

#[test]
fn a_stream_that_goes_silent_before_any_output_is_retried() {
    use rein_providers::mock_server::Part;
    let (_rt, server) = server();
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(b": connected\n\n".to_vec()),
        Part::Pause(Duration::from_secs(30)),
    ]));
    server.push(MockResponse::sse(openai_text_stream("second try")));
    let env = Env::new();
    config_with_idle_timeout(&env, 1);
    let o = exec(&env, "openai", &openai_env(&server, "k"));
    let events = assert_completed(&o, "second try");
    let retry = events
        .iter()
        .find(|e| e["type"] == "retry")
        .expect("a retry event");
    assert!(
        retry["error"].as_str().unwrap().contains("went silent"),
        "{retry}"
    );
}

/// The retry events of a run, and the error they carried.
fn retries(events: &[Value]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "retry")
        .map(|e| {
            let error = e["error"].as_str().unwrap().to_string();
            (e["discarded"].as_bool().unwrap(), error)
        })
        .collect()
}

#[test]
fn a_stream_that_goes_silent_after_output_is_retried_and_the_partial_answer_discarded() {
    use rein_providers::mock_server::Part;
    let (_rt, server) = server();
    let first = sse(
        &[json!({"choices": [{"index": 0, "delta": {"content": "half an answer"}}]})],
        false,
    );
    server.push(MockResponse::sse_parts(vec![
        Part::Bytes(first),
        Part::Pause(Duration::from_secs(30)),
    ]));
    server.push(MockResponse::sse(openai_text_stream("second try")));
    let env = Env::new();
    config_with_idle_timeout(&env, 1);
    let o = exec(&env, "openai", &openai_env(&server, "k"));
    let events = assert_completed(&o, "second try");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(
        retries[0].0,
        "the retry says the partial answer was discarded"
    );
    assert!(retries[0].1.contains("went silent"), "{retries:?}");
    let stored = stored(&env, &session_id(&events));
    assert_eq!(
        stored.len(),
        2,
        "the prompt and the whole answer only: {stored:?}"
    );
    assert_eq!(stored[1]["content"][0]["text"], "second try");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_connection_dropped_or_cut_mid_stream_is_retried_on_every_wire_api() {
    use rein_providers::mock_server::{Fault, Part};
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("openai", openai_text_stream("whole"), "stream broke"),
        (
            "openai-responses",
            responses_text("whole"),
            "before the answer was complete",
        ),
        (
            "anthropic",
            anthropic_text("whole"),
            "before the answer was complete",
        ),
    ];
    for (provider, good, why) in cases {
        let (_rt, server) = server();
        // Chat: the connection breaks; the others: the body ends cleanly
        // half-way through an event, as a proxy's cut looks.
        let fault = match provider {
            "openai" => MockResponse::sse_parts(vec![
                Part::Bytes(good[..good.len() / 2].to_vec()),
                Part::Drop,
            ]),
            _ => Fault::EndMidEvent.response(&good),
        };
        server.push(fault);
        server.push(MockResponse::sse(good));
        let env = Env::new();
        let vars = match provider {
            "anthropic" => vec![
                ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
                ("ANTHROPIC_API_KEY", "k".to_string()),
            ],
            _ => openai_env(&server, "k").to_vec(),
        };
        let o = exec(&env, provider, &vars);
        let events = assert_completed(&o, "whole");
        let retries = retries(&events);
        assert_eq!(retries.len(), 1, "{provider}: {retries:?}");
        assert!(retries[0].1.contains(why), "{provider}: {retries:?}");
        let stored = stored(&env, &session_id(&events));
        assert_eq!(
            stored.len(),
            2,
            "{provider}: the prompt and the whole answer only"
        );
    }
}

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

fn responses_text(text: &str) -> Vec<u8> {
    sse(
        &[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": text}),
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

/// Cost is said one way everywhere. A run on a model without known prices
/// (replay) has `cost_usd: null` in JSON and "cost unknown" in words; a
/// run on a priced model (gpt-4.1) a number; the session holding both
/// shows a lower bound ("≥ $…"), never a total that counts the unpriced
/// calls as free.
#[test]
fn unknown_prices_are_null_in_json_and_a_lower_bound_in_words() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "first"}]}));
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "hi",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    let id = events[0]["session_id"].as_str().unwrap().to_string();
    let totals = &events.last().unwrap()["totals"];
    assert!(totals["cost_usd"].is_null(), "{totals}");
    assert_eq!(totals["known_cost_usd"], 0.0);
    assert_eq!(totals["unpriced_calls"], 1);
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "hi"]);
    assert!(stderr(&o).contains("· cost unknown ·"), "{}", stderr(&o));

    // The same session continued on a priced model.
    let (_rt, server) = server();
    let mut turn = sse(
        &[
            json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "second"}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100}}),
        ],
        false,
    );
    turn.extend_from_slice(b"data: [DONE]\n\n");
    server.push(MockResponse::sse(turn));
    let mut cmd = env.command();
    cmd.args([
        "exec",
        "--json",
        "--provider",
        "openai",
        "--resume",
        &id,
        "again",
    ]);
    for (k, v) in openai_env(&server, "sk-test") {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let totals = json_lines(&o).last().unwrap()["totals"].clone();
    let cost = totals["cost_usd"]
        .as_f64()
        .expect("a priced run has a cost");
    assert!(cost > 0.0 && totals["known_cost_usd"] == cost, "{totals}");
    // The whole session: one unpriced call, one priced.
    let shown = env.rein(&["sessions", "show", &id]);
    let text = stdout(&shown);
    assert!(text.contains(&format!("≥ ${cost:.4}")), "{text}");
}
