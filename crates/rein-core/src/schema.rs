//! The conversation data model shared by every crate: messages, tool calls,
//! tool specs, usage and the chunks a provider streams.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The role's lower-case name, as stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of a conversation, tagged by `role` when serialised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    /// What the user (or rein, see [`HARNESS_NOTE`]) said, with the images
    /// the user attached (`rein exec --image`); sessions stored before
    /// images existed load with none.
    User {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant(AssistantMessage),
    Tool(ToolResult),
}

/// How rein's own words to the model begin (nudges, a Stop hook's answer,
/// sub-agents' reports): stored as user messages, they are not the user's.
pub const HARNESS_NOTE: &str = "[rein] ";

/// Whether a user message's `content` is rein's own note to the model.
pub fn is_harness_note(content: &str) -> bool {
    content.starts_with(HARNESS_NOTE)
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message::user_with_images(content, Vec::new())
    }

    /// A user message with images attached.
    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Message::User {
            content: content.into(),
            images,
        }
    }

    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    pub fn role(&self) -> Role {
        match self {
            Message::System { .. } => Role::System,
            Message::User { .. } => Role::User,
            Message::Assistant(_) => Role::Assistant,
            Message::Tool(_) => Role::Tool,
        }
    }

    /// The plain text of the message (assistant text parts joined, tool output).
    pub fn text(&self) -> String {
        match self {
            Message::System { content } | Message::User { content, .. } => content.clone(),
            Message::Assistant(a) => a.text(),
            Message::Tool(r) => r.output.clone(),
        }
    }
}

/// An assistant turn: its parts in the order the model produced them, and the
/// usage the provider reported for the call that produced it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub content: Vec<ContentPart>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped producing this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
}

impl AssistantMessage {
    /// An assistant message holding only text.
    pub fn from_text(text: impl Into<String>) -> Self {
        AssistantMessage {
            content: vec![ContentPart::Text { text: text.into() }],
            ..Default::default()
        }
    }

    /// All text parts joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls, in the order the model made them.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }

    /// The reasoning blocks, in order.
    pub fn reasoning(&self) -> impl Iterator<Item = &ReasoningBlock> {
        self.content.iter().filter_map(|p| match p {
            ContentPart::Reasoning(r) => Some(r),
            _ => None,
        })
    }
}

/// One part of an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text { text: String },
    Reasoning(ReasoningBlock),
    ToolCall(ToolCall),
}

/// Reasoning ("thinking") the model showed, with the provider's opaque data
/// kept byte for byte so the block can be replayed to the same provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReasoningBlock {
    /// Visible reasoning text (may be empty for redacted or encrypted blocks).
    #[serde(default)]
    pub text: String,
    /// Provider signature over the text (Anthropic `signature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Opaque reasoning payload (Anthropic `redacted_thinking.data`, OpenAI
    /// Responses `encrypted_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
    /// Provider item id, where the provider needs it on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A call the model asked for. `arguments` is the raw JSON text the model
/// produced, kept as-is so a malformed call can be reported precisely.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// The observation for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    /// Name of the tool that was called (providers such as Gemini-style
    /// servers want it back; it also makes transcripts readable).
    #[serde(default)]
    pub name: String,
    pub output: String,
    #[serde(default)]
    pub is_error: bool,
    /// Images the tool returned (an MCP server's screenshot), for the
    /// providers that take images in a tool result; `output` names each
    /// one in a line, for those that do not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image, base64-encoded, of a type every image-taking API accepts
/// (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    /// Base64 (standard alphabet, padded).
    pub data: String,
}

impl Image {
    /// The types every image-taking API accepts.
    pub const MEDIA_TYPES: [&'static str; 4] =
        ["image/png", "image/jpeg", "image/gif", "image/webp"];

    /// Tokens an image is counted as, before the provider says: about
    /// what a large image costs on the APIs that take them.
    pub const ESTIMATED_TOKENS: u64 = 1_600;

    /// The decoded size in bytes.
    pub fn bytes(&self) -> usize {
        let padding = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding)
    }

    /// `data:` URL form, for the APIs that take images by URL.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Token usage of one model call, or a sum of several.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache (a subset of input).
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Output tokens spent on reasoning (a subset of output).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input plus output tokens; saturates (providers report any number).
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }

    /// Add `other`'s counts; each saturates at `u64::MAX` instead of
    /// wrapping (a provider may report anything).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// Why the model stopped producing a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model wants tool calls run.
    ToolCalls,
    /// The output token limit was reached.
    Length,
    /// The provider's safety system stopped or refused the answer.
    ContentFilter,
    /// Anything else the provider said, kept verbatim.
    Other(String),
}

