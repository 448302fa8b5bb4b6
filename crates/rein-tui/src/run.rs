//! The event loop: terminal keys, engine events and a spinner tick in; runs
//! started, cancelled and steered out.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use crossterm::event::{Event as TermEvent, EventStream};
use futures_util::StreamExt;
use rein_core::{
    AgentEngine, CancellationToken, Event, EventSink, RunControl, RunRequest, SessionStore,
};
use tokio::sync::mpsc;

use crate::app::{Action, App, Status};
use crate::cells::Cell;
use crate::history::InputHistory;
use crate::render;
use crate::screen::{self, Screen};
use crate::theme::Theme;

mod log;
mod paint;
mod reports;
mod rewind;
mod servers;
mod session_hooks;
mod sessions;
mod setup;
pub mod status_command;
mod watch;

use log::{LogRedirect, RENDERING, restore_stderr};
use paint::{paint, redraw_all};
use reports::{refresh_context, refresh_cost, show_context, show_cost};
pub use servers::StatusLines;
use sessions::{resume, spawn_title};
pub use setup::{
    CommandText, ExpandCommand, McpFuture, McpPrompt, McpView, Prepare, PreparedPrompt, PromptCall,
    ProviderFactory, RunWatcher, Setup, WatchRuns,
};
use watch::WatchedSink;

struct Running {
    cancel: CancellationToken,
    control: RunControl,
}

/// Things finished off the loop.
enum Side {
    Compacted(Result<bool, String>),
    Title,
    /// A server's prompt fetched for `/mcp__...` (the command, the text).
    McpPrompt(String, Result<String, String>),
    /// A session's checkpoints, for the rewind picker.
    Checkpoints(String, anyhow::Result<Vec<crate::rewind::CheckpointRow>>),
    /// What a rewind did.
    Rewound(crate::rewind::RewindRequest, rewind::RewindResult),
    /// A message was not sent: why (its run never started).
    NotSent(String),
}

/// The app needs a terminal on stdin and stdout; the error says what to
/// use instead.
pub fn check_terminal() -> Result<(), String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err(
            "the interactive app needs a terminal; use `rein exec \"task\"` for scripts and pipes"
                .into(),
        )
    }
}

/// Run the app until the user quits. The terminal is restored on every
/// way out, panics included. Returns the session the app was on, if any
/// (for the caller to say how to resume it).
pub async fn run(setup: Setup) -> anyhow::Result<Option<String>> {
    check_terminal().map_err(|e| anyhow!(e))?;
    let log = LogRedirect::start(&setup.home).context("cannot open the log file")?;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        screen::restore();
        // A panic caught in a render path is logged; any other one ends
        // the app, so its message goes to the real terminal too.
        if !RENDERING.load(std::sync::atomic::Ordering::SeqCst) {
            restore_stderr();
        }
        hook(info);
    }));
    let result = event_loop(setup).await;
    screen::restore();
    let _ = std::panic::take_hook();
    drop(log);
    result
}

/// Everything the loop keeps: the app's state, the engine it drives, and
/// the channels runs and side tasks report on.
struct Loop {
    app: App,
    engine: AgentEngine,
    store: Arc<dyn SessionStore>,
    providers: ProviderFactory,
    model_choices: Vec<String>,
    /// Events of every run and compaction, in order.
    events_tx: mpsc::UnboundedSender<Event>,
    side_tx: mpsc::UnboundedSender<Side>,
    running: Option<Running>,
    /// The current session already has (or asked for) a model title.
    titled: bool,
    /// `/mcp`'s and `/lsp`'s lines.
    servers: servers::ServerViews,
    /// Prepares each message as every front end does.
    prepare: Option<Prepare>,
    mcp_prompt: Option<McpPrompt>,
    /// When the `Notification` hooks hear that the app waits for the
    /// user (set when a run ends, cleared by a key).
    idle_at: Option<tokio::time::Instant>,
    /// How long after a run that is.
    idle_notify: Duration,
    rewind: Option<crate::rewind::RewindView>,
    /// Makes the watcher of each run (telemetry), when one is set.
    watch_runs: Option<WatchRuns>,
}

