//! One ACP session: a stored rein session, the engine that runs its
//! prompts in its workspace, its permission mode, and the prompt running
//! now (one at a time), which `session/cancel` stops.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandsUpdate, ContentBlock, EmbeddedResourceResource,
    RequestPermissionRequest, SessionMode, SessionModeState, SessionNotification, SessionUpdate,
    StopReason as AcpStop,
};
use agent_client_protocol::{Client, Error as AcpError, ErrorCode};
use rein_core::{
    ApprovalReply, ApprovalRequest, CancellationToken, Event, EventSink, FnSink, PermissionMode,
    RunControl, RunRequest, StopReason,
};

use super::client_terminal::TerminalCalls;
use super::updates::Updates;
use super::{permission, transcript};
use crate::setup::command_context::LiveRun;
use crate::setup::prompt::Expanded;

/// The modes a client may switch a session to (bypass only when `rein
/// acp` itself was started in it: an editor's mode menu never turns the
/// sandbox off).
const MODES: [PermissionMode; 4] = [
    PermissionMode::Default,
    PermissionMode::AcceptEdits,
    PermissionMode::Plan,
    PermissionMode::Auto,
];

/// A session a client opened with `session/new` or `session/load`.
pub struct AcpSession {
    /// The stored session's id, which is also the ACP session id.
    pub id: String,
    pub workspace: PathBuf,
    /// The engine, its config and what keeps its tools alive.
    hosted: crate::hosting::Hosted,
    /// The mode of the next prompt (and of the running one, at its next
    /// turn).
    mode: Mutex<PermissionMode>,
    /// Whether `rein acp` was started in bypass mode.
    bypass_allowed: bool,
    /// Whether file writes go through the editor ([`super::client_fs`]).
    client_writes: bool,
    /// The calls shown in the editor's terminal, when bash runs there
    /// ([`super::client_terminal`]).
    terminal_calls: Option<Arc<TerminalCalls>>,
    running: Mutex<Option<Running>>,
}

/// The prompt running now.
struct Running {
    cancel: CancellationToken,
    control: RunControl,
}

/// What opening a session needs.
pub struct Opening {
    pub id: String,
    pub workspace: PathBuf,
    pub hosted: crate::hosting::Hosted,
    pub client_writes: bool,
    pub terminal_calls: Option<Arc<TerminalCalls>>,
}

impl AcpSession {
    pub fn new(o: Opening) -> AcpSession {
        AcpSession {
            id: o.id,
            workspace: o.workspace,
            bypass_allowed: o.hosted.mode == PermissionMode::Bypass,
            mode: Mutex::new(o.hosted.mode),
            hosted: o.hosted,
            client_writes: o.client_writes,
            terminal_calls: o.terminal_calls,
            running: Mutex::new(None),
        }
    }

    /// The modes offered, and the current one.
    pub fn modes(&self) -> SessionModeState {
        let mut modes: Vec<PermissionMode> = MODES.to_vec();
        if self.bypass_allowed {
            modes.push(PermissionMode::Bypass);
        }
        let available = modes
            .into_iter()
            .map(|m| SessionMode::new(m.as_str(), mode_name(m)).description(mode_help(m)))
            .collect();
        SessionModeState::new(self.mode().as_str(), available)
    }

    fn mode(&self) -> PermissionMode {
        *lock(&self.mode)
    }

    /// `session/set_mode`: the next prompt runs in `id`'s mode, and a
    /// running one switches at its next turn.
    pub fn set_mode(&self, id: &str) -> Result<(), AcpError> {
        let mode = id
            .parse::<PermissionMode>()
            .ok()
            .filter(|m| MODES.contains(m) || (self.bypass_allowed && *m == PermissionMode::Bypass))
            .ok_or_else(|| invalid(format!("`{id}` is not a mode of this session")))?;
        *lock(&self.mode) = mode;
        if let Some(running) = lock(&self.running).as_ref() {
            running.control.set_mode(mode);
        }
        Ok(())
    }

    /// `session/cancel`: stop the running prompt, if any.
    pub fn cancel(&self) {
        if let Some(running) = lock(&self.running).as_ref() {
            running.cancel.cancel();
        }
    }

