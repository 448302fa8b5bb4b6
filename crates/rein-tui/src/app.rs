//! The app's state machine: keys and engine events in, actions out. It does
//! no I/O, so every key binding is a unit test.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rein_core::{ApprovalReply, ApprovalRequest, PermissionMode, SessionInfo, Todo};

use crate::cells::Cell;
use crate::complete::FileIndex;
use crate::editor::Editor;
use crate::history::InputHistory;
use crate::theme::Theme;

mod events;
mod keys;
mod popups;
mod rewind;

pub use rewind::RewindPicker;

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
    /// Forget the current session (`ended`, if there was one): the next
    /// prompt starts a new one.
    NewSession {
        ended: Option<String>,
    },
    /// Load this workspace's recent sessions for the picker.
    LoadSessions,
    /// Continue this session.
    Resume(String),
    Compact,
    /// Switch the model (None: show the current one).
    SwitchModel(Option<String>),
    ShowCost,
    ShowContext,
    /// `/mcp`: each MCP server's status.
    ShowMcp,
    /// `/lsp`: each language server's status.
    ShowLsp,
    /// `/mcp__SERVER__PROMPT ARGS`: send a server's prompt.
    McpPrompt {
        command: String,
        args: String,
    },
    /// Load this session's checkpoints for the rewind picker.
    LoadCheckpoints {
        session: String,
    },
    /// Go back to a checkpoint.
    Rewind(crate::rewind::RewindRequest),
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
    /// The size of the next request in the one accounting
    /// ([`rein_core::request_size`]), and the window, when known.
    pub context_tokens: Option<u64>,
    /// The provider's count of the last request, when it reported one.
    pub last_request: Option<u64>,
    pub context_window: Option<u64>,
    /// The session's model calls from its ledger (the runtime refreshes
    /// them after each run and title call): the cost shown.
    pub totals: rein_core::LedgerTotals,
    /// The current model has no known price: its calls will not be.
    pub unpriced: bool,
    pub session_id: Option<String>,
    /// A run (or a compaction) is under way; change it with
    /// [`Status::set_running`].
    pub running: bool,
    /// Since when, for the elapsed time beside the spinner.
    pub busy_since: Option<std::time::Instant>,
    /// How far a local model has got with the current request.
    pub progress: Option<rein_core::ModelProgress>,
}

impl Status {
    /// The session's cost as the status line shows it: a model without a
    /// price never shows a cost it cannot know (not `$0.0000` before its
    /// first call is counted).
    pub fn cost_text(&self) -> String {
        let mut totals = self.totals.clone();
        if self.unpriced && totals.unpriced_calls == 0 {
            // Count the coming call, which will not be priced.
            totals.calls += 1;
            totals.unpriced_calls = 1;
        }
        totals.cost_text()
    }

    /// Start or end being busy: the elapsed time starts from now, and an
    /// old request's progress is gone.
    pub fn set_running(&mut self, running: bool) {
        if running && !self.running {
            self.busy_since = Some(std::time::Instant::now());
        }
        if !running {
            self.busy_since = None;
        }
        self.running = running;
        self.progress = None;
    }

    /// What the spinner says: the local model's progress when there is
    /// some, the seconds spent (from the second one), and how to stop.
    pub fn working_text(&self) -> String {
        let what = self
            .progress
            .map_or_else(|| "working".to_string(), |p| p.describe());
        let secs = self.busy_since.map_or(0, |t| t.elapsed().as_secs());
        let elapsed = if secs > 0 {
            format!(" · {secs} s")
        } else {
            String::new()
        };
        format!("{what}{elapsed} · Esc to interrupt")
    }
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
    /// The checkpoints of the session, to go back to one (Esc Esc,
    /// `/rewind`).
    Rewind(RewindPicker),
    /// An MCP server's form.
    Form(Box<crate::form::Form>),
}

/// The completion popup.
#[derive(Debug, Clone, PartialEq)]
pub struct Popup {
    pub items: Vec<String>,
    pub selected: usize,
    /// For `@path` and `$skill` completion: the char column where the
    /// token starts.
    pub token_start: usize,
    pub kind: PopupKind,
}

