//! The session's transcript for hooks: `transcript_path` in a hook's input
//! names a JSONL file of the session's messages in Claude Code's shape
//! (one line per message: `type`, `sessionId`, `message` with `role` and
//! `content`; a call is a `tool_use` part with Claude's tool name and
//! keys, its result a `tool_result` part of a user line). rein keeps
//! sessions in its store; the file is written from it just before a hook
//! runs, into a private folder of rein's: whole the first time in a
//! process, then only the messages added since (the store's messages are
//! append-only), so a long session's hooks do not rewrite it each call.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::{ContentPart, Message, SessionStore};
use serde_json::{Value, json};

use crate::claude_names::{claude_input, claude_name};

/// Where sessions' transcripts are written, and the store they are read
/// from.
pub struct Transcripts {
    store: Arc<dyn SessionStore>,
    /// rein's home; the files are in its `transcripts` folder.
    home: PathBuf,
    /// How many of each session's messages its file holds, as this
    /// process wrote it; one writer at a time.
    written: tokio::sync::Mutex<HashMap<String, usize>>,
}

impl Transcripts {
    /// Transcripts in `home`'s `transcripts` folder (`$REIN_HOME`).
    pub fn new(store: Arc<dyn SessionStore>, home: &Path) -> Transcripts {
        Transcripts {
            store,
            home: home.to_path_buf(),
            written: tokio::sync::Mutex::default(),
        }
    }

    /// The transcript file of a session, in `home` as [`Transcripts::new`]
    /// places it; None for an id that is not a plain name.
    pub fn file(home: &Path, session_id: &str) -> Option<PathBuf> {
        let plain = !session_id.is_empty()
            && session_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        plain.then(|| home.join("transcripts").join(format!("{session_id}.jsonl")))
    }

    /// Write the session's transcript as it stands now; its path, or None
    /// when the session cannot be read or the file not written.
    pub(super) async fn write(&self, session_id: &str) -> Option<PathBuf> {
        let path = Transcripts::file(&self.home, session_id)?;
        let mut written = self.written.lock().await;
        let messages = self.store.messages(session_id).await.ok()?;
        let body = |from: usize| {
            let mut body = String::new();
            for line in messages[from..].iter().filter_map(|m| line(session_id, m)) {
                body.push_str(&line.to_string());
                body.push('\n');
            }
            body
        };
        match written.get(session_id) {
            Some(&done) if done <= messages.len() && path.is_file() => {
                if done < messages.len() {
                    let mut file = std::fs::OpenOptions::new().append(true).open(&path).ok()?;
                    file.write_all(body(done).as_bytes()).ok()?;
                }
            }
            _ => rein_core::private_fs::write_private(&path, body(0).as_bytes()).ok()?,
        }
        written.insert(session_id.to_string(), messages.len());
        Some(path)
    }
}

/// One message as a line of Claude Code's transcript; None for rein's
/// system prompt.
fn line(session_id: &str, message: &Message) -> Option<Value> {
    let (kind, content) = match message {
        Message::System { .. } => return None,
        Message::User { content, .. } => ("user", json!(content)),
        Message::Assistant(a) => (
            "assistant",
            Value::Array(a.content.iter().map(part).collect()),
        ),
        Message::Tool(result) => (
            "user",
            json!([{
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": result.output,
                "is_error": result.is_error,
            }]),
        ),
    };
    let role = if kind == "assistant" {
        "assistant"
    } else {
        "user"
    };
    Some(json!({
        "type": kind,
        "sessionId": session_id,
        "message": {"role": role, "content": content},
    }))
}

/// One part of an assistant message, as Claude's transcript writes it.
fn part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Reasoning(r) => json!({"type": "thinking", "thinking": r.text}),
        ContentPart::ToolCall(call) => {
            let args = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
            json!({
                "type": "tool_use",
                "id": call.id,
                "name": claude_name(&call.name),
                "input": claude_input(&call.name, &args),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::{AssistantMessage, InMemorySessionStore, NewSession, ToolCall, ToolResult};

    #[tokio::test]
    async fn the_transcript_is_the_sessions_messages_in_claudes_shape() {
        let store = Arc::new(InMemorySessionStore::default());
        let dir = tempfile::tempdir().unwrap();
        let info = store.create_session(NewSession::default()).await.unwrap();
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.rs"}"#.into(),
        };
        for m in [
            Message::System {
                content: "sys".into(),
            },
            Message::user("fix it"),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(call)],
                ..Default::default()
            }),
            Message::Tool(ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                output: "fn main() {}".into(),
                is_error: false,
                images: Vec::new(),
            }),
        ] {
            store.append_message(&info.id, &m).await.unwrap();
        }
        let t = Transcripts::new(store, dir.path());
        let path = t.write(&info.id).await.unwrap();
        assert_eq!(Some(path.clone()), Transcripts::file(dir.path(), &info.id));
        let lines: Vec<Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0]["type"], "user");
        assert_eq!(lines[0]["message"]["content"], "fix it");
        assert_eq!(lines[0]["sessionId"], json!(info.id));
        let used = &lines[1]["message"]["content"][0];
        assert_eq!(used["type"], "tool_use");
        assert_eq!(used["name"], "Read");
        assert_eq!(used["input"], json!({"file_path": "a.rs"}));
        assert_eq!(lines[2]["message"]["content"][0]["type"], "tool_result");
        assert_eq!(lines[2]["message"]["content"][0]["tool_use_id"], "c1");
        assert!(Transcripts::file(dir.path(), "../escape").is_none());
        assert!(t.write("../escape").await.is_none());
    }

    /// A later hook adds only the messages since the last write, once
    /// each; a file someone deleted is written whole again.
    #[tokio::test]
    async fn later_writes_add_only_the_new_messages_and_a_deleted_file_comes_back_whole() {
        let store = Arc::new(InMemorySessionStore::default());
        let dir = tempfile::tempdir().unwrap();
        let info = store.create_session(NewSession::default()).await.unwrap();
        let t = Transcripts::new(store.clone(), dir.path());
        let count = |path: &Path| std::fs::read_to_string(path).unwrap().lines().count();
        store
            .append_message(&info.id, &Message::user("one"))
            .await
            .unwrap();
        let path = t.write(&info.id).await.unwrap();
        assert_eq!(count(&path), 1);
        assert_eq!(t.write(&info.id).await, Some(path.clone()));
        assert_eq!(count(&path), 1, "nothing new: nothing added");
        store
            .append_message(&info.id, &Message::user("two"))
            .await
            .unwrap();
        t.write(&info.id).await.unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().nth(1).unwrap().contains("two"), "{text}");
        std::fs::remove_file(&path).unwrap();
        t.write(&info.id).await.unwrap();
        assert_eq!(count(&path), 2);
    }
}
