//! The app's state machine: keys and engine events in, actions out. It does
//! no I/O, so every key binding is a unit test.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use rein_core::{
    ApprovalDecision, ApprovalReply, ApprovalRequest, ApprovalScope, Event, Message,
    PermissionMode, SessionInfo, StopReason, Todo, TodoStatus,
};

use crate::cells::{Cell, ToolState, proposed_change};
use crate::complete::{self, FileIndex, SLASH_COMMANDS};
use crate::editor::{Editor, PasteOutcome};
use crate::history::InputHistory;
use crate::theme::Theme;

/// What the runtime must do for the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Start a run with this prompt (in the current session, if any).
    Submit(String),
    /// Deliver this message to the running run at its next turn.
    Queue(String),
    /// Cancel the running turn.
    Cancel,
    Quit,
    /// Use this permission mode (from the next turn of a running run).
    SetMode(PermissionMode),
    /// Forget the current session: the next prompt starts a new one.
    NewSession,
    /// Load this workspace's recent sessions for the picker.
    LoadSessions,
    /// Continue this session.
    Resume(String),
    Compact,
    /// Switch the model (None: show the current one).
    SwitchModel(Option<String>),
    ShowCost,
    ShowContext,
}

/// What the status line shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    pub provider: String,
    pub model: String,
    pub mode: PermissionMode,
    /// The mode was changed during a run and applies from its next turn.
    pub mode_pending: bool,
    pub todos_done: usize,
    pub todos_total: usize,
    /// Tokens in the context and the window, when known.
    pub context_tokens: Option<u64>,
    pub context_window: Option<u64>,
    pub cost_usd: f64,
    /// False when some calls had no known price.
    pub cost_known: bool,
    pub session_id: Option<String>,
    pub running: bool,
}

/// One approval waiting for the user.
#[derive(Debug)]
pub struct PendingApproval {
    pub request: ApprovalRequest,
    pub reply: ApprovalReply,
    /// What an edit or write would change, as a diff.
    pub preview: Option<String>,
}

#[derive(Debug)]
pub enum Modal {
    Approval {
        /// Some while the user types feedback for a denial.
        feedback: Option<Editor>,
    },
    Resume {
        sessions: Vec<SessionInfo>,
        filter: String,
        selected: usize,
    },
    /// A plan-mode run ended with a plan.
    PlanDone,
}

/// The completion popup.
#[derive(Debug, Clone, PartialEq)]
pub struct Popup {
    pub items: Vec<String>,
    pub selected: usize,
    /// For `@path` completion: the char column where the token starts.
    pub replace_chars: usize,
    pub slash: bool,
}

pub struct App {
    pub theme: Theme,
    pub workspace: PathBuf,
    pub editor: Editor,
    pub status: Status,
    pub modal: Option<Modal>,
    pub popup: Option<Popup>,
    pub approvals: VecDeque<PendingApproval>,
    /// Messages typed during a run, not yet delivered.
    pub queued: Vec<String>,
    /// Finished cells, waiting to go to the scrollback.
    inserts: Vec<Cell>,
    /// The last cells printed to the scrollback, to draw again after a
    /// resize (the terminal rewraps what it holds; we redraw what shows).
    printed: VecDeque<Cell>,
    /// Cells that still change (running tools).
    pub live: Vec<Cell>,
    /// The answer streaming in, not yet flushed.
    pub stream_text: String,
    /// True when part of this answer was already flushed.
    pub stream_continued: bool,
    pub stream_reasoning: String,
    last_reasoning: Option<String>,
    history: InputHistory,
    files: Option<FileIndex>,
    pub todos: Vec<Todo>,
    ctrl_c_at: Option<Instant>,
    /// A transient hint shown above the input (e.g. "press Ctrl+C again").
    pub hint: Option<String>,
    pub tick: usize,
    pub should_quit: bool,
    /// The mode to go back to when a plan is executed.
    pre_plan_mode: Option<PermissionMode>,
}

const PRINTED_KEPT: usize = 200;
const CTRL_C_WINDOW: Duration = Duration::from_secs(2);
const FILE_INDEX_LIMIT: usize = 20_000;

fn is_ctrl(k: &KeyEvent, c: char) -> bool {
    k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char(c)
}

