//! The one loop, as a short list of steps. A run starts (session, policy,
//! system prompt, the user's message), then goes turn after turn: apply
//! what the user queued and check the budgets, get a whole answer
//! (compacting first when the context is full, and once more when the
//! service says it overflowed), commit it, run its calls through the gate.
//! Every step returns `Err(Stop)` to end the run, so the loop itself reads
//! as the list above.
//!
//! The run is a value, [`RunLoop`]: what it keeps between turns, with one
//! method per step. Its parts: [`context`] (what every step reads and
//! updates, and how a run stops), [`answer`] (the model call), and
//! [`tool_round`] (the calls of an answer).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::budget::{self, Budget};
use super::checkpoints::Checkpoints;
use super::coach::{self, Coach, TurnRule};
use super::guard::LoopGuard;
use super::setup::{FixedPart, PromptInputs};
use super::state::{Conversation, Opened, Tracker};
use super::{AgentEngine, RunControl, RunOutcome, RunRequest, RunScope, hooks};
use crate::compaction::TaskLedger;
use crate::event::{Event, EventSink, StopReason};
use crate::gate::{Gate, RunPolicy};
use crate::permission::PermissionMode;
use crate::profile::Lever;
use crate::provider::ModelRequest;
use crate::schema::Message;
use crate::tokens::TokenCounter;

mod answer;
mod candidates;
mod check;
mod context;
mod tool_round;

pub(crate) use context::{RunCtx, Stop, TurnFailure};
pub(crate) use tool_round::Finished;

/// A run under way: what the loop keeps between turns besides its
/// context, and the steps of a turn.
pub(super) struct RunLoop<'e> {
    engine: &'e AgentEngine,
    conv: Conversation,
    track: Tracker,
    mode: PermissionMode,
    policy: Arc<RunPolicy>,
    fixed: FixedPart,
    /// One request for the whole run: its messages are lent from the
    /// conversation for each call (swapped, never copied), so a turn costs
    /// the same however long the history is.
    req: ModelRequest,
    control: RunControl,
    /// The engine's gate the run's gate was made from (`add_tools` swaps
    /// in a new one).
    source_gate: Arc<Gate>,
    /// The gate as this run sees it (its scope's tools only): the
    /// request's tool list and the calls' checks.
    gate: Arc<Gate>,
    /// What this run alone narrows or loosens.
    scope: RunScope,
    /// AGENTS.md, the date and the file list, read at the start.
    inputs: PromptInputs,
    /// The small model's coach, when the profile gives one.
    coach: Option<Coach>,
    /// Answers in a row that Stop hooks did not let end the run.
    stop_blocks: u32,
    /// The workspace's checkpoints of this run.
    checkpoints: Checkpoints,
}

impl AgentEngine {
    /// The one loop.
    pub(super) async fn drive(
        &self,
        request: RunRequest,
        cancel: &CancellationToken,
        sink: &mut dyn EventSink,
    ) -> RunOutcome {
        if cancel.is_cancelled() {
            return RunOutcome::before_session(Stop::new(StopReason::Cancelled));
        }
        let opened = match self.open_session(&request).await {
            Ok(s) => s,
            Err(e) => return RunOutcome::before_session(e.into()),
        };
        let store = self.inner.store.clone();
        let counter = self.token_counter();
        let mut ctx = RunCtx::new(opened.id.clone(), cancel, sink, store, counter);
        let account = self.open_account();
        ctx.budget = Some(account.clone());
        let subagents = self.inner.subagents.as_ref();
        if let Some(s) = subagents {
            s.enter_run(&ctx.session_id, &account);
        }
        let stop = match RunLoop::start(self, request, opened, &mut ctx).await {
            Ok(mut run) => {
                let stop = loop {
                    if let Err(stop) = run.turn(&mut ctx).await {
                        break stop;
                    }
                };
                run.checkpoints.at_end(&mut ctx).await;
                stop
            }
            Err(stop) => stop,
        };
        if let Some(s) = subagents {
            s.leave_run(&ctx.session_id, &account);
        }
        ctx.outcome(stop)
    }

