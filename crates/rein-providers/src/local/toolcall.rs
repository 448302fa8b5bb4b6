//! Finding tool calls in the text a local model wrote.
//!
//! Small models do not always use the `<tool_call>` tags their template
//! teaches, so several shapes are accepted: `<tool_call>{json}</tool_call>`
//! (also unterminated at the end of the text), a fenced ```` ```json ````
//! (or bare ```` ``` ```` / ```` ```tool_call ````) block holding only call
//! objects, and a bare call object starting a line. A call object is
//! `{"name": <offered tool>, "arguments": {...}}`; `"parameters"` may stand
//! for `"arguments"`, the arguments may be a JSON string holding the object,
//! and an OpenAI-style `{"function": {...}}` wrapper is unwrapped. Anything
//! that does not name an offered tool, or is not valid JSON, stays text.

use rein_core::{ToolCall, ToolSpec};
use serde_json::Value;

const OPEN_TAG: &str = "<tool_call>";
const CLOSE_TAG: &str = "</tool_call>";
const FENCE: &str = "```";

/// Split `text` into the text that remains and the tool calls found in it,
/// in order. Calls get ids `call_1`, `call_2`... When no call is found the
/// text comes back unchanged; otherwise the remaining text is trimmed.
pub fn parse_tool_calls(text: &str, offered: &[ToolSpec]) -> (String, Vec<ToolCall>) {
    let mut rest = String::new();
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut pos = 0;
    let mut line_start = true;
    while pos < text.len() {
        let tail = &text[pos..];
        if let Some(found) = match_at(tail, line_start, offered) {
            match found {
                Match::Calls { len, found } => {
                    for (name, arguments) in found {
                        calls.push(ToolCall {
                            id: format!("call_{}", calls.len() + 1),
                            name,
                            arguments,
                        });
                    }
                    pos += len;
                    line_start = text[..pos].ends_with('\n');
                    continue;
                }
                Match::Skip { len } => {
                    rest.push_str(&tail[..len]);
                    pos += len;
                    line_start = text[..pos].ends_with('\n');
                    continue;
                }
            }
        }
        let Some(c) = tail.chars().next() else { break };
        rest.push(c);
        pos += c.len_utf8();
        if c == '\n' {
            line_start = true;
        } else if !matches!(c, ' ' | '\t' | '\r') {
            line_start = false;
        }
    }
    if calls.is_empty() {
        return (text.to_string(), calls);
    }
    (rest.trim().to_string(), calls)
}

enum Match {
    /// `len` bytes hold these calls (name, arguments JSON).
    Calls {
        len: usize,
        found: Vec<(String, String)>,
    },
    /// `len` bytes are text that must not be searched for calls (a code
    /// block in another language).
    Skip { len: usize },
}

fn match_at(tail: &str, line_start: bool, offered: &[ToolSpec]) -> Option<Match> {
    if let Some(body) = tail.strip_prefix(OPEN_TAG) {
        let (inner, len) = match body.find(CLOSE_TAG) {
            Some(end) => (&body[..end], OPEN_TAG.len() + end + CLOSE_TAG.len()),
            None => (body, tail.len()),
        };
        let found = calls_in(inner, offered)?;
        return Some(Match::Calls { len, found });
    }
    if let Some(body) = tail.strip_prefix(FENCE) {
        let nl = body.find('\n')?;
        let info = body[..nl].trim();
        let content_start = nl + 1;
        let (inner, len) = match body[content_start..].find(FENCE) {
            Some(end) => (
                &body[content_start..content_start + end],
                FENCE.len() + content_start + end + FENCE.len(),
            ),
            None => (&body[content_start..], tail.len()),
        };
        if !is_json_fence(info) {
            return Some(Match::Skip { len });
        }
        let found = calls_in(inner, offered)?;
        return Some(Match::Calls { len, found });
    }
    if line_start && tail.starts_with('{') {
        let mut values = serde_json::Deserializer::from_str(tail).into_iter::<Value>();
        let value = values.next()?.ok()?;
        let len = values.byte_offset();
        let found = calls_of(value, offered)?;
        return Some(Match::Calls { len, found });
    }
    None
}

/// Whether a fence's info string may introduce a call.
pub(crate) fn is_json_fence(info: &str) -> bool {
    matches!(
        info.to_ascii_lowercase().as_str(),
        "" | "json" | "jsonc" | "json5" | "tool_call" | "tool_calls" | "tool"
    )
}

/// The calls in a block that must hold nothing but call objects (one or
/// more, or an array of them).
fn calls_in(inner: &str, offered: &[ToolSpec]) -> Option<Vec<(String, String)>> {
    let mut found = Vec::new();
    let mut values = serde_json::Deserializer::from_str(inner).into_iter::<Value>();
    for value in &mut values {
        found.extend(calls_of(value.ok()?, offered)?);
    }
    if found.is_empty() { None } else { Some(found) }
}

/// A call object, or an array of them; None when any is not a valid call.
fn calls_of(value: Value, offered: &[ToolSpec]) -> Option<Vec<(String, String)>> {
    match value {
        Value::Array(items) if !items.is_empty() => items
            .into_iter()
            .map(|v| call_of(v, offered))
            .collect::<Option<Vec<_>>>(),
        other => Some(vec![call_of(other, offered)?]),
    }
}

