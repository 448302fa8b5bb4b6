//! `rein exec --output-schema` against each wire API: the schema reaches
//! the service as its own structured-output setting, and the answer the
//! service gives is checked and printed.

use rein_providers::mock_server::MockResponse;
use serde_json::{Value, json};

use super::*;

/// Run `--output-schema` on `provider` (its server already holds the
/// answer): the answer fits and is printed.
fn structured_request(provider: &str, vars: &[(&str, String)]) {
    let env = Env::new();
    let schema = env.path("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]}"#,
    )
    .unwrap();
    let mut cmd = env.command();
    cmd.args(["exec", "--provider", provider, "--output-schema"])
        .arg(&schema)
        .arg("check it");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), ANSWER);
}

const ANSWER: &str = r#"{"verdict": "pass"}"#;

fn the_one_request(server: &MockServer) -> Value {
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    serde_json::from_slice(&reqs[0].body).unwrap()
}

#[test]
fn an_output_schema_reaches_each_api_as_its_structured_output_setting() {
    let want = json!({"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}}, "required": ["verdict"]});
    // OpenAI chat completions: response_format.
    let (_rt, mock) = server();
    mock.push(MockResponse::sse(openai_text_stream(ANSWER)));
    structured_request("openai", &openai_env(&mock, "sk-test"));
    let body = the_one_request(&mock);
    assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    assert_eq!(body["response_format"]["json_schema"]["schema"], want);
    // The Responses API: text.format.
    let (_rt, mock) = server();
    mock.push(MockResponse::sse(responses_text(ANSWER)));
    structured_request("openai-responses", &openai_env(&mock, "sk-test"));
    let body = the_one_request(&mock);
    assert_eq!(body["text"]["format"]["type"], "json_schema", "{body}");
    assert_eq!(body["text"]["format"]["schema"], want);
    // Anthropic Messages: output_config.format.
    let (_rt, mock) = server();
    mock.push(MockResponse::sse(anthropic_text(ANSWER)));
    let vars = [
        ("ANTHROPIC_BASE_URL", format!("{}/v1", mock.url())),
        ("ANTHROPIC_API_KEY", "sk-ant-test".to_string()),
    ];
    structured_request("anthropic", &vars);
    let body = the_one_request(&mock);
    assert_eq!(
        body["output_config"]["format"]["type"], "json_schema",
        "{body}"
    );
    assert_eq!(body["output_config"]["format"]["schema"], want);
}
