//! The event loop: terminal keys, engine events and a spinner tick in; runs
//! started, cancelled and steered out.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use crossterm::event::{Event as TermEvent, EventStream};
use futures_util::StreamExt;
use rein_core::{
    AgentEngine, CancellationToken, Event, Message, PermissionMode, RunControl, RunRequest,
    SessionStore,
};
use tokio::sync::mpsc;

use crate::app::{Action, App, Status};
use crate::cells::Cell;
use crate::history::InputHistory;
use crate::render;
use crate::screen::{self, Screen};
use crate::theme::Theme;

/// Builds the provider `/model TEXT` names.
pub type ProviderFactory =
    Box<dyn Fn(&str) -> anyhow::Result<Arc<dyn rein_core::Provider>> + Send + Sync>;

/// What the `rein` command hands the app.
pub struct Setup {
    /// `$REIN_HOME`: input history and logs live here.
    pub home: PathBuf,
    /// The engine every run of the app uses (built with
    /// `Approvals::Events`, so approvals reach the modal); its workspace
    /// and session store are the app's.
    pub engine: AgentEngine,
    pub providers: ProviderFactory,
    pub mode: PermissionMode,
    /// Continue this session at start.
    pub resume: Option<String>,
    /// Lines to show first (sandbox notes and the like).
    pub notices: Vec<String>,
    /// Draw on the alternate screen instead of inline.
    pub alternate_screen: bool,
}

struct Running {
    cancel: CancellationToken,
    control: RunControl,
}

