//! `RunState`: the open spans of one run (and of its sub-agents' runs),
//! moved along by its events.
//!
//! Spans: `invoke_agent {agent}` from `RunStarted` to `Stopped`; under it
//! `chat {model}` from `TurnStarted` to that turn's assistant message, and
//! `execute_tool {tool}` from `ToolStarted` to `ToolFinished` (or to
//! `PermissionDenied`), matched by call id. A sub-agent's run is a
//! `RunState` of its own whose `invoke_agent` span sits under the parent's
//! `execute_tool task` span.

use std::collections::HashMap;

use rein_core::{AssistantMessage, Message};
use rein_core::{Event, StopReason};

use crate::content;
use crate::metrics::{Instrument, Measurement};
use crate::proto::KeyValue;
use crate::proto::trace::SpanKind;
use crate::queue::{Item, Queue};
use crate::semconv as sc;
use crate::span::OpenSpan;

/// What a run's handling needs besides its own state.
pub(crate) struct Ctx<'a> {
    pub queue: &'a Queue,
    pub capture: bool,
}

impl Ctx<'_> {
    fn emit(&self, span: OpenSpan) {
        self.queue.push(Item::Span(span.end()));
    }

    fn measure(&self, instrument: Instrument, value: f64, attrs: Vec<(&'static str, String)>) {
        self.queue.push(Item::Measurement(Measurement::new(
            instrument, value, attrs,
        )));
    }
}

/// Where a run's `invoke_agent` span goes in its trace.
pub(crate) struct Placement<'a> {
    pub trace_id: [u8; 16],
    /// `None` for a top-level run.
    pub parent: Option<[u8; 8]>,
    pub agent: &'a str,
    /// A sub-agent's `agent_id` and task description.
    pub subagent: Option<(&'a str, &'a str)>,
}

struct ToolSpan {
    span: OpenSpan,
    name: String,
}

/// The open spans of a run.
pub(crate) struct RunState {
    trace_id: [u8; 16],
    invoke: OpenSpan,
    top_level: bool,
    provider: String,
    model: String,
    chat: Option<(OpenSpan, u32)>,
    tools: HashMap<String, ToolSpan>,
    /// Calls whose span a `PermissionDenied` ended; their `ToolFinished`
    /// is not counted twice.
    children: HashMap<String, RunState>,
    /// The user's messages, kept only when capture is on.
    prompts: Vec<String>,
}

impl std::fmt::Debug for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunState")
            .field("open_tools", &self.tools.len())
            .field("subagents", &self.children.len())
            .finish_non_exhaustive()
    }
}

impl RunState {
    /// A run that starts: its `invoke_agent` span opens.
    pub fn start(event: &Event, at: Placement<'_>, ctx: &Ctx<'_>) -> RunState {
        let (session, provider, model) = match event {
            Event::RunStarted {
                session_id,
                provider,
                model,
                ..
            } => (session_id.as_str(), provider.as_str(), model.as_str()),
            _ => ("", "", ""),
        };
        let mut state = RunState::open(at, provider, model, ctx);
        if !session.is_empty() {
            state
                .invoke
                .set(KeyValue::string(sc::CONVERSATION_ID, session));
        }
        state
    }

    fn open(at: Placement<'_>, provider: &str, model: &str, ctx: &Ctx<'_>) -> RunState {
        let name = format!("{} {}", sc::OP_INVOKE_AGENT, at.agent);
        let mut invoke = OpenSpan::start(at.trace_id, at.parent, name, SpanKind::Internal);
        invoke.set(KeyValue::string(sc::OPERATION_NAME, sc::OP_INVOKE_AGENT));
        invoke.set(KeyValue::string(sc::AGENT_NAME, at.agent));
        if !provider.is_empty() {
            invoke.set(KeyValue::string(sc::PROVIDER_NAME, provider));
        }
        if !model.is_empty() {
            invoke.set(KeyValue::string(sc::REQUEST_MODEL, model));
        }
        if let Some((id, description)) = at.subagent {
            invoke.set(KeyValue::string(sc::REIN_AGENT_ID, id));
            // The model wrote the task's description: it is content.
            if ctx.capture && !description.is_empty() {
                invoke.set(KeyValue::string(sc::AGENT_DESCRIPTION, description));
            }
        }
        RunState {
            trace_id: at.trace_id,
            invoke,
            top_level: at.parent.is_none(),
            provider: provider.to_string(),
            model: model.to_string(),
            chat: None,
            tools: HashMap::new(),
            children: HashMap::new(),
            prompts: Vec::new(),
        }
    }

