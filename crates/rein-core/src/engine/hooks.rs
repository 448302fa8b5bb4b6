//! The engine's side of session hooks (see [`crate::lifecycle`]):
//! [`SessionHooks`] knows when each moment comes and what the hooks'
//! answers do to the run, and remembers which sessions it started.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::child::AgentTag;
use super::run::{RunCtx, Stop};
use super::state::Conversation;
use crate::event::{Event, StopReason};
use crate::gate::HookRun;
use crate::lifecycle::{
    CompactTrigger, EndReason, MomentReply, NotificationKind, SessionHook, SessionMoment,
    StartSource,
};
use crate::permission::PermissionMode;
use crate::schema::Message;
use crate::store::StoreError;

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

/// The user's session hooks as one engine runs them: the hook, what it is
/// told about the engine, and the sessions whose start hooks ran.
pub(super) struct SessionHooks {
    hook: Option<Arc<dyn SessionHook>>,
    /// Where the engine works.
    workspace: PathBuf,
    /// The sub-agent the engine runs; None: the main agent.
    agent: Option<AgentTag>,
    /// Someone can answer approval questions.
    user_can_answer: bool,
    /// Sessions whose start hooks ran in this engine.
    started: Mutex<HashSet<String>>,
}

impl SessionHooks {
    pub fn new(
        hook: Option<Arc<dyn SessionHook>>,
        workspace: PathBuf,
        agent: Option<AgentTag>,
        user_can_answer: bool,
    ) -> SessionHooks {
        SessionHooks {
            hook,
            workspace,
            agent,
            user_can_answer,
            started: Mutex::default(),
        }
    }

    /// The same hooks for a child engine: its workspace, its identity,
    /// whether anyone answers it; no session started yet.
    pub fn for_child(
        &self,
        workspace: PathBuf,
        agent: Option<AgentTag>,
        user_can_answer: bool,
    ) -> SessionHooks {
        SessionHooks::new(self.hook.clone(), workspace, agent, user_can_answer)
    }

    /// The run as hooks see it.
    fn hook_run(&self, session_id: &str, mode: PermissionMode) -> HookRun {
        HookRun {
            session_id: session_id.to_string(),
            workspace: self.workspace.clone(),
            mode,
            agent_id: self.agent.as_ref().map(|a| a.id.clone()),
            user_can_answer: self.user_can_answer,
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
        let Some(hook) = &self.hook else {
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
    pub async fn at_start(
        &self,
        ctx: &mut RunCtx<'_>,
        resumed: bool,
        model: &str,
        prompt: &str,
        mode: PermissionMode,
    ) -> Result<Vec<String>, Stop> {
        let mut context = Vec::new();
        // Without session hooks there is nothing to run, nor to remember.
        if self.hook.is_none() {
            return Ok(context);
        }
        if self.first_run_of(&ctx.session_id) {
            let moment = match &self.agent {
                Some(agent) => SessionMoment::SubagentStart {
                    agent_type: &agent.kind,
                },
                None => SessionMoment::SessionStart {
                    source: if resumed {
                        StartSource::Resume
                    } else {
                        StartSource::Startup
                    },
                    model,
                },
            };
            context.extend(self.moment(ctx, moment, mode).await?.context);
        }
        match self.on_prompt(ctx, prompt, mode).await? {
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
    pub async fn on_prompt(
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
        let mut started = match self.started.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        started.insert(session_id.to_string())
    }

    /// `Stop` (`SubagentStop` for a sub-agent) when the model answered
    /// without a tool call: Some(reason) when a hook sends it back to
    /// work, with the reason as its next instruction. `blocks` counts the
    /// answers in a row they did not let end the run.
    pub async fn at_stop(
        &self,
        ctx: &mut RunCtx<'_>,
        mode: PermissionMode,
        blocks: &mut u32,
    ) -> Result<Option<String>, Stop> {
        if self.hook.is_none() {
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
        let moment = match &self.agent {
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
    pub async fn before_compact(
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
    pub async fn after_compact(
        &self,
        ctx: &mut RunCtx<'_>,
        trigger: CompactTrigger,
        summary: &str,
        model: &str,
        mode: PermissionMode,
    ) -> Result<Vec<String>, Stop> {
        self.moment(ctx, SessionMoment::PostCompact { trigger, summary }, mode)
            .await?;
        if self.agent.is_some() {
            return Ok(Vec::new());
        }
        let moment = SessionMoment::SessionStart {
            source: StartSource::Compact,
            model,
        };
        Ok(self.moment(ctx, moment, mode).await?.context)
    }

    /// `SessionEnd`: the front end is done with the session of `ctx`.
    /// Only for a session this engine ran; nothing is left to stop, so a
    /// halt is only reported.
    pub async fn end(&self, ctx: &mut RunCtx<'_>, reason: EndReason, mode: PermissionMode) {
        let ran = match self.started.lock() {
            Ok(mut s) => s.remove(&ctx.session_id),
            Err(p) => p.into_inner().remove(&ctx.session_id),
        };
        if !ran {
            return;
        }
        if let Err(stop) = self
            .moment(ctx, SessionMoment::SessionEnd { reason }, mode)
            .await
            && let Some(why) = stop.error
        {
            ctx.emit(Event::Notice { message: why });
        }
    }

    /// `Notification`: the front end waits for the user. Nothing waits
    /// for the hooks.
    pub async fn notify(
        &self,
        session_id: &str,
        kind: NotificationKind,
        message: &str,
        mode: PermissionMode,
    ) {
        let Some(hook) = &self.hook else {
            return;
        };
        if hook.listens("Notification") {
            let run = self.hook_run(session_id, mode);
            hook.at(&SessionMoment::Notification { kind, message }, &run)
                .await;
        }
    }
}

/// Store what hooks added for the model as one message of its own.
pub(super) async fn add_context(
    ctx: &mut RunCtx<'_>,
    conv: &mut Conversation,
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
    ctx.commit_to(conv, Message::user(text)).await
}
