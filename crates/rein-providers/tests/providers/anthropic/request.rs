//! The request rein sends: system, tools, cache breakpoints, merged
//! turns, images and the replayed conversation.

use rein_core::*;
use rein_providers::anthropic::{API_VERSION, Anthropic, DEFAULT_MAX_TOKENS};
use rein_providers::protocol::WireProtocol;
use serde_json::{Value, json};

use super::{body_of, endpoint, tool_result, usage, without_cache_control};

#[test]
fn request_puts_system_and_tools_at_the_top_with_cache_breakpoints_and_replays_the_turn_exactly() {
    let req = ModelRequest {
        temperature: None,
        system: "You are rein.".into(),
        messages: vec![
            Message::user("Read a and b."),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "Both files, at once.".into(),
                        signature: Some("c2ln+/==".into()),
                        ..Default::default()
                    }),
                    ContentPart::Text {
                        text: "Reading both.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a"}"#.into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_2".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path": "b", "limit": 10}"#.into(),
                    }),
                ],
                usage: Some(usage(1, 0, 1)),
                finish: Some(FinishReason::ToolCalls),
            }),
            tool_result("toolu_1", "contents of a", false),
            tool_result("toolu_2", "no such file: b", true),
        ],
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read a file.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            },
            ToolSpec {
                name: "glob".into(),
                description: "Find files.".into(),
                parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
            },
        ],
        max_output_tokens: None,
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    };
    let mut ep = endpoint();
    ep.max_output_tokens = Some(4096);
    let wire = Anthropic.build_request(&req, &ep);
    assert_eq!(Anthropic.kind(), "anthropic");
    assert_eq!(wire.path, "/messages");
    assert_eq!(
        wire.headers,
        vec![
            ("x-api-key".to_string(), "sk-ant-test".to_string()),
            ("anthropic-version".to_string(), API_VERSION.to_string()),
        ]
    );
    assert_eq!(API_VERSION, "2023-06-01");
    assert_eq!(
        wire.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "stream": true,
            "system": [
                {"type": "text", "text": "You are rein.", "cache_control": {"type": "ephemeral"}}
            ],
            "tools": [
                {
                    "name": "read_file",
                    "description": "Read a file.",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
                },
                {
                    "name": "glob",
                    "description": "Find files.",
                    "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
                    "cache_control": {"type": "ephemeral"}
                }
            ],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Read a and b."}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Both files, at once.", "signature": "c2ln+/=="},
                    {"type": "text", "text": "Reading both."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b", "limit": 10}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents of a"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file: b", "is_error": true,
                     "cache_control": {"type": "ephemeral"}}
                ]}
            ]
        })
    );
}

#[test]
fn request_without_system_tools_or_key_omits_them_and_defaults_max_tokens() {
    let mut ep = endpoint();
    ep.api_key = None;
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let wire = Anthropic.build_request(&req, &ep);
    assert_eq!(
        wire.headers,
        vec![("anthropic-version".to_string(), "2023-06-01".to_string())]
    );
    assert_eq!(
        wire.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": DEFAULT_MAX_TOKENS,
            "stream": true,
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
                ]}
            ]
        })
    );
    assert_eq!(DEFAULT_MAX_TOKENS, 8192);
}

#[test]
fn the_request_cap_on_output_tokens_wins_over_the_endpoint_cap() {
    let mut ep = endpoint();
    ep.max_output_tokens = Some(4096);
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        max_output_tokens: Some(100),
        ..Default::default()
    };
    assert_eq!(Anthropic.build_request(&req, &ep).body["max_tokens"], 100);
}

#[test]
fn headers_the_endpoint_sets_itself_are_not_sent_twice() {
    let mut ep = endpoint();
    ep.headers
        .insert("Anthropic-Version".into(), "2024-01-01".into());
    ep.headers.insert("X-Api-Key".into(), "other".into());
    let req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    assert!(Anthropic.build_request(&req, &ep).headers.is_empty());
}

/// A tool result's images go to Anthropic as image blocks of the
/// result's content, after its text.
#[test]
fn a_tool_results_images_are_sent_as_image_blocks() {
    let mut result = tool_result("toolu_1", "[image image/png, 8 bytes]", false);
    if let Message::Tool(r) = &mut result {
        r.images = vec![Image {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }];
    }
    let req = ModelRequest {
        messages: vec![
            Message::user("look"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "shot".into(),
                    arguments: "{}".into(),
                })],
                ..Default::default()
            }),
            result,
        ],
        ..Default::default()
    };
    let body = without_cache_control(&body_of(&req));
    assert_eq!(
        body["messages"][2]["content"][0]["content"],
        json!([
            {"type": "text", "text": "[image image/png, 8 bytes]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
        ])
    );
}

