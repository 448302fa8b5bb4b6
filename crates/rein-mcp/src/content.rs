//! A tool result as the model reads it: text as it is, everything else
//! described in a line (an image's type and size, a resource's address),
//! the server's structured result when it gave no text.

use serde_json::Value;

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
}