    /// A `Stopped` with no `RunStarted` before it (the run failed before it
    /// had a session): one `invoke_agent` span that starts as it ends.
    pub fn stopped_before_start(stopped: &Event, at: Placement<'_>, ctx: &Ctx<'_>) {
        RunState::open(at, "", "", ctx).stop(stopped, ctx);
    }

    /// Move the run along by one of its events (never `Stopped`: the owner
    /// calls `stop` with it, which consumes the state).
    pub fn observe(&mut self, event: &Event, ctx: &Ctx<'_>) {
        match event {
            Event::TurnStarted { turn } => {
                if let Some((chat, retries)) = self.chat.take() {
                    // A turn that never answered; the next one has begun.
                    self.end_chat(chat, retries, None, ctx);
                }
                let name = format!("{} {}", sc::OP_CHAT, self.model);
                let mut chat = OpenSpan::start(
                    self.trace_id,
                    Some(self.invoke.id()),
                    name,
                    SpanKind::Client,
                );
                chat.set(KeyValue::string(sc::OPERATION_NAME, sc::OP_CHAT));
                chat.set(KeyValue::string(sc::PROVIDER_NAME, self.provider.as_str()));
                chat.set(KeyValue::string(sc::REQUEST_MODEL, self.model.as_str()));
                chat.set(KeyValue::int(sc::REIN_TURN, u64::from(*turn)));
                self.chat = Some((chat, 0));
            }
            Event::Retry { .. } => {
                if let Some((_, retries)) = &mut self.chat {
                    *retries += 1;
                }
            }
            Event::MessageCommitted { message, .. } => match message {
                Message::User { content, .. } if ctx.capture => self.prompts.push(content.clone()),
                Message::Assistant(answer) => {
                    if let Some((chat, retries)) = self.chat.take() {
                        self.end_chat(chat, retries, Some(answer), ctx);
                    }
                }
                _ => {}
            },
            Event::ToolStarted {
                call_id,
                name,
                arguments,
            } => {
                let name = shown_tool_name(name, ctx.capture);
                let title = format!("{} {}", sc::OP_EXECUTE_TOOL, name);
                let mut span = OpenSpan::start(
                    self.trace_id,
                    Some(self.invoke.id()),
                    title,
                    SpanKind::Internal,
                );
                span.set(KeyValue::string(sc::OPERATION_NAME, sc::OP_EXECUTE_TOOL));
                span.set(KeyValue::string(sc::TOOL_NAME, name.as_str()));
                span.set(KeyValue::string(sc::TOOL_CALL_ID, call_id.as_str()));
                if ctx.capture {
                    span.set(KeyValue::string(
                        sc::TOOL_CALL_ARGUMENTS,
                        arguments.as_str(),
                    ));
                }
                let tool = ToolSpan { span, name };
                if let Some(old) = self.tools.insert(call_id.clone(), tool) {
                    // The same id twice: the first call's span ends here.
                    self.end_tool(old, None, ctx);
                }
            }
            Event::ToolFinished {
                call_id,
                duration_ms,
                is_error,
                output_preview,
                ..
            } => {
                let Some(mut tool) = self.tools.remove(call_id) else {
                    return;
                };
                if *is_error {
                    let message = if ctx.capture {
                        output_preview.clone()
                    } else {
                        "the tool reported an error".to_string()
                    };
                    tool.span.fail("tool_error", message);
                } else if ctx.capture {
                    tool.span.set(KeyValue::string(
                        sc::TOOL_CALL_RESULT,
                        output_preview.as_str(),
                    ));
                }
                self.end_tool(tool, Some(*duration_ms as f64 / 1000.0), ctx);
            }
            Event::PermissionDenied {
                call_id,
                why,
                needed_approval,
                ..
            } => {
                let Some(mut tool) = self.tools.remove(call_id) else {
                    return;
                };
                let message = match (ctx.capture, *needed_approval) {
                    (true, _) => why.clone(),
                    (false, true) => "refused: it needed an approval nobody could give".to_string(),
                    (false, false) => "refused by a rule or a protection".to_string(),
                };
                tool.span.fail("permission_denied", message);
                self.end_tool(tool, None, ctx);
            }
            Event::Subagent {
                agent_id,
                agent,
                description,
                call_id,
                event,
            } => self.observe_subagent(agent_id, agent, description, call_id, event, ctx),
            _ => {}
        }
    }

