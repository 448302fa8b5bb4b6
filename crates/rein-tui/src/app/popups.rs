//! Completion popups and the modals (approval, resume picker, plan ready;
//! the rewind picker's keys are in `rewind.rs`).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rein_core::{ApprovalDecision, ApprovalScope, PermissionMode, SessionInfo};

use super::{Action, App, FILE_INDEX_LIMIT, Modal, Popup, PopupKind, is_ctrl};
use crate::complete::{self, FileIndex};
use crate::editor::Editor;

impl App {
    // ---------------------------------------------------------- completion

    /// What completes the text before the cursor: candidates, where the
    /// token starts (char column) and whether it is a /command.
    pub(super) fn candidates(&mut self) -> Option<Popup> {
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
                token_start: 0,
                kind: PopupKind::Command,
            });
        }
        let current = self.editor.current_line().to_string();
        let col = self.editor.cursor_char_col();
        if let Some((start, query)) = complete::sigil_token(&current, col, '$') {
            let names: Vec<&str> = self.skills.iter().map(|(n, _)| n.as_str()).collect();
            let items = complete::complete_names(&query, &names, 8);
            if items.is_empty() {
                self.hint = Some(if names.is_empty() {
                    "no skills here (/skills says where they go)".to_string()
                } else {
                    format!("no skill matches ${query}")
                });
            }
            return Some(Popup {
                items,
                selected: 0,
                token_start: start,
                kind: PopupKind::Skill,
            });
        }
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
            token_start: start,
            kind: PopupKind::File,
        })
    }

    /// Put a chosen completion into the input.
    pub(super) fn apply_completion(&mut self, p: &Popup, chosen: &str) {
        match p.kind {
            PopupKind::Command => self.editor.set_text(&format!("{chosen} ")),
            PopupKind::File => self
                .editor
                .replace_before_cursor(p.token_start, &format!("@{chosen} ")),
            PopupKind::Skill => self
                .editor
                .replace_before_cursor(p.token_start, &format!("${chosen} ")),
        }
    }

    /// Tab: a single candidate is applied, several open the popup.
    pub(super) fn complete(&mut self) {
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
    pub(super) fn refresh_popup(&mut self) {
        if self.popup.is_some() {
            self.popup = self.candidates().filter(|p| !p.items.is_empty());
        }
    }

    pub(super) fn popup_key(&mut self, key: &KeyEvent) -> Option<Vec<Action>> {
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

    pub(super) fn modal_key(&mut self, key: KeyEvent) -> Vec<Action> {
        let Some(modal) = self.modal.take() else {
            return Vec::new();
        };
        // Ctrl+C in a modal is its Esc: deny, go back or close.
        let key = if is_ctrl(&key, 'c') {
            KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE)
        } else {
            key
        };
        match modal {
            Modal::Approval { feedback } => self.approval_key(key, feedback),
            Modal::Rewind(picker) => self.rewind_key(key, picker),
            Modal::Form(form) => self.form_key(key, form),
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

    pub(super) fn approval_key(&mut self, key: KeyEvent, feedback: Option<Editor>) -> Vec<Action> {
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

    /// Answer the front approval and show the next one, if any (else a
    /// waiting form).
    pub(super) fn decide(&mut self, decision: ApprovalDecision) {
        if let Some(p) = self.approvals.pop_front() {
            p.reply.send(decision);
        }
        self.modal = (!self.approvals.is_empty()).then_some(Modal::Approval { feedback: None });
        self.approval_shown = self.modal.is_some().then(std::time::Instant::now);
        self.next_form();
    }

    /// An MCP server's form: shown now, or when the modal is free.
    pub fn show_form(&mut self, request: crate::form::FormRequest) {
        self.forms.push_back(crate::form::Form::new(request));
        self.next_form();
    }

    fn next_form(&mut self) {
        if self.modal.is_none()
            && let Some(form) = self.forms.pop_front()
        {
            self.popup = None;
            self.modal = Some(Modal::Form(Box::new(form)));
        }
    }

    fn form_key(&mut self, key: KeyEvent, mut form: Box<crate::form::Form>) -> Vec<Action> {
        use crate::form::FormAnswer;
        let answer = match key.code {
            KeyCode::Esc => Some(FormAnswer::Cancel),
            KeyCode::Char('d') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                Some(FormAnswer::Decline)
            }
            KeyCode::Enter => match form.content() {
                Ok(content) => Some(FormAnswer::Accept(content)),
                Err(problem) => {
                    form.problem = Some(problem);
                    None
                }
            },
            KeyCode::Up | KeyCode::BackTab => {
                form.previous();
                None
            }
            KeyCode::Down | KeyCode::Tab => {
                form.next();
                None
            }
            KeyCode::Left => {
                form.cycle(-1);
                None
            }
            KeyCode::Right => {
                form.cycle(1);
                None
            }
            KeyCode::Backspace => {
                form.backspace();
                None
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                form.type_char(c);
                None
            }
            _ => None,
        };
        match answer {
            Some(answer) => {
                form.answer(answer);
                self.next_form();
            }
            None => self.modal = Some(Modal::Form(form)),
        }
        Vec::new()
    }
}
