//! The rewind picker: Esc Esc on an empty input (or `/rewind`) lists the
//! session's checkpoints; Tab chooses what goes back (code, conversation
//! or both), Enter goes back, `f` does it anyway when files changed
//! outside rein.

use std::path::PathBuf;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent};

use super::{Action, App, ESC_WINDOW, Modal};
use crate::cells::one_line;
use crate::rewind::{CheckpointRow, RewindFailure, RewindMode, RewindOutcome, RewindRequest};

/// The hint after a first Esc on an empty input.
pub(super) const ESC_AGAIN: &str = "Esc again to rewind to a checkpoint";

/// The picker's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindPicker {
    /// The session the checkpoints are of.
    pub session: String,
    /// Newest first.
    pub rows: Vec<CheckpointRow>,
    pub selected: usize,
    pub mode: RewindMode,
    /// Why the last rewind was refused (files changed outside rein): `f`
    /// does it anyway.
    pub refused: Option<String>,
    /// A rewind was asked for and has not answered yet.
    pub busy: bool,
}

impl RewindPicker {
    /// The request for the selected checkpoint.
    fn request(&self, force: bool) -> Option<RewindRequest> {
        let row = self.rows.get(self.selected)?;
        Some(RewindRequest {
            session: self.session.clone(),
            k: row.k,
            mode: self.mode,
            force,
        })
    }
}

impl App {
    /// Esc on an idle app with nothing open: the first press on an empty
    /// input arms, a second one within a second opens the picker.
    pub(super) fn idle_esc(&mut self, last: Option<Instant>) -> Vec<Action> {
        if !self.editor.is_empty() {
            return Vec::new();
        }
        if last.is_some_and(|at| at.elapsed() <= ESC_WINDOW) {
            if self.hint.as_deref() == Some(ESC_AGAIN) {
                self.hint = None;
            }
            return self.ask_rewind();
        }
        self.esc_at = Some(Instant::now());
        if self.status.session_id.is_some() {
            self.hint = Some(ESC_AGAIN.into());
        }
        Vec::new()
    }

    /// `/rewind`, Esc Esc: ask for the session's checkpoints.
    pub(super) fn ask_rewind(&mut self) -> Vec<Action> {
        if self.running() {
            return self.needs_idle("/rewind");
        }
        match self.status.session_id.clone() {
            Some(session) => vec![Action::LoadCheckpoints { session }],
            None => {
                self.notice("no session yet: nothing to rewind");
                Vec::new()
            }
        }
    }

    /// Open the picker with `session`'s checkpoints (in any order; shown
    /// newest first). Nothing opens when the app moved on meanwhile (a
    /// run started, another session, another modal).
    pub fn open_rewind(&mut self, session: String, mut rows: Vec<CheckpointRow>) {
        if self.running()
            || self.modal.is_some()
            || self.status.session_id.as_deref() != Some(session.as_str())
        {
            return;
        }
        if rows.is_empty() {
            self.notice("no checkpoints in this session yet: nothing to rewind");
            return;
        }
        rows.sort_by_key(|r| std::cmp::Reverse(r.k));
        self.popup = None;
        self.modal = Some(Modal::Rewind(RewindPicker {
            session,
            rows,
            selected: 0,
            mode: RewindMode::default(),
            refused: None,
            busy: false,
        }));
    }

    /// A key in the picker.
    pub(super) fn rewind_key(&mut self, key: KeyEvent, mut p: RewindPicker) -> Vec<Action> {
        let mut actions = Vec::new();
        match key.code {
            // The answer to a rewind under way still comes, as a notice.
            KeyCode::Esc => return Vec::new(),
            KeyCode::Up => {
                p.selected = p.selected.saturating_sub(1);
                p.refused = None;
            }
            KeyCode::Down if p.selected + 1 < p.rows.len() => {
                p.selected += 1;
                p.refused = None;
            }
            KeyCode::Tab => {
                p.mode = p.mode.next();
                p.refused = None;
            }
            KeyCode::Enter if !p.busy => {
                if let Some(request) = p.request(false) {
                    p.busy = true;
                    actions.push(Action::Rewind(request));
                }
            }
            KeyCode::Char('f') if !p.busy && p.refused.is_some() => {
                if let Some(request) = p.request(true) {
                    p.busy = true;
                    actions.push(Action::Rewind(request));
                }
            }
            _ => {}
        }
        self.modal = Some(Modal::Rewind(p));
        actions
    }

    /// What the command said of a rewind. On success the picker closes
    /// and a notice says what changed (the runtime has already moved to
    /// the forked session, if any); files changed outside rein keep the
    /// picker open with the refusal, for `f`.
    pub fn rewind_done(
        &mut self,
        request: &RewindRequest,
        result: Result<RewindOutcome, RewindFailure>,
    ) {
        let picker = match self.modal.take() {
            Some(Modal::Rewind(p)) => Some(p),
            other => {
                self.modal = other;
                None
            }
        };
        match result {
            Ok(done) => {
                if request.mode.code() {
                    // The file list for @ completion may be stale now.
                    self.files = None;
                }
                self.notice(rewound_text(request, &done));
            }
            Err(failure @ RewindFailure::ChangedOutside(_)) => match picker {
                Some(mut p) => {
                    p.busy = false;
                    p.refused = Some(one_line(&failure.to_string()));
                    self.modal = Some(Modal::Rewind(p));
                }
                None => self.error(format!("rewind: {failure}")),
            },
            Err(failure) => self.error(format!("rewind: {failure}")),
        }
    }
}

/// Paths for a notice, each made safe for the terminal.
fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| one_line(&p.display().to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The notice after a rewind: the files written and deleted, and where
/// the conversation continues.
fn rewound_text(request: &RewindRequest, done: &RewindOutcome) -> String {
    let k = request.k;
    let count = |v: &[PathBuf], what: &str| {
        if v.is_empty() {
            format!("0 {what}")
        } else {
            format!("{} {what} ({})", v.len(), names(v))
        }
    };
    let mut parts = Vec::new();
    if request.mode.code() {
        let mut files = format!(
            "files restored to checkpoint {k}: {}, {}",
            count(&done.written, "written"),
            count(&done.deleted, "deleted")
        );
        if !done.left_alone.is_empty() {
            files.push_str(&format!("; left alone: {}", names(&done.left_alone)));
        }
        parts.push(files);
    } else {
        parts.push("files left as they are".to_string());
    }
    if let Some(new) = &done.forked {
        parts.push(format!(
            "the conversation continues from checkpoint {k} in session {} (the later part \
             stays in {})",
            one_line(new),
            one_line(&request.session)
        ));
    } else {
        parts.push("the conversation goes on as it was".to_string());
    }
    parts.join("; ")
}
