//! API keys and prices: a 401's message, a missing key, no key needed for
//! a compatible server on loopback, unknown prices in JSON and in words.

use rein_providers::mock_server::MockResponse;
use serde_json::json;

use super::{assert_completed, exec, openai_env, server, sse};
use crate::cli::support::*;

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
