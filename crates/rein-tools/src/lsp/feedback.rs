//! Diagnostics after edits: a hook in the gate that, after `write_file`
//! or `edit_file` changed a file (or a `bash` command changed files a
//! server has open), has the file's language server check it and adds its
//! errors (and, when asked, warnings) to the call's result.
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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_types::{Diagnostic, DiagnosticSeverity};
use rein_core::{AfterCall, CallHook, HookRun, HookVerdict, ToolCall, ToolOutput};
use serde_json::Value;

use super::languages::ServerSpec;
use super::server::Launch;
use super::servers::{Found, Servers};

/// The largest file sent to a server.
pub const MAX_FILE: u64 = 2 * 1024 * 1024;
/// Most files re-checked after one command.
const MAX_CHANGED: usize = 5;

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

/// The diagnostics hook, over the workspace's servers.
pub struct Diagnostics {
    servers: Arc<Servers>,
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
        Diagnostics::over(Arc::new(Servers::new(settings, launch)))
    }

    /// The hook over `servers` (shared with the `lsp` tool).
    pub fn over(servers: Arc<Servers>) -> Diagnostics {
        Diagnostics { servers }
    }

    /// Check `path` (canonical, inside `root`) after an edit.
    async fn check(&self, root: &Path, path: &Path) -> Checked {
        let (server, first) = match self.servers.for_file(path, root).await {
            Found::Server { server, fresh } => (server, fresh),
            Found::Failed(why) => return Checked::Unavailable(why),
            Found::None => return Checked::Nothing,
        };
        let Some(text) = read_text(path) else {
            return Checked::Nothing;
        };
        let Ok((before, past)) = server.sync(path, &text).await else {
            return Checked::Nothing;
        };
        let cap = if first {
            self.servers.settings.first_cap
        } else {
            self.servers.settings.cap
        };
        let answer = server
            .diagnostics(path, past, self.servers.settings.settle, cap)
            .await;
        let slow = answer.is_none() && server.is_alive();
        self.servers.waited(&server, slow.then_some(cap));
        match answer {
            Some(items) => {
                match self.report(server.name(), root, path, &before, &items, past > 0) {
                    Some(r) => Checked::Report(r),
                    None => Checked::Nothing,
                }
            }
            None => Checked::Nothing,
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
                Some(DiagnosticSeverity::WARNING) => self.servers.settings.warnings,
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
        for d in wanted.iter().take(self.servers.settings.max_lines) {
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
        if wanted.len() > self.servers.settings.max_lines {
            out.push_str(&format!(
                "\n[{} more]",
                wanted.len() - self.servers.settings.max_lines
            ));
        }
        Some(out)
    }

    /// Files open on a running server that a command changed (at most
    /// [`MAX_CHANGED`]).
    async fn changed_by_command(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for server in self.servers.running().await {
            files.extend(server.changed_on_disk(MAX_CHANGED).await);
        }
        files.truncate(MAX_CHANGED);
        files
    }

    /// Stop every server.
    pub async fn shutdown(&self) {
        self.servers.shutdown().await;
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

/// The file a write or edit changed: canonical and inside `root`
/// (canonical).
fn edited_file(args: &Value, root: &Path) -> Option<PathBuf> {
    let raw = args.get("path")?.as_str()?;
    let path = std::fs::canonicalize(root.join(raw)).ok()?;
    path.starts_with(root).then_some(path)
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
        let root = std::fs::canonicalize(&run.workspace).unwrap_or_else(|_| run.workspace.clone());
        let files = match call.name.as_str() {
            "write_file" | "edit_file" if !output.is_error => {
                edited_file(args, &root).into_iter().collect()
            }
            // A command may have changed files a server has open.
            "bash" => self.changed_by_command().await,
            _ => Vec::new(),
        };
        let mut reports = Vec::new();
        for path in files {
            match self.check(&root, &path).await {
                Checked::Report(text) => reports.push(text),
                Checked::Unavailable(why) => return AfterCall::Warn(why),
                Checked::Nothing => {}
            }
        }
        if reports.is_empty() {
            AfterCall::Nothing
        } else {
            AfterCall::Tell(reports.join("\n"))
        }
    }
}
