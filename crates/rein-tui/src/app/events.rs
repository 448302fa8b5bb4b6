//! Engine events: the transcript, the live area and the status line follow
//! the run.

use rein_core::skill_mentions;
use rein_core::{ApprovalDecision, Event, Message, PermissionMode, StopReason, Todo, TodoStatus};

use super::{Action, App, Modal, PendingApproval, stable_prefix};
use crate::cells::{Cell, ToolState};
use crate::preview::proposed_change;

impl App {
    // --------------------------------------------------------------- events

    /// An engine event. May ask the runtime to do something (a message that
    /// was queued too late for the run is sent as the next one).
    pub fn on_event(&mut self, event: Event) -> Vec<Action> {
        match event {
            Event::RunStarted {
                session_id,
                provider,
                model,
                mode,
                ..
            } => self.run_started(session_id, provider, model, mode),
            Event::TextDelta { text } => {
                self.finish_reasoning();
                self.stream_text.push_str(&text);
                self.flush_stable_text();
            }
            Event::ReasoningDelta { text } => self.stream_reasoning.push_str(&text),
            Event::ModelProgress { progress } => self.status.progress = Some(progress),
            Event::TurnStarted { .. } => {
                self.streamed_cells = 0;
                self.status.progress = None;
            }
            Event::Retry {
                attempt,
                max_retries,
                delay_ms,
                error,
                discarded,
            } => {
                let taken_back = if discarded {
                    self.discard_attempt()
                } else {
                    ""
                };
                self.notice(format!(
                    "{taken_back}retrying in {:.1} s (attempt {attempt} of {max_retries}): {error}",
                    delay_ms as f64 / 1000.0
                ));
            }
            Event::ToolStarted {
                call_id,
                name,
                arguments,
            } => self.tool_started(call_id, name, arguments),
            Event::ToolFinished {
                call_id,
                duration_ms,
                is_error,
                output_preview,
                ..
            } => {
                if let Some(state) = self.tool_state(&call_id) {
                    *state = ToolState::Done {
                        duration_ms,
                        is_error,
                        output: output_preview,
                    };
                }
            }
            Event::ApprovalRequired { request, reply } => self.approval_required(request, reply),
            Event::ApprovalResolved { call_id, decision } => {
                self.approval_resolved(&call_id, decision)
            }
            Event::PermissionDenied { call_id, why, .. } => {
                if let Some(state) = self.tool_state(&call_id) {
                    *state = ToolState::Denied { why };
                }
                self.retire_tool(&call_id);
            }
            Event::Compaction {
                summarized,
                replaced_messages,
                tokens_before,
                tokens_after,
                note,
                ..
            } => self.notice(compaction_notice(
                summarized,
                replaced_messages,
                tokens_before,
                tokens_after,
                note,
            )),
            Event::ModeChanged { mode } => {
                self.status.mode = mode;
                self.status.mode_pending = false;
            }
            Event::TodosUpdated { todos } => self.set_todos(todos),
            Event::Notice { message } => self.notice(message),
            Event::TokenUpdate {
                estimated,
                actual,
                window,
                next_request,
            } => self.context_measured(estimated, actual, window, next_request),
            Event::MessageCommitted { message, .. } => self.committed(message),
            Event::Stopped {
                reason,
                error,
                final_text,
                ..
            } => return self.stopped(reason, error, final_text),
            Event::Subagent {
                agent,
                description,
                event,
                ..
            } => self.subagent_event(&agent, &description, *event),
            _ => {}
        }
        Vec::new()
    }

    /// A run began: the status line names its session, provider and model,
    /// and takes its mode unless a change the user asked for is pending.
    fn run_started(
        &mut self,
        session_id: String,
        provider: String,
        model: String,
        mode: PermissionMode,
    ) {
        self.status.session_id = Some(session_id);
        self.status.provider = provider;
        self.status.model = model;
        if !self.status.mode_pending {
            self.status.mode = mode;
        }
        self.status.set_running(true);
    }

