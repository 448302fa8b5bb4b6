//! The request rein sends: the whole conversation replayed statelessly,
//! reasoning, images, tools and tool choice.

use rein_core::{
    AssistantMessage, ContentPart, FinishReason, Image, Message, ModelRequest, ReasoningBlock,
    ToolCall, ToolResult, ToolSpec,
};
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use serde_json::{Value, json};

use super::{PARALLEL_CALLS, parse, usage};
use crate::providers::fixtures::{self, Body};

fn endpoint(key: Option<&str>, max: Option<u32>) -> EndpointConfig {
    EndpointConfig {
        base_url: "https://api.openai.com/v1".into(),
        api_key: key.map(str::to_string),
        model: "gpt-5".into(),
        max_output_tokens: max,
        ..Default::default()
    }
}

fn tool(name: &str, description: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

#[test]
fn build_request_replays_the_whole_conversation_statelessly_in_order() {
    let glob_schema = json!({"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]});
    let read_schema =
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
    let req = ModelRequest {
        temperature: None,
        system: "You are rein.".into(),
        messages: vec![
            Message::user("What is in a.txt?"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "Find it, then read it.".into(),
                        signature: None,
                        encrypted: Some("gAAAA-enc".into()),
                        id: Some("rs_1".into()),
                    }),
                    ContentPart::Text {
                        text: "Let me look.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "glob".into(),
                        arguments: r#"{"pattern":"a.*"}"#.into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a.txt"}"#.into(),
                    }),
                ],
                usage: Some(usage(1, 2, 0, 0)),
                finish: Some(FinishReason::ToolCalls),
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_1".into(),
                name: "glob".into(),
                output: "a.txt".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_2".into(),
                name: "read_file".into(),
                output: "permission denied".into(),
                is_error: true,
            }),
        ],
        tools: vec![
            tool("glob", "Find files.", glob_schema.clone()),
            tool("read_file", "Read a file.", read_schema.clone()),
        ],
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(Some("sk-test"), Some(4000)));
    assert_eq!(wire.path, "/responses");
    assert_eq!(
        wire.headers,
        [("authorization".to_string(), "Bearer sk-test".to_string())]
    );
    assert_eq!(
        wire.body,
        json!({
            "model": "gpt-5",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "instructions": "You are rein.",
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "What is in a.txt?"}]},
                {"type": "reasoning", "id": "rs_1",
                 "summary": [{"type": "summary_text", "text": "Find it, then read it."}],
                 "encrypted_content": "gAAAA-enc"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Let me look."}]},
                {"type": "function_call", "call_id": "call_1", "name": "glob", "arguments": "{\"pattern\":\"a.*\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
                {"type": "function_call_output", "call_id": "call_2", "output": "Error: permission denied"}
            ],
            "tools": [
                {"type": "function", "name": "glob", "description": "Find files.", "parameters": glob_schema, "strict": false},
                {"type": "function", "name": "read_file", "description": "Read a file.", "parameters": read_schema, "strict": false}
            ],
            "max_output_tokens": 4000
        })
    );
    // The key shows up in the header only.
    assert!(!wire.body.to_string().contains("sk-test"));
}

#[test]
fn build_request_omits_what_is_empty_and_replays_only_encrypted_openai_reasoning() {
    let req = ModelRequest {
        temperature: None,
        system: String::new(),
        messages: vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    // Anthropic thinking (signed): not for this API.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "thought".into(),
                        signature: Some("sig".into()),
                        encrypted: None,
                        id: None,
                    }),
                    // Plain reasoning text (DeepSeek): nothing to replay.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "plain".into(),
                        signature: None,
                        encrypted: None,
                        id: Some("uuid".into()),
                    }),
                    // Encrypted without summary or id.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: String::new(),
                        signature: None,
                        encrypted: Some("E".into()),
                        id: None,
                    }),
                    ContentPart::Text { text: "a".into() },
                    ContentPart::Text { text: "b".into() },
                    ContentPart::ToolCall(ToolCall {
                        id: "c".into(),
                        name: "t".into(),
                        arguments: String::new(),
                    }),
                ],
                ..Default::default()
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "c".into(),
                name: "t".into(),
                output: "Error: already said".into(),
                is_error: true,
            }),
        ],
        tools: vec![],
        max_output_tokens: Some(50),
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(None, Some(4000)));
    assert!(wire.headers.is_empty());
    assert_eq!(
        wire.body,
        json!({
            "model": "gpt-5",
            "stream": true,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "reasoning", "summary": [], "encrypted_content": "E"},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "a"},
                    {"type": "output_text", "text": "b"}
                ]},
                {"type": "function_call", "call_id": "c", "name": "t", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "Error: already said"}
            ],
            "max_output_tokens": 50
        })
    );
}

