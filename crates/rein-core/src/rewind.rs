//! Checkpoints of the workspace, for rewind: the engine says when to take
//! them (before each prompt of the user, and when a run whose calls may
//! have changed files ends, so edits made through the shell are covered);
//! how they are kept and restored is the front end's business (rein keeps
//! them in a private git repository, see `rein rewind`).

/// Takes the workspace's checkpoints for a session.
#[async_trait::async_trait]
pub trait Checkpointer: Send + Sync {
    /// Snapshot the workspace before `prompt` is stored after message
    /// `seq` (the number of messages the session had) of `session_id`.
    async fn before_prompt(
        &self,
        session_id: &str,
        seq: u64,
        prompt: &str,
    ) -> Result<(), CheckpointFailure>;

    /// Note the workspace as rein left it at the end of a run whose calls
    /// may have changed files (what rewind compares with to find changes
    /// made outside rein).
    async fn after_changes(&self, session_id: &str) -> Result<(), CheckpointFailure>;
}

/// Why a checkpoint could not be taken (the run goes on; the user is
/// told).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CheckpointFailure(pub String);
