//! Rendering a request into the prompt text the model was trained on, with
//! the GGUF's own Jinja chat template (as Hugging Face renders it).

use std::io;

use minijinja::value::Kwargs;
use minijinja::{Environment, Error, ErrorKind, Value};
use rein_core::{Message, ModelRequest, ToolResult};
use serde::Serialize;

/// ChatML with Hermes-style tool calls (the Qwen2.5 template): used when the
/// model has no template of its own.
pub(crate) const CHATML_TOOLS_TEMPLATE: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

/// A compiled chat template.
pub(crate) struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct TplMessage {
    role: &'static str,
    content: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<TplToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

#[derive(Serialize)]
struct TplToolCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: TplCall,
}

#[derive(Serialize)]
struct TplCall {
    name: String,
    arguments: Value,
}

#[derive(Serialize)]
struct TplTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: TplFunction<'a>,
}

#[derive(Serialize)]
struct TplFunction<'a> {
    name: &'a str,
    description: &'a str,
    /// The schema with its keys sorted (see [`sorted_keys`]).
    parameters: serde_json::Value,
}

impl ChatTemplate {
    /// Compile `source` (the GGUF's `tokenizer.chat_template`), or the
    /// ChatML fallback when there is none.
    pub(crate) fn new(
        source: Option<&str>,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
    ) -> Result<Self, String> {
        let mut env = Environment::new();
        // As transformers compiles chat templates.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        let source = source.unwrap_or(CHATML_TOOLS_TEMPLATE).to_string();
        env.add_template_owned("chat", source)
            .map_err(|e| format!("the model's chat template does not compile: {e}"))?;
        Ok(ChatTemplate {
            env,
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
        })
    }

    /// The prompt for `request`, ending with the opening of the assistant's
    /// answer.
    pub(crate) fn render(
        &self,
        request: &ModelRequest,
        tool_results_as_user: bool,
    ) -> Result<String, String> {
        let messages = template_messages(request, tool_results_as_user);
        let tools: Vec<TplTool<'_>> = request
            .tools
            .iter()
            .map(|t| TplTool {
                kind: "function",
                function: TplFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: sorted_keys(&t.parameters),
                },
            })
            .collect();
        let tools = if tools.is_empty() {
            Value::from(())
        } else {
            Value::from_serialize(&tools)
        };
        let template = self
            .env
            .get_template("chat")
            .map_err(|e| format!("chat template: {e}"))?;
        template
            .render(minijinja::context! {
                messages => Value::from_serialize(&messages),
                tools => tools,
                add_generation_prompt => true,
                bos_token => self.bos_token.as_str(),
                eos_token => self.eos_token.as_str(),
            })
            .map_err(|e| format!("cannot render the chat template: {e}"))
    }
}

/// The conversation as chat-template messages: the system prompt first,
/// tool results as `tool` messages or, with `tool_results_as_user`, each run
/// of them as one user message.
fn template_messages(request: &ModelRequest, tool_results_as_user: bool) -> Vec<TplMessage> {
    let plain = |role: &'static str, content: String| TplMessage {
        role,
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
        name: None,
    };
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        out.push(plain("system", request.system.clone()));
    }
    let mut results: Vec<&ToolResult> = Vec::new();
    let flush = |results: &mut Vec<&ToolResult>, out: &mut Vec<TplMessage>| {
        if !results.is_empty() {
            out.push(plain("user", results_as_user_text(request, results)));
            results.clear();
        }
    };
    for message in &request.messages {
        if let Message::Tool(r) = message
            && tool_results_as_user
        {
            results.push(r);
            continue;
        }
        flush(&mut results, &mut out);
        match message {
            Message::System { content } => out.push(plain("system", content.clone())),
            Message::User { content, .. } => out.push(plain("user", content.clone())),
            Message::Assistant(a) => {
                let tool_calls = a
                    .tool_calls()
                    .map(|c| TplToolCall {
                        id: c.id.clone(),
                        kind: "function",
                        function: TplCall {
                            name: c.name.clone(),
                            arguments: arguments_value(&c.arguments),
                        },
                    })
                    .collect();
                out.push(TplMessage {
                    role: "assistant",
                    content: a.text(),
                    tool_calls,
                    tool_call_id: None,
                    name: None,
                });
            }
            Message::Tool(r) => out.push(TplMessage {
                role: "tool",
                content: r.output.clone(),
                tool_calls: Vec::new(),
                tool_call_id: Some(r.call_id.clone()),
                name: Some(r.name.clone()),
            }),
        }
    }
    flush(&mut results, &mut out);
    out
}

