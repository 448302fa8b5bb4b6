//! The `SessionStore` trait: where sessions and their messages live.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::permission::Rule;
use crate::schema::{Message, Todo};
use crate::tokens::LedgerEntry;

/// A stored session's description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    pub id: String,
    pub workspace: String,
    pub title: String,
    pub model: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds of the last change.
    pub updated_at: i64,
    pub message_count: u64,
    /// How the session's last run ended (`None` before any ended).
    pub last_stop: Option<crate::event::StopReason>,
    /// The session whose sub-agent ran this one (None: a user's session).
    pub parent_id: Option<String>,
}

/// What a new session starts with.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub workspace: String,
    pub title: String,
    pub model: String,
    /// The session whose sub-agent runs this one.
    pub parent_id: Option<String>,
}

/// How many matching ids an ambiguous prefix lists.
pub const AMBIGUOUS_SHOWN: usize = 10;

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session {0} not found")]
    NotFound(String),
    /// `candidates`: the first [`AMBIGUOUS_SHOWN`] matching ids, in order
    /// (and a `…` when there are more).
    #[error(
        "session id prefix {prefix} matches several sessions: {}; give more of the id",
        .candidates.join(", ")
    )]
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error("the session database is locked by another process: {0}")]
    Locked(String),
    #[error("the session database is corrupt or not a rein database: {0}")]
    Corrupt(String),
    /// The store cannot be reached now (its server is down or the
    /// connection broke); trying again later may work.
    #[error("the session database is unavailable: {0}")]
    Unavailable(String),
    /// This process held the session's lease and no longer does (another
    /// server took the session over, or the lease was given back): it must
    /// not write to the session any more.
    #[error("this server no longer holds the lease on session {session_id}{}", match .now_held_by {
        Some(owner) => format!("; {owner} holds it now"),
        None => String::new(),
    })]
    LeaseLost {
        session_id: String,
        now_held_by: Option<String>,
    },
    #[error("session store error: {0}")]
    Other(String),
}

/// Durable sessions. Every method commits before it returns.
#[async_trait]
pub trait SessionStore: Send + Sync {
    async fn create_session(&self, new: NewSession) -> Result<SessionInfo, StoreError>;

    /// Find a session by its id or a unique prefix of it.
    async fn get_session(&self, id: &str) -> Result<SessionInfo, StoreError>;

    /// Sessions newest first; only those of `workspace` when given.
    async fn list_sessions(
        &self,
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, StoreError>;

    async fn delete_session(&self, id: &str) -> Result<(), StoreError>;

    async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError>;

    async fn set_model(&self, id: &str, model: &str) -> Result<(), StoreError>;

    /// Record how the session's latest run ended.
    async fn set_last_stop(
        &self,
        id: &str,
        reason: crate::event::StopReason,
    ) -> Result<(), StoreError>;

    /// Append one message and commit it; returns its sequence number.
    async fn append_message(&self, id: &str, message: &Message) -> Result<u64, StoreError>;

    /// The messages as stored, in order of appending.
    async fn messages(&self, id: &str) -> Result<Vec<Message>, StoreError>;

    async fn set_todos(&self, id: &str, todos: &[Todo]) -> Result<(), StoreError>;

    async fn todos(&self, id: &str) -> Result<Vec<Todo>, StoreError>;

    /// Remember an approval rule (`Tool(pattern)`) for the rest of the
    /// session; adding one twice keeps one.
    async fn add_grant(&self, id: &str, rule: &Rule) -> Result<(), StoreError>;

    /// The session's approval rules, in the order they were granted, and
    /// how many stored ones could not be read back as rules (skipped).
    async fn grants(&self, id: &str) -> Result<(Vec<Rule>, usize), StoreError>;

    /// Record one model call in the session's ledger.
    async fn add_ledger(&self, id: &str, entry: &LedgerEntry) -> Result<(), StoreError>;

    /// The session's ledger in call order, and how many stored rows could
    /// not be read (they are skipped, never fatal).
    async fn ledger(&self, id: &str) -> Result<(Vec<LedgerEntry>, usize), StoreError>;

    /// Store a compaction: the model sees `summary` instead of messages
    /// 1..=`upto_seq` from now on. The messages themselves stay stored.
    async fn add_compaction(&self, id: &str, record: &CompactionRecord) -> Result<(), StoreError>;

    /// The session's compactions, oldest first.
    async fn compactions(&self, id: &str) -> Result<Vec<CompactionRecord>, StoreError>;
}

/// A compaction of a session's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The last stored message the summary replaces.
    pub upto_seq: u64,
    /// The message that stands for them (a user message holding the
    /// summary and the task ledger).
    pub summary: Message,
    /// Whether the model wrote the summary (false: the fallback dropped
    /// the oldest turns instead).
    pub summarized: bool,
    /// Unix milliseconds.
    pub at: i64,
}
