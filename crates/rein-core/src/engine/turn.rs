//! One model turn (with retries) and one round of tool calls.

use super::run::{Run, Stop};
use super::*;

impl AgentEngine {
    /// One model call, retried on a transport failure (a refused or cut
    /// connection, an overloaded service, a stream that went silent or
    /// stopped before its end) up to `provider_retries` times. Whatever a
    /// failed attempt streamed is discarded: only a whole answer is
    /// returned, so a broken stream's text is never stored and its tool
    /// calls never run. Each attempt is one ledger entry.
    pub(super) async fn model_turn(
        &self,
        ctx: &mut RunCtx<'_>,
        req: &ModelRequest,
    ) -> Result<AssistantMessage, TurnFailure> {
        let cfg = &self.inner.config;
        let mut attempt = 0u32;
        loop {
            let mut asm =
                AssistantAssembler::with_args_cap(self.gate().limits().max_argument_bytes);
            let began = std::time::Instant::now();
            let result = self.stream_once(req, ctx, &mut asm).await;
            let err = match result {
                Ok(()) => {
                    let answer = asm.finish();
                    let usage = answer.usage.unwrap_or_default();
                    self.record_call(ctx, CallKind::Turn, usage, true, began)
                        .await;
                    return Ok(answer);
                }
                Err(e) => e,
            };
            let partial = asm.partial();
            let usage = partial.usage.unwrap_or_default();
            if err.kind == ProviderErrorKind::Cancelled || ctx.cancel.is_cancelled() {
                self.record_call(ctx, CallKind::Turn, usage, false, began)
                    .await;
                return Err(TurnFailure::cancelled(partial));
            }
            if !(err.is_retryable() && attempt < cfg.provider_retries) {
                self.record_call(ctx, CallKind::Turn, usage, false, began)
                    .await;
                return Err(TurnFailure::provider(err, partial));
            }
            self.record_call(ctx, CallKind::Retry, usage, false, began)
                .await;
            attempt += 1;
            let delay = backoff(cfg.retry_base_delay, attempt, err.retry_after);
            ctx.emit(Event::Retry {
                attempt,
                max_retries: cfg.provider_retries,
                delay_ms: delay.as_millis() as u64,
                error: err.to_string(),
                discarded: !asm.is_empty(),
            });
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = ctx.cancel.cancelled() => return Err(TurnFailure::cancelled(AssistantMessage::default())),
            }
        }
    }

    pub(super) async fn stream_once(
        &self,
        req: &ModelRequest,
        ctx: &mut RunCtx<'_>,
        asm: &mut AssistantAssembler,
    ) -> Result<(), ProviderError> {
        let cancel = ctx.cancel;
        let cancelled = || ProviderError::new(ProviderErrorKind::Cancelled, "cancelled");
        let provider = self.provider();
        let mut stream = tokio::select! {
            s = provider.stream(req, cancel) => s?,
            _ = cancel.cancelled() => return Err(cancelled()),
        };
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                n = stream.next() => n,
            };
            let Some(chunk) = next else { return Ok(()) };
            let chunk = chunk?;
            match &chunk {
                crate::schema::StreamChunk::TextDelta(t) if !t.is_empty() => {
                    ctx.emit(Event::TextDelta { text: t.clone() })
                }
                crate::schema::StreamChunk::ReasoningDelta(t) if !t.is_empty() => {
                    ctx.emit(Event::ReasoningDelta { text: t.clone() })
                }
                crate::schema::StreamChunk::Progress(progress) => {
                    ctx.emit(Event::ModelProgress {
                        progress: *progress,
                    });
                    continue;
                }
                _ => {}
            }
            if asm.push(chunk) {
                return Ok(());
            }
            if let Some(bytes) = asm.oversized_call() {
                // Stop reading: a model streaming gigabytes of arguments
                // would otherwise fill memory. The call is refused by the
                // gate; what came before it stands.
                ctx.emit(Event::Notice {
                    message: format!(
                        "the model's answer was cut: a tool call's arguments passed {bytes} bytes, \
                         over the limit"
                    ),
                });
                return Ok(());
            }
        }
    }

    /// Run a turn's calls (unless the loop guard stops them) and note what
    /// they did.
    pub(super) async fn tool_round(
        &self,
        ctx: &mut RunCtx<'_>,
        run: &mut Run,
        calls: Vec<ToolCall>,
    ) -> Result<(), Stop> {
        // Each call's arguments are parsed once, here (never when they are
        // over the size limit): the loop guard compares them, the gate
        // checks and runs them.
        let gate = run.gate.clone();
        let args: Vec<Option<serde_json::Value>> = calls
            .iter()
            .map(|c| match gate.oversized(c) {
                Some(_) => None,
                None => crate::gate::parse_arguments(c).ok(),
            })
            .collect();
        let note = match run.track.guard.before(&calls, &args, &ctx.st.final_text) {
            guard::Verdict::Run => None,
            guard::Verdict::Remind(n) => Some(n),
            guard::Verdict::Stop(why) => {
                for call in &calls {
                    let refused = Message::Tool(ToolResult {
                        images: Vec::new(),
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        output: format!("error: not run: {why}; the run was stopped"),
                        is_error: true,
                    });
                    self.commit_to(ctx, &mut run.conv, refused).await?;
                }
                return Err(Stop::with_error(StopReason::Repetition, why));
            }
        };
        // A call working in a folder below the workspace brings that
        // folder's instructions with its result, the first time.
        let notes: Vec<Option<String>> =
            args.iter()
                .map(|a| {
                    let nested = a.as_ref().and_then(call_path).and_then(|path| {
                        run.inputs.instructions.nested(&self.inner.workspace, path)
                    });
                    match (&note, nested) {
                        (Some(n), Some(i)) => Some(format!("{n}{i}")),
                        (Some(n), None) => Some(n.clone()),
                        (None, Some(i)) => Some(i.trim_start().to_string()),
                        (None, None) => None,
                    }
                })
                .collect();
        let via = turn::TurnGate {
            gate: &gate,
            policy: &run.policy,
        };
        // The workspace is recorded before these calls can change it.
        self.settle_checkpoint(ctx, &mut run.checkpoint).await;
        let round_started = std::time::SystemTime::now();
        let (finished, fault) = self
            .run_tools(ctx, &calls, args, via, notes, &mut run.track.ledger.todos)
            .await;
        let halt = finished.iter().find_map(|f| f.effects.halt.clone());
        // What calls that wrote or ran programs left is noted for rewind
        // when the run ends (one snapshot a run, not one a turn), with
        // what they wrote and when commands ran.
        let effects = finished.iter().map(|f| &f.effects);
        if let Some(round) = crate::rewind::RunWrites::of_round(effects, round_started) {
            run.writes.get_or_insert_default().add(round);
        }
        // What sub-agents spent counts against this run's budgets.
        if let Some(task) = &self.inner.task {
            for f in &finished {
                if let Some(entry) = task.take_spent(&ctx.session_id, &f.result.call_id) {
                    ctx.st.totals.add(&entry);
                }
            }
        }
        let wrote = run
            .track
            .observe(&finished, ctx.st.turns, &self.inner.workspace);
        run.looked.wrote |= wrote;
        run.looked.last_round_failed =
            !finished.is_empty() && finished.iter().all(|f| f.result.is_error);
        for f in finished.iter().filter(|f| !f.result.is_error) {
            if let Some(call) = calls.iter().find(|c| c.id == f.result.call_id) {
                run.looked.saw(&call.arguments);
            }
        }
        run.track
            .guard
            .after(finished.iter().map(|f| &f.result), wrote);
        for f in finished {
            run.conv
                .push(Message::Tool(f.result), f.seq, ctx.counter.as_ref());
        }
        if let Some(e) = fault {
            return Err(e.into());
        }
        match halt {
            Some(why) => Err(Stop::with_error(
                StopReason::HookStopped,
                format!("a hook stopped the run: {why}"),
            )),
            None => Ok(()),
        }
    }

    /// Run one turn's calls concurrently through the gate (`notes[i]` is
    /// added to call i's result: a loop-guard reminder, a folder's
    /// instructions). Each result is stored as it finishes, and a change to the session's todos (`todos`
    /// holds the last ones shown) is announced as soon as the call that made
    /// it ends; the returned results keep call order. A store failure stops
    /// committing and is returned beside them.
    pub(super) async fn run_tools(
        &self,
        ctx: &mut RunCtx<'_>,
        calls: &[ToolCall],
        args: Vec<Option<serde_json::Value>>,
        via: TurnGate<'_>,
        notes: Vec<Option<String>>,
        todos: &mut Vec<crate::schema::Todo>,
    ) -> (Vec<Finished>, Option<StoreError>) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for call in calls {
            ctx.emit(Event::ToolStarted {
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: shown_arguments(via.gate, call),
            });
        }
        for (index, (call, args)) in calls.iter().zip(args).enumerate() {
            self.spawn_call(ctx, call, args, &via, index, tx.clone());
        }
        drop(tx);
        let mut slots: Vec<Option<Finished>> = calls.iter().map(|_| None).collect();
        let mut fault = None;
        while let Some(msg) = rx.recv().await {
            let (index, outcome) = match msg {
                CallMsg::Event(e) => {
                    ctx.emit(e);
                    continue;
                }
                CallMsg::Done(index, outcome) => (index, outcome),
            };
            let mut result = outcome.result;
            if let Some(Some(n)) = notes.get(index) {
                result.output.push_str("\n\n");
                result.output.push_str(n);
            }
            ctx.emit(Event::ToolFinished {
                call_id: result.call_id.clone(),
                name: result.name.clone(),
                duration_ms: outcome.duration.as_millis() as u64,
                is_error: result.is_error,
                output_preview: preview(&result.output, 4, 300),
            });
            let mut seq = None;
            if fault.is_none() {
                let message = Message::Tool(result.clone());
                match self.commit(&ctx.session_id, &message, ctx.sink).await {
                    Ok(s) => seq = Some(s),
                    Err(e) => fault = Some(e),
                }
            }
            if !result.is_error
                && let Ok(now) = self.inner.store.todos(&ctx.session_id).await
                && now != *todos
            {
                *todos = now.clone();
                ctx.emit(Event::TodosUpdated { todos: now });
            }
            slots[index] = Some(Finished {
                result,
                seq,
                effects: outcome.effects,
            });
        }
        let finished = slots
            .into_iter()
            .zip(calls)
            .map(|(slot, call)| slot.unwrap_or_else(|| Finished::lost(call)))
            .collect();
        (finished, fault)
    }

    /// Start call `index` of the turn through the gate in its own task
    /// (with its arguments as the engine parsed them), or refuse it at once
    /// (past the per-turn cap, or arguments over the size limit).
    fn spawn_call(
        &self,
        ctx: &RunCtx<'_>,
        call: &ToolCall,
        args: Option<serde_json::Value>,
        via: &TurnGate<'_>,
        index: usize,
        tx: mpsc::UnboundedSender<CallMsg>,
    ) {
        let gate = via.gate.clone();
        let over_cap = index >= gate.limits().max_tool_calls_per_turn.max(1);
        let refusal = match over_cap {
            true => Some(gate.over_turn_cap()),
            false => gate.oversized(call),
        };
        if let Some(output) = refusal {
            let result = ToolResult {
                images: Vec::new(),
                call_id: call.id.clone(),
                name: call.name.clone(),
                output,
                is_error: true,
            };
            let _ = tx.send(CallMsg::Done(index, GateOutcome::refused(result)));
            return;
        }
        let tool_ctx = ToolContext {
            workspace: self.inner.workspace.clone(),
            session_id: ctx.session_id.clone(),
            call_id: call.id.clone(),
            cancel: ctx.cancel.clone(),
            store: self.inner.store.clone(),
            sandbox: Default::default(),
            read_roots: Vec::new(),
            events: None,
        };
        let call = call.clone();
        let policy = via.policy.clone();
        let events_tx = tx.clone();
        let events: GateEvents = Arc::new(move |e| {
            let _ = events_tx.send(CallMsg::Event(e));
        });
        // A sub-agent's events reach the front end nested in the parent's.
        let tool_ctx = ToolContext {
            events: Some(events.clone()),
            ..tool_ctx
        };
        tokio::spawn(async move {
            let outcome = gate
                .run_parsed(&call, args, tool_ctx, &policy, &events)
                .await;
            let _ = tx.send(CallMsg::Done(index, outcome));
        });
    }
}

