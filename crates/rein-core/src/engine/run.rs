//! The one loop, as a short list of steps. A run starts (session, policy,
//! system prompt, the user's message), then goes turn after turn: apply
//! what the user queued and check the budgets, get a whole answer
//! (compacting first when the context is full, and once more when the
//! service says it overflowed), commit it, run its calls through the gate.
//! Every step returns `Err(Stop)` to end the run, so the loop itself reads
//! as the list above.

use super::*;

/// How a run ends: the reason and, for errors, what went wrong.
#[derive(Debug)]
pub(crate) struct Stop {
    pub reason: StopReason,
    pub error: Option<String>,
}

impl Stop {
    pub fn new(reason: StopReason) -> Stop {
        Stop {
            reason,
            error: None,
        }
    }

    pub fn with_error(reason: StopReason, error: impl Into<String>) -> Stop {
        Stop {
            reason,
            error: Some(error.into()),
        }
    }
}

/// A store that cannot be written is the harness's own fault: the run stops.
impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Stop {
        Stop::with_error(StopReason::HarnessError, e.to_string())
    }
}

/// What a model turn that did not produce a whole answer leaves: the part
/// that streamed before a cancel (kept), and why the run stops.
pub(crate) struct TurnFailure {
    pub partial: AssistantMessage,
    pub stop: Stop,
    /// The service said the request did not fit its context window.
    pub context_overflow: bool,
}

impl TurnFailure {
    pub fn cancelled(partial: AssistantMessage) -> TurnFailure {
        TurnFailure {
            partial,
            stop: Stop::new(StopReason::Cancelled),
            context_overflow: false,
        }
    }

    pub fn provider(error: ProviderError, partial: AssistantMessage) -> TurnFailure {
        TurnFailure {
            context_overflow: error.kind == ProviderErrorKind::ContextLengthExceeded,
            partial,
            stop: Stop::with_error(StopReason::ProviderError, error.to_string()),
        }
    }
}

/// The counts a run keeps; they become its outcome.
#[derive(Debug, Default)]
pub(crate) struct RunState {
    pub turns: u32,
    pub usage: Usage,
    pub final_text: String,
    pub totals: LedgerTotals,
}

/// What every step of a run reads and updates: its session, its cancel
/// token, where its events go, its token counter and its counts. Side
/// calls (titles, `rein compact`) get one too, so every model call is
/// recorded the same way.
pub(crate) struct RunCtx<'a> {
    pub session_id: String,
    pub cancel: &'a CancellationToken,
    pub sink: &'a mut dyn EventSink,
    pub counter: Arc<dyn TokenCounter>,
    pub st: RunState,
    /// The run's account in its budget tree (None for side calls outside
    /// a run).
    pub budget: Option<Arc<budget::Budget>>,
}

impl<'a> RunCtx<'a> {
    pub fn new(
        session_id: String,
        cancel: &'a CancellationToken,
        sink: &'a mut dyn EventSink,
        counter: Arc<dyn TokenCounter>,
    ) -> RunCtx<'a> {
        RunCtx {
            session_id,
            cancel,
            sink,
            counter,
            st: RunState::default(),
            budget: None,
        }
    }

    pub fn emit(&mut self, event: Event) {
        self.sink.emit(event);
    }

    fn outcome(self, stop: Stop) -> RunOutcome {
        RunOutcome {
            session_id: Some(self.session_id),
            reason: stop.reason,
            turns: self.st.turns,
            usage: self.st.usage,
            final_text: self.st.final_text,
            error: stop.error,
            totals: self.st.totals,
            refused: Vec::new(),
        }
    }
}

impl RunOutcome {
    /// A run that stopped before it had a session.
    fn before_session(stop: Stop) -> RunOutcome {
        RunOutcome {
            session_id: None,
            reason: stop.reason,
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            error: stop.error,
            totals: LedgerTotals::default(),
            refused: Vec::new(),
        }
    }
}