/// What the model is told after one round of tool calls when results go in
/// a user message. The closing line matters: measured on
/// Qwen2.5-Coder-0.5B, without "in plain text" the model answered almost
/// never and called tools again instead; with it alone, it stopped calling
/// tools even when it needed more (see tests/local_model.rs). Call ids and
/// arguments in the header made the model echo the header back; arguments
/// are shown only to tell several results apart. Restating the user's
/// request after the results was tried and dropped: the 0.5B model, asked
/// to "Read secret.txt and tell me the code word", read it again and again.
pub(crate) fn results_as_user_text(request: &ModelRequest, results: &[&ToolResult]) -> String {
    let mut text = String::new();
    for r in results {
        let args = request
            .messages
            .iter()
            .rev()
            .filter_map(|m| match m {
                Message::Assistant(a) => a.tool_calls().find(|c| c.id == r.call_id),
                _ => None,
            })
            .next()
            .map(|c| c.arguments.clone());
        let what = if r.is_error { "failed" } else { "returned" };
        text.push_str(&format!("The {} call", r.name));
        // Several results: say which call each one answers.
        if results.len() > 1
            && let Some(args) = args.filter(|a| !a.trim().is_empty() && a.trim() != "{}")
        {
            text.push_str(&format!(" {args}"));
        }
        let fence = fence_for(&r.output);
        text.push_str(&format!(" {what}:\n{fence}\n{}", r.output));
        if !r.output.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&fence);
        text.push('\n');
    }
    text.push_str(RESULTS_CLOSING);
    text
}

/// The last line of the results message: what the model should do next.
/// An answer that writes it back has it removed ([`super::echo`]).
pub(crate) const RESULTS_CLOSING: &str =
    "Now answer my question in plain text, unless you need to call another tool first.";

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// `value` with every object's keys in sorted order, as the templates
/// have always shown tool schemas. serde_json keeps insertion order when
/// any crate of the build turns on its `preserve_order` feature (one
/// does), so the order is set here rather than left to the map type.
fn sorted_keys(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let sorted = keys
                .into_iter()
                .map(|k| (k.clone(), sorted_keys(&map[k])))
                .collect();
            serde_json::Value::Object(sorted)
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(sorted_keys).collect())
        }
        other => other.clone(),
    }
}

/// A call's arguments as the object templates expect, keys in the order
/// they were written; text that is not JSON stays a string.
fn arguments_value(arguments: &str) -> Value {
    serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| Value::from(arguments))
}

fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `tojson` as transformers has it: `json.dumps` with `", "` and `": "`
/// separators, no HTML escaping, non-ASCII kept, optional `indent`.
fn tojson(value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    // Accepted for compatibility; output is always as with these defaults.
    let _: Option<Value> = kwargs.get("ensure_ascii")?;
    let _: Option<Value> = kwargs.get("sort_keys")?;
    let _: Option<Value> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => match v.as_usize() {
            Some(n) => Some(" ".repeat(n)),
            None => v.as_str().map(str::to_string),
        },
    };
    let json_error =
        |e: serde_json::Error| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}"));
    let mut buf = Vec::new();
    match indent {
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, HfFormatter);
            value.serialize(&mut ser).map_err(json_error)?;
        }
        Some(indent) => {
            let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
            value.serialize(&mut ser).map_err(json_error)?;
        }
    }
    let text = String::from_utf8(buf)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    Ok(Value::from_safe_string(text))
}

/// Compact JSON with Python's default separators.
struct HfFormatter;

impl serde_json::ser::Formatter for HfFormatter {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::{AssistantMessage, ContentPart, ToolCall, ToolSpec};
    use serde_json::json;