    /// The project's custom commands, as the client's `/` menu.
    pub fn commands_update(&self) -> SessionUpdate {
        let commands = self
            .hosted
            .prompts
            .commands
            .commands()
            .iter()
            .map(|c| {
                let mut help = c.description.clone().unwrap_or_default();
                if let Some(hint) = &c.argument_hint {
                    help = format!("{help} {hint}").trim().to_string();
                }
                AvailableCommand::new(c.name.clone(), help)
            })
            .collect();
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
    }

    /// The stored conversation as updates (`session/load`).
    pub async fn replay(&self) -> Result<Vec<SessionUpdate>, AcpError> {
        let store = self.hosted.engine.store();
        let messages = store.messages(&self.id).await.map_err(internal)?;
        let todos = store.todos(&self.id).await.map_err(internal)?;
        Ok(transcript::replay(&self.workspace, &messages, &todos))
    }

    /// `session/prompt`, first half: the prompt's text and the session's
    /// one run slot, taken at once (in the order requests arrive, so a
    /// second prompt is refused, never the first).
    pub fn begin(self: &Arc<Self>, blocks: &[ContentBlock]) -> Result<Turn, AcpError> {
        let (typed, context) = self.prompt_text(blocks)?;
        let expanded = if typed.trim().is_empty() {
            Expanded {
                text: typed,
                command: None,
                notes: Vec::new(),
            }
        } else {
            self.hosted
                .prompts
                .commands
                .expand(&typed)
                .map_err(|e| invalid(e.to_string()))?
        };
        let cancel = CancellationToken::new();
        let control = RunControl::new();
        let mut running = lock(&self.running);
        if running.is_some() {
            return Err(invalid_request(
                "a prompt is already running in this session; cancel it first",
            ));
        }
        *running = Some(Running {
            cancel: cancel.clone(),
            control: control.clone(),
        });
        Ok(Turn {
            session: self.clone(),
            expanded,
            context,
            cancel,
            control,
        })
    }

    /// One event to the client: its updates, and a permission request for
    /// an approval.
    fn forward(&self, updates: &mut Updates, event: Event, client: &ConnectionTo<Client>) {
        if let Event::ModeChanged { mode } = &event {
            *lock(&self.mode) = *mode;
        }
        for update in updates.of(&event) {
            let note = SessionNotification::new(self.id.clone(), update);
            // A client gone away: the run ends when its stdin closes.
            let _ = client.send_notification(note);
        }
        if let Event::ApprovalRequired { request, reply } = event {
            ask(self.id.clone(), request, reply, client.clone());
        }
    }

    /// The prompt's typed text (its text blocks), and the embedded files
    /// and links that go after it once it is prepared.
    fn prompt_text(&self, blocks: &[ContentBlock]) -> Result<(String, String), AcpError> {
        let mut text = String::new();
        let mut context = String::new();
        for block in blocks {
            match block {
                ContentBlock::Text(t) => text.push_str(&t.text),
                ContentBlock::ResourceLink(link) => {
                    context.push_str(&format!("\n\nAttached: {}", link.uri));
                }
                ContentBlock::Resource(r) => match &r.resource {
                    EmbeddedResourceResource::TextResourceContents(file) => {
                        context.push_str(&format!(
                            "\n\nAttached {}:\n{}",
                            file.uri,
                            super::updates::fenced("", &file.text)
                        ));
                    }
                    _ => return Err(unsupported("binary resources")),
                },
                ContentBlock::Image(_) => return Err(unsupported("images")),
                ContentBlock::Audio(_) => return Err(unsupported("audio")),
                _ => return Err(unsupported("this kind of content")),
            }
        }
        if text.trim().is_empty() && context.is_empty() {
            return Err(invalid("the prompt is empty"));
        }
        Ok((text, context))
    }
}

/// A prompt holding its session's run slot; the slot is given back when
/// it is dropped, however the run ends.
pub struct Turn {
    session: Arc<AcpSession>,
    /// The typed text, its command expanded.
    expanded: Expanded,
    /// The embedded files and links, after the prepared text.
    context: String,
    cancel: CancellationToken,
    control: RunControl,
}

