//! The request rein sends: system messages, calls, reasoning, results,
//! tools and caps, and a recorded turn rebuilt exactly.

use rein_core::{
    AssistantMessage, ContentPart, FinishReason, Message, ModelRequest, ReasoningBlock, ToolCall,
    ToolResult, ToolSpec,
};
use rein_providers::openai_chat::OpenAiChat;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use serde_json::{Value, json};

use super::sse_body;
use crate::providers::fixtures;

#[test]
fn request_carries_system_messages_calls_reasoning_results_and_tools() {
    let req = ModelRequest {
        temperature: None,
        system: "You are rein.".into(),
        messages: vec![
            Message::user("Look at a.txt and b.txt"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "Read both.".into(),
                        ..Default::default()
                    }),
                    ContentPart::Text {
                        text: "Reading both.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":\"a.txt\"}".into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\": \"b.txt\"}".into(),
                    }),
                ],
                usage: None,
                finish: Some(FinishReason::ToolCalls),
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_1".into(),
                name: "read_file".into(),
                output: "hello".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_2".into(),
                name: "read_file".into(),
                output: "no such file".into(),
                is_error: true,
            }),
            Message::Assistant(AssistantMessage::from_text("a.txt says hello.")),
            Message::user("thanks"),
            Message::user("bye"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            }),
        }],
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    };
    let endpoint = EndpointConfig {
        base_url: "https://api.openai.com/v1".into(),
        api_key: Some("sk-test".into()),
        model: "gpt-4.1".into(),
        max_output_tokens: Some(4096),
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert_eq!(wire.path, "/chat/completions");
    assert_eq!(
        wire.headers,
        vec![("authorization".to_string(), "Bearer sk-test".to_string())]
    );
    assert_eq!(
        wire.body,
        json!({
            "model": "gpt-4.1",
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_completion_tokens": 4096,
            "messages": [
                {"role": "system", "content": "You are rein."},
                {"role": "user", "content": "Look at a.txt and b.txt"},
                {
                    "role": "assistant",
                    "content": "Reading both.",
                    "reasoning_content": "Read both.",
                    "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                        {"id": "call_2", "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\": \"b.txt\"}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
                {"role": "tool", "tool_call_id": "call_2", "content": "Error: no such file"},
                {"role": "assistant", "content": "a.txt says hello."},
                {"role": "user", "content": "thanks"},
                {"role": "user", "content": "bye"},
            ],
            "tools": [{
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": {
                        "type": "object",
                        "properties": {"path": {"type": "string"}},
                        "required": ["path"],
                    },
                },
            }],
        })
    );
}

#[test]
fn request_without_system_tools_key_or_cap_leaves_them_out() {
    let req = ModelRequest {
        messages: vec![
            Message::user("hi"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "glob".into(),
                    arguments: "{}".into(),
                })],
                ..Default::default()
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "c".into(),
                name: "glob".into(),
                output: "Error: bad pattern".into(),
                is_error: true,
            }),
        ],
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "llama".into(),
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert!(wire.headers.is_empty());
    assert_eq!(
        wire.body,
        json!({
            "model": "llama",
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "glob", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "c", "content": "Error: bad pattern"},
            ],
        })
    );
}

#[test]
fn request_output_cap_is_the_smaller_of_request_and_endpoint() {
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        max_output_tokens: Some(100),
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "m".into(),
        max_output_tokens: Some(4096),
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert_eq!(wire.body["max_completion_tokens"], json!(100));
    assert!(wire.body.get("max_tokens").is_none());
}

#[test]
fn kind_is_openai() {
    assert_eq!(OpenAiChat.kind(), "openai");
}

#[test]
fn replaying_a_recorded_turn_rebuilds_the_messages_openai_accepted() {
    // Turn 1 of the recording streams two calls; the client then sent the
    // conversation back with the calls and their results (turn 2's
    // recorded request). Parsing turn 1 and building turn 2 from it must
    // give the same messages (rein sends `content: null` beside the calls
    // where that client left `content` out).
    let rel = "openai-chat/openai_gpt-4o_parallel-tool-calls_stream.vcr.yaml";
    let recorded = fixtures::load(rel)[1].request.clone().unwrap();
    let answer = fixtures::parse_stream(&OpenAiChat, &[sse_body(rel, 0)])
        .unwrap()
        .message;
    let ids: Vec<String> = answer.tool_calls().map(|c| c.id.clone()).collect();
    let req = ModelRequest {
        system: "You are a helpful assistant. Always use both add and multiply at the same time."
            .into(),
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(answer),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: ids[0].clone(),
                name: "add".into(),
                output: "5".into(),
                is_error: false,
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: ids[1].clone(),
                name: "multiply".into(),
                output: "6".into(),
                is_error: false,
            }),
        ],
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "gpt-4o".into(),
        ..Default::default()
    };
    let mut body = OpenAiChat.build_request(&req, &endpoint).body;
    let assistant = body["messages"][2].as_object_mut().unwrap();
    assert_eq!(assistant.remove("content"), Some(Value::Null));
    assert_eq!(body["messages"], recorded["messages"]);
    assert_eq!(body["model"], recorded["model"]);
    assert_eq!(body["stream"], recorded["stream"]);
    assert_eq!(body["stream_options"], recorded["stream_options"]);
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice_required_only_with_tools() {
    let spec = rein_core::ToolSpec {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object"}),
    };
    let endpoint = EndpointConfig {
        model: "m".into(),
        ..Default::default()
    };
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![spec],
        tool_choice: rein_core::ToolChoice::Required,
        ..Default::default()
    };
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert_eq!(wire.body["tool_choice"], json!("required"));
    assert!(wire.body.get("parallel_tool_calls").is_none());
    req.tool_choice = rein_core::ToolChoice::Auto;
    req.single_tool_call = true;
    let wire = OpenAiChat.build_request(&req, &endpoint);
    assert!(wire.body.get("tool_choice").is_none());
    assert_eq!(wire.body["parallel_tool_calls"], json!(false));
    req.tool_choice = rein_core::ToolChoice::Required;
    req.tools.clear();
    assert!(
        OpenAiChat
            .build_request(&req, &endpoint)
            .body
            .get("tool_choice")
            .is_none()
    );
}

/// `--output-schema` reaches the API as `response_format` (not strict:
/// strict mode takes a subset of JSON Schema; rein checks the answer).
#[test]
fn an_answer_schema_is_sent_as_the_response_format() {
    let schema = json!({"type": "object", "required": ["verdict"]});
    let req = ModelRequest {
        messages: vec![Message::user("check it")],
        answer_schema: Some(std::sync::Arc::new(schema.clone())),
        ..Default::default()
    };
    let endpoint = EndpointConfig {
        model: "m".into(),
        ..Default::default()
    };
    let body = OpenAiChat.build_request(&req, &endpoint).body;
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema",
               "json_schema": {"name": "answer", "schema": schema, "strict": false}})
    );
}
