//! Shared helpers: an app in a throwaway workspace, key events, engine
//! events, and the screen as plain text.

// Test helpers: a failed setup should stop the test with its message.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::text::Line;
use rein_core::{
    ApprovalDecision, ApprovalReply, ApprovalRequest, Event, LedgerTotals, Message, PermissionMode,
    Risk, StopReason, ToolResult, Usage,
};
use rein_tui::app::{Action, App, Status};
use rein_tui::cells::{Cell, ToolState};
use rein_tui::history::InputHistory;
use rein_tui::render;
use rein_tui::theme::Theme;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// An app and the directory it lives in (kept alive as long as the app).
pub struct Harness {
    pub app: App,
    pub dir: TempDir,
}

impl Harness {
    /// A plain-themed app with a default status, its workspace `ws/` and its
    /// history `history.jsonl` in a fresh temporary directory.
    pub fn new() -> Harness {
        Harness::with_status(Status::default())
    }

    pub fn with_status(status: Status) -> Harness {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
        let app = new_app(&dir, status);
        Harness { app, dir }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Another app over the same workspace and history file, as if rein
    /// was started again.
    pub fn restart(&self) -> App {
        new_app(&self.dir, Status::default())
    }

    pub fn press(&mut self, code: KeyCode) -> Vec<Action> {
        self.app.on_key(key(code))
    }

    pub fn press_with(&mut self, code: KeyCode, modifiers: KeyModifiers) -> Vec<Action> {
        self.app.on_key(KeyEvent::new(code, modifiers))
    }

    pub fn ctrl(&mut self, c: char) -> Vec<Action> {
        self.press_with(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    /// Type each character of `text` as a key press; the actions of all
    /// the presses.
    pub fn type_str(&mut self, text: &str) -> Vec<Action> {
        type_str(&mut self.app, text)
    }

    /// Type `text` and press Enter.
    pub fn send(&mut self, text: &str) -> Vec<Action> {
        let mut actions = self.type_str(text);
        actions.extend(self.press(KeyCode::Enter));
        actions
    }

    pub fn event(&mut self, event: Event) -> Vec<Action> {
        self.app.on_event(event)
    }

    pub fn input(&self) -> String {
        self.app.editor.text()
    }
}

/// An app whose approvals answer keys at once (the guard against keys
/// typed just as a modal opens has its own test).
fn new_app(dir: &TempDir, status: Status) -> App {
    let mut app = App::new(
        Theme::plain(),
        dir.path().join("ws"),
        InputHistory::load(dir.path().join("history.jsonl")),
        status,
    );
    app.approval_guard = std::time::Duration::ZERO;
    app
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn type_str(app: &mut App, text: &str) -> Vec<Action> {
    text.chars()
        .flat_map(|c| app.on_key(key(KeyCode::Char(c))))
        .collect()
}

// ------------------------------------------------------------------ events

pub fn run_started(mode: PermissionMode) -> Event {
    Event::RunStarted {
        session_id: "0198c3a1b2c3d4e5".into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        workspace: "/home/me/calc".into(),
        resumed: false,
        mode,
        plan: mode == PermissionMode::Plan,
        profile: rein_core::Profile::Full,
        without: Vec::new(),
    }
}

pub fn text(t: &str) -> Event {
    Event::TextDelta { text: t.into() }
}

pub fn stopped(reason: StopReason, final_text: &str) -> Event {
    Event::Stopped {
        reason,
        turns: 1,
        usage: Usage::default(),
        final_text: final_text.into(),
        error: None,
        totals: LedgerTotals::default(),
        refused: Vec::new(),
    }
}

pub fn user_committed(content: &str) -> Event {
    Event::MessageCommitted {
        seq: 1,
        message: Message::user(content),
    }
}

pub fn tool_started(call_id: &str, name: &str, arguments: &str) -> Event {
    Event::ToolStarted {
        call_id: call_id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

pub fn tool_finished(call_id: &str, name: &str, is_error: bool, preview: &str) -> Event {
    Event::ToolFinished {
        call_id: call_id.into(),
        name: name.into(),
        duration_ms: 1250,
        is_error,
        output_preview: preview.into(),
    }
}

pub fn tool_committed(call_id: &str, name: &str, is_error: bool, output: &str) -> Event {
    Event::MessageCommitted {
        seq: 3,
        message: Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: call_id.into(),
            name: name.into(),
            output: output.into(),
            is_error,
        }),
    }
}

/// An approval request for `call_id` and the receiver the gate would wait
/// on.
pub fn approval(
    call_id: &str,
    tool: &str,
    summary: &str,
    risk: Risk,
    why: &str,
) -> (Event, oneshot::Receiver<ApprovalDecision>) {
    let (reply, rx) = ApprovalReply::channel();
    let request = ApprovalRequest {
        call_id: call_id.into(),
        tool: tool.into(),
        summary: summary.into(),
        risk,
        why: why.into(),
        suggested_rules: vec![rein_core::Rule::new(tool, Some(summary.to_string()))],
        suggested_mode: Some(PermissionMode::AcceptEdits),
        mode: PermissionMode::Default,
    };
    (Event::ApprovalRequired { request, reply }, rx)
}

// ------------------------------------------------------------------ screen

/// The buffer as text: one line per row, trailing spaces trimmed. A wide
/// character's hidden second cell is skipped.
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut rows = Vec::new();
    for y in area.top()..area.bottom() {
        let mut row = String::new();
        let mut skip = 0usize;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            row.push_str(sym);
            skip = unicode_width::UnicodeWidthStr::width(sym).saturating_sub(1);
        }
        rows.push(row.trim_end().to_string());
    }
    rows.join("\n")
}

/// Draw the app on a `width`×`height` test terminal.
pub fn draw(app: &App, width: u16, height: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    term.draw(|f| render::draw(app, f)).expect("draw");
    term.backend().buffer().clone()
}

/// The screen as text at `width`×`height`.
pub fn screen(app: &App, width: u16, height: u16) -> String {
    buffer_text(&draw(app, width, height))
}

/// What a user of a `width`×`term_height` terminal sees of the app: the
/// inline viewport at the bottom, as high as the app asks for.
pub fn viewport(app: &App, width: u16, term_height: u16) -> String {
    let h = render::desired_height(app, width, term_height);
    screen(app, width, h)
}

/// Lines as text, trailing spaces trimmed.
pub fn lines_text(lines: &[Line]) -> String {
    rein_tui::markdown::plain_text(lines)
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A cell rendered at `width` with the plain theme and the first spinner
/// frame.
pub fn cell_text(cell: &Cell, width: u16) -> String {
    lines_text(&cell.lines(width, &Theme::plain(), 0))
}

/// A stored session as the resume picker lists it.
pub fn session(id: &str, title: &str, updated_at: i64, messages: u64) -> rein_core::SessionInfo {
    rein_core::SessionInfo {
        id: id.into(),
        workspace: "/home/me/calc".into(),
        title: title.into(),
        model: "claude-sonnet-4-5".into(),
        created_at: updated_at - 60_000,
        updated_at,
        message_count: messages,
        last_stop: None,
        parent_id: None,
    }
}

// --------------------------------------------------------------- app state

/// Put the app in a run: "start" sent, the run started, what it printed
/// so far drained.
pub fn running(h: &mut Harness) {
    let actions = h.send("start");
    assert_eq!(actions, vec![Action::Submit("start".into())]);
    h.event(run_started(PermissionMode::Default));
    h.app.drain_inserts();
}

/// The state of the live tool cell for `call_id` `id`, if there is one.
pub fn tool_state(h: &Harness, id: &str) -> Option<ToolState> {
    h.app.live.iter().find_map(|c| match c {
        Cell::Tool { call_id, state, .. } if call_id == id => Some(state.clone()),
        _ => None,
    })
}

// ------------------------------------------------------------ screen apps

/// The status of a session with claude-sonnet-4-5 on anthropic, whose
/// context window is known.
pub fn sonnet_status() -> Status {
    Status {
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        context_window: Some(200_000),
        ..Status::default()
    }
}

/// An app whose status line shows [`sonnet_status`].
pub fn sonnet_harness() -> Harness {
    Harness::with_status(sonnet_status())
}

/// One line's text, spans joined.
pub fn line_text(line: &ratatui::text::Line) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}