async fn event_loop(mut setup: Setup) -> anyhow::Result<Option<String>> {
    let (events_tx, mut events) = mpsc::unbounded_channel::<Event>();
    let (side_tx, mut side) = mpsc::unbounded_channel::<Side>();
    let alternate_screen = setup.alternate_screen;
    let prompt = setup.prompt.take();
    let mut mcp_notes = setup.mcp.as_mut().map(|m| {
        let (_, empty) = mpsc::unbounded_channel();
        std::mem::replace(&mut m.notes, empty)
    });
    let mut mcp_forms = setup.mcp.as_mut().map(|m| {
        let (_, empty) = mpsc::unbounded_channel();
        std::mem::replace(&mut m.forms, empty)
    });
    let mut notes = setup.notes.take();
    let (mut status_cmd, mut status_lines) = match setup.status_command.take() {
        Some(spec) => {
            let (runner, rx) = status_command::StatusRunner::new(spec, setup.engine.workspace());
            (Some(runner), Some(rx))
        }
        None => (None, None),
    };
    let mut lp = Loop::start(setup, events_tx, side_tx).await;
    let mut screen = Screen::start(render::MIN_HEIGHT, alternate_screen)?;
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(90));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // A terminal that closes (SIGHUP) or a kill (SIGTERM) ends the app the
    // clean way: the run is cancelled and the terminal restored.
    use tokio::signal::unix::{SignalKind, signal};
    let mut term_sig = signal(SignalKind::terminate()).ok();
    let mut hup_sig = signal(SignalKind::hangup()).ok();
    if let Some(prompt) = prompt {
        for action in lp.app.send(&prompt) {
            lp.apply(action).await;
        }
    }

    loop {
        if let Some(r) = &mut status_cmd {
            r.poll(&lp.app);
        }
        let status_wake = status_cmd.as_ref().and_then(|r| r.wake_at(&lp.app));
        paint(&mut lp.app, &mut screen)?;
        let actions = tokio::select! {
            k = keys.next() => match k {
                Some(Ok(key)) => lp.on_terminal(key, &mut screen)?,
                Some(Err(e)) => return Err(anyhow!("cannot read the terminal: {e}")),
                None => break,
            },
            Some(ev) = events.recv() => lp.on_engine_events(ev, &mut events).await,
            Some(s) = side.recv() => lp.on_side(s).await,
            Some(note) = next_note(&mut mcp_notes) => {
                lp.app.notice(note);
                Vec::new()
            }
            Some(note) = next_note(&mut notes) => {
                lp.app.notice(note);
                Vec::new()
            }
            Some(form) = next_note(&mut mcp_forms) => {
                lp.app.show_form(form);
                Vec::new()
            }
            _ = tick.tick(), if lp.app.animating() || lp.app.hint.is_some() => {
                lp.app.on_tick();
                Vec::new()
            }
            _ = session_hooks::until(lp.idle_at), if lp.idle_at.is_some() => lp.idle(),
            Some(line) = next_note(&mut status_lines) => {
                if let Some(r) = &mut status_cmd {
                    r.done();
                }
                lp.app.custom_status = line;
                Vec::new()
            }
            _ = session_hooks::until(status_wake), if status_wake.is_some() => Vec::new(),
            _ = session_hooks::next_signal(&mut term_sig) => lp.quit(),
            _ = session_hooks::next_signal(&mut hup_sig) => lp.quit(),
        };
        for action in actions {
            lp.apply(action).await;
        }
        if lp.app.should_quit {
            lp.stop_running(&mut events).await;
            if let Some(id) = lp.app.status.session_id.clone() {
                lp.end_session(&id, rein_core::EndReason::PromptInputExit)
                    .await;
            }
            break;
        }
    }
    paint(&mut lp.app, &mut screen)?;
    screen.finish();
    Ok(lp.app.status.session_id.clone())
}

