//! When a run takes the workspace's checkpoints (for rewind): before each
//! prompt it stores, and once at its end when calls that may have changed
//! files ran since the last one. A checkpoint is taken in the background
//! while the model thinks, and settled before the next calls run.

use std::sync::Arc;

use tokio::task::JoinHandle;

use super::run::{Finished, RunCtx};
use crate::event::Event;
use crate::rewind::{CheckpointFailure, Checkpointer};
use crate::tool::ToolAccess;

/// What a checkpoint is taken for.
enum CheckpointAt {
    /// Before a prompt stored after message `seq`.
    Prompt { seq: u64, prompt: String },
    /// After calls that may have changed files.
    Changes,
}

/// One run's checkpoints: the one being taken, and whether files may have
/// changed since the last. Without a checkpointer (a child engine, or
/// rewind off) every step does nothing.
pub(super) struct Checkpoints {
    checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The checkpoint being taken while the model thinks.
    pending: Option<JoinHandle<Result<(), CheckpointFailure>>>,
    /// Calls that may have changed files ran since the last checkpoint.
    changed_files: bool,
}

impl Checkpoints {
    pub fn new(checkpointer: Option<Arc<dyn Checkpointer>>) -> Checkpoints {
        Checkpoints {
            checkpointer,
            pending: None,
            changed_files: false,
        }
    }

    /// The workspace before `prompt`, stored after message `seq`.
    pub async fn before_prompt(&mut self, ctx: &mut RunCtx<'_>, seq: u64, prompt: &str) {
        let at = CheckpointAt::Prompt {
            seq,
            prompt: prompt.to_string(),
        };
        self.start(ctx, at).await;
        self.changed_files = false;
    }

    /// Note what a round of calls did: calls that wrote or ran programs
    /// are noted for the checkpoint at the run's end (one snapshot a run,
    /// not one a turn).
    pub fn note_round(&mut self, finished: &[Finished]) {
        self.changed_files |= finished.iter().any(|f| {
            matches!(
                f.effects.access,
                Some(ToolAccess::Write | ToolAccess::Execute)
            )
        });
    }

    /// The workspace as the run left it, whole before the run says it
    /// ended.
    pub async fn at_end(&mut self, ctx: &mut RunCtx<'_>) {
        if self.changed_files {
            self.start(ctx, CheckpointAt::Changes).await;
        }
        self.settle(ctx).await;
    }

    /// Start taking a checkpoint of the workspace (after the one still
    /// being taken, if any); a failure is told when it is settled.
    async fn start(&mut self, ctx: &mut RunCtx<'_>, at: CheckpointAt) {
        let Some(c) = self.checkpointer.clone() else {
            return;
        };
        self.settle(ctx).await;
        let session = ctx.session_id.clone();
        self.pending = Some(tokio::spawn(async move {
            match at {
                CheckpointAt::Prompt { seq, prompt } => {
                    c.before_prompt(&session, seq, &prompt).await
                }
                CheckpointAt::Changes => c.after_changes(&session).await,
            }
        }));
    }

    /// Wait for the checkpoint being taken, if any; a failure is a notice
    /// (the run goes on without it).
    pub async fn settle(&mut self, ctx: &mut RunCtx<'_>) {
        let Some(task) = self.pending.take() else {
            return;
        };
        let failure = match task.await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        };
        ctx.emit(Event::Notice {
            message: format!(
                "a checkpoint of the workspace failed (rewind cannot go back there): {failure}"
            ),
        });
    }
}
