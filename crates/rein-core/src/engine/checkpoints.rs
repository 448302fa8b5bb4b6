//! When a run takes the workspace's checkpoints (for rewind): before each
//! prompt it stores, and once at its end when calls that may have changed
//! files ran since the last one. A checkpoint is taken in the background
//! while the model thinks, and settled before the next calls run.

use std::sync::Arc;
use std::time::SystemTime;

use tokio::task::JoinHandle;

use super::run::{Finished, RunCtx};
use crate::event::Event;
use crate::rewind::{CheckpointFailure, Checkpointer, RunWrites};

/// What a checkpoint is taken for.
enum CheckpointAt {
    /// Before a prompt stored after message `seq`.
    Prompt { seq: u64, prompt: String },
    /// At the end of a run whose calls may have changed files, with what
    /// they wrote.
    Changes(RunWrites),
}

/// One run's checkpoints: the one being taken, and what calls that may
/// have changed files wrote since the last. Without a checkpointer (a child engine, or
/// rewind off) every step does nothing.
pub(super) struct Checkpoints {
    checkpointer: Option<Arc<dyn Checkpointer>>,
    /// The checkpoint being taken while the model thinks.
    pending: Option<JoinHandle<Result<(), CheckpointFailure>>>,
    /// Since the last checkpoint: what calls that may have changed files
    /// wrote, and when commands ran; None when no such call ran.
    writes: Option<RunWrites>,
}

impl Checkpoints {
    pub fn new(checkpointer: Option<Arc<dyn Checkpointer>>) -> Checkpoints {
        Checkpoints {
            checkpointer,
            pending: None,
            writes: None,
        }
    }

    /// The workspace before `prompt`, stored after message `seq`.
    pub async fn before_prompt(&mut self, ctx: &mut RunCtx<'_>, seq: u64, prompt: &str) {
        let at = CheckpointAt::Prompt {
            seq,
            prompt: prompt.to_string(),
        };
        self.start(ctx, at).await;
        self.writes = None;
    }

    /// Note what a round of calls that started at `started` did: calls
    /// that wrote or ran programs are noted, with what they wrote and when
    /// commands ran, for the checkpoint at the run's end (one snapshot a
    /// run, not one a turn).
    pub fn note_round(&mut self, finished: &[Finished], started: SystemTime) {
        if self.checkpointer.is_none() {
            return;
        }
        let effects = finished.iter().map(|f| &f.effects);
        if let Some(round) = RunWrites::of_round(effects, started) {
            self.writes.get_or_insert_default().add(round);
        }
    }

    /// The workspace as the run left it, whole before the run says it
    /// ended.
    pub async fn at_end(&mut self, ctx: &mut RunCtx<'_>) {
        if let Some(writes) = self.writes.take() {
            self.start(ctx, CheckpointAt::Changes(writes)).await;
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
                CheckpointAt::Changes(writes) => c.after_changes(&session, writes).await,
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
