//! Keys: editing, sending, cancelling, modes and slash commands.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use rein_core::PermissionMode;

use super::{Action, App, CTRL_C_WINDOW, Modal, cycle_mode, is_ctrl};
use crate::cells::Cell;
use crate::complete::{self, SLASH_COMMANDS};
use crate::editor::PasteOutcome;

impl App {
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
            if matches!(self.modal, Some(Modal::Approval { feedback: None }))
                && self
                    .approval_shown
                    .is_some_and(|at| at.elapsed() < self.approval_guard)
            {
                // Typed before the user could have read the question.
                return Vec::new();
            }
            return self.modal_key(key);
        }
        // Any other key in between breaks a double Esc.
        let last_esc = self.esc_at.take();
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
                self.idle_esc(last_esc)
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

    pub(super) fn edit_key(&mut self, key: &KeyEvent) {
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

    pub(super) fn ctrl_c(&mut self) -> Vec<Action> {
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

    pub(super) fn set_mode(&mut self, mode: PermissionMode) -> Vec<Action> {
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

    /// Send `text` as if typed and sent with Enter (the first message of
    /// `rein "prompt"`).
    pub fn send(&mut self, text: &str) -> Vec<Action> {
        self.on_paste(text);
        self.submit()
    }

    pub(super) fn submit(&mut self) -> Vec<Action> {
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

    /// Send `text` as a message, never as a command (a server's prompt may
    /// start with `/`): queued while a run goes on.
    pub fn send_message(&mut self, text: String) -> Vec<Action> {
        if self.running() {
            self.queued.push(text.clone());
            return vec![Action::Queue(text)];
        }
        self.start(text)
    }

    pub(super) fn start(&mut self, prompt: String) -> Vec<Action> {
        self.status.set_running(true);
        vec![Action::Submit(prompt)]
    }

    /// Something that was not a run (a compaction) finished: the app is
    /// idle again, and what was typed meanwhile is sent.
    pub fn busy_done(&mut self) -> Vec<Action> {
        self.status.set_running(false);
        if self.queued.is_empty() {
            return Vec::new();
        }
        let next = std::mem::take(&mut self.queued).join("\n\n");
        self.start(next)
    }

    pub(super) fn slash(&mut self, line: &str) -> Vec<Action> {
        let (cmd, arg) = match line.split_once(char::is_whitespace) {
            Some((c, a)) => (c, a.trim()),
            None => (line, ""),
        };
        let arg = (!arg.is_empty()).then(|| arg.to_string());
        match cmd {
            "/quit" | "/exit" => {
                self.should_quit = true;
                vec![Action::Quit]
            }
            "/help" => self.show_help(),
            "/new" => self.new_session(),
            "/resume" => {
                if self.running() {
                    return self.needs_idle("/resume");
                }
                match arg {
                    Some(id) => vec![Action::Resume(id)],
                    None => vec![Action::LoadSessions],
                }
            }
            "/plan" => {
                let mut actions = self.set_mode(PermissionMode::Plan);
                if arg.is_none() {
                    self.notice(format!(
                        "mode: plan ({}); send the task to plan",
                        mode_meaning(PermissionMode::Plan)
                    ));
                }
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
                    return self.needs_idle("/compact");
                }
                if self.status.session_id.is_none() {
                    self.error("/compact: no session yet");
                    return Vec::new();
                }
                // Busy until the runtime reports the end (`busy_done`):
                // what is typed meanwhile is queued.
                self.status.set_running(true);
                vec![Action::Compact]
            }
            "/todos" => self.show_todos(),
            "/model" => vec![Action::SwitchModel(arg)],
            "/mode" => self.mode_command(arg),
            "/cost" => vec![Action::ShowCost],
            "/context" => vec![Action::ShowContext],
            "/mcp" => vec![Action::ShowMcp],
            "/lsp" => vec![Action::ShowLsp],
            "/skills" => self.show_skills(),
            "/plugins" => self.show_plugins(),
            "/rewind" => self.ask_rewind(),
            prompt if prompt.starts_with("/mcp__") => vec![Action::McpPrompt {
                command: prompt.to_string(),
                args: arg.unwrap_or_default(),
            }],
            custom if self.custom_command(custom).is_some() => {
                self.custom_command_message(line, custom, arg.as_deref().unwrap_or(""))
            }
            other => {
                // Refused in the words every front end uses, when the
                // command gave them.
                let shared = self
                    .expand_command
                    .as_ref()
                    .and_then(|expand| expand(other.trim_start_matches('/'), "").err());
                let msg = match (shared, complete::suggest_command(other)) {
                    (None, Some(s)) => {
                        format!("unknown command {other}: did you mean {s}? (/help lists them)")
                    }
                    (None, None) => format!("unknown command {other} (/help lists them)"),
                    (Some(why), Some(s)) => {
                        format!("{why} (did you mean {s}? /help lists them)")
                    }
                    (Some(why), None) => format!("{why} (/help lists them)"),
                };
                self.error(msg);
                Vec::new()
            }
        }
    }

    /// `/NAME ARGS`, a custom command: checked here, then sent as typed to
    /// be prepared as every front end prepares it (its context lines run,
    /// its files attached, its tools and model for its run). During a run
    /// a plain command's text is queued; one that needs a run of its own
    /// waits for the run to end.
    fn custom_command_message(&mut self, line: &str, slash: &str, args: &str) -> Vec<Action> {
        let checked = match &self.expand_command {
            Some(expand) => expand(slash.trim_start_matches('/'), args),
            None => Ok(crate::run::CommandText {
                text: self
                    .custom_command(slash)
                    .map(|c| c.expand(args))
                    .unwrap_or_default(),
                own_run: false,
            }),
        };
        let command = match checked {
            Ok(command) => command,
            Err(why) => {
                self.error(why);
                return Vec::new();
            }
        };
        if command.text.trim().is_empty() {
            self.error(format!("{slash}: the command is empty"));
            return Vec::new();
        }
        match (self.running(), command.own_run) {
            (true, true) => {
                self.error(format!(
                    "{slash} runs on its own (context lines, files, its tools or model): \
                     send it when this run has ended (Esc stops it)"
                ));
                Vec::new()
            }
            (true, false) => self.send_message(command.text),
            (false, _) if self.expand_command.is_some() => self.start(line.trim().to_string()),
            (false, _) => self.start(command.text),
        }
    }

    /// The custom command `/NAME`, if there is one.
    fn custom_command(&self, slash: &str) -> Option<&rein_core::commands::CustomCommand> {
        let name = slash.strip_prefix('/')?;
        self.commands.iter().find(|c| c.name == name)
    }

    /// `/help`: the commands and the keys.
    fn show_help(&mut self) -> Vec<Action> {
        let mut lines: Vec<String> = SLASH_COMMANDS
            .iter()
            .map(|(c, h)| format!("{c:<10} {h}"))
            .collect();
        for c in &self.commands {
            let help = c
                .description
                .clone()
                .unwrap_or_else(|| "custom command".into());
            let hint = c
                .argument_hint
                .as_deref()
                .map(|h| format!(" {h}"))
                .unwrap_or_default();
            lines.push(crate::cells::sanitize(&format!("/{}{hint}  {help}", c.name)).into_owned());
        }
        lines.push(String::new());
        lines.extend(
            [
                "Enter      send (queued for the next turn while the model works)",
                "Shift+Enter, Ctrl+J  new line;  a line ending in \\ also continues",
                "Esc        cancel the running turn",
                "Esc Esc    on an empty input: rewind to a checkpoint (as /rewind)",
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

    /// `/new`: the next message starts a new session.
    fn new_session(&mut self) -> Vec<Action> {
        if self.running() {
            return self.needs_idle("/new");
        }
        let ended = self.status.session_id.take();
        self.status.totals = Default::default();
        self.status.context_tokens = None;
        self.status.last_request = None;
        self.todos.clear();
        self.status.todos_done = 0;
        self.status.todos_total = 0;
        vec![Action::NewSession { ended }]
    }

    /// `/todos`: the session's todo list.
    /// `/skills`: each skill with its description.
    fn show_skills(&mut self) -> Vec<Action> {
        let lines = if self.skills.is_empty() {
            vec![
                "(no skills: .agents/skills/, .rein/skills/, .claude/skills/ or $REIN_HOME/skills/)"
                    .to_string(),
            ]
        } else {
            self.skills
                .iter()
                .map(|(name, description)| {
                    crate::cells::sanitize(&format!("${name}  {description}")).into_owned()
                })
                .collect()
        };
        self.push_cell(Cell::Info {
            title: "Skills ($name in a message attaches one)".into(),
            lines,
        });
        Vec::new()
    }

    fn show_plugins(&mut self) -> Vec<Action> {
        let lines = if self.plugins.is_empty() {
            vec!["(no plugins: `rein plugin install PATH|GIT-URL[@REF]` adds one)".to_string()]
        } else {
            self.plugins
                .iter()
                .map(|line| crate::cells::sanitize(line).into_owned())
                .collect()
        };
        self.push_cell(Cell::Info {
            title: "Plugins (`rein plugin` installs, updates and removes them)".into(),
            lines,
        });
        Vec::new()
    }

    fn show_todos(&mut self) -> Vec<Action> {
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

    /// `/mode [NAME]`: the next mode of the cycle, or the one named (never
    /// bypass).
    /// `/mode`: the mode now and the choices; `/mode NAME`: switch, and
    /// say what the new mode lets run (and when it applies).
    fn mode_command(&mut self, arg: Option<String>) -> Vec<Action> {
        let Some(name) = arg else {
            self.notice(format!(
                "mode: {} ({}); /mode default | accept-edits | plan | auto, or Shift+Tab",
                self.status.mode,
                mode_meaning(self.status.mode)
            ));
            return Vec::new();
        };
        match name.parse::<PermissionMode>() {
            Ok(PermissionMode::Bypass) => {
                self.error("/mode: bypass is only available as a command-line flag");
                Vec::new()
            }
            Ok(m) if m == self.status.mode => {
                self.notice(format!("already in {m} mode ({})", mode_meaning(m)));
                Vec::new()
            }
            Ok(m) => {
                let actions = self.set_mode(m);
                let when = if self.status.mode_pending {
                    " from the next turn"
                } else {
                    ""
                };
                self.notice(format!("mode: {m}{when} ({})", mode_meaning(m)));
                actions
            }
            Err(e) => {
                self.error(format!("/mode: {e}"));
                Vec::new()
            }
        }
    }

    /// The refusal of a command that needs the run to end first.
    pub(super) fn needs_idle(&mut self, what: &str) -> Vec<Action> {
        self.error(format!(
            "{what} needs the run to end first (Esc cancels it)"
        ));
        Vec::new()
    }
}

/// What a mode lets run, in a few words.
fn mode_meaning(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "reads run; edits and commands ask",
        PermissionMode::AcceptEdits => "reads and edits run; commands ask",
        PermissionMode::Plan => "read-only: nothing changes files; the answer is a plan",
        PermissionMode::Auto => "everything runs, inside the sandbox",
        PermissionMode::Bypass => "everything runs, with no sandbox and no checks",
    }
}