    fn request() -> ModelRequest {
        ModelRequest {
            system: "You are rein.".into(),
            messages: vec![
                Message::user("What is in a.txt?"),
                Message::Assistant(AssistantMessage {
                    content: vec![ContentPart::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "read_file".into(),
                        arguments: r#"{"path":"a.txt","limit":5}"#.into(),
                    })],
                    ..Default::default()
                }),
                Message::Tool(ToolResult {
                    images: Vec::new(),
                    call_id: "call_1".into(),
                    name: "read_file".into(),
                    output: "hello <b>".into(),
                    is_error: false,
                }),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Read a file & show it".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"]
                }),
            }],
            ..ModelRequest::default()
        }
    }

    const TOOLS_BLOCK: &str = "<|im_start|>system\nYou are rein.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"description\": \"Read a file & show it\", \"parameters\": {\"properties\": {\"path\": {\"type\": \"string\"}}, \"required\": [\"path\"], \"type\": \"object\"}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

    #[test]
    fn a_tool_conversation_renders_exactly() {
        let t = ChatTemplate::new(None, "", "<|im_end|>").unwrap();
        let prompt = t.render(&request(), false).unwrap();
        let expected = format!(
            "{TOOLS_BLOCK}<|im_start|>user\nWhat is in a.txt?<|im_end|>\n\
             <|im_start|>assistant\n<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"a.txt\", \"limit\": 5}}}}\n</tool_call><|im_end|>\n\
             <|im_start|>user\n<tool_response>\nhello <b>\n</tool_response><|im_end|>\n\
             <|im_start|>assistant\n"
        );
        assert_eq!(prompt, expected);
    }

    #[test]
    fn tool_results_as_user_become_one_user_message() {
        let mut req = request();
        if let Message::Assistant(a) = &mut req.messages[1] {
            a.content.insert(
                0,
                ContentPart::Text {
                    text: "Reading.".into(),
                },
            );
            a.content.push(ContentPart::ToolCall(ToolCall {
                id: "call_2".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"b.txt"}"#.into(),
            }));
        }
        req.messages.push(Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: "call_2".into(),
            name: "read_file".into(),
            output: "second ```".into(),
            is_error: true,
        }));
        let t = ChatTemplate::new(None, "", "<|im_end|>").unwrap();
        let prompt = t.render(&req, true).unwrap();
        let expected = format!(
            "{TOOLS_BLOCK}<|im_start|>user\nWhat is in a.txt?<|im_end|>\n\
             <|im_start|>assistant\nReading.\n<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"a.txt\", \"limit\": 5}}}}\n</tool_call>\n<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"b.txt\"}}}}\n</tool_call><|im_end|>\n\
             <|im_start|>user\nThe read_file call {{\"path\":\"a.txt\",\"limit\":5}} returned:\n```\nhello <b>\n```\n\
             The read_file call {{\"path\":\"b.txt\"}} failed:\n````\nsecond ```\n````\n\
             Now answer my question in plain text, unless you need to call another tool first.<|im_end|>\n\
             <|im_start|>assistant\n"
        );
        assert_eq!(prompt, expected);
    }

    #[test]
    fn a_single_result_has_a_plain_header() {
        let req = request();
        let Message::Tool(r) = &req.messages[2] else {
            panic!()
        };
        assert_eq!(
            results_as_user_text(&req, &[r]),
            "The read_file call returned:\n```\nhello <b>\n```\n\
             Now answer my question in plain text, unless you need to call another tool first."
        );
    }

    #[test]
    fn without_tools_or_system_it_is_plain_chatml() {
        let t = ChatTemplate::new(None, "", "").unwrap();
        let req = ModelRequest {
            messages: vec![Message::user("hi")],
            ..Default::default()
        };
        assert_eq!(
            t.render(&req, false).unwrap(),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn tojson_matches_python_and_raise_exception_fails_the_render() {
        let t = ChatTemplate::new(None, "", "").unwrap();
        let out = t
            .env
            .render_str(
                "{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ 'a b'.split(' ') | tojson }}",
                minijinja::context! { x => Value::from_serialize(json!({"a": [1, "é<"], "b": {}})) },
            )
            .unwrap();
        assert_eq!(
            out,
            "{\"a\": [1, \"é<\"], \"b\": {}}|{\n  \"a\": [\n    1,\n    \"é<\"\n  ],\n  \"b\": {}\n}|[\"a\", \"b\"]"
        );
        let bad =
            ChatTemplate::new(Some("{{ raise_exception('no system role') }}"), "", "").unwrap();
        let req = ModelRequest {
            messages: vec![Message::user("u")],
            ..Default::default()
        };
        let err = bad.render(&req, false).unwrap_err();
        assert!(err.contains("no system role"), "{err}");
    }

    #[test]
    fn the_gguf_template_renders_like_the_fallback() {
        // Qwen2.5's own template differs from the fallback only in its
        // default system prompt.
        let Some(source) = qwen_template_from_gguf() else {
            return;
        };
        let qwen = ChatTemplate::new(Some(&source), "", "<|im_end|>").unwrap();
        let fallback = ChatTemplate::new(None, "", "<|im_end|>").unwrap();
        for as_user in [false, true] {
            assert_eq!(
                qwen.render(&request(), as_user).unwrap(),
                fallback.render(&request(), as_user).unwrap()
            );
        }
    }

    /// The chat template of the test model, when it is on this machine.
    fn qwen_template_from_gguf() -> Option<String> {
        let path = std::env::var_os("REIN_MODEL_PATH")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| {
                    std::path::PathBuf::from(h)
                        .join(".cache/rein/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
                })
            })?;
        // The metadata is at the start of the file; the template within it.
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(std::fs::File::open(path).ok()?, 16 << 20),
            &mut bytes,
        )
        .ok()?;
        let key = b"tokenizer.chat_template";
        let at = bytes.windows(key.len()).position(|w| w == key)? + key.len();
        // value type (u32 = 8, string), then u64 length, then the text
        let len = u64::from_le_bytes(bytes.get(at + 4..at + 12)?.try_into().ok()?) as usize;
        String::from_utf8(bytes.get(at + 12..at + 12 + len)?.to_vec()).ok()
    }
}
