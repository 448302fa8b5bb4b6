//! Images the user attaches (`rein exec --image`) reach each wire API in
//! its own shape, seen in the request a local server speaking the API
//! recorded: OpenAI chat `image_url` parts with a data URL, Responses
//! `input_image` parts, Anthropic `image` blocks with a base64 source.

use std::sync::Arc;

use futures_util::StreamExt;
use rein_core::{CancellationToken, Image, Message, ModelRequest, Provider, StreamChunk};
use rein_providers::anthropic::Anthropic;
use rein_providers::http::{HttpOptions, HttpProvider};
use rein_providers::mock_server::{MockResponse, MockServer};
use rein_providers::openai_chat::OpenAiChat;
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use serde_json::{Value, json};

fn png() -> Image {
    Image {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    }
}

fn jpeg() -> Image {
    Image {
        media_type: "image/jpeg".into(),
        data: "/9j/4AAQ".into(),
    }
}

/// One streamed call with "what is in these?" and two images; the body
/// the server received, and the answer's text.
async fn sent(protocol: Arc<dyn WireProtocol>, answer: &str) -> (Value, String) {
    let server = MockServer::start().await.unwrap();
    server.push(MockResponse::sse(answer.to_string()));
    let endpoint = EndpointConfig {
        base_url: format!("{}/v1", server.url()),
        api_key: Some("sk-test".into()),
        model: "m".into(),
        ..Default::default()
    };
    let provider = HttpProvider::new("p", protocol, endpoint, HttpOptions::default()).unwrap();
    assert!(provider.capabilities().images);
    let request = ModelRequest {
        messages: vec![Message::user_with_images(
            "what is in these?",
            vec![png(), jpeg()],
        )],
        ..Default::default()
    };
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(&request, &cancel).await.unwrap();
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        if let StreamChunk::TextDelta(t) = chunk.unwrap() {
            text.push_str(&t);
        }
    }
    (server.requests()[0].json(), text)
}

#[tokio::test]
async fn openai_chat_sends_user_images_as_image_url_parts_with_data_urls() {
    let answer = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a cat\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (body, text) = sent(Arc::new(OpenAiChat), answer).await;
    assert_eq!(text, "a cat");
    assert_eq!(
        body["messages"],
        json!([{
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in these?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            ],
        }])
    );
}

#[tokio::test]
async fn openai_responses_sends_user_images_as_input_image_parts() {
    let answer = concat!(
        "event: response.output_text.delta\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"m1\",\"output_index\":0,\"content_index\":0,\"delta\":\"a cat\"}\n\n",
        "event: response.completed\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":2}}}\n\n",
    );
    let (body, text) = sent(Arc::new(OpenAiResponses), answer).await;
    assert_eq!(text, "a cat");
    assert_eq!(
        body["input"],
        json!([{
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is in these?"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQ"},
            ],
        }])
    );
}

#[tokio::test]
async fn anthropic_sends_user_images_as_base64_image_blocks_after_the_text() {
    let answer = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a cat\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    let (body, text) = sent(Arc::new(Anthropic), answer).await;
    assert_eq!(text, "a cat");
    let source =
        |media: &str, data: &str| json!({"type": "base64", "media_type": media, "data": data});
    assert_eq!(
        body["messages"],
        json!([{
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in these?"},
                {"type": "image", "source": source("image/png", "iVBORw0KGgo=")},
                // The newest block carries rein's cache breakpoint.
                {"type": "image", "source": source("image/jpeg", "/9j/4AAQ"), "cache_control": {"type": "ephemeral"}},
            ],
        }])
    );
}

#[test]
fn a_user_message_stored_before_images_existed_still_loads() {
    let old: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
    assert_eq!(old, Message::user("hi"));
    // Without images the stored form is unchanged; with them it keeps them.
    assert_eq!(
        serde_json::to_string(&old).unwrap(),
        r#"{"role":"user","content":"hi"}"#
    );
    let with = Message::user_with_images("hi", vec![png()]);
    let back: Message = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back, with);
}