impl App {
    pub fn new(theme: Theme, workspace: PathBuf, history: InputHistory, status: Status) -> App {
        App {
            theme,
            workspace,
            editor: Editor::new(),
            status,
            modal: None,
            popup: None,
            approvals: VecDeque::new(),
            queued: Vec::new(),
            inserts: Vec::new(),
            printed: VecDeque::new(),
            live: Vec::new(),
            stream_text: String::new(),
            stream_continued: false,
            stream_reasoning: String::new(),
            last_reasoning: None,
            history,
            files: None,
            todos: Vec::new(),
            ctrl_c_at: None,
            hint: None,
            tick: 0,
            should_quit: false,
            pre_plan_mode: None,
        }
    }

    /// Finished cells to print above the app, oldest first.
    pub fn drain_inserts(&mut self) -> Vec<Cell> {
        let cells = std::mem::take(&mut self.inserts);
        self.printed.extend(cells.iter().cloned());
        if self.printed.len() > PRINTED_KEPT {
            let extra = self.printed.len() - PRINTED_KEPT;
            self.printed.drain(..extra);
        }
        cells
    }

    /// The newest printed cells, enough to fill `rows` at this width: what
    /// a resized screen draws again.
    pub fn printed_tail(&self, rows: usize, width: u16) -> Vec<ratatui::text::Line<'static>> {
        let mut tail: Vec<ratatui::text::Line<'static>> = Vec::new();
        for cell in self.printed.iter().rev() {
            let mut lines =
                crate::render::transcript_lines(std::slice::from_ref(cell), width, &self.theme);
            lines.extend(tail);
            tail = lines;
            if tail.len() >= rows {
                break;
            }
        }
        let skip = tail.len().saturating_sub(rows);
        tail.split_off(skip)
    }

    /// Add a finished cell to the transcript.
    pub fn push_cell(&mut self, cell: Cell) {
        self.inserts.push(cell);
    }

    pub fn notice(&mut self, text: impl Into<String>) {
        self.push_cell(Cell::Notice { text: text.into() });
    }

    pub fn error(&mut self, text: impl Into<String>) {
        self.push_cell(Cell::Error { text: text.into() });
    }

    pub fn running(&self) -> bool {
        self.status.running
    }

    /// Something animates: the runtime ticks the spinner.
    pub fn animating(&self) -> bool {
        self.status.running || !self.live.is_empty()
    }

    pub fn on_tick(&mut self) {
        self.tick = self.tick.wrapping_add(1);
        if let Some(at) = self.ctrl_c_at
            && at.elapsed() > CTRL_C_WINDOW
        {
            self.ctrl_c_at = None;
            self.hint = None;
        }
    }

    // ---------------------------------------------------------------- keys

    pub fn on_paste(&mut self, text: &str) {
        if let Some(Modal::Approval {
            feedback: Some(ed), ..
        }) = &mut self.modal
        {
            let _ = ed.paste(text);
            return;
        }
        if self.modal.is_some() {
            return;
        }
        if let PasteOutcome::Rejected(why) = self.editor.paste(text) {
            self.hint = Some(why);
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if self.modal.is_some() {
            return self.modal_key(key);
        }
        if is_ctrl(&key, 'c') {
            return self.ctrl_c();
        }
        if self.popup.is_some()
            && let Some(actions) = self.popup_key(&key)
        {
            return actions;
        }
        match key.code {
            KeyCode::Esc => {
                if self.popup.take().is_some() {
                    return Vec::new();
                }
                if self.running() {
                    self.hint = Some("cancelling…".into());
                    return vec![Action::Cancel];
                }
                Vec::new()
            }
            KeyCode::BackTab => {
                let next = cycle_mode(self.status.mode);
                self.set_mode(next)
            }
            KeyCode::Tab => {
                self.complete();
                Vec::new()
            }
            KeyCode::Enter
                if key
                    .modifiers
                    .intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) =>
            {
                self.editor.newline();
                Vec::new()
            }
            KeyCode::Enter => self.submit(),
            _ if is_ctrl(&key, 'j') => {
                self.editor.newline();
                Vec::new()
            }
            _ if is_ctrl(&key, 'o') => {
                if let Some(text) = self.last_reasoning.clone() {
                    self.push_cell(Cell::Reasoning {
                        text,
                        expanded: true,
                    });
                } else {
                    self.hint = Some("no reasoning to show yet".into());
                }
                Vec::new()
            }
            _ if is_ctrl(&key, 'd') && self.editor.is_empty() => {
                self.should_quit = true;
                vec![Action::Quit]
            }
            _ => {
                self.edit_key(&key);
                Vec::new()
            }
        }
    }

    fn edit_key(&mut self, key: &KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('a') if ctrl => self.editor.home(),
            KeyCode::Char('e') if ctrl => self.editor.end(),
            KeyCode::Char('w') if ctrl => self.editor.delete_word_left(),
            KeyCode::Char('k') if ctrl => self.editor.kill_to_end(),
            KeyCode::Char('u') if ctrl => self.editor.kill_to_start(),
            KeyCode::Char('b') if alt => self.editor.word_left(),
            KeyCode::Char('f') if alt => self.editor.word_right(),
            KeyCode::Char(c) if !ctrl => {
                self.editor.insert_char(c);
                self.history.reset_navigation();
                self.refresh_popup();
            }
            KeyCode::Backspace if alt || ctrl => self.editor.delete_word_left(),
            KeyCode::Backspace => {
                self.editor.backspace();
                self.refresh_popup();
            }
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left if ctrl || alt => self.editor.word_left(),
            KeyCode::Right if ctrl || alt => self.editor.word_right(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Home => self.editor.home(),
            KeyCode::End => self.editor.end(),
            KeyCode::Up if !self.editor.up() => {
                let current = self.editor.text();
                if let Some(prev) = self.history.prev(&current).map(str::to_string) {
                    self.editor.set_text(&prev);
                }
            }
            KeyCode::Down => {
                if !self.editor.down()
                    && let Some(next) = self.history.next().map(str::to_string)
                {
                    self.editor.set_text(&next);
                }
            }
            _ => {}
        }
    }

    fn ctrl_c(&mut self) -> Vec<Action> {
        if !self.editor.is_empty() {
            self.editor.clear();
            self.popup = None;
            return Vec::new();
        }
        if let Some(at) = self.ctrl_c_at
            && at.elapsed() <= CTRL_C_WINDOW
        {
            self.should_quit = true;
            return vec![Action::Quit];
        }
        self.ctrl_c_at = Some(Instant::now());
        self.hint = Some("press Ctrl+C again to quit".into());
        if self.running() {
            vec![Action::Cancel]
        } else {
            Vec::new()
        }
    }

    fn set_mode(&mut self, mode: PermissionMode) -> Vec<Action> {
        if mode == self.status.mode {
            return Vec::new();
        }
        if mode == PermissionMode::Plan && self.status.mode != PermissionMode::Plan {
            self.pre_plan_mode = Some(self.status.mode);
        }
        self.status.mode = mode;
        self.status.mode_pending = self.running();
        vec![Action::SetMode(mode)]
    }

    fn submit(&mut self) -> Vec<Action> {
        let shown = self.editor.text();
        if shown.trim().is_empty() {
            return Vec::new();
        }
        // A trailing backslash continues the input on a new line.
        if shown.ends_with('\\') && !shown.ends_with("\\\\") {
            self.editor.backspace();
            self.editor.newline();
            return Vec::new();
        }
        let text = self.editor.submit();
        self.popup = None;
        self.hint = None;
        let _ = self.history.push(&text);
        if text.starts_with('/') && !text.starts_with("//") {
            return self.slash(text.trim());
        }
        if self.running() {
            self.queued.push(text.clone());
            return vec![Action::Queue(text)];
        }
        self.start(text)
    }

    fn start(&mut self, prompt: String) -> Vec<Action> {
        self.status.running = true;
        vec![Action::Submit(prompt)]
    }

    fn slash(&mut self, line: &str) -> Vec<Action> {
        let (cmd, arg) = match line.split_once(char::is_whitespace) {
            Some((c, a)) => (c, a.trim()),
            None => (line, ""),
        };
        let arg = (!arg.is_empty()).then(|| arg.to_string());
        let busy = |app: &mut App, what: &str| {
            app.error(format!(
                "{what} needs the run to end first (Esc cancels it)"
            ));
            Vec::new()
        };
        match cmd {
            "/quit" | "/exit" => {
                self.should_quit = true;
                vec![Action::Quit]
            }
            "/help" => {
                let mut lines: Vec<String> = SLASH_COMMANDS
                    .iter()
                    .map(|(c, h)| format!("{c:<10} {h}"))
                    .collect();
                lines.push(String::new());
                lines.extend(
                    [
                        "Enter      send (queued for the next turn while the model works)",
                        "Shift+Enter, Ctrl+J  new line;  a line ending in \\ also continues",
                        "Esc        cancel the running turn",
                        "Ctrl+C     clear the input; twice on an empty input quits",
                        "Shift+Tab  cycle the mode: default → accept-edits → plan → auto",
                        "Tab        complete /commands and @paths",
                        "Up/Down    input history",
                        "Ctrl+O     show the last reasoning in full",
                    ]
                    .map(String::from),
                );
                self.push_cell(Cell::Info {
                    title: "Commands and keys".into(),
                    lines,
                });
                Vec::new()
            }
            "/new" => {
                if self.running() {
                    return busy(self, "/new");
                }
                self.status.session_id = None;
                self.status.cost_usd = 0.0;
                self.status.cost_known = true;
                self.status.context_tokens = None;
                self.todos.clear();
                self.status.todos_done = 0;
                self.status.todos_total = 0;
                vec![Action::NewSession]
            }
            "/resume" => {
                if self.running() {
                    return busy(self, "/resume");
                }
                match arg {
                    Some(id) => vec![Action::Resume(id)],
                    None => vec![Action::LoadSessions],
                }
            }
            "/plan" => {
                let mut actions = self.set_mode(PermissionMode::Plan);
                if let Some(task) = arg {
                    if self.running() {
                        self.queued.push(task.clone());
                        actions.push(Action::Queue(task));
                    } else {
                        actions.extend(self.start(task));
                    }
                }
                actions
            }
            "/compact" => {
                if self.running() {
                    return busy(self, "/compact");
                }
                if self.status.session_id.is_none() {
                    self.error("/compact: no session yet");
                    return Vec::new();
                }
                vec![Action::Compact]
            }
            "/todos" => {
                let lines = if self.todos.is_empty() {
                    vec!["(no todos)".to_string()]
                } else {
                    self.todos
                        .iter()
                        .map(|t| format!("{} {}", t.status.mark(), t.content))
                        .collect()
                };
                self.push_cell(Cell::Info {
                    title: format!(
                        "Todos ({}/{})",
                        self.status.todos_done, self.status.todos_total
                    ),
                    lines,
                });
                Vec::new()
            }
            "/model" => vec![Action::SwitchModel(arg)],
            "/mode" => match arg {
                None => {
                    let next = cycle_mode(self.status.mode);
                    self.set_mode(next)
                }
                Some(name) => match name.parse::<PermissionMode>() {
                    Ok(PermissionMode::Bypass) => {
                        self.error("/mode: bypass is only available as a command-line flag");
                        Vec::new()
                    }
                    Ok(m) => self.set_mode(m),
                    Err(e) => {
                        self.error(format!("/mode: {e}"));
                        Vec::new()
                    }
                },
            },
            "/cost" => vec![Action::ShowCost],
            "/context" => vec![Action::ShowContext],
            other => {
                let msg = match complete::suggest_command(other) {
                    Some(s) => {
                        format!("unknown command {other}: did you mean {s}? (/help lists them)")
                    }
                    None => format!("unknown command {other} (/help lists them)"),
                };
                self.error(msg);
                Vec::new()
            }
        }
    }

    // ---------------------------------------------------------- completion

    /// What completes the text before the cursor: candidates, where the
    /// token starts (char column) and whether it is a /command.
    fn candidates(&mut self) -> Option<Popup> {
        let line = self.editor.text();
        let (row, _) = self.editor.cursor();
        if row == 0 && line.starts_with('/') && !line.contains(char::is_whitespace) {
            let items: Vec<String> = complete::complete_slash(&line)
                .into_iter()
                .map(str::to_string)
                .collect();
            return Some(Popup {
                items,
                selected: 0,
                replace_chars: 0,
                slash: true,
            });
        }
        let current = self.editor.current_line().to_string();
        let col = self.editor.cursor_char_col();
        let (start, query) = complete::at_token(&current, col)?;
        let index = self
            .files
            .get_or_insert_with(|| FileIndex::build(&self.workspace, FILE_INDEX_LIMIT));
        let items = index.complete(&query, 8);
        if items.is_empty() {
            self.hint = Some(format!("no file matches @{query}"));
        }
        Some(Popup {
            items,
            selected: 0,
            replace_chars: start,
            slash: false,
        })
    }

    /// Put a chosen completion into the input.
    fn apply_completion(&mut self, p: &Popup, chosen: &str) {
        if p.slash {
            self.editor.set_text(&format!("{chosen} "));
        } else {
            self.editor
                .replace_before_cursor(p.replace_chars, &format!("@{chosen} "));
        }
    }

    /// Tab: a single candidate is applied, several open the popup.
    fn complete(&mut self) {
        let Some(p) = self.candidates() else {
            return;
        };
        match p.items.len() {
            0 => self.popup = None,
            1 => {
                let chosen = p.items[0].clone();
                self.apply_completion(&p, &chosen);
                self.popup = None;
            }
            _ => self.popup = Some(p),
        }
    }

    /// Keep an open popup in step with what is typed; typing never applies
    /// a completion by itself (only Tab or Enter do).
    fn refresh_popup(&mut self) {
        if self.popup.is_some() {
            self.popup = self.candidates().filter(|p| !p.items.is_empty());
        }
    }

    fn popup_key(&mut self, key: &KeyEvent) -> Option<Vec<Action>> {
        let popup = self.popup.as_mut()?;
        match key.code {
            KeyCode::Up => {
                popup.selected = popup
                    .selected
                    .checked_sub(1)
                    .unwrap_or(popup.items.len().saturating_sub(1));
            }
            KeyCode::Down => popup.selected = (popup.selected + 1) % popup.items.len().max(1),
            KeyCode::Tab | KeyCode::Enter => {
                let p = self.popup.take()?;
                let chosen = p.items.get(p.selected)?.clone();
                self.apply_completion(&p, &chosen);
            }
            _ => return None,
        }
        Some(Vec::new())
    }

    // --------------------------------------------------------------- modals

    /// Open the resume picker with these sessions (newest first).
    pub fn open_resume(&mut self, sessions: Vec<SessionInfo>) {
        if sessions.is_empty() {
            self.notice("no earlier session in this workspace");
            return;
        }
        self.modal = Some(Modal::Resume {
            sessions,
            filter: String::new(),
            selected: 0,
        });
    }

    /// The sessions the picker shows, in order, with the filter applied.
    pub fn resume_matches(sessions: &[SessionInfo], filter: &str) -> Vec<usize> {
        complete::fuzzy_filter(filter, sessions, |s| s.title.as_str())
            .into_iter()
            .map(|(i, _)| i)
            .collect()
    }

    fn modal_key(&mut self, key: KeyEvent) -> Vec<Action> {
        let Some(modal) = self.modal.take() else {
            return Vec::new();
        };
        match modal {
            Modal::Approval { feedback } => self.approval_key(key, feedback),
            Modal::Resume {
                sessions,
                mut filter,
                mut selected,
            } => {
                let matches = App::resume_matches(&sessions, &filter);
                match key.code {
                    KeyCode::Esc => return Vec::new(),
                    KeyCode::Enter => {
                        if let Some(&i) = matches.get(selected) {
                            return vec![Action::Resume(sessions[i].id.clone())];
                        }
                    }
                    KeyCode::Up => selected = selected.saturating_sub(1),
                    KeyCode::Down if selected + 1 < matches.len() => selected += 1,
                    KeyCode::Backspace => {
                        filter.pop();
                        selected = 0;
                    }
                    KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                        filter.push(c);
                        selected = 0;
                    }
                    _ if is_ctrl(&key, 'c') => return Vec::new(),
                    _ => {}
                }
                self.modal = Some(Modal::Resume {
                    sessions,
                    filter,
                    selected,
                });
                Vec::new()
            }
            Modal::PlanDone => match key.code {
                KeyCode::Char('e') | KeyCode::Char('1') | KeyCode::Enter => {
                    let back = self
                        .pre_plan_mode
                        .take()
                        .filter(|m| *m != PermissionMode::Plan)
                        .unwrap_or(PermissionMode::AcceptEdits);
                    let mut actions = self.set_mode(back);
                    actions.extend(self.start("Execute the plan.".to_string()));
                    actions
                }
                KeyCode::Char('k') | KeyCode::Char('2') => {
                    self.notice("still in plan mode: say what to change in the plan");
                    Vec::new()
                }
                KeyCode::Char('c') | KeyCode::Char('3') | KeyCode::Esc => {
                    let back = self.pre_plan_mode.take().unwrap_or(PermissionMode::Default);
                    self.set_mode(back)
                }
                _ => {
                    self.modal = Some(Modal::PlanDone);
                    Vec::new()
                }
            },
        }
    }

    fn approval_key(&mut self, key: KeyEvent, feedback: Option<Editor>) -> Vec<Action> {
        if let Some(mut ed) = feedback {
            match key.code {
                KeyCode::Esc => {
                    // Back to the choices.
                    self.modal = Some(Modal::Approval { feedback: None });
                }
                KeyCode::Enter => {
                    let text = ed.submit();
                    let text = (!text.trim().is_empty()).then(|| text.trim().to_string());
                    self.decide(ApprovalDecision::Deny { feedback: text });
                }
                KeyCode::Backspace => {
                    ed.backspace();
                    self.modal = Some(Modal::Approval { feedback: Some(ed) });
                }
                KeyCode::Left => {
                    ed.left();
                    self.modal = Some(Modal::Approval { feedback: Some(ed) });
                }
                KeyCode::Right => {
                    ed.right();
                    self.modal = Some(Modal::Approval { feedback: Some(ed) });
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    ed.insert_char(c);
                    self.modal = Some(Modal::Approval { feedback: Some(ed) });
                }
                _ => self.modal = Some(Modal::Approval { feedback: Some(ed) }),
            }
            return Vec::new();
        }
        let decision = match key.code {
            KeyCode::Char('y') | KeyCode::Char('1') | KeyCode::Enter => {
                Some(ApprovalDecision::Approve {
                    scope: ApprovalScope::Once,
                })
            }
            KeyCode::Char('s') | KeyCode::Char('2') => Some(ApprovalDecision::Approve {
                scope: ApprovalScope::Session,
            }),
            KeyCode::Char('p') | KeyCode::Char('3') => Some(ApprovalDecision::Approve {
                scope: ApprovalScope::Project,
            }),
            KeyCode::Char('n') | KeyCode::Char('4') | KeyCode::Esc => {
                Some(ApprovalDecision::Deny { feedback: None })
            }
            KeyCode::Char('f') | KeyCode::Char('5') => {
                self.modal = Some(Modal::Approval {
                    feedback: Some(Editor::new()),
                });
                return Vec::new();
            }
            _ => None,
        };
        match decision {
            Some(d) => self.decide(d),
            None => self.modal = Some(Modal::Approval { feedback: None }),
        }
        Vec::new()
    }

    /// Answer the front approval and show the next one, if any.
    fn decide(&mut self, decision: ApprovalDecision) {
        if let Some(p) = self.approvals.pop_front() {
            p.reply.send(decision);
        }
        self.modal = (!self.approvals.is_empty()).then_some(Modal::Approval { feedback: None });
    }

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
            } => {
                self.status.session_id = Some(session_id);
                self.status.provider = provider;
                self.status.model = model;
                if !self.status.mode_pending {
                    self.status.mode = mode;
                }
                self.status.running = true;
            }
            Event::TextDelta { text } => {
                self.finish_reasoning();
                self.stream_text.push_str(&text);
                self.flush_stable_text();
            }
            Event::ReasoningDelta { text } => self.stream_reasoning.push_str(&text),
            Event::Retry {
                attempt,
                max_retries,
                delay_ms,
                error,
            } => self.notice(format!(
                "retrying in {:.1} s (attempt {attempt} of {max_retries}): {error}",
                delay_ms as f64 / 1000.0
            )),
            Event::ToolStarted {
                call_id,
                name,
                arguments,
            } => {
                self.finish_stream();
                self.live.push(Cell::Tool {
                    call_id,
                    name,
                    arguments,
                    state: ToolState::Running,
                });
            }
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
            Event::ApprovalRequired { request, reply } => {
                let preview = self.live.iter().find_map(|c| match c {
                    Cell::Tool {
                        call_id,
                        name,
                        arguments,
                        ..
                    } if *call_id == request.call_id => proposed_change(name, arguments),
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
                }
            }
            Event::ApprovalResolved { call_id, decision } => {
                self.approvals.retain(|p| p.request.call_id != call_id);
                if self.approvals.is_empty() && matches!(self.modal, Some(Modal::Approval { .. })) {
                    self.modal = None;
                }
                if let Some(state) = self.tool_state(&call_id)
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
            } => self.notice(format!(
                "context compacted: {replaced_messages} older messages {} (about {tokens_before} → {tokens_after} tokens){}",
                if summarized {
                    "summarised"
                } else {
                    "dropped"
                },
                note.map(|n| format!("; {n}")).unwrap_or_default()
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
            } => {
                self.status.context_tokens = Some(actual.unwrap_or(estimated).max(estimated));
                if window.is_some() {
                    self.status.context_window = window;
                }
            }
            Event::MessageCommitted { message, .. } => match message {
                Message::User { content } => {
                    if let Some(i) = self.queued.iter().position(|q| *q == content) {
                        self.queued.remove(i);
                    }
                    self.finish_stream();
                    self.push_cell(Cell::User { text: content });
                }
                Message::Assistant(_) => self.finish_stream(),
                Message::Tool(result) => {
                    if let Some(ToolState::Done { output, .. }) = self.tool_state(&result.call_id)
                    {
                        *output = result.output;
                    }
                    self.retire_tool(&result.call_id);
                }
                _ => {}
            },
            Event::Stopped {
                reason,
                error,
                final_text,
                totals,
                ..
            } => return self.stopped(reason, error, final_text, totals),
            _ => {}
        }
        Vec::new()
    }

    pub fn set_todos(&mut self, todos: Vec<Todo>) {
        self.status.todos_total = todos.len();
        self.status.todos_done = todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        self.todos = todos;
    }

    fn stopped(
        &mut self,
        reason: StopReason,
        error: Option<String>,
        final_text: String,
        totals: rein_core::LedgerTotals,
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
        self.status.running = false;
        self.status.mode_pending = false;
        self.status.cost_usd += totals.cost_usd;
        if totals.unpriced_calls > 0 {
            self.status.cost_known = false;
        }
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

    fn tool_state(&mut self, id: &str) -> Option<&mut ToolState> {
        self.live.iter_mut().find_map(|c| match c {
            Cell::Tool { call_id, state, .. } if call_id == id => Some(state),
            _ => None,
        })
    }

    /// Move a finished tool cell from the live area to the transcript.
    fn retire_tool(&mut self, id: &str) {
        if let Some(i) = self
            .live
            .iter()
            .position(|c| matches!(c, Cell::Tool { call_id, .. } if call_id == id))
        {
            let cell = self.live.remove(i);
            self.push_cell(cell);
        }
    }

    fn finish_reasoning(&mut self) {
        if !self.stream_reasoning.trim().is_empty() {
            let text = std::mem::take(&mut self.stream_reasoning);
            self.last_reasoning = Some(text.clone());
            self.push_cell(Cell::Reasoning {
                text,
                expanded: false,
            });
        }
        self.stream_reasoning.clear();
    }

    /// The answer so far goes to the transcript.
    fn finish_stream(&mut self) {
        self.finish_reasoning();
        if !self.stream_text.trim().is_empty() {
            let text = std::mem::take(&mut self.stream_text);
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
    fn flush_stable_text(&mut self) {
        if let Some(cut) = stable_prefix(&self.stream_text) {
            let rest = self.stream_text.split_off(cut);
            let done = std::mem::replace(&mut self.stream_text, rest);
            if !done.trim().is_empty() {
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
                Message::User { content } => self.push_cell(Cell::User {
                    text: content.clone(),
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

/// The end of the last complete block of a streaming Markdown text: after
/// a blank line that is not inside a code fence.
pub fn stable_prefix(text: &str) -> Option<usize> {
    let mut in_fence = false;
    let mut offset = 0;
    let mut cut = None;
    let mut prev_blank = false;
    for line in text.split_inclusive('\n') {
        let complete = line.ends_with('\n');
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let blank = line.trim().is_empty() && complete;
        offset += line.len();
        if blank && !in_fence && !prev_blank && offset < text.len() {
            cut = Some(offset);
        }
        prev_blank = blank;
        if !complete {
            break;
        }
    }
    // Never cut in the middle of a list: the next block may continue it.
    cut.filter(|&c| {
        let next = text[c..].trim_start();
        !(next.starts_with("- ")
            || next.starts_with("* ")
            || next.starts_with(|ch: char| ch.is_ascii_digit()) && next.contains(". "))
    })
}

/// default → accept-edits → plan → auto → default (bypass is only a flag).
pub fn cycle_mode(mode: PermissionMode) -> PermissionMode {
    mode.cycle()
}
