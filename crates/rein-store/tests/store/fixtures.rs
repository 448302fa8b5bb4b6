//! Shared helpers: temp databases, a raw second connection, sample messages
//! and todos, a tick of the clock.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rein_core::{
    AssistantMessage, ContentPart, FinishReason, Message, NewSession, ReasoningBlock, SessionInfo,
    SessionStore, Todo, TodoStatus, ToolCall, ToolResult, Usage,
};
use rein_store::{SqliteOptions, SqliteStore};
use tempfile::TempDir;

/// Let the millisecond clock move so `updated_at` values differ.
pub async fn tick() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

pub fn todo(id: &str, content: &str, status: TodoStatus) -> Todo {
    Todo {
        id: id.into(),
        content: content.into(),
        status,
    }
}

/// A temporary directory holding `sessions.db` (not created yet).
pub struct TempDb {
    _dir: TempDir,
    pub path: PathBuf,
}

pub fn temp_db() -> TempDb {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("dir").join("sessions.db");
    TempDb { _dir: dir, path }
}

pub fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path).unwrap()
}

pub fn open_with_timeout(path: &Path, busy_timeout: Duration) -> SqliteStore {
    SqliteStore::open_with(path, SqliteOptions { busy_timeout }).unwrap()
}

/// A plain rusqlite connection to the same file, as another process would have.
pub fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

/// The schema version a database file records.
pub fn user_version(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

/// Two sessions whose ids share their first hex digit (ids start random):
/// made until two do, which 17 sessions always reach.
pub async fn twins(store: &dyn SessionStore, workspace: &str) -> (SessionInfo, SessionInfo) {
    let mut made: Vec<SessionInfo> = Vec::new();
    loop {
        let s = session(store, workspace, "t").await;
        if let Some(twin) = made.iter().find(|m| m.id[..1] == s.id[..1]) {
            return (twin.clone(), s);
        }
        assert!(made.len() < 16, "17 ids with 16 first digits");
        made.push(s);
    }
}

pub async fn session(store: &dyn SessionStore, workspace: &str, title: &str) -> SessionInfo {
    store
        .create_session(NewSession {
            workspace: workspace.into(),
            title: title.into(),
            model: "test/model".into(),
            parent_id: None,
        })
        .await
        .unwrap()
}

/// One message of every kind, with every optional field set somewhere.
pub fn every_kind_of_message() -> Vec<Message> {
    vec![
        Message::system("You are rein.\nBe terse."),
        Message::user("héllo — ✓ \u{0} \"quoted\" \\ back"),
        // The user's attached images (`rein exec --image`) are kept.
        Message::user_with_images(
            "what is on this screen?",
            vec![rein_core::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }],
        ),
        Message::Assistant(AssistantMessage {
            content: vec![
                ContentPart::Reasoning(ReasoningBlock {
                    text: "Let me think about the file.".into(),
                    signature: Some("EqQBCkgIARABGAIiQM+sig==".into()),
                    encrypted: None,
                    id: None,
                }),
                ContentPart::Reasoning(ReasoningBlock {
                    text: String::new(),
                    signature: None,
                    encrypted: Some("gAAAAABopaque-encrypted-payload".into()),
                    id: Some("rs_0123".into()),
                }),
                ContentPart::Text {
                    text: "Reading it.".into(),
                },
                ContentPart::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\": \"src/main.rs\"}".into(),
                }),
                ContentPart::ToolCall(ToolCall {
                    id: "call_2".into(),
                    name: "shell".into(),
                    // Malformed arguments are kept byte for byte.
                    arguments: "{\"cmd\": \"ls".into(),
                }),
            ],
            usage: Some(Usage {
                input_tokens: 1200,
                output_tokens: 340,
                cached_input_tokens: 1000,
                reasoning_tokens: 200,
            }),
            finish: Some(FinishReason::ToolCalls),
        }),
        Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: "call_1".into(),
            name: "read_file".into(),
            output: "fn main() {}\n".repeat(5000),
            is_error: false,
        }),
        Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: "call_2".into(),
            name: "shell".into(),
            output: "arguments are not valid JSON".into(),
            is_error: true,
        }),
        Message::Assistant(AssistantMessage {
            content: vec![],
            usage: None,
            finish: Some(FinishReason::Other("pause_turn".into())),
        }),
        Message::Assistant(AssistantMessage::from_text("Done.")),
        Message::user(""),
    ]
}