    fn observe_subagent(
        &mut self,
        agent_id: &str,
        agent: &str,
        description: &str,
        call_id: &str,
        event: &Event,
        ctx: &Ctx<'_>,
    ) {
        let placement = || Placement {
            trace_id: self.trace_id,
            // Under the `task` call that started it, else under this run.
            parent: Some(
                self.tools
                    .get(call_id)
                    .map_or(self.invoke.id(), |t| t.span.id()),
            ),
            agent,
            subagent: Some((agent_id, description)),
        };
        match event {
            Event::RunStarted { .. } => {
                let child = RunState::start(event, placement(), ctx);
                if let Some(old) = self.children.insert(agent_id.to_string(), child) {
                    old.abandon("the sub-agent started again", ctx);
                }
            }
            Event::Stopped { .. } => match self.children.remove(agent_id) {
                Some(child) => child.stop(event, ctx),
                None => RunState::stopped_before_start(event, placement(), ctx),
            },
            _ => {
                if let Some(child) = self.children.get_mut(agent_id) {
                    child.observe(event, ctx);
                }
            }
        }
    }

    fn end_chat(
        &self,
        mut chat: OpenSpan,
        retries: u32,
        answer: Option<&AssistantMessage>,
        ctx: &Ctx<'_>,
    ) {
        if retries > 0 {
            chat.set(KeyValue::int(sc::REIN_RETRIES, u64::from(retries)));
        }
        let base = vec![
            (sc::OPERATION_NAME, sc::OP_CHAT.to_string()),
            (sc::PROVIDER_NAME, self.provider.clone()),
            (sc::REQUEST_MODEL, self.model.clone()),
        ];
        if let Some(answer) = answer {
            if let Some(u) = &answer.usage {
                chat.set(KeyValue::int(sc::USAGE_INPUT_TOKENS, u.input_tokens));
                chat.set(KeyValue::int(sc::USAGE_OUTPUT_TOKENS, u.output_tokens));
                chat.set(KeyValue::int(
                    sc::USAGE_CACHE_READ_INPUT_TOKENS,
                    u.cached_input_tokens,
                ));
                chat.set(KeyValue::int(
                    sc::USAGE_REASONING_OUTPUT_TOKENS,
                    u.reasoning_tokens,
                ));
                for (kind, n) in [("input", u.input_tokens), ("output", u.output_tokens)] {
                    let mut attrs = base.clone();
                    attrs.push((sc::TOKEN_TYPE, kind.to_string()));
                    ctx.measure(Instrument::TokenUsage, n as f64, attrs);
                }
            }
            if let Some(reason) = &answer.finish {
                chat.set(KeyValue::strings(
                    sc::RESPONSE_FINISH_REASONS,
                    [content::finish_reason(reason)],
                ));
            }
            if ctx.capture {
                chat.set(KeyValue::string(
                    sc::OUTPUT_MESSAGES,
                    content::assistant_message(answer),
                ));
            }
        }
        let mut attrs = base;
        if let Some(error) = chat.error_type() {
            attrs.push((sc::ERROR_TYPE, error));
        }
        ctx.measure(Instrument::OperationDuration, chat.elapsed_seconds(), attrs);
        ctx.emit(chat);
    }

    /// End a tool's span and record its metrics; `seconds` is the tool's
    /// own measure when the event gave one.
    fn end_tool(&self, tool: ToolSpan, seconds: Option<f64>, ctx: &Ctx<'_>) {
        let mut attrs = vec![(sc::TOOL_NAME, tool.name)];
        if let Some(error) = tool.span.error_type() {
            attrs.push((sc::ERROR_TYPE, error));
            ctx.measure(Instrument::ToolErrors, 1.0, attrs.clone());
        }
        let seconds = seconds.unwrap_or_else(|| tool.span.elapsed_seconds());
        ctx.measure(Instrument::ToolDuration, seconds, attrs);
        ctx.emit(tool.span);
    }

