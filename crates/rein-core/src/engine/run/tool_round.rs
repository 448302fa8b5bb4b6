//! The calls of an answer: the loop guard looks at them first, then they
//! run side by side through the gate, each result stored as it finishes,
//! and what they did is noted for the ledger, the guard, the coach and the
//! checkpoints.

use std::sync::Arc;
use std::time::SystemTime;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{RunCtx, RunLoop, Stop};
use crate::engine::AgentEngine;
use crate::engine::guard::Verdict;
use crate::event::{Event, StopReason};
use crate::gate::{self, CallEffects, Gate, GateEvents, GateOutcome, RunPolicy};
use crate::schema::{Message, Todo, ToolCall, ToolResult};
use crate::store::StoreError;
use crate::text::preview;
use crate::tool::ToolContext;

impl RunLoop<'_> {
    /// Run a turn's calls (unless the loop guard stops them) and note what
    /// they did.
    pub(super) async fn tool_round(
        &mut self,
        ctx: &mut RunCtx<'_>,
        calls: Vec<ToolCall>,
    ) -> Result<(), Stop> {
        // Each call's arguments are parsed once, here (never when they are
        // over the size limit): the loop guard compares them, the gate
        // checks and runs them.
        let gate = self.gate.clone();
        let args: Vec<Option<Value>> = calls
            .iter()
            .map(|c| match gate.oversized(c) {
                Some(_) => None,
                None => gate::parse_arguments(c).ok(),
            })
            .collect();
        let reminder = self.guard(ctx, &calls, &args).await?;
        let notes = self.notes(reminder, &calls, &args);
        let via = TurnGate {
            gate: &gate,
            policy: &self.policy,
        };
        // The workspace is recorded before these calls can change it.
        self.checkpoints.settle(ctx).await;
        let round_started = SystemTime::now();
        let todos = &mut self.track.ledger.todos;
        let (finished, fault) = run_tools(self.engine, ctx, &calls, args, via, notes, todos).await;
        let halt = finished.iter().find_map(|f| f.effects.halt.clone());
        self.note_round(ctx, &calls, &finished, round_started);
        for f in finished {
            self.conv
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

    /// The loop guard's verdict on the calls: a reminder to add to their
    /// results, or a stop (each call stored as not run).
    async fn guard(
        &mut self,
        ctx: &mut RunCtx<'_>,
        calls: &[ToolCall],
        args: &[Option<Value>],
    ) -> Result<Option<String>, Stop> {
        match self.track.guard.before(calls, args, &ctx.st.final_text) {
            Verdict::Run => Ok(None),
            Verdict::Remind(n) => Ok(Some(n)),
            Verdict::Stop(why) => {
                for call in calls {
                    let refused = Message::Tool(ToolResult {
                        images: Vec::new(),
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        output: format!("error: not run: {why}; the run was stopped"),
                        is_error: true,
                    });
                    ctx.commit_to(&mut self.conv, refused).await?;
                }
                Err(Stop::with_error(StopReason::Repetition, why))
            }
        }
    }

    /// What each call's result gets added: the guard's reminder, and the
    /// instructions of a folder below the workspace a call works in, the
    /// first time.
    fn notes(
        &mut self,
        reminder: Option<String>,
        calls: &[ToolCall],
        args: &[Option<Value>],
    ) -> Vec<Option<String>> {
        let workspace = &self.engine.inner.workspace;
        let gate = &self.gate;
        calls
            .iter()
            .zip(args)
            .map(|(call, a)| {
                let path = a
                    .as_ref()
                    .and_then(|a| gate.touches(&call.name, a).into_iter().next());
                let nested =
                    path.and_then(|path| self.inputs.instructions.nested(workspace, &path));
                match (&reminder, nested) {
                    (Some(n), Some(i)) => Some(format!("{n}{i}")),
                    (Some(n), None) => Some(n.clone()),
                    (None, Some(i)) => Some(i.trim_start().to_string()),
                    (None, None) => None,
                }
            })
            .collect()
    }

    /// Note what a round's calls did: for the checkpoints, the run's
    /// totals (what sub-agents spent), the ledger, the coach and the guard.
    fn note_round(
        &mut self,
        ctx: &mut RunCtx<'_>,
        calls: &[ToolCall],
        finished: &[Finished],
        started: SystemTime,
    ) {
        let inner = &self.engine.inner;
        self.checkpoints.note_round(finished, started);
        // What sub-agents spent counts against this run's budgets.
        if let Some(s) = &inner.subagents {
            for f in finished {
                if let Some(entry) = s.take_spent(&ctx.session_id, &f.result.call_id) {
                    ctx.st.totals.add(&entry);
                }
            }
        }
        let wrote = self.track.observe(finished, ctx.st.turns, &inner.workspace);
        if let Some(coach) = &mut self.coach {
            coach.observe(calls, finished, wrote);
        }
        self.track
            .guard
            .after(finished.iter().map(|f| &f.result), wrote);
    }
}

/// Run one turn's calls concurrently through the gate (`notes[i]` is
/// added to call i's result: a loop-guard reminder, a folder's
/// instructions). Each result is stored as it finishes, and a change to the session's todos (`todos`
/// holds the last ones shown) is announced as soon as the call that made
/// it ends; the returned results keep call order. A store failure stops
/// committing and is returned beside them.
async fn run_tools(
    engine: &AgentEngine,
    ctx: &mut RunCtx<'_>,
    calls: &[ToolCall],
    args: Vec<Option<Value>>,
    via: TurnGate<'_>,
    notes: Vec<Option<String>>,
    todos: &mut Vec<Todo>,
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
        spawn_call(engine, ctx, call, args, &via, index, tx.clone());
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
            match ctx.commit(&message).await {
                Ok(s) => seq = Some(s),
                Err(e) => fault = Some(e),
            }
        }
        if !result.is_error
            && let Ok(now) = ctx.store.todos(&ctx.session_id).await
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
    engine: &AgentEngine,
    ctx: &RunCtx<'_>,
    call: &ToolCall,
    args: Option<Value>,
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
        workspace: engine.inner.workspace.clone(),
        session_id: ctx.session_id.clone(),
        call_id: call.id.clone(),
        cancel: ctx.cancel.clone(),
        session: crate::tool::SessionHandle::new(engine.inner.store.clone(), &ctx.session_id),
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

/// What every call of a turn goes through: the gate whose tools the model
/// was offered this turn (tools added meanwhile wait for the next), and the
/// run's permission state.
struct TurnGate<'a> {
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
