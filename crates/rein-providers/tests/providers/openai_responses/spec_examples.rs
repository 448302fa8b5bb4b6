//! The OpenAPI spec's example events: every one is handled, the meaningful
//! ones map to chunks.

use rein_core::{FinishReason, ProviderErrorKind, StreamChunk, Usage};
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::WireProtocol;
use rein_providers::sse::SseEvent;
use serde_json::Value;

use super::SPEC_EXAMPLES;
use crate::providers::fixtures::{self, Body};

const STORY: &str = "In a shimmering forest under a sky full of stars, a lonely unicorn named Lila discovered a hidden pond that glowed with moonlight. Every night, she would leave sparkling, magical flowers by the water's edge, hoping to share her beauty with others. One enchanting evening, she woke to find a group of friendly animals gathered around, eager to be friends and share in her magic.";

#[test]
fn every_spec_example_event_is_handled_and_the_meaningful_ones_map() {
    let doc = match fixtures::load(SPEC_EXAMPLES).remove(0).body {
        Body::Json(v) => v,
        other => panic!("{other:?}"),
    };
    let events = doc["events"].as_array().unwrap();
    assert_eq!(events.len(), 108);
    for e in events {
        let schema = e["schema"].as_str().unwrap();
        let name = e["event"].as_str().unwrap();
        let text = e["example_text"].as_str().unwrap();
        let mut parser = OpenAiResponses.parser();
        let got = parser.on_event(&SseEvent {
            event: name.to_string(),
            data: text.to_string(),
            id: None,
        });
        let ctx = format!("{schema} ({name})");
        match name {
            "error" => {
                let err = got.expect_err(&ctx);
                if schema.ends_with("WsError") {
                    // Nested error with an HTTP status beside it.
                    assert_eq!(err.kind, ProviderErrorKind::InvalidRequest, "{ctx}");
                    assert_eq!(
                        err.message,
                        "This WebSocket connection has reached its stream limit."
                    );
                    assert_eq!(err.status, Some(400));
                } else {
                    // The spec's flat error event.
                    assert_eq!(err.kind, ProviderErrorKind::Stream, "{ctx}");
                    assert_eq!(err.message, "Something went wrong");
                }
                assert!(!err.is_retryable());
                // The first error sticks.
                assert_eq!(parser.finish().unwrap_err().message, err.message);
            }
            "response.failed" => {
                let err = got.expect_err(&ctx);
                assert_eq!(err.kind, ProviderErrorKind::Unavailable, "{ctx}");
                assert!(err.is_retryable());
                assert_eq!(err.message, "The model failed to generate a response.");
            }
            _ => {
                let chunks = got.unwrap_or_else(|e| panic!("{ctx}: {}", e.message));
                let expected: Vec<StreamChunk> = match name {
                    // Nothing streamed before: the final object's output is
                    // the answer.
                    "response.completed" => vec![
                        StreamChunk::TextDelta(STORY.into()),
                        StreamChunk::Usage(Usage::default()),
                        StreamChunk::Done(FinishReason::Stop),
                    ],
                    // reason max_tokens, usage null.
                    "response.incomplete" => vec![StreamChunk::Done(FinishReason::Length)],
                    "response.output_text.delta" => vec![StreamChunk::TextDelta("In".into())],
                    "response.output_text.done" | "response.output_item.done" => {
                        vec![StreamChunk::TextDelta(STORY.into())]
                    }
                    "response.reasoning_summary_text.delta" => vec![StreamChunk::ReasoningDelta(
                        "**Responding to a greeting**\n\nThe user just said, \"Hello!\" So, it seems I need to engage. I'll greet them back and offer help since they're looking to chat. I could say something like, \"Hello! How can I assist you today?\" That feels friendly and open. They didn't ask a specific question, so this approach will work well for starting a conversation. Let's see where it goes from there!".into(),
                    )],
                    "response.reasoning_text.delta" => {
                        vec![StreamChunk::ReasoningDelta("The".into())]
                    }
                    "response.refusal.delta" => {
                        vec![StreamChunk::TextDelta("refusal text so far".into())]
                    }
                    "response.refusal.done" => {
                        vec![StreamChunk::TextDelta("final refusal text".into())]
                    }
                    "response.function_call_arguments.done" => vec![
                        StreamChunk::ToolCallDelta {
                            index: 1,
                            id: None,
                            name: Some("get_weather".into()),
                            arguments: String::new(),
                        },
                        StreamChunk::ToolCallDelta {
                            index: 1,
                            id: None,
                            name: None,
                            arguments: "{ \"arg\": 123 }".into(),
                        },
                    ],
                    "response.custom_tool_call_input.done" => vec![StreamChunk::ToolCallDelta {
                        index: 0,
                        id: None,
                        name: None,
                        arguments: r#"{"input":"final complete input text"}"#.into(),
                    }],
                    "response.function_call_arguments.delta" => {
                        // The spec's example lacks a comma: not JSON, skipped.
                        assert!(serde_json::from_str::<Value>(text).is_err(), "{ctx}");
                        vec![]
                    }
                    // Lifecycle, built-in tools, audio, annotations, part
                    // markers, custom-tool input deltas (held until done).
                    _ => vec![],
                };
                assert_eq!(chunks, expected, "{ctx}");
            }
        }
    }
}