impl Turn {
    /// `session/prompt`, second half: run to the end, streaming the
    /// updates to the client and asking it for approvals.
    pub async fn run(self, client: &ConnectionTo<Client>) -> Result<AcpStop, AcpError> {
        let s = &self.session;
        // A command's `!` lines and `@path` files, through the gate (the
        // client is asked where a line needs approval).
        let (id, asked) = (s.id.clone(), client.clone());
        let live = LiveRun {
            engine: &s.hosted.engine,
            session_id: Some(&s.id),
            mode: s.mode(),
            events: Arc::new(move |event| {
                if let Event::ApprovalRequired { request, reply } = event {
                    ask(id.clone(), request, reply, asked.clone());
                }
            }),
            cancel: self.cancel.clone(),
        };
        // Its scope, and the skills and resources the typed text names;
        // what is embedded is the client's and attaches nothing.
        let prepared = (s.hosted.prompts.prepare(&self.expanded, &live).await)
            .map_err(|e| invalid(e.to_string()))?;
        let prompt = format!("{}{}", prepared.text, self.context);
        let request = RunRequest {
            prompt,
            images: Vec::new(),
            resume: Some(s.id.clone()),
            mode: Some(s.mode()),
            control: Some(self.control.clone()),
            scope: prepared.scope,
        };
        let notes = prepared.notes;
        let mut updates = Updates::new(&s.workspace)
            .writes_through_client(s.client_writes)
            .terminals(s.terminal_calls.clone());
        let mut observer = s.hosted.observer();
        let mut sink = FnSink(|event: Event| {
            crate::otel::observe(&mut observer, &event);
            s.forward(&mut updates, event, client)
        });
        for message in notes {
            sink.emit(Event::Notice { message });
        }
        let outcome = s
            .hosted
            .engine
            .run(request, self.cancel.clone(), &mut sink)
            .await;
        stop_reason(&outcome)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        *lock(&self.session.running) = None;
    }
}

/// Ask the client about one call, in the background (the run waits on
/// the reply, never the connection). No answer, an error or a dropped
/// connection denies.
fn ask(
    session: String,
    request: ApprovalRequest,
    reply: ApprovalReply,
    client: ConnectionTo<Client>,
) {
    tokio::spawn(async move {
        let question = RequestPermissionRequest::new(
            session,
            permission::tool_call(&request),
            permission::options(&request),
        );
        let decision = match client.send_request(question).block_task().await {
            Ok(answer) => permission::decision(&request, &answer.outcome),
            Err(_) => rein_core::ApprovalDecision::deny(),
        };
        reply.send(decision);
    });
}

/// The ACP stop reason of a run; failures are JSON-RPC errors with the
/// message.
fn stop_reason(outcome: &rein_core::RunOutcome) -> Result<AcpStop, AcpError> {
    Ok(match outcome.reason {
        StopReason::Completed
        | StopReason::MaxCost
        | StopReason::MaxWallTime
        | StopReason::Repetition
        | StopReason::HookStopped => AcpStop::EndTurn,
        StopReason::MaxTurns => AcpStop::MaxTurnRequests,
        StopReason::MaxTokens => AcpStop::MaxTokens,
        StopReason::Cancelled => AcpStop::Cancelled,
        _ => {
            let why = outcome
                .error
                .clone()
                .unwrap_or_else(|| "the run failed".into());
            return Err(AcpError::new(ErrorCode::INTERNAL_ERROR, why));
        }
    })
}

fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "Ask",
        PermissionMode::AcceptEdits => "Accept edits",
        PermissionMode::Plan => "Plan",
        PermissionMode::Auto => "Auto",
        PermissionMode::Bypass => "Bypass",
    }
}

fn mode_help(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "Reads run; edits and commands ask first",
        PermissionMode::AcceptEdits => "Edits run too; commands ask first",
        PermissionMode::Plan => "Read-only: the answer is a plan",
        PermissionMode::Auto => "Everything runs, commands inside the sandbox",
        PermissionMode::Bypass => "No sandbox and no checks",
    }
}

fn unsupported(what: &str) -> AcpError {
    invalid(format!("rein does not take {what} in a prompt"))
}

/// A store failure, as the client sees it.
pub fn internal(e: impl std::fmt::Display) -> AcpError {
    AcpError::new(ErrorCode::INTERNAL_ERROR, e.to_string())
}

/// A request with bad parameters, with the one line that says why.
pub fn invalid(why: impl Into<String>) -> AcpError {
    AcpError::new(ErrorCode::INVALID_PARAMS, why.into())
}

/// A request that cannot be served now.
pub fn invalid_request(why: impl Into<String>) -> AcpError {
    AcpError::new(ErrorCode::INVALID_REQUEST, why.into())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