/// One piece of a streamed model answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamChunk {
    TextDelta(String),
    ReasoningDelta(String),
    /// Closes the current reasoning block with the provider's opaque data; with
    /// no open block (redacted thinking) it adds a block of its own.
    ReasoningEnd {
        signature: Option<String>,
        encrypted: Option<String>,
        id: Option<String>,
    },
    /// A fragment of a tool call. Fragments with the same `index` are joined;
    /// `id` and `name` usually come only with the first one.
    ToolCallDelta {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// A whole tool call at once.
    ToolCall(ToolCall),
    /// Usage so far; a later `Usage` chunk replaces an earlier one.
    Usage(Usage),
    /// How far a model running on this machine has got (hosted providers
    /// send none). Not part of the answer.
    Progress(ModelProgress),
    /// The end of the answer.
    Done(FinishReason),
}

/// How far a model that runs on this machine has got with one request: a
/// CPU takes seconds to read a long prompt before the first token, and
/// front ends show this instead of a silent wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum ModelProgress {
    /// Reading the prompt: `done` of `total` tokens are in the model's
    /// cache (a prefix kept from the previous request counts as done);
    /// `elapsed_ms` since the request began.
    Prompt {
        done: u64,
        total: u64,
        elapsed_ms: u64,
    },
    /// Writing the answer: `tokens` so far, `elapsed_ms` since the request
    /// began, of which `generating_ms` since the prompt was read (the rate
    /// is `tokens / generating_ms`).
    Generating {
        tokens: u64,
        elapsed_ms: u64,
        generating_ms: u64,
    },
}

impl ModelProgress {
    /// Milliseconds since the request began.
    pub fn elapsed_ms(&self) -> u64 {
        match *self {
            ModelProgress::Prompt { elapsed_ms, .. }
            | ModelProgress::Generating { elapsed_ms, .. } => elapsed_ms,
        }
    }

    /// One short line for a status bar: "reading the prompt 512/1,203
    /// tokens" or "writing 45 tokens, 8.1 tok/s".
    pub fn describe(&self) -> String {
        match *self {
            ModelProgress::Prompt { done, total, .. } => {
                format!("reading the prompt {done}/{total} tokens")
            }
            ModelProgress::Generating {
                tokens,
                generating_ms,
                ..
            } => {
                let rate = if generating_ms == 0 {
                    String::new()
                } else {
                    format!(
                        ", {:.1} tok/s",
                        tokens as f64 * 1000.0 / generating_ms as f64
                    )
                };
                format!(
                    "writing {tokens} token{}{rate}",
                    if tokens == 1 { "" } else { "s" }
                )
            }
        }
    }
}

/// Status of a todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl TodoStatus {
    /// The checkbox shown for this status: `[x]`, `[~]`, `[ ]` or `[-]`.
    pub fn mark(self) -> &'static str {
        match self {
            TodoStatus::Completed => "[x]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Pending => "[ ]",
            TodoStatus::Cancelled => "[-]",
        }
    }
}

/// One entry of the agent's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub id: String,
    pub content: String,
    pub status: TodoStatus,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_through_json_with_role_tags() {
        let msg = Message::Assistant(AssistantMessage {
            content: vec![
                ContentPart::Reasoning(ReasoningBlock {
                    text: "think".into(),
                    signature: Some("sig".into()),
                    ..Default::default()
                }),
                ContentPart::Text { text: "hi".into() },
                ContentPart::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                }),
            ],
            usage: Some(Usage {
                input_tokens: 3,
                ..Default::default()
            }),
            finish: Some(FinishReason::ToolCalls),
        });
        let json = serde_json::to_string(&msg).unwrap();
        assert!(json.starts_with("{\"role\":\"assistant\""), "{json}");
        let back: Message = serde_json::from_str(&json).unwrap();
        assert_eq!(back, msg);
    }

    #[test]
    fn assistant_text_joins_only_text_parts() {
        let a = AssistantMessage {
            content: vec![
                ContentPart::Text { text: "a".into() },
                ContentPart::Reasoning(ReasoningBlock::default()),
                ContentPart::Text { text: "b".into() },
            ],
            ..Default::default()
        };
        assert_eq!(a.text(), "ab");
        assert!(!a.has_tool_calls());
    }
}