/// What a completion popup completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopupKind {
    /// A `/command` (the whole input).
    Command,
    /// An `@path` in the workspace.
    File,
    /// A `$skill` name.
    Skill,
}

pub struct App {
    pub theme: Theme,
    pub workspace: PathBuf,
    /// The user's status command's line, shown instead of the built-in
    /// status line while it has one.
    pub custom_status: Option<String>,
    pub editor: Editor,
    pub status: Status,
    pub modal: Option<Modal>,
    pub popup: Option<Popup>,
    pub approvals: VecDeque<PendingApproval>,
    /// MCP servers' forms waiting for the modal.
    pub forms: VecDeque<crate::form::Form>,
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
    /// Answer and reasoning cells the current model call has pushed, to
    /// take back if the call breaks off and is retried.
    streamed_cells: usize,
    last_reasoning: Option<String>,
    history: InputHistory,
    files: Option<FileIndex>,
    pub todos: Vec<Todo>,
    ctrl_c_at: Option<Instant>,
    /// When Esc was last pressed on an empty, idle input (a second press
    /// soon after opens the rewind picker).
    esc_at: Option<Instant>,
    /// A transient hint shown above the input (e.g. "press Ctrl+C again").
    pub hint: Option<String>,
    pub tick: usize,
    pub should_quit: bool,
    /// When the current approval was put in front of the user, and how long
    /// keys are held back after that (a key typed for the input just as
    /// the modal opens must not answer it).
    pub approval_shown: Option<Instant>,
    pub approval_guard: Duration,
    /// The mode to go back to when a plan is executed.
    pre_plan_mode: Option<PermissionMode>,
    /// The project's and the user's custom commands (`/NAME ARGS`).
    pub commands: Vec<rein_core::commands::CustomCommand>,
    /// Expands `/NAME ARGS` (name, arguments) as every front end does, or
    /// says why not; without it a command's own expansion is used.
    pub expand_command: Option<crate::run::ExpandCommand>,
    /// The skills of the run, name and description (`/skills`).
    pub skills: Vec<(String, String)>,
    /// The installed plugins, one line each (`/plugins`).
    pub plugins: Vec<String>,
}

const PRINTED_KEPT: usize = 200;
const APPROVAL_GUARD: Duration = Duration::from_millis(300);
const CTRL_C_WINDOW: Duration = Duration::from_secs(2);
/// Two Esc presses this close make a double press.
const ESC_WINDOW: Duration = Duration::from_secs(1);
const FILE_INDEX_LIMIT: usize = 20_000;

fn is_ctrl(k: &KeyEvent, c: char) -> bool {
    k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char(c)
}

impl App {
    pub fn new(theme: Theme, workspace: PathBuf, history: InputHistory, status: Status) -> App {
        App {
            theme,
            workspace,
            custom_status: None,
            editor: Editor::new(),
            status,
            modal: None,
            popup: None,
            approvals: VecDeque::new(),
            forms: VecDeque::new(),
            queued: Vec::new(),
            inserts: Vec::new(),
            streamed_cells: 0,
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
            esc_at: None,
            hint: None,
            tick: 0,
            should_quit: false,
            pre_plan_mode: None,
            approval_shown: None,
            approval_guard: APPROVAL_GUARD,
            commands: Vec::new(),
            expand_command: None,
            skills: Vec::new(),
            plugins: Vec::new(),
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

    /// Remove up to `n` of the newest cells if they are answer or
    /// reasoning cells not yet printed; returns how many were removed.
    fn take_back_streamed(&mut self, n: usize) -> usize {
        let mut removed = 0;
        while removed < n
            && matches!(
                self.inserts.last(),
                Some(Cell::Assistant { .. } | Cell::Reasoning { .. })
            )
        {
            self.inserts.pop();
            removed += 1;
        }
        removed
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
        if let Some(at) = self.esc_at
            && at.elapsed() > ESC_WINDOW
        {
            self.esc_at = None;
            if self.hint.as_deref() == Some(rewind::ESC_AGAIN) {
                self.hint = None;
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
