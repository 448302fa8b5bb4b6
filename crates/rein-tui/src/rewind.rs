//! Rewind as the app sees it: the checkpoints of a session (what the
//! picker lists) and the request to go back to one. The `rein` command
//! does the work (it owns the checkpoint store) through a [`RewindView`];
//! the app only shows rows and sends requests.

use std::path::PathBuf;

use crate::McpFuture;

/// How many lines of a checkpoint's diff the picker shows (the command
/// need not send more).
pub const PREVIEW_LINES: usize = 30;

/// One checkpoint of a session, as the picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    /// Its number: what `rein rewind --to K` takes.
    pub k: usize,
    /// What it is: "before: PROMPT", "before the rewind to 2".
    pub label: String,
    /// When it was taken, in Unix milliseconds.
    pub at: u64,
    /// How many files changed since.
    pub changed: usize,
    /// The unified diff from it to the workspace now (its first
    /// [`PREVIEW_LINES`] lines): what going back would undo.
    pub preview: String,
}

/// What a rewind takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RewindMode {
    /// The files and the conversation (the conversation continues in a new
    /// session cut at the checkpoint).
    #[default]
    Both,
    /// The files only; the conversation goes on as it is.
    Code,
    /// The conversation only; the files stay as they are.
    Conversation,
}

impl RewindMode {
    /// Tab's order: both → code → conversation → both.
    pub fn next(self) -> RewindMode {
        match self {
            RewindMode::Both => RewindMode::Code,
            RewindMode::Code => RewindMode::Conversation,
            RewindMode::Conversation => RewindMode::Both,
        }
    }

    /// The picker's words for it.
    pub fn label(self) -> &'static str {
        match self {
            RewindMode::Both => "code + conversation",
            RewindMode::Code => "code only",
            RewindMode::Conversation => "conversation only",
        }
    }

    /// Whether the files are restored.
    pub fn code(self) -> bool {
        self != RewindMode::Conversation
    }

    /// Whether the conversation is cut.
    pub fn conversation(self) -> bool {
        self != RewindMode::Code
    }
}

/// Go back to checkpoint `k` of `session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindRequest {
    pub session: String,
    pub k: usize,
    pub mode: RewindMode,
    /// Restore the files even when some changed outside rein since its
    /// last checkpoint (their changes are lost).
    pub force: bool,
}

/// What a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RewindOutcome {
    /// Files written back (when the code was restored).
    pub written: Vec<PathBuf>,
    /// Files deleted because the checkpoint did not have them.
    pub deleted: Vec<PathBuf>,
    /// Files the checkpoint wanted changed that were not rein's to touch.
    pub left_alone: Vec<PathBuf>,
    /// The session the conversation continues in (when it was cut).
    pub forked: Option<String>,
}

/// Why a rewind did not happen.
#[derive(Debug)]
pub enum RewindFailure {
    /// These files changed outside rein since its last checkpoint:
    /// restoring would lose that; a forced request does it anyway.
    ChangedOutside(Vec<String>),
    /// Anything else (the store, git, an unknown checkpoint).
    Other(anyhow::Error),
}

impl std::fmt::Display for RewindFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RewindFailure::ChangedOutside(files) => write!(
                f,
                "these files changed outside rein since its last checkpoint: {}; rewinding \
                 would lose those changes",
                files.join(", ")
            ),
            RewindFailure::Other(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for RewindFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RewindFailure::ChangedOutside(_) => None,
            RewindFailure::Other(e) => Some(e.as_ref()),
        }
    }
}

/// The checkpoints of a session (by id), in any order.
pub type ListCheckpoints =
    Box<dyn Fn(String) -> McpFuture<anyhow::Result<Vec<CheckpointRow>>> + Send + Sync>;
/// Carry out a rewind.
pub type ApplyRewind =
    Box<dyn Fn(RewindRequest) -> McpFuture<Result<RewindOutcome, RewindFailure>> + Send + Sync>;

/// Rewind as the command offers it to the app (none when checkpoints are
/// off).
pub struct RewindView {
    pub list: ListCheckpoints,
    pub apply: ApplyRewind,
}