/// A tool result's images go to the Responses API as `input_image` parts
/// of the call's output (data URLs), after its text.
#[test]
fn a_tool_results_images_are_sent_as_input_image_parts() {
    let req = ModelRequest {
        messages: vec![
            Message::user("look"),
            Message::Tool(ToolResult {
                images: vec![Image {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                }],
                call_id: "call_1".into(),
                name: "shot".into(),
                output: "[image image/png, 8 bytes]".into(),
                is_error: false,
            }),
        ],
        ..Default::default()
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(Some("k"), Some(4000)));
    assert_eq!(
        wire.body["input"][1]["output"],
        json!([
            {"type": "input_text", "text": "[image image/png, 8 bytes]"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
        ])
    );
}

#[test]
fn build_request_sends_the_tool_round_trip_the_way_the_recorded_client_did() {
    // Turn 1 of the recording, parsed by rein, then replayed with the tool
    // results the recording sent: the input items (after the recorded
    // developer message, which rein sends as instructions) and the tools
    // are what the recorded client sent.
    let interactions = fixtures::load(PARALLEL_CALLS);
    let Body::Sse(turn1) = &interactions[0].body else {
        panic!()
    };
    let answer = parse(turn1).message;
    let recorded = interactions[1].request.clone().unwrap();
    let recorded_tools = recorded["tools"].as_array().unwrap();
    let tools: Vec<ToolSpec> = recorded_tools
        .iter()
        .map(|t| {
            tool(
                t["name"].as_str().unwrap(),
                t["description"].as_str().unwrap(),
                t["parameters"].clone(),
            )
        })
        .collect();
    let req = ModelRequest {
        temperature: None,
        system: "You are a helpful assistant. Always use both add and multiply at the same time."
            .into(),
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(answer),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_inViAUr9eV0GDtyOywkCxp59".into(),
                name: "add".into(),
                output: "5".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_Op66UUnzuOoKmgGeFJQJFTUY".into(),
                name: "multiply".into(),
                output: "6".into(),
                is_error: false,
            }),
        ],
        tools,
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    };
    let wire = OpenAiResponses.build_request(&req, &endpoint(Some("k"), Some(4000)));
    let input = wire.body["input"].as_array().unwrap();
    let recorded_input = recorded["input"].as_array().unwrap();
    assert_eq!(recorded_input[0]["role"], "developer");
    assert_eq!(recorded_input[0]["content"], wire.body["instructions"]);
    assert_eq!(input.as_slice(), &recorded_input[1..]);
    assert_eq!(wire.body["tools"], recorded["tools"]);
    assert_eq!(wire.body["store"], recorded["store"]);
    assert_eq!(
        wire.body["max_output_tokens"],
        recorded["max_output_tokens"]
    );
    assert_eq!(wire.body["stream"], recorded["stream"]);
}

#[test]
fn encrypted_reasoning_is_not_requested_from_models_that_reject_it() {
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    for (model, included) in [
        ("gpt-5", true),
        ("o4-mini", true),
        ("gpt-5.1-codex", true),
        ("deepseek-v4-flash", true),
        ("gpt-4o", false),
        ("gpt-4.1-mini", false),
        ("openai/gpt-4o-mini", false),
        ("gpt-5-chat-latest", false),
        ("chatgpt-4o-latest", false),
        ("gpt-3.5-turbo", false),
    ] {
        let ep = EndpointConfig {
            model: model.into(),
            ..endpoint(None, None)
        };
        let body = OpenAiResponses.build_request(&req, &ep).body;
        assert_eq!(body.get("include").is_some(), included, "{model}");
        assert_eq!(body["store"], false, "{model}");
    }
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice_required() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![tool("read_file", "Read a file.", json!({"type": "object"}))],
        tool_choice: rein_core::ToolChoice::Required,
        ..Default::default()
    };
    let ep = endpoint(Some("k"), None);
    assert_eq!(
        OpenAiResponses.build_request(&req, &ep).body["tool_choice"],
        json!("required")
    );
    req.tool_choice = rein_core::ToolChoice::Auto;
    req.single_tool_call = true;
    let body = OpenAiResponses.build_request(&req, &ep).body;
    assert!(body.get("tool_choice").is_none());
    assert_eq!(body["parallel_tool_calls"], json!(false));
}

/// `--output-schema` reaches the Responses API as `text.format`.
#[test]
fn an_answer_schema_is_sent_as_the_text_format() {
    let schema = json!({"type": "object", "required": ["verdict"]});
    let req = ModelRequest {
        messages: vec![Message::user("check it")],
        answer_schema: Some(std::sync::Arc::new(schema.clone())),
        ..Default::default()
    };
    let body = OpenAiResponses
        .build_request(&req, &endpoint(None, None))
        .body;
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "answer", "schema": schema,
                          "strict": false}})
    );
}

#[test]
fn a_requests_temperature_is_sent_only_when_it_sets_one() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let ep = endpoint(Some("sk-test"), None);
    assert!(
        OpenAiResponses
            .build_request(&req, &ep)
            .body
            .get("temperature")
            .is_none()
    );
    req.temperature = Some(0.6);
    let t = OpenAiResponses.build_request(&req, &ep).body["temperature"].as_f64();
    assert!((t.unwrap() - 0.6).abs() < 1e-6);
}