/// Things finished off the loop.
enum Side {
    Compacted(Result<bool, String>),
    Title,
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
/// way out, panics included.
pub async fn run(setup: Setup) -> anyhow::Result<()> {
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

async fn event_loop(setup: Setup) -> anyhow::Result<()> {
    let theme = Theme::detect();
    let history = InputHistory::load(setup.home.join("history.jsonl"));
    let engine = setup.engine.clone();
    let store = engine.store().clone();
    let workspace = engine.workspace().to_path_buf();
    let provider = engine.provider();
    let status = Status {
        provider: provider.name().to_string(),
        model: provider.model().to_string(),
        mode: setup.mode,
        cost_known: true,
        context_window: provider.capabilities().context_window,
        ..Default::default()
    };
    let mut app = App::new(theme, workspace.clone(), history, status);
    let (tx, mut events) = mpsc::unbounded_channel::<Event>();
    let (side_tx, mut side) = mpsc::unbounded_channel::<Side>();
    let mut running: Option<Running> = None;
    let mut titled = false;

    for n in &setup.notices {
        app.notice(n.clone());
    }
    if let Some(id) = &setup.resume {
        resume(&mut app, store.as_ref(), id).await;
    }
    app.push_cell(Cell::Info {
        title: format!("rein · {}", workspace.display()),
        lines: vec![
            "Enter sends · Shift+Enter or Ctrl+J new line · Esc cancels · Shift+Tab mode · /help"
                .into(),
        ],
    });

    let mut screen = Screen::start(render::MIN_HEIGHT, setup.alternate_screen)?;
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(90));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // A terminal that closes (SIGHUP) or a kill (SIGTERM) ends the app the
    // clean way: the run is cancelled and the terminal restored.
    use tokio::signal::unix::{SignalKind, signal};
    let mut term_sig = signal(SignalKind::terminate()).ok();
    let mut hup_sig = signal(SignalKind::hangup()).ok();
    async fn next_signal(s: &mut Option<tokio::signal::unix::Signal>) {
        match s {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }

    loop {
        paint(&mut app, &mut screen)?;
        let mut actions = Vec::new();
        tokio::select! {
            k = keys.next() => match k {
                Some(Ok(TermEvent::Key(key)))
                    if key.code == crossterm::event::KeyCode::Char('z')
                        && key.modifiers.contains(crossterm::event::KeyModifiers::CONTROL) =>
                {
                    // Ctrl+Z: give the shell its terminal, stop, come back.
                    screen::restore();
                    // SAFETY: raising a signal on our own process.
                    unsafe {
                        libc::raise(libc::SIGTSTP);
                    }
                    screen.resume()?;
                    redraw_all(&app, &mut screen)?;
                }
                Some(Ok(TermEvent::Key(key))) => actions = app.on_key(key),
                Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                Some(Ok(TermEvent::Resize(_, _))) => redraw_all(&app, &mut screen)?,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(anyhow!("cannot read the terminal: {e}")),
                None => break,
            },
            Some(ev) = events.recv() => {
                let mut next = Some(ev);
                let mut batch = 0;
                // Take what else is waiting before drawing: one frame for a
                // burst of deltas, so keys never wait behind frames.
                while let Some(ev) = next.take() {
                    if let Event::RunStarted { session_id, resumed: false, .. } = &ev
                        && !titled
                    {
                        titled = true;
                        spawn_title(&engine, session_id.clone(), side_tx.clone());
                    }
                    let stopped = matches!(ev, Event::Stopped { .. });
                    actions.extend(app.on_event(ev));
                    if stopped {
                        running = None;
                        refresh_cost(&mut app, store.as_ref()).await;
                    }
                    batch += 1;
                    if batch < 512 && !matches!(actions.last(), Some(Action::Submit(_))) {
                        next = events.try_recv().ok();
                    }
                }
            }
            Some(s) = side.recv() => match s {
                Side::Compacted(r) => {
                    actions = app.busy_done();
                    match r {
                        Ok(true) => {}
                        Ok(false) => app.notice("nothing to compact: the session has no turns older than the ones kept"),
                        Err(e) => app.error(format!("/compact: {e}")),
                    }
                }
                Side::Title => refresh_cost(&mut app, store.as_ref()).await,
            },
            _ = tick.tick(), if app.animating() || app.hint.is_some() => app.on_tick(),
            _ = next_signal(&mut term_sig) => app.should_quit = true,
            _ = next_signal(&mut hup_sig) => app.should_quit = true,
        }
        for action in actions {
            match action {
                Action::Quit => {}
                Action::Submit(prompt) => {
                    let cancel = CancellationToken::new();
                    let control = RunControl::new();
                    let request = RunRequest {
                        prompt,
                        resume: app.status.session_id.clone(),
                        mode: Some(app.status.mode),
                        control: Some(control.clone()),
                    };
                    let e = engine.clone();
                    let mut sink = tx.clone();
                    let c = cancel.clone();
                    tokio::spawn(async move {
                        e.run(request, c, &mut sink).await;
                    });
                    running = Some(Running { cancel, control });
                }
                Action::Queue(text) => {
                    // With no run left, the app sends what is queued as the
                    // next run when it sees the run's end.
                    if let Some(r) = &running {
                        r.control.queue(text);
                    }
                }
                Action::Cancel => {
                    if let Some(r) = &running {
                        r.cancel.cancel();
                    }
                }
                Action::SetMode(mode) => {
                    if let Some(r) = &running {
                        r.control.set_mode(mode);
                    }
                }
                Action::NewSession => {
                    titled = false;
                    app.notice("new session: the next message starts it");
                }
                Action::LoadSessions => {
                    let ws = workspace.display().to_string();
                    match store.list_sessions(Some(&ws), 50).await {
                        Ok(list) => app.open_resume(list),
                        Err(e) => app.error(format!("cannot list sessions: {e}")),
                    }
                }
                Action::Resume(id) => resume(&mut app, store.as_ref(), &id).await,
                Action::Compact => {
                    if let Some(id) = app.status.session_id.clone() {
                        app.notice("compacting…");
                        let e = engine.clone();
                        let mut sink = tx.clone();
                        let side_tx = side_tx.clone();
                        tokio::spawn(async move {
                            let r = e
                                .compact_session(&id, CancellationToken::new(), &mut sink)
                                .await
                                .map_err(|e| e.to_string());
                            let _ = side_tx.send(Side::Compacted(r));
                        });
                    }
                }
                Action::SwitchModel(None) => app.notice(format!(
                    "model: {} ({}) · switch with /model NAME",
                    app.status.model, app.status.provider
                )),
                Action::SwitchModel(Some(name)) => match (setup.providers)(&name) {
                    Ok(provider) => {
                        // The engine a run uses is shared: switching its
                        // provider moves a running run at its next turn.
                        engine.set_provider(provider.clone());
                        app.status.model = provider.model().to_string();
                        app.status.provider = provider.name().to_string();
                        app.status.context_window = provider.capabilities().context_window;
                        app.notice(format!(
                            "model: {} ({}) from the next turn",
                            app.status.model, app.status.provider
                        ));
                    }
                    Err(e) => app.error(format!("/model {name}: {e:#}")),
                },
                Action::ShowCost => show_cost(&mut app, store.as_ref()).await,
                Action::ShowContext => show_context(&mut app, &engine).await,
            }
        }
        if app.should_quit {
            if let Some(r) = running.take() {
                // Cancel and wait (bounded) for the run to stop: what it
                // produced is stored and its commands are killed before
                // the process goes.
                r.cancel.cancel();
                let deadline = tokio::time::Instant::now() + QUIT_WAIT;
                while let Ok(Some(ev)) = tokio::time::timeout_at(deadline, events.recv()).await {
                    let stopped = matches!(ev, Event::Stopped { .. });
                    app.on_event(ev);
                    if stopped {
                        break;
                    }
                }
            }
            break;
        }
    }
    paint(&mut app, &mut screen)?;
    screen.finish();
    Ok(())
}

/// How long quitting waits for a cancelled run to stop.
const QUIT_WAIT: Duration = Duration::from_secs(5);

/// The screen from scratch (after a resize or a return from the shell):
/// the newest cells again at the current width, then the app.
fn redraw_all(app: &App, screen: &mut Screen) -> anyhow::Result<()> {
    let size = screen.current_size()?;
    let want = render::desired_height(app, size.width, size.height);
    screen.reset(want)?;
    let rows = size.height.saturating_sub(want) as usize;
    screen.insert(app.printed_tail(rows, size.width))?;
    Ok(())
}

/// Print finished cells, fit the viewport, draw.
fn paint(app: &mut App, screen: &mut Screen) -> anyhow::Result<()> {
    let size = screen.size();
    let cells = app.drain_inserts();
    if !cells.is_empty() {
        let lines = render::transcript_lines(&cells, size.width, &app.theme);
        screen.insert(lines)?;
    }
    let mut want = render::desired_height(app, size.width, size.height);
    if app.running() && app.modal.is_none() {
        // While a run goes on the viewport only grows: no jumping.
        want = want.max(screen.height());
    }
    if want != screen.height() {
        screen.reshape(want)?;
    }
    let mut failed = None;
    screen.draw(|f| {
        RENDERING.store(true, std::sync::atomic::Ordering::SeqCst);
        let drawn = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| render::draw(app, f)));
        RENDERING.store(false, std::sync::atomic::Ordering::SeqCst);
        if let Err(p) = drawn {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            failed = Some(why);
        }
    })?;
    if let Some(why) = failed {
        // Show it once, as a cell; the app and the session go on.
        app.error(format!(
            "a screen failed to draw ({why}); details are in the log under REIN_HOME/logs"
        ));
    }
    Ok(())
}

