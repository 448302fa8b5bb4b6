//! A tool result as the model reads it: text as it is, everything else
//! described in a line (an image's type and size, a resource's address),
//! the server's structured result when it gave no text; and the images
//! themselves, for the providers that take them, when they are of a type
//! every such API accepts, valid base64 and not too big.

use rein_core::Image;
use serde_json::Value;

/// Most images one result passes on.
pub const MAX_IMAGES: usize = 4;
/// Largest image passed on, decoded (the APIs that take images refuse
/// bigger ones).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The images of a result that can be passed on to a model.
pub fn images(blocks: &[Value]) -> Vec<Image> {
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|b| {
            let media_type = b.get("mimeType").and_then(Value::as_str)?;
            let data = b.get("data").and_then(Value::as_str)?;
            let image = Image {
                media_type: media_type.to_ascii_lowercase(),
                data: data.to_string(),
            };
            let usable = Image::MEDIA_TYPES.contains(&image.media_type.as_str())
                && is_base64(data)
                && image.bytes() <= MAX_IMAGE_BYTES;
            usable.then_some(image)
        })
        .take(MAX_IMAGES)
        .collect()
}

/// Standard padded base64, which every API checks before anything else: a
/// server's bad data must not make the model's request fail.
fn is_base64(data: &str) -> bool {
    let body = data.trim_end_matches('=');
    !data.is_empty()
        && data.len().is_multiple_of(4)
        && data.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// The observation for one call's result content (each block as the wire
/// carries it: an object with a `type`).
pub fn observation(blocks: &[Value], structured: Option<&Value>) -> String {
    let mut parts: Vec<String> = blocks.iter().map(block_text).collect();
    if parts.iter().all(|p| p.trim().is_empty())
        && let Some(s) = structured
    {
        parts = vec![s.to_string()];
    }
    let text = parts.join("\n");
    if text.trim().is_empty() {
        "(no output)".to_string()
    } else {
        text
    }
}

fn block_text(block: &Value) -> String {
    let str_of = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or("");
    match str_of("type") {
        "text" => str_of("text").to_string(),
        "image" | "audio" => format!(
            "[{} {}, {} bytes]",
            str_of("type"),
            str_of("mimeType"),
            // base64: three bytes for every four characters.
            str_of("data").len() / 4 * 3
        ),
        "resource" => {
            let r = block.get("resource").unwrap_or(&Value::Null);
            let uri = r.get("uri").and_then(Value::as_str).unwrap_or("?");
            match r.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {uri}]\n{text}"),
                None => format!("[resource {uri}, binary]"),
            }
        }
        "resource_link" => format!("[resource link {}]", str_of("uri")),
        _ => block.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_images_resources_and_structured_results_read_plainly() {
        let blocks = vec![
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "mimeType": "image/png", "data": "AAAA"}),
            json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}}),
            json!({"type": "resource_link", "uri": "file:///b"}),
        ];
        assert_eq!(
            observation(&blocks, None),
            "hello\n[image image/png, 3 bytes]\n[resource file:///a.txt]\nbody\n[resource link file:///b]"
        );
        assert_eq!(observation(&[], Some(&json!({"n": 1}))), "{\"n\":1}");
        assert_eq!(observation(&[], None), "(no output)");
    }

    /// Only images an API will take are passed on: a known type, valid
    /// base64, not too big, not too many.
    #[test]
    fn only_images_an_api_accepts_are_passed_on() {
        let image =
            |mime: &str, data: &str| json!({"type": "image", "mimeType": mime, "data": data});
        let big = "A".repeat((MAX_IMAGE_BYTES / 3 + 1) * 4);
        let blocks = vec![
            image("image/png", "iVBORw0KGgo="),
            image("IMAGE/JPEG", "AAAA"),
            image("image/svg+xml", "AAAA"),
            image("image/png", "not base64!"),
            image("image/png", "AAA"),
            image("image/png", &big),
            json!({"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}),
        ];
        let passed = images(&blocks);
        let types: Vec<&str> = passed.iter().map(|i| i.media_type.as_str()).collect();
        assert_eq!(types, ["image/png", "image/jpeg"]);
        assert_eq!(passed[0].bytes(), 8);
        let many: Vec<Value> = (0..10).map(|_| image("image/png", "AAAA")).collect();
        assert_eq!(images(&many).len(), MAX_IMAGES);
    }
}
