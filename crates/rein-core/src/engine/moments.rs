//! The engine's side of session hooks (see [`crate::lifecycle`]): when each
//! moment comes, and what the hooks' answers do to the run.

use super::run::Stop;
use super::*;
use crate::gate::HookRun;
use crate::lifecycle::{CompactTrigger, EndReason, MomentReply, SessionMoment, StartSource};

/// How many times in a row Stop hooks may send the model back to work
/// before the run ends anyway (a hook that always blocks must not loop
/// forever).
pub(super) const MAX_STOP_BLOCKS: u32 = 8;

/// What became of a prompt the user submitted.
pub(super) enum PromptFate {
    /// Stored, with what the hooks add.
    Take(Vec<String>),
    /// A hook refused it, for this reason (for the user).
    Refused(String),
}

/// The first line of harness-written messages for the model.
pub(crate) const HOOK_CONTEXT_HEAD: &str = "[rein] Context from the user's hooks:";

impl AgentEngine {
    /// The run as hooks see it.
    fn hook_run(&self, session_id: &str, mode: PermissionMode) -> HookRun {
        HookRun {
            session_id: session_id.to_string(),
            workspace: self.inner.workspace.clone(),
            mode,
            agent_id: self.inner.agent.as_ref().map(|a| a.id.clone()),
            user_can_answer: !matches!(self.inner.config.approvals, Approvals::Refuse),
        }
    }

    /// Run the hooks of `moment`, if any listens; their notices go to the
    /// user, and a hook's `continue: false` stops the run.
    async fn moment(
        &self,
        ctx: &mut RunCtx<'_>,
        moment: SessionMoment<'_>,
        mode: PermissionMode,
    ) -> Result<MomentReply, Stop> {
        let Some(hook) = &self.inner.session_hook else {
            return Ok(MomentReply::default());
        };
        if !hook.listens(moment.name()) {
            return Ok(MomentReply::default());
        }
        let reply = hook
            .at(&moment, &self.hook_run(&ctx.session_id, mode))
            .await;
        for message in &reply.notices {
            ctx.emit(Event::Notice {
                message: message.clone(),
            });
        }
        match &reply.halt {
            Some(why) => Err(Stop::with_error(
                StopReason::HookStopped,
                format!("a {} hook stopped the run: {why}", moment.name()),
            )),
            None => Ok(reply),
        }
    }

    /// At a run's start: the session's start hooks, the first time this
    /// engine runs the session (`SubagentStart` for a sub-agent), then the
    /// prompt's. Returns what they add for the model; a hook that blocks
    /// the prompt stops the run before it is stored.
    pub(super) async fn start_hooks(
        &self,
        ctx: &mut RunCtx<'_>,
        resumed: bool,
        prompt: &str,
        mode: PermissionMode,
    ) -> Result<Vec<String>, Stop> {
        let mut context = Vec::new();
        // Without session hooks there is nothing to run, nor to remember.
        if self.inner.session_hook.is_none() {
            return Ok(context);
        }
        if self.first_run_of(&ctx.session_id) {
            let model = self.provider().model().to_string();
            let moment = match &self.inner.agent {
                Some(agent) => SessionMoment::SubagentStart {
                    agent_type: &agent.kind,
                },
                None => SessionMoment::SessionStart {
                    source: if resumed {
                        StartSource::Resume
                    } else {
                        StartSource::Startup
                    },
                    model: &model,
                },
            };
            context.extend(self.moment(ctx, moment, mode).await?.context);
        }
        match self.prompt_hooks(ctx, prompt, mode).await? {
            PromptFate::Take(more) => context.extend(more),
            PromptFate::Refused(why) => {
                return Err(Stop::with_error(
                    StopReason::HookStopped,
                    format!("a UserPromptSubmit hook refused the prompt: {why}"),
                ));
            }
        }
        Ok(context)
    }

    /// `UserPromptSubmit`: the prompt taken with what the hooks add for
    /// the model, or refused.
    pub(super) async fn prompt_hooks(
        &self,
        ctx: &mut RunCtx<'_>,
        prompt: &str,
        mode: PermissionMode,
    ) -> Result<PromptFate, Stop> {
        let reply = self
            .moment(ctx, SessionMoment::UserPromptSubmit { prompt }, mode)
            .await?;
        Ok(match reply.block {
            Some(why) => PromptFate::Refused(why),
            None => PromptFate::Take(reply.context),
        })
    }

    /// Whether this is the first run of `session_id` in this engine (and
    /// note that it ran).
    fn first_run_of(&self, session_id: &str) -> bool {
        let mut started = match self.inner.started.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        started.insert(session_id.to_string())
    }

    /// `Stop` (`SubagentStop` for a sub-agent) when the model answered
    /// without a tool call: Some(reason) when a hook sends it back to
    /// work, with the reason as its next instruction. `blocks` counts the
    /// answers in a row they did not let end the run.
    pub(super) async fn stop_hooks(
        &self,
        ctx: &mut RunCtx<'_>,
        mode: PermissionMode,
        blocks: &mut u32,
    ) -> Result<Option<String>, Stop> {
        if self.inner.session_hook.is_none() {
            return Ok(None);
        }
        let active = *blocks > 0;
        if *blocks >= MAX_STOP_BLOCKS {
            ctx.emit(Event::Notice {
                message: format!(
                    "the Stop hooks blocked {MAX_STOP_BLOCKS} answers in a row; the run ends anyway"
                ),
            });
            return Ok(None);
        }
        let last = ctx.st.final_text.clone();
        let moment = match &self.inner.agent {
            Some(agent) => SessionMoment::SubagentStop {
                agent_type: &agent.kind,
                last_message: &last,
                stop_hook_active: active,
            },
            None => SessionMoment::Stop {
                last_message: &last,
                stop_hook_active: active,
            },
        };
        let reply = self.moment(ctx, moment, mode).await?;
        match reply.block {
            Some(why) => {
                *blocks += 1;
                Ok(Some(why))
            }
            None => {
                *blocks = 0;
                Ok(None)
            }
        }
    }