async fn resume(app: &mut App, store: &dyn SessionStore, id: &str) {
    let info = match store.get_session(id).await {
        Ok(i) => i,
        Err(e) => {
            app.error(format!("cannot resume {id}: {e}"));
            return;
        }
    };
    match store.messages(&info.id).await {
        Ok(messages) => {
            app.push_cell(Cell::Info {
                title: format!("Resumed “{}” ({})", info.title, info.id),
                lines: Vec::new(),
            });
            app.replay(&messages);
            app.status.session_id = Some(info.id.clone());
            if let Ok(todos) = store.todos(&info.id).await {
                app.set_todos(todos);
            }
            refresh_cost(app, store).await;
        }
        Err(e) => app.error(format!("cannot read session {}: {e}", info.id)),
    }
}

/// The session's cost from its ledger: every call, the title call too.
async fn refresh_cost(app: &mut App, store: &dyn SessionStore) {
    if let Some(id) = app.status.session_id.clone()
        && let Ok((entries, _)) = store.ledger(&id).await
    {
        let totals = rein_core::LedgerTotals::of(&entries);
        app.status.cost_usd = totals.cost_usd;
        app.status.cost_known = totals.unpriced_calls == 0;
    }
}

async fn show_cost(app: &mut App, store: &dyn SessionStore) {
    let Some(id) = app.status.session_id.clone() else {
        app.notice("no session yet: nothing spent");
        return;
    };
    match store.ledger(&id).await {
        Ok((entries, skipped)) => {
            let t = rein_core::LedgerTotals::of(&entries);
            let mut lines = vec![
                format!("model calls   {}", t.calls),
                format!(
                    "input tokens  {} ({} cached)",
                    t.input_tokens, t.cached_input_tokens
                ),
                format!("output tokens {}", t.output_tokens),
                format!(
                    "cost          ${:.4}{}",
                    t.cost_usd,
                    if t.unpriced_calls > 0 {
                        format!(" + {} calls at unknown prices", t.unpriced_calls)
                    } else {
                        String::new()
                    }
                ),
            ];
            if skipped > 0 {
                lines.push(format!("({skipped} unreadable ledger rows skipped)"));
            }
            app.push_cell(Cell::Info {
                title: format!("Cost of session {id}"),
                lines,
            });
        }
        Err(e) => app.error(format!("cannot read the ledger: {e}")),
    }
}