    /// The provider's own token counter, else an estimate that calibrates
    /// itself on the usage the service reports.
    pub fn token_counter(&self) -> Arc<dyn TokenCounter> {
        self.provider()
            .token_counter()
            .unwrap_or_else(|| self.inner.estimator.clone())
    }

    /// A new run's account, below the account of the run that started
    /// this engine when it is a child's.
    pub(super) fn open_account(&self) -> Arc<Budget> {
        let cfg = &self.inner.config;
        let limits = budget::Limits {
            max_tokens: cfg.budget.max_tokens,
            max_cost_usd: cfg.budget.max_cost_usd,
            max_wall_time: cfg.budget.max_wall_time,
            max_children: self
                .inner
                .subagents
                .as_ref()
                .map_or(1, |s| s.max_children()),
        };
        Budget::open(limits, self.inner.spends_from.clone())
    }
}

impl<'e> RunLoop<'e> {
    /// The model this run talks to now: its scope's, else the engine's
    /// (which `set_provider` may switch between turns).
    fn provider(&self) -> Arc<dyn crate::provider::Provider> {
        match &self.scope.provider {
            Some(p) => p.clone(),
            None => self.engine.provider(),
        }
    }

    /// Announce the run, load its policy, store the user's message and
    /// build the first request.
    async fn start(
        engine: &'e AgentEngine,
        request: RunRequest,
        opened: Opened,
        ctx: &mut RunCtx<'_>,
    ) -> Result<RunLoop<'e>, Stop> {
        let inner = &engine.inner;
        let mode = engine.capped(request.mode.unwrap_or(inner.permissions.mode));
        let scope = request.scope.clone();
        let provider = scope.provider.clone().unwrap_or_else(|| engine.provider());
        ctx.emit(Event::RunStarted {
            session_id: ctx.session_id.clone(),
            provider: provider.name().to_string(),
            model: provider.model().to_string(),
            workspace: inner.workspace.display().to_string(),
            resumed: opened.resumed,
            mode,
            plan: mode == PermissionMode::Plan,
            profile: inner.config.profile,
            without: inner.config.without.clone(),
        });
        let policy = Arc::new(
            engine
                .run_policy(&ctx.session_id, mode, &scope, ctx.sink)
                .await?,
        );
        let continuing = request.continues() && opened.resumed;
        let mut earlier_requests = opened.earlier_requests;
        // An interrupted run goes on following the last request it had.
        let latest_instruction = match continuing {
            true => earlier_requests.pop().unwrap_or_default(),
            false => request.prompt.clone(),
        };
        let mut conv = Conversation::new(opened.messages, opened.seqs, ctx.counter.as_ref());
        let mut checkpoints = Checkpoints::new(inner.checkpointer.clone());
        if !request.images.is_empty() && !provider.capabilities().images {
            let why = format!("{} does not take images", provider.model());
            return Err(Stop::with_error(StopReason::HarnessError, why));
        }
        if !continuing {
            // The user's hooks see the prompt before it is stored (and may
            // refuse it); what they add follows it.
            let model = provider.model().to_string();
            let context = inner
                .hooks
                .at_start(ctx, opened.resumed, &model, &request.prompt, mode)
                .await?;
            checkpoints
                .before_prompt(ctx, conv.last_seq(), &request.prompt)
                .await;
            ctx.commit_to(
                &mut conv,
                Message::user_with_images(request.prompt.clone(), request.images.clone()),
            )
            .await?;
            hooks::add_context(ctx, &mut conv, context).await?;
        }
        let track = Tracker {
            ledger: TaskLedger {
                latest_instruction,
                earlier_requests,
                todos: inner.store.todos(&ctx.session_id).await.unwrap_or_default(),
                ..Default::default()
            },
            guard: LoopGuard::new(inner.config.loop_guard.clone()),
        };
        if inner.config.budget.max_cost_usd.is_some() && provider.pricing().is_none() {
            ctx.emit(Event::Notice {
                message: format!(
                    "max_cost_usd is set but the prices of {} are unknown: the cost budget cannot stop this run",
                    provider.model()
                ),
            });
        }
        let inputs = engine.prompt_inputs();
        for note in &inputs.instructions.notes {
            ctx.emit(Event::Notice {
                message: note.clone(),
            });
        }
        let source_gate = engine.gate();
        let gate = scope.narrow(source_gate.clone());
        let mut fixed = engine.fixed_part(&gate, mode, &inputs, ctx.counter.as_ref());
        let req = ModelRequest {
            system: std::mem::take(&mut fixed.system),
            tools: std::mem::take(&mut fixed.tools),
            single_tool_call: inner.config.helps(Lever::SingleCall),
            answer_schema: scope.answer_schema.clone(),
            ..ModelRequest::default()
        };
        // The first turn must look when there is something to look at (the
        // lean prompt lists it).
        let has_files = inputs.files.is_some();
        let coach = Coach::for_run(
            &inner.config,
            &inner.workspace,
            &request.prompt,
            &inputs.instructions.text,
            has_files,
        );
        Ok(RunLoop {
            engine,
            conv,
            track,
            mode,
            policy,
            fixed,
            req,
            control: request.control.unwrap_or_default(),
            source_gate,
            gate,
            scope,
            inputs,
            coach,
            stop_blocks: 0,
            checkpoints,
        })
    }

    /// One turn: steering and budgets, a whole answer, its calls.
    async fn turn(&mut self, ctx: &mut RunCtx<'_>) -> Result<(), Stop> {
        self.before_turn(ctx).await?;
        let rule = match &mut self.coach {
            Some(coach) => coach.rule_for(ctx.st.turns),
            None => TurnRule::FREE,
        };
        self.req.tool_choice = rule.tool_choice;
        let all_tools = rule
            .edits_only
            .then(|| coach::narrow_to_edits(&mut self.req.tools, &self.gate))
            .flatten();
        let calls = self.answer(ctx).await;
        if let Some(all) = all_tools {
            self.req.tools = all;
        }
        let calls = calls?;
        if calls.is_empty() {
            return self.would_end(ctx).await;
        }
        self.tool_round(ctx, calls).await
    }

    /// The model answered without calls: the run ends unless the user
    /// wrote meanwhile, the check after a change fails (or an alternative fix
    /// passed it), the coach nudges, background sub-agents have yet
    /// to report, or a Stop hook sends the model back to work.
    async fn would_end(&mut self, ctx: &mut RunCtx<'_>) -> Result<(), Stop> {
        if self.control.pending() > 0 {
            // The user wrote while the model answered: go on.
            return Ok(());
        }
        // A change is checked first; with no change yet, the nudges come
        // first (measured on fix-mean: handed the failing test before
        // reading calc.py, the model edited the test).
        let changed = self.coach.as_ref().is_some_and(|c| c.changed_since_check());
        let sent_back = match changed {
            true => self.checked(ctx).await? || self.nudged(ctx).await?,
            false => self.nudged(ctx).await? || self.checked(ctx).await?,
        };
        // The check still fails and its rounds are spent: alternative
        // fixes, each tried in a scratch copy.
        let sent_back = sent_back || self.candidates(ctx).await?;
        if sent_back {
            return Ok(());
        }
        if let Some(s) = &self.engine.inner.subagents
            && s.await_background(ctx, &mut self.conv).await?
        {
            return Ok(());
        }
        let hooks = &self.engine.inner.hooks;
        if let Some(why) = hooks.at_stop(ctx, self.mode, &mut self.stop_blocks).await? {
            // A Stop hook sends the model back to work.
            ctx.emit(Event::Notice {
                message: format!("a Stop hook did not let the run end: {why}"),
            });
            let text = format!("[rein] A Stop hook did not let you finish yet: {why}");
            ctx.commit_to(&mut self.conv, Message::user(text)).await?;
            return Ok(());
        }
        Err(Stop::new(StopReason::Completed))
    }

    /// Whether the answer that would end the run got a nudge instead
    /// (stored as a user message, announced as a notice).
    async fn nudged(&mut self, ctx: &mut RunCtx<'_>) -> Result<bool, Stop> {
        let Some(coach) = &mut self.coach else {
            return Ok(false);
        };
        let Some(text) = coach.nudge(&ctx.st.final_text) else {
            return Ok(false);
        };
        ctx.emit(Event::Notice {
            message: format!(
                "nudged the model: {}",
                text.trim_start_matches(crate::HARNESS_NOTE)
            ),
        });
        ctx.commit_to(&mut self.conv, Message::user(text)).await?;
        Ok(true)
    }

    /// Stop on cancel or a spent budget; apply a mode switch and the
    /// messages the user queued; count the turn.
    async fn before_turn(&mut self, ctx: &mut RunCtx<'_>) -> Result<(), Stop> {
        if ctx.cancel.is_cancelled() {
            return Err(Stop::new(StopReason::Cancelled));
        }
        if let Some(reason) = self.budget_exceeded(ctx) {
            return Err(Stop::new(reason));
        }
        self.follow_mode_and_tools(ctx).await?;
        for text in self.control.take_queued() {
            self.take_queued(ctx, text).await?;
        }
        if let Some(s) = &self.engine.inner.subagents {
            s.news(ctx);
        }
        ctx.st.turns += 1;
        ctx.emit(Event::TurnStarted { turn: ctx.st.turns });
        Ok(())
    }

    /// Apply a mode switch the user asked for; what the model is offered
    /// follows the mode and the engine's tools.
    async fn follow_mode_and_tools(&mut self, ctx: &mut RunCtx<'_>) -> Result<(), Stop> {
        let engine = self.engine;
        let switch = (self.control.take_mode())
            .map(|m| engine.capped(m))
            .filter(|m| *m != self.mode);
        if let Some(mode) = switch {
            self.mode = mode;
            let policy = engine.run_policy(&ctx.session_id, mode, &self.scope, ctx.sink);
            self.policy = Arc::new(policy.await?);
            ctx.emit(Event::ModeChanged { mode });
        }
        let gate = engine.gate();
        if switch.is_some() || !Arc::ptr_eq(&gate, &self.source_gate) {
            self.source_gate = gate.clone();
            self.gate = self.scope.narrow(gate);
            let counter = ctx.counter.as_ref();
            self.fixed = engine.fixed_part(&self.gate, self.mode, &self.inputs, counter);
            self.req.system = std::mem::take(&mut self.fixed.system);
            self.req.tools = std::mem::take(&mut self.fixed.tools);
        }
        Ok(())
    }

    /// A message the user queued while the run went on: past the prompt
    /// hooks, checkpointed and stored, it becomes the latest instruction.
    async fn take_queued(&mut self, ctx: &mut RunCtx<'_>, text: String) -> Result<(), Stop> {
        let hooks = &self.engine.inner.hooks;
        let context = match hooks.on_prompt(ctx, &text, self.mode).await? {
            hooks::PromptFate::Take(context) => context,
            hooks::PromptFate::Refused(why) => {
                ctx.emit(Event::Notice {
                    message: format!("a UserPromptSubmit hook refused your message: {why}"),
                });
                return Ok(());
            }
        };
        self.checkpoints
            .before_prompt(ctx, self.conv.last_seq(), &text)
            .await;
        ctx.commit_to(&mut self.conv, Message::user(text.clone()))
            .await?;
        hooks::add_context(ctx, &mut self.conv, context).await?;
        let earlier = std::mem::replace(&mut self.track.ledger.latest_instruction, text);
        self.track.ledger.earlier_requests.push(earlier);
        Ok(())
    }

    /// The budget this run has used up, if any: its turns, or a limit of
    /// its budget tree (what it, its children and, for a child, its
    /// parent's whole tree spent; the time of every run above it).
    fn budget_exceeded(&self, ctx: &RunCtx<'_>) -> Option<StopReason> {
        if ctx.st.turns >= self.engine.inner.config.budget.max_turns {
            return Some(StopReason::MaxTurns);
        }
        ctx.budget.as_ref().and_then(|b| b.exceeded())
    }
}