fn call_of(value: Value, offered: &[ToolSpec]) -> Option<(String, String)> {
    let Value::Object(mut obj) = value else {
        return None;
    };
    if !obj.contains_key("name")
        && let Some(Value::Object(_)) = obj.get("function")
    {
        return call_of(obj.remove("function")?, offered);
    }
    let name = match obj.remove("name")? {
        Value::String(s) => s,
        _ => return None,
    };
    if !offered.iter().any(|t| t.name == name) {
        return None;
    }
    let args = obj.remove("arguments").or_else(|| obj.remove("parameters"));
    let args = match args {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Default::default()),
        Some(Value::String(s)) => serde_json::from_str::<Value>(&s).ok()?,
        Some(v) => v,
    };
    if !args.is_object() {
        return None;
    }
    Some((name, args.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolSpec> {
        ["read_file", "bash"]
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn one(text: &str) -> (String, Vec<ToolCall>) {
        parse_tool_calls(text, &tools())
    }

    fn call(id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn tagged_call_with_text_before() {
        let (rest, calls) = one(
            "Let me read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
        );
        assert_eq!(rest, "Let me read it.");
        assert_eq!(
            calls,
            vec![call("call_1", "read_file", r#"{"path":"a.txt"}"#)]
        );
    }

    #[test]
    fn unterminated_tag_at_the_end() {
        let (rest, calls) =
            one("<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n");
        assert_eq!(rest, "");
        assert_eq!(calls, vec![call("call_1", "bash", r#"{"command":"ls"}"#)]);
    }

    #[test]
    fn fenced_blocks_json_bare_and_tool_call() {
        for fence in ["```json", "```", "```tool_call"] {
            let text = format!(
                "Reading.\n{fence}\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"x\"}}}}\n```\nthanks"
            );
            let (rest, calls) = one(&text);
            assert_eq!(calls.len(), 1, "{fence}");
            assert_eq!(calls[0].arguments, r#"{"path":"x"}"#);
            assert_eq!(rest, "Reading.\n\nthanks", "{fence}");
        }
    }

    #[test]
    fn bare_object_parameters_and_string_arguments() {
        let (rest, calls) = one("{\"name\": \"bash\", \"parameters\": {\"command\": \"pwd\"}}");
        assert_eq!(rest, "");
        assert_eq!(calls, vec![call("call_1", "bash", r#"{"command":"pwd"}"#)]);
        let (_, calls) =
            one("{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}");
        assert_eq!(calls, vec![call("call_1", "bash", r#"{"command":"pwd"}"#)]);
    }

    #[test]
    fn two_calls_in_one_answer() {
        let text = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>";
        let (rest, calls) = one(text);
        assert_eq!(rest, "");
        assert_eq!(
            calls,
            vec![
                call("call_1", "read_file", r#"{"path":"a"}"#),
                call("call_2", "bash", r#"{"command":"ls"}"#),
            ]
        );
    }

    #[test]
    fn openai_style_wrapper_and_arrays() {
        let (_, calls) = one(
            "<tool_call>[{\"type\": \"function\", \"function\": {\"name\": \"bash\", \"arguments\": {}}}, {\"name\": \"read_file\"}]</tool_call>",
        );
        assert_eq!(
            calls,
            vec![
                call("call_1", "bash", "{}"),
                call("call_2", "read_file", "{}")
            ]
        );
    }

    #[test]
    fn unknown_name_stays_text() {
        let text = "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(one(text), (text.to_string(), vec![]));
    }

    #[test]
    fn broken_json_stays_text() {
        let text =
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"\n</tool_call>";
        assert_eq!(one(text), (text.to_string(), vec![]));
        let text = "{\"name\": \"bash\", \"arguments\": {";
        assert_eq!(one(text), (text.to_string(), vec![]));
    }

    #[test]
    fn json_without_name_stays_text() {
        let text = "```json\n{\"path\": \"a.txt\"}\n```";
        assert_eq!(one(text), (text.to_string(), vec![]));
        let text = "{\"arguments\": {}}";
        assert_eq!(one(text), (text.to_string(), vec![]));
    }

    #[test]
    fn prose_mentioning_the_tag_stays_text() {
        let text = "Calls are wrapped in <tool_call> tags, like <tool_call>this</tool_call>.";
        assert_eq!(one(text), (text.to_string(), vec![]));
    }

    #[test]
    fn arguments_must_be_an_object() {
        let text = "{\"name\": \"bash\", \"arguments\": [1, 2]}";
        assert_eq!(one(text), (text.to_string(), vec![]));
    }

    #[test]
    fn object_mid_line_or_in_other_code_blocks_is_text() {
        let text = "The call {\"name\": \"bash\", \"arguments\": {}} is shown.";
        assert_eq!(one(text), (text.to_string(), vec![]));
        let text = "```python\n{\"name\": \"bash\", \"arguments\": {}}\n```";
        assert_eq!(one(text), (text.to_string(), vec![]));
    }
}