    /// The run stopped: everything still open ends, then the run's span
    /// with its totals.
    pub fn stop(mut self, stopped: &Event, ctx: &Ctx<'_>) {
        let Event::Stopped {
            reason,
            turns,
            final_text,
            error,
            totals,
            ..
        } = stopped
        else {
            return;
        };
        let failure = matches!(
            reason,
            StopReason::ProviderError | StopReason::HarnessError | StopReason::UsageError
        );
        // A provider's error may echo the prompt: its text is content.
        let message = match error.as_deref() {
            Some(e) if ctx.capture => rein_core::text::one_line(e, 500),
            Some(_) => format!("the run stopped: {}", reason.as_str()),
            None => String::new(),
        };
        if let Some((mut chat, retries)) = self.chat.take() {
            if failure || *reason == StopReason::Cancelled {
                chat.fail(reason.as_str(), message.clone());
            }
            self.end_chat(chat, retries, None, ctx);
        }
        let open_error = match reason {
            StopReason::Completed => "unfinished",
            other => other.as_str(),
        };
        self.end_open(open_error, ctx);
        let invoke = &mut self.invoke;
        invoke.set(KeyValue::string(sc::REIN_STOP_REASON, reason.as_str()));
        invoke.set(KeyValue::int("rein.turns", u64::from(*turns)));
        invoke.set(KeyValue::int(sc::USAGE_INPUT_TOKENS, totals.input_tokens));
        invoke.set(KeyValue::int(sc::USAGE_OUTPUT_TOKENS, totals.output_tokens));
        invoke.set(KeyValue::int(
            sc::USAGE_CACHE_READ_INPUT_TOKENS,
            totals.cached_input_tokens,
        ));
        invoke.set(KeyValue::int(
            sc::USAGE_REASONING_OUTPUT_TOKENS,
            totals.reasoning_tokens,
        ));
        if let Some(cost) = totals.cost_usd {
            invoke.set(KeyValue::double(sc::REIN_COST_USD, cost));
        }
        if failure {
            invoke.fail(reason.as_str(), message);
        }
        if ctx.capture {
            if !self.prompts.is_empty() {
                invoke.set(KeyValue::string(
                    sc::INPUT_MESSAGES,
                    content::user_messages(&self.prompts),
                ));
            }
            if !final_text.is_empty() {
                invoke.set(KeyValue::string(
                    sc::OUTPUT_MESSAGES,
                    content::final_answer(final_text),
                ));
            }
        }
        // A sub-agent's calls are in its parent's ledger too: only a
        // top-level run's cost is counted.
        if self.top_level && totals.calls > 0 {
            let attrs = vec![
                (sc::PROVIDER_NAME, self.provider.clone()),
                (sc::REQUEST_MODEL, self.model.clone()),
            ];
            ctx.measure(Instrument::Cost, totals.known_cost_usd, attrs);
        }
        ctx.emit(self.invoke);
    }

    /// The run will say no more (its observer is dropped, or it started
    /// over): everything ends, failed as `unfinished`.
    pub fn abandon(mut self, why: &str, ctx: &Ctx<'_>) {
        if let Some((mut chat, retries)) = self.chat.take() {
            chat.fail("unfinished", why);
            self.end_chat(chat, retries, None, ctx);
        }
        self.end_open("unfinished", ctx);
        self.invoke.fail("unfinished", why);
        ctx.emit(self.invoke);
    }

    /// End the tools and sub-agents still open when the run ends.
    fn end_open(&mut self, error_type: &str, ctx: &Ctx<'_>) {
        for (_, child) in self.children.drain() {
            child.abandon("its parent run ended first", ctx);
        }
        let mut tools: Vec<ToolSpan> = self.tools.drain().map(|(_, t)| t).collect();
        tools.sort_by_key(|t| t.span.id());
        for mut tool in tools {
            tool.span
                .fail(error_type, "the run ended before the call did");
            self.end_tool(tool, None, ctx);
        }
    }
}

/// The tool name spans and metrics carry: a built-in tool's own; an MCP
/// tool's (`mcp__server__tool`, both parts chosen by whoever wrote the
/// server or its configuration) only with capture on, else `mcp`.
fn shown_tool_name(name: &str, capture: bool) -> String {
    if capture || !name.starts_with("mcp__") {
        name.to_string()
    } else {
        "mcp".to_string()
    }
}