    /// `PreCompact`, before a compaction.
    pub(super) async fn pre_compact_hooks(
        &self,
        ctx: &mut RunCtx<'_>,
        trigger: CompactTrigger,
        mode: PermissionMode,
    ) -> Result<(), Stop> {
        let moment = SessionMoment::PreCompact {
            trigger,
            instructions: "",
        };
        self.moment(ctx, moment, mode).await.map(drop)
    }

    /// `PostCompact`, then `SessionStart` (source `compact`): what the
    /// start hooks add again for the model.
    pub(super) async fn post_compact_hooks(
        &self,
        ctx: &mut RunCtx<'_>,
        trigger: CompactTrigger,
        summary: &str,
        mode: PermissionMode,
    ) -> Result<Vec<String>, Stop> {
        self.moment(ctx, SessionMoment::PostCompact { trigger, summary }, mode)
            .await?;
        if self.inner.agent.is_some() {
            return Ok(Vec::new());
        }
        let model = self.provider().model().to_string();
        let moment = SessionMoment::SessionStart {
            source: StartSource::Compact,
            model: &model,
        };
        Ok(self.moment(ctx, moment, mode).await?.context)
    }

    /// `SessionEnd`: the front end is done with `session_id` (the app
    /// quits or clears, a headless run ends). Only for a session this
    /// engine ran; what the hooks say goes to `sink`.
    pub async fn end_session(&self, session_id: &str, reason: EndReason, sink: &mut dyn EventSink) {
        let ran = match self.inner.started.lock() {
            Ok(mut s) => s.remove(session_id),
            Err(p) => p.into_inner().remove(session_id),
        };
        if !ran {
            return;
        }
        let cancel = CancellationToken::new();
        let mut ctx = RunCtx::new(session_id.to_string(), &cancel, sink, self.token_counter());
        let mode = self.inner.permissions.mode;
        // Nothing is left to stop: a halt is only reported.
        if let Err(stop) = self
            .moment(&mut ctx, SessionMoment::SessionEnd { reason }, mode)
            .await
            && let Some(why) = stop.error
        {
            ctx.emit(Event::Notice { message: why });
        }
    }

    /// `Notification`: tell the user's hooks that the front end waits for
    /// them (the app, idle after a run). Nothing waits for the hooks.
    pub async fn notify(
        &self,
        session_id: &str,
        kind: crate::lifecycle::NotificationKind,
        message: &str,
    ) {
        let Some(hook) = &self.inner.session_hook else {
            return;
        };
        if hook.listens("Notification") {
            let run = self.hook_run(session_id, self.inner.permissions.mode);
            hook.at(&SessionMoment::Notification { kind, message }, &run)
                .await;
        }
    }

    /// Store what hooks added for the model as one message of its own.
    pub(super) async fn add_hook_context(
        &self,
        ctx: &mut RunCtx<'_>,
        conv: &mut state::Conversation,
        context: Vec<String>,
    ) -> Result<(), StoreError> {
        let context: Vec<String> = context
            .into_iter()
            .filter(|c| !c.trim().is_empty())
            .collect();
        if context.is_empty() {
            return Ok(());
        }
        let text = format!("{HOOK_CONTEXT_HEAD}\n{}", context.join("\n\n"));
        self.commit_to(ctx, conv, Message::user(text)).await
    }
}

/// A checkpoint being taken in the background (it runs while the model
/// thinks); settled before the next calls run and before the run ends.
pub(super) type PendingCheckpoint =
    Option<tokio::task::JoinHandle<Result<(), crate::rewind::CheckpointFailure>>>;

/// What a checkpoint is taken for.
pub(super) enum CheckpointAt {
    /// Before a prompt stored after message `seq`.
    Prompt { seq: u64, prompt: String },
    /// At the end of a run whose calls may have changed files, with what
    /// they wrote.
    Changes(crate::rewind::RunWrites),
}

impl AgentEngine {
    /// Start taking a checkpoint of the workspace (after the one still
    /// being taken, if any); a failure is told when it is settled.
    pub(super) async fn start_checkpoint(
        &self,
        ctx: &mut RunCtx<'_>,
        pending: &mut PendingCheckpoint,
        at: CheckpointAt,
    ) {
        let Some(c) = self.inner.checkpointer.clone() else {
            return;
        };
        self.settle_checkpoint(ctx, pending).await;
        let session = ctx.session_id.clone();
        *pending = Some(tokio::spawn(async move {
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
    pub(super) async fn settle_checkpoint(
        &self,
        ctx: &mut RunCtx<'_>,
        pending: &mut PendingCheckpoint,
    ) {
        let Some(task) = pending.take() else { return };
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
