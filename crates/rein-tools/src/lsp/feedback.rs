//! Diagnostics after edits: a hook in the gate that, after `write_file`
//! or `edit_file` changed a file, has the file's language server check it
//! and adds its errors (and, when asked, warnings) to the call's result.
//!
//! 1. the file (inside the workspace, at most [`MAX_FILE`] bytes) picks its
//!    server by extension ([`super::languages::server_for`]); none, and
//!    nothing is added;
//! 2. the server is started on first use (once more after a crash); one
//!    that cannot start is said once, as a notice, and not tried again;
//! 3. the file's new text is sent, and rein waits for the diagnostics that
//!    follow, until none came for the settle time, at most the cap (longer
//!    for a server's first file);
//! 4. at most `max_lines` are added, each `path:line:col: severity:
//!    message`, those the file did not have before the edit marked new.
//!    A server that is slow or says nothing adds nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_types::{Diagnostic, DiagnosticSeverity};
use rein_core::{AfterCall, CallHook, HookRun, HookVerdict, ToolCall, ToolOutput};
use serde_json::Value;

use super::languages::{ServerSpec, server_for};
use super::server::{LanguageServer, Launch};

/// The largest file sent to a server.
pub const MAX_FILE: u64 = 2 * 1024 * 1024;

/// What the feedback does.
#[derive(Debug, Clone)]
pub struct LspSettings {
    /// The user's `[lsp.NAME]` servers (before the built-in ones).
    pub servers: Vec<ServerSpec>,
    /// Add warnings too, not only errors.
    pub warnings: bool,
    /// Quiet time after the last publication before the answer counts.
    pub settle: Duration,
    /// The longest wait for a file's diagnostics.
    pub cap: Duration,
    /// The longest wait for a server's handshake, and for its first file
    /// (it reads the project first).
    pub first_cap: Duration,
    /// Most lines added to one result.
    pub max_lines: usize,
}

impl Default for LspSettings {
    fn default() -> Self {
        LspSettings {
            servers: Vec::new(),
            warnings: false,
            settle: Duration::from_millis(300),
            cap: Duration::from_secs(3),
            first_cap: Duration::from_secs(10),
            max_lines: 20,
        }
    }
}

enum Slot {
    Running {
        server: Arc<LanguageServer>,
        restarted: bool,
    },
    Unavailable,
}

/// The language servers of one workspace, and the hook.
pub struct Diagnostics {
    settings: LspSettings,
    launch: Launch,
    slots: tokio::sync::Mutex<HashMap<String, Slot>>,
}

/// What checking one file gave.
enum Checked {
    /// Lines for the model.
    Report(String),
    /// A server that could not start (said once).
    Unavailable(String),
    Nothing,
}