/// The next note (an MCP server's, telemetry's) or form, or never when
/// nothing sends any.
async fn next_note<T>(notes: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match notes {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

impl Loop {
    /// The app as it opens: status, notices, the resumed session, the
    /// welcome line.
    async fn start(
        mut setup: Setup,
        events_tx: mpsc::UnboundedSender<Event>,
        side_tx: mpsc::UnboundedSender<Side>,
    ) -> Loop {
        let engine = setup.engine.clone();
        let workspace = engine.workspace().to_path_buf();
        let provider = engine.provider();
        let status = Status {
            provider: provider.name().to_string(),
            model: provider.model().to_string(),
            mode: setup.mode,
            context_window: provider.capabilities().context_window,
            unpriced: provider.pricing().is_none(),
            ..Default::default()
        };
        let history = InputHistory::load(setup.home.join("history.jsonl"));
        let mut app = App::new(Theme::detect(), workspace.clone(), history, status);
        app.commands = std::mem::take(&mut setup.commands);
        app.expand_command = setup.expand_command.take();
        app.skills = std::mem::take(&mut setup.skills);
        app.plugins = std::mem::take(&mut setup.plugins);
        for n in &setup.notices {
            app.notice(n.clone());
        }
        let store = engine.store().clone();
        if let Some(id) = &setup.resume {
            resume(&mut app, &engine, id).await;
        }
        app.push_cell(Cell::Info {
            title: format!("rein · {}", workspace.display()),
            lines: vec![
                "Enter sends · Shift+Enter or Ctrl+J new line · Esc cancels · Shift+Tab mode · /help"
                    .into(),
            ],
        });
        Loop {
            app,
            engine,
            store,
            providers: setup.providers,
            model_choices: setup.model_choices,
            events_tx,
            side_tx,
            running: None,
            titled: false,
            prepare: setup.prepare.take(),
            mcp_prompt: setup.mcp.as_ref().map(|m| m.prompt.clone()),
            servers: servers::ServerViews {
                mcp_status: setup.mcp.map(|m| m.status),
                mcp_not_started: setup.mcp_not_started,
                lsp_status: setup.lsp_status,
            },
            idle_at: None,
            idle_notify: setup.idle_notify,
            rewind: setup.rewind,
            watch_runs: setup.watch_runs,
        }
    }

    /// A key, a paste or a resize. Ctrl+Z hands the terminal to the shell
    /// and comes back.
    fn on_terminal(
        &mut self,
        event: TermEvent,
        screen: &mut Screen,
    ) -> anyhow::Result<Vec<Action>> {
        use crossterm::event::{KeyCode, KeyModifiers};
        // The user is here: no idle notification.
        self.idle_at = None;
        match event {
            TermEvent::Key(key)
                if key.code == KeyCode::Char('z')
                    && key.modifiers.contains(KeyModifiers::CONTROL) =>
            {
                screen::restore();
                // SAFETY: raising a signal on our own process.
                unsafe {
                    libc::raise(libc::SIGTSTP);
                }
                screen.resume()?;
                redraw_all(&self.app, screen)?;
            }
            TermEvent::Key(key) => return Ok(self.app.on_key(key)),
            TermEvent::Paste(text) => self.app.on_paste(&text),
            TermEvent::Resize(_, _) => redraw_all(&self.app, screen)?,
            _ => {}
        }
        Ok(Vec::new())
    }

    /// An engine event, and what else is waiting: one frame for a burst of
    /// deltas, so keys never wait behind frames.
    async fn on_engine_events(
        &mut self,
        first: Event,
        events: &mut mpsc::UnboundedReceiver<Event>,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        let mut next = Some(first);
        let mut batch = 0;
        while let Some(ev) = next.take() {
            if let Event::RunStarted {
                session_id,
                resumed: false,
                ..
            } = &ev
                && !self.titled
            {
                self.titled = true;
                spawn_title(&self.engine, session_id.clone(), self.side_tx.clone());
            }
            let stopped = matches!(ev, Event::Stopped { .. });
            actions.extend(self.app.on_event(ev));
            if stopped {
                self.running = None;
                self.idle_at = Some(tokio::time::Instant::now() + self.idle_notify);
                refresh_cost(&mut self.app, self.store.as_ref()).await;
            }
            batch += 1;
            if batch < 512 && !matches!(actions.last(), Some(Action::Submit(_))) {
                next = events.try_recv().ok();
            }
        }
        actions
    }

    /// A side task finished.
    async fn on_side(&mut self, side: Side) -> Vec<Action> {
        match side {
            Side::NotSent(why) => {
                self.running = None;
                self.app.error(why);
                self.app.busy_done()
            }
            Side::Compacted(r) => {
                let actions = self.app.busy_done();
                match r {
                    Ok(true) => refresh_context(&mut self.app, &self.engine).await,
                    Ok(false) => self.app.notice(
                        "nothing to compact: the session has no turns older than the ones kept",
                    ),
                    Err(e) => self.app.error(format!("/compact: {e}")),
                }
                actions
            }
            Side::Title => {
                refresh_cost(&mut self.app, self.store.as_ref()).await;
                Vec::new()
            }
            Side::McpPrompt(command, Ok(text)) => {
                self.app
                    .notice(format!("{command}: sending the server's prompt"));
                self.app.send_message(text)
            }
            Side::McpPrompt(command, Err(e)) => {
                self.app.error(format!("{command}: {e}"));
                Vec::new()
            }
            Side::Checkpoints(session, rows) => self.checkpoints_loaded(session, rows),
            Side::Rewound(request, result) => self.rewound(request, result).await,
        }
    }

    fn quit(&mut self) -> Vec<Action> {
        self.app.should_quit = true;
        Vec::new()
    }

    /// Do what the app asked for.
    async fn apply(&mut self, action: Action) {
        match action {
            Action::Quit => {}
            Action::Submit(prompt) => self.start_run(prompt),
            Action::Queue(text) => {
                // With no run left, the app sends what is queued as the
                // next run when it sees the run's end.
                if let Some(r) = &self.running {
                    r.control.queue(text);
                }
            }
            Action::Cancel => {
                if let Some(r) = &self.running {
                    r.cancel.cancel();
                }
            }
            Action::SetMode(mode) => {
                if let Some(r) = &self.running {
                    r.control.set_mode(mode);
                }
            }
            Action::NewSession { ended } => {
                if let Some(id) = ended {
                    self.end_session(&id, rein_core::EndReason::Clear).await;
                }
                self.titled = false;
                self.app.notice("new session: the next message starts it");
            }
            Action::LoadSessions => {
                let ws = self.engine.workspace().display().to_string();
                match self.store.list_sessions(Some(&ws), 50).await {
                    Ok(list) => self.app.open_resume(list),
                    Err(e) => self.app.error(format!("cannot list sessions: {e}")),
                }
            }
            Action::Resume(id) => resume(&mut self.app, &self.engine, &id).await,
            Action::Compact => self.compact(),
            Action::SwitchModel(name) => self.switch_model(name),
            Action::ShowCost => show_cost(&mut self.app, self.store.as_ref()).await,
            Action::ShowContext => show_context(&mut self.app, &self.engine).await,
            Action::McpPrompt { command, args } => {
                let Some(prompt) = self.mcp_prompt.clone() else {
                    self.app
                        .error(format!("{command}: no MCP servers configured"));
                    return;
                };
                let side_tx = self.side_tx.clone();
                tokio::spawn(async move {
                    let text = prompt(command.clone(), args).await;
                    let _ = side_tx.send(Side::McpPrompt(command, text));
                });
            }
            Action::LoadCheckpoints { session } => self.load_checkpoints(session),
            Action::Rewind(request) => self.start_rewind(request),
            Action::ShowMcp => self.app.push_cell(Cell::Info {
                title: "MCP servers".into(),
                lines: self.servers.mcp(),
            }),
            Action::ShowLsp => self.app.push_cell(Cell::Info {
                title: "Language servers".into(),
                lines: self.servers.lsp(),
            }),
        }
    }

    /// Start a run of `prompt` in the current session (or a new one): it
    /// is prepared first, as in every front end (a command's context
    /// lines, whose approvals reach the modal; its files, tools and
    /// model; the skills and resources it names).
    fn start_run(&mut self, prompt: String) {
        let cancel = CancellationToken::new();
        let control = RunControl::new();
        let mode = self.app.status.mode;
        let request = RunRequest {
            prompt,
            images: Vec::new(),
            resume: self.app.status.session_id.clone(),
            mode: Some(mode),
            control: Some(control.clone()),
            scope: Default::default(),
        };
        let engine = self.engine.clone();
        // The run's events go to the app, seen first by its watcher.
        let mut sink = WatchedSink::new(self.events_tx.clone(), self.watch_runs.as_ref());
        let (run_cancel, prepare) = (cancel.clone(), self.prepare.clone());
        let (events_tx, side_tx) = (self.events_tx.clone(), self.side_tx.clone());
        tokio::spawn(async move {
            let mut request = request;
            if let Some(prepare) = prepare {
                let call = PromptCall {
                    text: std::mem::take(&mut request.prompt),
                    session_id: request.resume.clone(),
                    mode,
                    events: Arc::new(move |event| {
                        let _ = events_tx.send(event);
                    }),
                    cancel: run_cancel.clone(),
                };
                match prepare(call).await {
                    Ok(prepared) => {
                        for message in prepared.notes {
                            sink.emit(Event::Notice { message });
                        }
                        request.prompt = prepared.text;
                        request.scope = prepared.scope;
                        request.images = prepared.images;
                        request.resume = prepared.session.or(request.resume);
                    }
                    Err(why) => {
                        let _ = side_tx.send(Side::NotSent(why));
                        return;
                    }
                }
            }
            engine.run(request, run_cancel, &mut sink).await;
        });
        self.running = Some(Running { cancel, control });
    }

    /// `/compact`: summarise the session's older turns in the background.
    fn compact(&mut self) {
        let Some(id) = self.app.status.session_id.clone() else {
            return;
        };
        self.app.notice("compacting…");
        let engine = self.engine.clone();
        let mut sink = self.events_tx.clone();
        let side_tx = self.side_tx.clone();
        tokio::spawn(async move {
            let r = engine
                .compact_session(&id, CancellationToken::new(), &mut sink)
                .await
                .map_err(|e| e.to_string());
            let _ = side_tx.send(Side::Compacted(r));
        });
    }

    /// `/model [NAME]`: show the model, or switch to another from the next
    /// turn (the engine is shared, so a running run moves at its next turn).
    fn switch_model(&mut self, name: Option<String>) {
        let app = &mut self.app;
        let Some(name) = name else {
            let mut text = format!(
                "model: {} ({}) · switch with /model NAME",
                app.status.model, app.status.provider
            );
            for choice in &self.model_choices {
                text.push_str("\n  ");
                text.push_str(choice);
            }
            app.notice(text);
            return;
        };
        match (self.providers)(&name) {
            Ok(provider) => {
                self.engine.set_provider(provider.clone());
                app.status.model = provider.model().to_string();
                app.status.provider = provider.name().to_string();
                app.status.context_window = provider.capabilities().context_window;
                app.status.unpriced = provider.pricing().is_none();
                app.notice(format!(
                    "model: {} ({}) from the next turn",
                    app.status.model, app.status.provider
                ));
            }
            Err(e) => app.error(format!("/model {name}: {e:#}")),
        }
    }

    /// On quit: cancel the run and wait (bounded) for it to stop, so what
    /// it produced is stored and its commands are killed before the
    /// process goes.
    async fn stop_running(&mut self, events: &mut mpsc::UnboundedReceiver<Event>) {
        let Some(r) = self.running.take() else {
            return;
        };
        r.cancel.cancel();
        let deadline = tokio::time::Instant::now() + QUIT_WAIT;
        while let Ok(Some(ev)) = tokio::time::timeout_at(deadline, events.recv()).await {
            let stopped = matches!(ev, Event::Stopped { .. });
            self.app.on_event(ev);
            if stopped {
                break;
            }
        }
    }
}

/// How long quitting waits for a cancelled run to stop.
const QUIT_WAIT: Duration = Duration::from_secs(5);