#[test]
fn consecutive_user_side_messages_merge_with_tool_results_first() {
    let req = ModelRequest {
        messages: vec![
            Message::user("first"),
            Message::user("second"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                })],
                ..Default::default()
            }),
            Message::user("stop that"),
            tool_result("toolu_1", "a b", false),
        ],
        ..Default::default()
    };
    assert_eq!(
        body_of(&req)["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "first"},
                {"type": "text", "text": "second"}
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"},
                {"type": "text", "text": "stop that", "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[test]
fn foreign_reasoning_blank_text_and_broken_arguments_are_not_sent_as_such() {
    let req = ModelRequest {
        messages: vec![
            Message::user("go"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    // Another provider's reasoning: no signature, no data.
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "plain thoughts".into(),
                        ..Default::default()
                    }),
                    // OpenAI Responses reasoning: encrypted, but with an id.
                    ContentPart::Reasoning(ReasoningBlock {
                        encrypted: Some("gAAAA".into()),
                        id: Some("rs_1".into()),
                        ..Default::default()
                    }),
                    ContentPart::Text { text: "".into() },
                    ContentPart::Text { text: " \n".into() },
                    ContentPart::ToolCall(ToolCall {
                        id: "functions.bash:0".into(),
                        name: "bash".into(),
                        arguments: r#"{"command": "ls"#.into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_b".into(),
                        name: "todo_read".into(),
                        arguments: "".into(),
                    }),
                    ContentPart::ToolCall(ToolCall {
                        id: "toolu_c".into(),
                        name: "glob".into(),
                        arguments: "[1]".into(),
                    }),
                ],
                ..Default::default()
            }),
            tool_result("functions.bash:0", "invalid JSON arguments", true),
            tool_result("toolu_b", "", false),
            tool_result("toolu_c", "  ", false),
        ],
        ..Default::default()
    };
    assert_eq!(
        body_of(&req)["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "functions_bash_0", "name": "bash", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "todo_read", "input": {}},
                {"type": "tool_use", "id": "toolu_c", "name": "glob", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "functions_bash_0", "content": "invalid JSON arguments", "is_error": true},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "(no output)"},
                {"type": "tool_result", "tool_use_id": "toolu_c", "content": "(no output)",
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[test]
fn an_assistant_turn_left_empty_is_dropped_and_the_user_turns_around_it_merge() {
    let req = ModelRequest {
        messages: vec![
            Message::user("a"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::Reasoning(ReasoningBlock {
                    text: "foreign".into(),
                    ..Default::default()
                })],
                ..Default::default()
            }),
            Message::user("b"),
        ],
        ..Default::default()
    };
    assert_eq!(
        body_of(&req)["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}
            ]}
        ])
    );
}

#[test]
fn system_messages_inside_the_conversation_join_the_top_level_system() {
    let req = ModelRequest {
        system: "Base prompt.".into(),
        messages: vec![
            Message::user("a"),
            Message::system("Summary of earlier work."),
            Message::user("b"),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(
        body["system"],
        json!([
            {"type": "text", "text": "Base prompt."},
            {"type": "text", "text": "Summary of earlier work.", "cache_control": {"type": "ephemeral"}}
        ])
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn the_cache_breakpoint_of_a_trailing_assistant_turn_skips_its_thinking() {
    let req = ModelRequest {
        messages: vec![
            Message::user("a"),
            Message::Assistant(AssistantMessage {
                content: vec![
                    ContentPart::Text {
                        text: "part".into(),
                    },
                    ContentPart::Reasoning(ReasoningBlock {
                        text: "t".into(),
                        signature: Some("s".into()),
                        ..Default::default()
                    }),
                ],
                ..Default::default()
            }),
        ],
        tools: vec![ToolSpec {
            name: "noop".into(),
            description: String::new(),
            parameters: Value::Null,
        }],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "part", "cache_control": {"type": "ephemeral"}},
            {"type": "thinking", "thinking": "t", "signature": "s"}
        ])
    );
    // A tool without description or schema still gets a valid definition.
    assert_eq!(
        body["tools"],
        json!([{"name": "noop", "input_schema": {"type": "object", "properties": {}},
                "cache_control": {"type": "ephemeral"}}])
    );
}

#[test]
fn a_required_tool_call_is_sent_as_tool_choice_any() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file.".into(),
            parameters: serde_json::json!({"type": "object"}),
        }],
        tool_choice: ToolChoice::Required,
        ..Default::default()
    };
    let body = Anthropic.build_request(&req, &endpoint()).body;
    assert_eq!(body["tool_choice"], serde_json::json!({"type": "any"}));
    req.tool_choice = ToolChoice::Auto;
    assert!(
        Anthropic
            .build_request(&req, &endpoint())
            .body
            .get("tool_choice")
            .is_none()
    );
    req.single_tool_call = true;
    assert_eq!(
        Anthropic.build_request(&req, &endpoint()).body["tool_choice"],
        serde_json::json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

/// `--output-schema` reaches the API as its structured-output setting
/// (`output_config.format`), beside the tools, which stay callable.
#[test]
fn an_answer_schema_is_sent_as_the_output_format() {
    let schema = serde_json::json!({"type": "object", "required": ["verdict"]});
    let req = ModelRequest {
        messages: vec![Message::user("check it")],
        answer_schema: Some(std::sync::Arc::new(schema.clone())),
        ..Default::default()
    };
    let body = Anthropic.build_request(&req, &endpoint()).body;
    assert_eq!(
        body["output_config"],
        serde_json::json!({"format": {"type": "json_schema", "schema": schema}})
    );
    let plain = ModelRequest {
        messages: vec![Message::user("check it")],
        ..Default::default()
    };
    assert!(
        Anthropic
            .build_request(&plain, &endpoint())
            .body
            .get("output_config")
            .is_none()
    );
}

#[test]
fn a_requests_temperature_is_sent_only_when_it_sets_one() {
    let mut req = ModelRequest {
        messages: vec![Message::user("hi")],
        ..Default::default()
    };
    let body = Anthropic.build_request(&req, &endpoint()).body;
    assert!(body.get("temperature").is_none(), "{body}");
    req.temperature = Some(0.8);
    let t = Anthropic.build_request(&req, &endpoint()).body["temperature"].as_f64();
    assert!((t.unwrap() - 0.8).abs() < 1e-6);
}