async fn show_context(app: &mut App, engine: &AgentEngine) {
    let window = app.status.context_window;
    let Some(id) = app.status.session_id.clone() else {
        app.notice("no session yet: the context holds only the system prompt and tools");
        return;
    };
    // What the next request carries: after a compaction, its summary and
    // what followed, not the whole stored transcript.
    let messages = match engine.model_messages(&id).await {
        Ok(m) => m,
        Err(e) => {
            app.error(format!("cannot read the session: {e}"));
            return;
        }
    };
    let counter = engine.token_counter();
    let mut by_kind = [0u64; 4];
    let mut biggest: Vec<(u64, String)> = Vec::new();
    for m in &messages {
        let n = rein_core::tokens::count_message(counter.as_ref(), m);
        let k = match m {
            Message::User { .. } => 0,
            Message::Assistant(_) => 1,
            Message::Tool(r) => {
                biggest.push((n, r.name.clone()));
                2
            }
            Message::System { .. } => 3,
        };
        by_kind[k] += n;
    }
    biggest.sort_by_key(|b| std::cmp::Reverse(b.0));
    let total: u64 = by_kind.iter().sum();
    let pct = |n: u64| match window {
        Some(w) if w > 0 => format!(" ({:.0}%)", n as f64 / w as f64 * 100.0),
        _ => String::new(),
    };
    let mut lines = vec![
        format!(
            "in the last request  {}{} of a {} window",
            app.status.context_tokens.unwrap_or(0),
            pct(app.status.context_tokens.unwrap_or(0)),
            window
                .map(|w| w.to_string())
                .unwrap_or_else(|| "unknown".into())
        ),
        format!(
            "history sent        {total} tokens in {} messages",
            messages.len()
        ),
        format!("  user messages     {}{}", by_kind[0], pct(by_kind[0])),
        format!("  model replies     {}{}", by_kind[1], pct(by_kind[1])),
        format!("  tool results      {}{}", by_kind[2], pct(by_kind[2])),
    ];
    for (n, name) in biggest.into_iter().take(3) {
        lines.push(format!("    largest: {name} {n}"));
    }
    let fixed = engine.fixed_tokens(app.status.mode);
    lines.push(format!("  system prompt and tools {fixed}{}", pct(fixed)));
    app.push_cell(Cell::Info {
        title: "Context".into(),
        lines,
    });
}

/// A short model-written title for a new session, recorded in the ledger.
/// Only where the provider says titles are worth a call (the first line of
/// the prompt stays the title otherwise).
fn spawn_title(engine: &AgentEngine, session_id: String, side: mpsc::UnboundedSender<Side>) {
    if !engine.provider().capabilities().session_titles {
        return;
    }
    let e = engine.clone();
    tokio::spawn(async move {
        let _ = e.title_session(&session_id, CancellationToken::new()).await;
        let _ = side.send(Side::Title);
    });
}

/// True while a frame is drawn: a panic there is caught and shown as a
/// line in the app instead of ending it.
static RENDERING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The real stderr while it points at the log file (-1 when not).
static SAVED_STDERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

fn restore_stderr() {
    let fd = SAVED_STDERR.swap(-1, std::sync::atomic::Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: `fd` is our saved copy of the original stderr.
        unsafe {
            libc::dup2(fd, 2);
            libc::close(fd);
        }
    }
}

/// While the app runs, anything written to stderr (a library's log, a
/// panic message) goes to `$REIN_HOME/logs/tui.log` instead of the screen.
struct LogRedirect;

impl LogRedirect {
    fn start(home: &std::path::Path) -> std::io::Result<LogRedirect> {
        let dir = home.join("logs");
        let path = dir.join("tui.log");
        // Logs may quote anything a session saw: private to the user.
        let log = rein_core::private_fs::create_private_dir(&dir)
            .and_then(|_| rein_core::private_fs::ensure_private_file(&path))
            .and_then(|_| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
            });
        // A home that cannot hold logs loses them, not the app: nothing may
        // print over the screen either way.
        let file = match log {
            Ok(f) => f,
            Err(_) => std::fs::OpenOptions::new().write(true).open("/dev/null")?,
        };
        // SAFETY: dup/dup2 on valid descriptors; the saved copy is put back
        // on drop.
        let saved = unsafe { libc::dup(2) };
        if saved < 0 {
            return Ok(LogRedirect);
        }
        if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
            unsafe { libc::close(saved) };
            return Ok(LogRedirect);
        }
        SAVED_STDERR.store(saved, std::sync::atomic::Ordering::SeqCst);
        Ok(LogRedirect)
    }
}

impl Drop for LogRedirect {
    fn drop(&mut self) {
        restore_stderr();
    }
}