/// What the loop keeps between turns besides the context.
pub(crate) struct Run {
    pub(super) conv: Conversation,
    pub(super) track: Tracker,
    pub(super) mode: PermissionMode,
    pub(super) policy: Arc<RunPolicy>,
    pub(super) fixed: FixedPart,
    /// One request for the whole run: its messages are lent from the
    /// conversation for each call (swapped, never copied), so a turn costs
    /// the same however long the history is.
    pub(super) req: ModelRequest,
    pub(super) control: RunControl,
    /// The gate the request's tool list was made from (`add_tools` swaps
    /// in a new one).
    pub(super) gate: Arc<Gate>,
    /// AGENTS.md, the date and the file list, read at the start.
    pub(super) inputs: setup::PromptInputs,
    /// The first turn must call a tool (the profile asks for it and the
    /// workspace has files to look at).
    pub(super) first_call_required: bool,
    /// What the run's calls did, for the profile's nudges.
    pub(super) looked: help::Looked,
    /// Answers in a row that Stop hooks did not let end the run.
    pub(super) stop_blocks: u32,
    /// The checkpoint being taken while the model thinks.
    pub(super) checkpoint: moments::PendingCheckpoint,
    /// Calls that may have changed files ran since the last checkpoint.
    pub(super) changed_files: bool,
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
        let mut ctx = RunCtx::new(opened.id.clone(), cancel, sink, self.token_counter());
        let account = self.open_account();
        ctx.budget = Some(account.clone());
        if let Some(task) = &self.inner.task {
            task.enter_run(&ctx.session_id, &account);
        }
        let stop = match self.start(request, opened, &mut ctx).await {
            Ok(mut run) => {
                let stop = loop {
                    if let Err(stop) = self.turn(&mut ctx, &mut run).await {
                        break stop;
                    }
                };
                // The workspace as the run left it, whole before the run
                // says it ended.
                if run.changed_files {
                    let at = moments::CheckpointAt::Changes;
                    self.start_checkpoint(&mut ctx, &mut run.checkpoint, at)
                        .await;
                }
                self.settle_checkpoint(&mut ctx, &mut run.checkpoint).await;
                stop
            }
            Err(stop) => stop,
        };
        // No sub-agent outlives the run that started it.
        if let Some(task) = &self.inner.task {
            task.background.cancel_session(&ctx.session_id);
            task.leave_run(&ctx.session_id, &account);
        }
        ctx.outcome(stop)
    }

    /// The provider's own token counter, else an estimate that calibrates
    /// itself on the usage the service reports.
    pub fn token_counter(&self) -> Arc<dyn TokenCounter> {
        self.provider()
            .token_counter()
            .unwrap_or_else(|| Arc::new(CalibratedEstimator::default()))
    }

    /// Announce the run, load its policy, store the user's message and
    /// build the first request.
    async fn start(
        &self,
        request: RunRequest,
        opened: Opened,
        ctx: &mut RunCtx<'_>,
    ) -> Result<Run, Stop> {
        let inner = &self.inner;
        let mode = self.capped(request.mode.unwrap_or(inner.permissions.mode));
        ctx.emit(Event::RunStarted {
            session_id: ctx.session_id.clone(),
            provider: self.provider().name().to_string(),
            model: self.provider().model().to_string(),
            workspace: inner.workspace.display().to_string(),
            resumed: opened.resumed,
            mode,
            plan: mode == PermissionMode::Plan,
            profile: inner.config.profile,
            without: inner.config.without.clone(),
        });
        let policy = Arc::new(self.run_policy(&ctx.session_id, mode, ctx.sink).await?);
        let continuing = request.continues() && opened.resumed;
        let mut earlier_requests = opened.earlier_requests;
        // An interrupted run goes on following the last request it had.
        let latest_instruction = match continuing {
            true => earlier_requests.pop().unwrap_or_default(),
            false => request.prompt.clone(),
        };
        let mut conv = Conversation::new(opened.messages, opened.seqs, ctx.counter.as_ref());
        let mut checkpoint = None;
        if !continuing {
            // The user's hooks see the prompt before it is stored (and may
            // refuse it); what they add follows it.
            let context = self
                .start_hooks(ctx, opened.resumed, &request.prompt, mode)
                .await?;
            let at = moments::CheckpointAt::Prompt {
                seq: conv.last_seq(),
                prompt: request.prompt.clone(),
            };
            self.start_checkpoint(ctx, &mut checkpoint, at).await;
            self.commit_to(ctx, &mut conv, Message::user(request.prompt.clone()))
                .await?;
            self.add_hook_context(ctx, &mut conv, context).await?;
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
        if inner.config.budget.max_cost_usd.is_some() && self.provider().pricing().is_none() {
            ctx.emit(Event::Notice {
                message: format!(
                    "max_cost_usd is set but the prices of {} are unknown: the cost budget cannot stop this run",
                    self.provider().model()
                ),
            });
        }
        let inputs = self.prompt_inputs();
        for note in &inputs.instructions.notes {
            ctx.emit(Event::Notice {
                message: note.clone(),
            });
        }
        let gate = self.gate();
        let mut fixed = self.fixed_part(mode, &inputs, ctx.counter.as_ref());
        let req = ModelRequest {
            system: std::mem::take(&mut fixed.system),
            messages: Vec::new(),
            tools: std::mem::take(&mut fixed.tools),
            max_output_tokens: None,
            tool_choice: Default::default(),
            single_tool_call: inner.config.helps(Lever::SingleCall),
        };
        // The first turn must look when there is something to look at (the
        // lean prompt lists it; only the small profile requires the call).
        let first_call_required = inner.config.helps(Lever::FirstCall) && inputs.files.is_some();
        // A request for a change keeps the workspace as it was, for the
        // nudge when the run would end with nothing changed.
        let mut looked = help::Looked::default();
        if inner.config.helps(Lever::Nudge) && help::asks_for_change(&request.prompt) {
            looked.change_asked = Some(help::Snapshot::take(&inner.workspace));
        }
        Ok(Run {
            conv,
            track,
            mode,
            policy,
            fixed,
            req,
            control: request.control.unwrap_or_default(),
            gate,
            inputs,
            first_call_required,
            looked,
            stop_blocks: 0,
            checkpoint,
            changed_files: false,
        })
    }

    /// One turn: steering and budgets, a whole answer, its calls.
    async fn turn(&self, ctx: &mut RunCtx<'_>, run: &mut Run) -> Result<(), Stop> {
        self.before_turn(ctx, run).await?;
        // The first turn looks before it answers; the turn after a nudge
        // acts on it (measured: nudged, the 1.5B model answered "I will
        // edit calc.py" and stopped).
        let first = run.first_call_required && ctx.st.turns == 1;
        let next = std::mem::take(&mut run.looked.next);
        run.req.tool_choice = if first || next != help::NextTurn::Free {
            ToolChoice::Required
        } else {
            ToolChoice::Auto
        };
        // A nudge to make a change offers only the tools that make one,
        // for that turn.
        let all_tools = (next == help::NextTurn::Edit)
            .then(|| narrow_to_edits(&mut run.req.tools))
            .flatten();
        let calls = self.answer(ctx, run).await;
        if let Some(all) = all_tools {
            run.req.tools = all;
        }
        let calls = calls?;
        if calls.is_empty() {
            if run.control.pending() > 0 {
                // The user wrote while the model answered: go on.
                return Ok(());
            }
            if self.nudged(ctx, run).await? {
                return Ok(());
            }
            if self.await_background(ctx, &mut run.conv).await? {
                return Ok(());
            }
            if let Some(why) = self.stop_hooks(ctx, run.mode, &mut run.stop_blocks).await? {
                // A Stop hook sends the model back to work.
                ctx.emit(Event::Notice {
                    message: format!("a Stop hook did not let the run end: {why}"),
                });
                let text = format!("[rein] A Stop hook did not let you finish yet: {why}");
                self.commit_to(ctx, &mut run.conv, Message::user(text))
                    .await?;
                return Ok(());
            }
            return Err(Stop::new(StopReason::Completed));
        }
        self.tool_round(ctx, run, calls).await
    }

    /// Whether the answer that would end the run got a nudge instead
    /// (stored as a user message, announced as a notice).
    async fn nudged(&self, ctx: &mut RunCtx<'_>, run: &mut Run) -> Result<bool, Stop> {
        if !self.inner.config.helps(Lever::Nudge) {
            return Ok(false);
        }
        let Some((kind, text)) =
            help::nudge(&ctx.st.final_text, &run.looked, &self.inner.workspace)
        else {
            return Ok(false);
        };
        run.looked.nudged.push(kind);
        run.looked.next =
            help::next_turn(kind, &ctx.st.final_text, &run.looked, &self.inner.workspace);
        ctx.emit(Event::Notice {
            message: format!("nudged the model: {}", text.trim_start_matches("[rein] ")),
        });
        self.commit_to(ctx, &mut run.conv, Message::user(text))
            .await?;
        Ok(true)
    }

    /// Stop on cancel or a spent budget; apply a mode switch and the
    /// messages the user queued; count the turn.
    async fn before_turn(&self, ctx: &mut RunCtx<'_>, run: &mut Run) -> Result<(), Stop> {
        if ctx.cancel.is_cancelled() {
            return Err(Stop::new(StopReason::Cancelled));
        }
        if let Some(reason) = self.budget_exceeded(ctx) {
            return Err(Stop::new(reason));
        }
        let switch = (run.control.take_mode())
            .map(|m| self.capped(m))
            .filter(|m| *m != run.mode);
        if let Some(mode) = switch {
            run.mode = mode;
            run.policy = Arc::new(self.run_policy(&ctx.session_id, mode, ctx.sink).await?);
            ctx.emit(Event::ModeChanged { mode });
        }
        let gate = self.gate();
        if switch.is_some() || !Arc::ptr_eq(&gate, &run.gate) {
            // What the model is offered follows the mode and the tools.
            run.gate = gate;
            run.fixed = self.fixed_part(run.mode, &run.inputs, ctx.counter.as_ref());
            run.req.system = std::mem::take(&mut run.fixed.system);
            run.req.tools = std::mem::take(&mut run.fixed.tools);
        }
        for text in run.control.take_queued() {
            let context = match self.prompt_hooks(ctx, &text, run.mode).await? {
                moments::PromptFate::Take(context) => context,
                moments::PromptFate::Refused(why) => {
                    ctx.emit(Event::Notice {
                        message: format!("a UserPromptSubmit hook refused your message: {why}"),
                    });
                    continue;
                }
            };
            let at = moments::CheckpointAt::Prompt {
                seq: run.conv.last_seq(),
                prompt: text.clone(),
            };
            self.start_checkpoint(ctx, &mut run.checkpoint, at).await;
            run.changed_files = false;
            self.commit_to(ctx, &mut run.conv, Message::user(text.clone()))
                .await?;
            self.add_hook_context(ctx, &mut run.conv, context).await?;
            let earlier = std::mem::replace(&mut run.track.ledger.latest_instruction, text);
            run.track.ledger.earlier_requests.push(earlier);
        }
        self.background_news(ctx);
        ctx.st.turns += 1;
        ctx.emit(Event::TurnStarted { turn: ctx.st.turns });
        Ok(())
    }

    /// Get the model's answer and commit it; returns its tool calls. A
    /// full context is compacted first; an answer refused for overflow is
    /// compacted and asked once more. A failed turn commits what streamed
    /// before it (if anything) and stops.
    async fn answer(&self, ctx: &mut RunCtx<'_>, run: &mut Run) -> Result<Vec<ToolCall>, Stop> {
        // The provider may have been switched (`set_provider`).
        let window = self.provider().capabilities().context_window;
        let cfg = &self.inner.config.compaction;
        let used = run.fixed.tokens.saturating_add(run.conv.tokens());
        if cfg.enabled && window.is_some_and(|w| used as f64 > cfg.threshold * w as f64) {
            self.compact_run(ctx, run, CompactionReason::Threshold)
                .await?;
        }
        // Compaction spent too: the budget tree is checked before every
        // call.
        if let Some(reason) = ctx.budget.as_ref().and_then(|b| b.exceeded()) {
            return Err(Stop::new(reason));
        }
        let mut outcome = self.ask(ctx, run).await;
        if let Err(f) = &outcome
            && f.context_overflow
            && f.partial.content.is_empty()
            && cfg.enabled
        {
            self.compact_run(ctx, run, CompactionReason::ContextLengthExceeded)
                .await?;
            outcome = self.ask(ctx, run).await;
        }
        let (assistant, failure) = match outcome {
            Ok(a) => (a, None),
            Err(f) => (f.partial, Some(f.stop)),
        };
        if let Some(u) = &assistant.usage {
            ctx.st.usage.add(u);
            if u.input_tokens > 0 {
                let chars = run.fixed.chars.saturating_add(run.conv.chars());
                ctx.counter.observe(chars, u.input_tokens);
            }
        }
        if assistant.content.is_empty()
            && let Some(stop) = failure
        {
            return Err(stop);
        }
        ctx.st.final_text = assistant.text();
        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        let actual = assistant.usage.map(|u| u.total());
        self.commit_to(ctx, &mut run.conv, Message::Assistant(assistant))
            .await?;
        ctx.emit(Event::TokenUpdate {
            estimated: run.fixed.tokens.saturating_add(run.conv.tokens()),
            actual,
            window,
        });
        match failure {
            Some(stop) => Err(stop),
            None => Ok(calls),
        }
    }

    /// One model turn on the conversation as it stands.
    async fn ask(
        &self,
        ctx: &mut RunCtx<'_>,
        run: &mut Run,
    ) -> Result<AssistantMessage, TurnFailure> {
        std::mem::swap(&mut run.req.messages, &mut run.conv.messages);
        let outcome = self.model_turn(ctx, &run.req).await;
        std::mem::swap(&mut run.req.messages, &mut run.conv.messages);
        outcome
    }

    /// Compact the run's context, with the compaction hooks around it.
    async fn compact_run(
        &self,
        ctx: &mut RunCtx<'_>,
        run: &mut Run,
        reason: CompactionReason,
    ) -> Result<(), Stop> {
        let trigger = crate::lifecycle::CompactTrigger::Auto;
        self.pre_compact_hooks(ctx, trigger, run.mode).await?;
        let summary = self
            .compact(ctx, &mut run.conv, reason, &run.track.ledger)
            .await?;
        if let Some(summary) = summary {
            let context = self
                .post_compact_hooks(ctx, trigger, &summary, run.mode)
                .await?;
            self.add_hook_context(ctx, &mut run.conv, context).await?;
        }
        Ok(())
    }

    /// The budget this run has used up, if any: its turns, or a limit of
    /// its budget tree (what it, its children and, for a child, its
    /// parent's whole tree spent; the time of every run above it).
    pub(super) fn budget_exceeded(&self, ctx: &RunCtx<'_>) -> Option<StopReason> {
        if ctx.st.turns >= self.inner.config.budget.max_turns {
            return Some(StopReason::MaxTurns);
        }
        ctx.budget.as_ref().and_then(|b| b.exceeded())
    }

    /// A new run's account, below the account of the run that started
    /// this engine when it is a child's.
    pub(super) fn open_account(&self) -> Arc<budget::Budget> {
        let cfg = &self.inner.config;
        let limits = budget::Limits {
            max_tokens: cfg.budget.max_tokens,
            max_cost_usd: cfg.budget.max_cost_usd,
            max_wall_time: cfg.budget.max_wall_time,
            max_children: self.inner.task.as_ref().map_or(1, |t| t.max_children()),
        };
        budget::Budget::open(limits, self.inner.spends_from.clone())
    }

    /// Store a message, announce it, and add it to the conversation.
    pub(super) async fn commit_to(
        &self,
        ctx: &mut RunCtx<'_>,
        conv: &mut Conversation,
        message: Message,
    ) -> Result<(), StoreError> {
        let seq = self.commit(&ctx.session_id, &message, ctx.sink).await?;
        conv.push(message, Some(seq), ctx.counter.as_ref());
        Ok(())
    }
}

/// Keep only the tools that change files in `tools`, returning the whole
/// list to put back; `None` (nothing narrowed) when none of them is there.
fn narrow_to_edits(tools: &mut Vec<crate::ToolSpec>) -> Option<Vec<crate::ToolSpec>> {
    if !tools
        .iter()
        .any(|t| help::EDIT_TOOLS.contains(&t.name.as_str()))
    {
        return None;
    }
    let all = tools.clone();
    tools.retain(|t| help::EDIT_TOOLS.contains(&t.name.as_str()));
    Some(all)
}