    /// A tool call began: the text streamed before it is finished and the
    /// call shows as running in the live area.
    fn tool_started(&mut self, call_id: String, name: String, arguments: String) {
        self.finish_stream();
        self.status.progress = None;
        self.live.push(Cell::Tool {
            call_id,
            name,
            arguments,
            state: ToolState::Running,
        });
    }

    /// The context's size after a turn: the next request in the one
    /// accounting (from events of older versions, which lack it, the
    /// report or the estimate of the request just sent); the window when
    /// the provider knows it.
    fn context_measured(
        &mut self,
        estimated: u64,
        actual: Option<u64>,
        window: Option<u64>,
        next_request: u64,
    ) {
        let next = Some(next_request)
            .filter(|&n| n > 0)
            .unwrap_or_else(|| actual.unwrap_or(estimated));
        self.status.context_tokens = Some(next);
        if actual.is_some() {
            self.status.last_request = actual;
        }
        if window.is_some() {
            self.status.context_window = window;
        }
    }

    /// A sub-agent's event: its start and end as notices, its approval
    /// questions as the app's own (naming the agent and its task), its
    /// notices; the rest of its run shows in its result.
    fn subagent_event(&mut self, agent: &str, description: &str, event: Event) {
        match event {
            Event::RunStarted { .. } => {
                self.notice(format!("sub-agent {agent} started: {description}"))
            }
            Event::ApprovalRequired { mut request, reply } => {
                request.summary = format!("[sub-agent {agent}: {description}] {}", request.summary);
                self.approval_required(request, reply);
            }
            Event::Notice { message } => self.notice(format!("sub-agent {agent}: {message}")),
            Event::ToolStarted {
                name, arguments, ..
            } => self.notice(format!(
                "sub-agent {agent} › {name} {}",
                rein_core::text::one_line(&arguments, 80)
            )),
            Event::Stopped { reason, turns, .. } => self.notice(format!(
                "sub-agent {agent} finished ({}, {turns} turns): {description}",
                reason.as_str()
            )),
            _ => {}
        }
    }

    /// A call waits for the user: show it (with the change it proposes)
    /// in the approval dialog, after any already waiting.
    fn approval_required(
        &mut self,
        request: rein_core::ApprovalRequest,
        reply: rein_core::ApprovalReply,
    ) {
        let preview = self.live.iter().find_map(|c| match c {
            Cell::Tool {
                call_id,
                name,
                arguments,
                ..
            } if *call_id == request.call_id => proposed_change(name, arguments, &self.workspace),
            _ => None,
        });
        if let Some(state) = self.tool_state(&request.call_id) {
            *state = ToolState::Waiting;
        }
        self.approvals.push_back(PendingApproval {
            request,
            reply,
            preview,
        });
        if self.modal.is_none() {
            self.popup = None;
            self.modal = Some(Modal::Approval { feedback: None });
            self.approval_shown = Some(std::time::Instant::now());
        }
    }

    /// The user (or a cancel) answered an approval.
    fn approval_resolved(&mut self, call_id: &str, decision: ApprovalDecision) {
        self.approvals.retain(|p| p.request.call_id != call_id);
        if self.approvals.is_empty() && matches!(self.modal, Some(Modal::Approval { .. })) {
            self.modal = None;
        }
        if let Some(state) = self.tool_state(call_id)
            && *state == ToolState::Waiting
        {
            *state = match decision {
                ApprovalDecision::Approve { .. } => ToolState::Running,
                ApprovalDecision::Deny { .. } => ToolState::Denied {
                    why: "denied by you".into(),
                },
            };
        }
    }