/// What every call of a turn goes through: the gate whose tools the model
/// was offered this turn (tools added meanwhile wait for the next), and the
/// run's permission state.
pub(super) struct TurnGate<'a> {
    pub gate: &'a Arc<Gate>,
    pub policy: &'a Arc<RunPolicy>,
}

/// A call's arguments as events show them: never copied when over the cap.
fn shown_arguments(gate: &Gate, call: &ToolCall) -> String {
    match gate.oversized(call) {
        Some(_) => format!(
            "[{} bytes of arguments, over the limit]",
            call.arguments.len()
        ),
        None => call.arguments.clone(),
    }
}

/// What a running call sends back to the turn: its gate's events, then
/// its outcome.
enum CallMsg {
    Event(Event),
    Done(usize, GateOutcome),
}

/// A call of this turn, finished: its result, where it was stored, and
/// what it touched.
pub(crate) struct Finished {
    pub result: ToolResult,
    /// None when it could not be stored.
    pub seq: Option<u64>,
    pub effects: CallEffects,
}

impl Finished {
    /// A call whose task vanished without an outcome.
    fn lost(call: &ToolCall) -> Finished {
        Finished {
            result: ToolResult {
                images: Vec::new(),
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: "error: the harness lost this call's result".to_string(),
                is_error: true,
            },
            seq: None,
            effects: CallEffects::default(),
        }
    }
}

/// The path a call's arguments name (`path`, or `file_path`), if any.
fn call_path(args: &serde_json::Value) -> Option<&str> {
    args.get("path")
        .or_else(|| args.get("file_path"))
        .and_then(serde_json::Value::as_str)
}

/// Delay before retry `attempt` (1-based): the service's wish when it gave
/// one (capped at a minute), else exponential from `base` with ±25% jitter.
fn backoff(base: Duration, attempt: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(wait) = retry_after {
        return wait.min(Duration::from_secs(60));
    }
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(10));
    let capped = exp.min(Duration::from_secs(30));
    let jitter = 0.75 + fastrand::f64() * 0.5;
    capped.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after() {
        let base = Duration::from_millis(100);
        for attempt in 1..5u32 {
            let d = backoff(base, attempt, None).as_millis() as f64;
            let nominal = 100.0 * f64::from(1u32 << (attempt - 1));
            assert!(d >= nominal * 0.74 && d <= nominal * 1.26, "{attempt}: {d}");
        }
        assert_eq!(
            backoff(base, 1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert!(backoff(Duration::from_secs(10), 9, None) <= Duration::from_secs(38));
    }
}