impl Diagnostics {
    pub fn new(settings: LspSettings, launch: Launch) -> Diagnostics {
        Diagnostics {
            settings,
            launch,
            slots: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Check `path` (canonical, inside `root`) after an edit.
    async fn check(&self, root: &Path, path: &Path) -> Checked {
        let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
            return Checked::Nothing;
        };
        let Some(spec) = server_for(ext, &self.settings.servers) else {
            return Checked::Nothing;
        };
        let (server, first) = match self.server(&spec, root).await {
            Ok(s) => s,
            Err(Some(why)) => return Checked::Unavailable(why),
            Err(None) => return Checked::Nothing,
        };
        let Some(text) = read_text(path) else {
            return Checked::Nothing;
        };
        let Ok((before, past)) = server.sync(path, &text).await else {
            return Checked::Nothing;
        };
        let cap = if first {
            self.settings.first_cap
        } else {
            self.settings.cap
        };
        match server
            .diagnostics(path, past, self.settings.settle, cap)
            .await
        {
            Some(items) => {
                match self.report(server.name(), root, path, &before, &items, past > 0) {
                    Some(r) => Checked::Report(r),
                    None => Checked::Nothing,
                }
            }
            None => Checked::Nothing,
        }
    }

    /// The running server for `spec` (started now if need be, or again
    /// once after a crash), and whether this is its first file. `Err(Some)`
    /// says why it could not start, the first time only.
    async fn server(
        &self,
        spec: &ServerSpec,
        root: &Path,
    ) -> Result<(Arc<LanguageServer>, bool), Option<String>> {
        let mut slots = self.slots.lock().await;
        let restarted = match slots.get(&spec.name) {
            Some(Slot::Running { server, .. }) if server.is_alive() => {
                return Ok((server.clone(), false));
            }
            Some(Slot::Running {
                restarted: true, ..
            })
            | Some(Slot::Unavailable) => {
                slots.insert(spec.name.clone(), Slot::Unavailable);
                return Err(None);
            }
            Some(Slot::Running { .. }) => true,
            None => false,
        };
        match LanguageServer::start(spec, root, &self.launch, self.settings.first_cap).await {
            Ok(server) => {
                let server = Arc::new(server);
                slots.insert(
                    spec.name.clone(),
                    Slot::Running {
                        server: server.clone(),
                        restarted,
                    },
                );
                Ok((server, true))
            }
            Err(e) => {
                slots.insert(spec.name.clone(), Slot::Unavailable);
                Err(Some(format!(
                    "the {} language server is off for this session: {e}",
                    spec.name
                )))
            }
        }
    }

    /// The lines for the model, or None when there is nothing to say.
    fn report(
        &self,
        server: &str,
        root: &Path,
        path: &Path,
        before: &[Diagnostic],
        items: &[Diagnostic],
        known_before: bool,
    ) -> Option<String> {
        let shown_path = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        let wanted: Vec<&Diagnostic> = items
            .iter()
            .filter(|d| match d.severity {
                Some(DiagnosticSeverity::ERROR) | None => true,
                Some(DiagnosticSeverity::WARNING) => self.settings.warnings,
                _ => false,
            })
            .collect();
        if wanted.is_empty() {
            return None;
        }
        let errors = wanted
            .iter()
            .filter(|d| d.severity != Some(DiagnosticSeverity::WARNING))
            .count();
        let warnings = wanted.len() - errors;
        let mut counts = vec![plural(errors, "error")];
        if warnings > 0 {
            counts.push(plural(warnings, "warning"));
        }
        let mut out = format!(
            "[{server} language server: {} in {shown_path}]",
            counts.join(", ")
        );
        for d in wanted.iter().take(self.settings.max_lines) {
            let severity = match d.severity {
                Some(DiagnosticSeverity::WARNING) => "warning",
                _ => "error",
            };
            let message = d.message.lines().next().unwrap_or("").trim();
            let new = known_before && !before.iter().any(|b| b.message == d.message);
            out.push_str(&format!(
                "\n{shown_path}:{}:{}: {severity}: {message}{}",
                d.range.start.line + 1,
                d.range.start.character + 1,
                if new { " (new)" } else { "" }
            ));
        }
        if wanted.len() > self.settings.max_lines {
            out.push_str(&format!(
                "\n[{} more]",
                wanted.len() - self.settings.max_lines
            ));
        }
        Some(out)
    }

    /// Stop every server.
    pub async fn shutdown(&self) {
        let mut slots = self.slots.lock().await;
        for (_, slot) in slots.drain() {
            if let Slot::Running { server, .. } = slot
                && let Ok(server) = Arc::try_unwrap(server)
            {
                server.shutdown().await;
            }
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// The file's text, when it is small enough and UTF-8.
fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The file a write or edit changed: canonical and inside `root`.
fn edited_file(args: &Value, root: &Path) -> Option<PathBuf> {
    let raw = args.get("path")?.as_str()?;
    let root = std::fs::canonicalize(root).ok()?;
    let path = std::fs::canonicalize(root.join(raw)).ok()?;
    path.starts_with(&root).then_some(path)
}

#[async_trait::async_trait]
impl CallHook for Diagnostics {
    async fn before_call(&self, _call: &ToolCall, _args: &Value) -> HookVerdict {
        HookVerdict::Continue
    }

    async fn after_call_in(
        &self,
        call: &ToolCall,
        args: &Value,
        output: &ToolOutput,
        run: &HookRun,
    ) -> AfterCall {
        if output.is_error || !matches!(call.name.as_str(), "write_file" | "edit_file") {
            return AfterCall::Nothing;
        }
        let Some(path) = edited_file(args, &run.workspace) else {
            return AfterCall::Nothing;
        };
        let root = std::fs::canonicalize(&run.workspace).unwrap_or_else(|_| run.workspace.clone());
        match self.check(&root, &path).await {
            Checked::Report(text) => AfterCall::Tell(text),
            Checked::Unavailable(why) => AfterCall::Warn(why),
            Checked::Nothing => AfterCall::Nothing,
        }
    }
}