    /// A message reached the store: users' messages enter the transcript,
    /// a tool's whole output replaces its preview.
    fn committed(&mut self, message: Message) {
        match message {
            // rein's own note to the model: the notice that came with it
            // (a nudge, a Stop hook) already said it.
            Message::User { content, .. } if rein_core::is_harness_note(&content) => {
                self.finish_stream();
            }
            Message::User { content, .. } => {
                // What was queued is the typed text; skills and resources
                // may have been attached after it.
                let sent = |q: &String| *q == content || content.starts_with(&format!("{q}\n\n["));
                if let Some(i) = self.queued.iter().position(sent) {
                    self.queued.remove(i);
                }
                self.finish_stream();
                // An attached skill is one line; the model has its body.
                self.push_cell(Cell::User {
                    text: skill_mentions::shown(&content),
                });
            }
            Message::Assistant(_) => self.finish_stream(),
            Message::Tool(result) => {
                if let Some(ToolState::Done { output, .. }) = self.tool_state(&result.call_id) {
                    *output = result.output;
                }
                self.retire_tool(&result.call_id);
            }
            _ => {}
        }
    }

    pub fn set_todos(&mut self, todos: Vec<Todo>) {
        self.status.todos_total = todos.len();
        self.status.todos_done = todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        self.todos = todos;
    }

    pub(super) fn stopped(
        &mut self,
        reason: StopReason,
        error: Option<String>,
        final_text: String,
    ) -> Vec<Action> {
        self.finish_stream();
        for cell in std::mem::take(&mut self.live) {
            let cell = match cell {
                Cell::Tool {
                    call_id,
                    name,
                    arguments,
                    state: ToolState::Running | ToolState::Waiting,
                } => Cell::Tool {
                    call_id,
                    name,
                    arguments,
                    state: ToolState::Denied {
                        why: "stopped before it finished".into(),
                    },
                },
                other => other,
            };
            self.push_cell(cell);
        }
        self.approvals.clear();
        if matches!(self.modal, Some(Modal::Approval { .. })) {
            self.modal = None;
        }
        self.status.set_running(false);
        self.status.mode_pending = false;
        match reason {
            StopReason::Completed => {}
            StopReason::Cancelled => self.notice("cancelled; what was produced is kept"),
            other => self.error(format!(
                "stopped ({}){}",
                other.as_str(),
                error.map(|e| format!(": {e}")).unwrap_or_default()
            )),
        }
        if self.hint.as_deref() == Some("cancelling…") {
            self.hint = None;
        }
        // After a cancel, what was queued comes back to the input, unsent.
        if reason == StopReason::Cancelled && !self.queued.is_empty() {
            let back = std::mem::take(&mut self.queued).join("\n\n");
            let draft = self.editor.text();
            self.editor.set_text(&if draft.trim().is_empty() {
                back
            } else {
                format!("{back}\n{draft}")
            });
        }
        // Messages typed too late for the run go out as the next one.
        if !self.queued.is_empty() {
            let next = std::mem::take(&mut self.queued).join("\n\n");
            return self.start(next);
        }
        if reason == StopReason::Completed
            && self.status.mode == PermissionMode::Plan
            && !final_text.trim().is_empty()
            && self.modal.is_none()
        {
            self.modal = Some(Modal::PlanDone);
        }
        Vec::new()
    }

    pub(super) fn tool_state(&mut self, id: &str) -> Option<&mut ToolState> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Tool { call_id, state, .. } if call_id == id => Some(state),
            _ => None,
        })
    }

    /// Move a finished tool cell from the live area to the transcript.
    pub(super) fn retire_tool(&mut self, id: &str) {
        if let Some(i) = self
            .live
            .iter()
            .position(|c| matches!(c, Cell::Tool { call_id, .. } if call_id == id))
        {
            let cell = self.live.remove(i);
            self.push_cell(cell);
        }
    }

    /// A model call broke off after streaming part of an answer, which the
    /// engine threw away: take it off the screen. What is still in the live
    /// area or waiting to be printed goes; what already went to the
    /// terminal's scrollback cannot be taken back, so the notice says so.
    /// Returns the notice's opening words.
    fn discard_attempt(&mut self) -> &'static str {
        self.stream_text.clear();
        self.stream_reasoning.clear();
        self.stream_continued = false;
        let unprinted = self.take_back_streamed(self.streamed_cells);
        let printed = self.streamed_cells - unprinted;
        self.streamed_cells = 0;
        if printed > 0 {
            "the answer above broke off and was discarded; "
        } else {
            "the answer broke off and was discarded; "
        }
    }

    pub(super) fn finish_reasoning(&mut self) {
        if !self.stream_reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.stream_reasoning);
            self.last_reasoning = Some(text.clone());
            self.streamed_cells += 1;
            self.push_cell(Cell::Reasoning {
                text,
                expanded: false,
            });
        }
        self.stream_reasoning.clear();
    }

    /// The answer so far goes to the transcript.
    pub(super) fn finish_stream(&mut self) {
        self.finish_reasoning();
        if !self.stream_text.trim().is_empty() {
            let text = std::mem::take(&mut self.stream_text);
            self.streamed_cells += 1;
            self.push_cell(Cell::Assistant {
                text,
                continued: self.stream_continued,
            });
        }
        self.stream_text.clear();
        self.stream_continued = false;
    }

    /// Complete paragraphs of a streaming answer go to the transcript as
    /// they arrive, so the live area stays small however long the answer.
    pub(super) fn flush_stable_text(&mut self) {
        if let Some(cut) = stable_prefix(&self.stream_text) {
            let rest = self.stream_text.split_off(cut);
            let done = std::mem::replace(&mut self.stream_text, rest);
            if !done.trim().is_empty() {
                self.streamed_cells += 1;
                self.push_cell(Cell::Assistant {
                    text: done,
                    continued: self.stream_continued,
                });
                self.stream_continued = true;
            }
        }
    }

    /// Replay a stored session into the transcript (after /resume).
    pub fn replay(&mut self, messages: &[Message]) {
        let mut calls: Vec<(String, String, String)> = Vec::new();
        for m in messages {
            match m {
                Message::User { content, .. } if rein_core::is_harness_note(content) => {
                    self.push_cell(Cell::Notice {
                        text: harness_note_shown(content),
                    });
                }
                Message::User { content, .. } => self.push_cell(Cell::User {
                    text: skill_mentions::shown(content),
                }),
                Message::Assistant(a) => {
                    let text = a.text();
                    if !text.trim().is_empty() {
                        self.push_cell(Cell::Assistant {
                            text,
                            continued: false,
                        });
                    }
                    for c in a.tool_calls() {
                        calls.push((c.id.clone(), c.name.clone(), c.arguments.clone()));
                    }
                }
                Message::Tool(r) => {
                    let (name, arguments) = calls
                        .iter()
                        .find(|(id, _, _)| *id == r.call_id)
                        .map(|(_, n, a)| (n.clone(), a.clone()))
                        .unwrap_or_else(|| (r.name.clone(), String::new()));
                    self.push_cell(Cell::Tool {
                        call_id: r.call_id.clone(),
                        name,
                        arguments,
                        state: ToolState::Done {
                            duration_ms: 0,
                            is_error: r.is_error,
                            output: r.output.clone(),
                        },
                    });
                }
                _ => {}
            }
        }
    }
}

/// What a compaction did, as a notice: how many older messages went, how,
/// and the context's size before and after.
fn compaction_notice(
    summarized: bool,
    replaced_messages: u64,
    tokens_before: u64,
    tokens_after: u64,
    note: Option<String>,
) -> String {
    let how = if summarized { "summarised" } else { "dropped" };
    let note = note.map(|n| format!("; {n}")).unwrap_or_default();
    format!(
        "context compacted: {replaced_messages} older messages {how} (about {tokens_before} → {tokens_after} tokens){note}"
    )
}

/// rein's note to the model as a resumed transcript shows it: its first
/// line, as a notice (the whole note went to the model).
fn harness_note_shown(content: &str) -> String {
    let note = content.trim_start_matches(rein_core::HARNESS_NOTE);
    let first = note.lines().next().unwrap_or_default();
    format!("rein told the model: {first}")
}
