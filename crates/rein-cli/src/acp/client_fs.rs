//! The file tools through the editor: when the client offers
//! `fs/read_text_file`, a session's `read_file` reads the editor's buffer
//! (unsaved changes included); when it offers both reading and writing,
//! `edit_file` applies the edit to the buffer's text.
//!
//! Each tool here has the built-in's spec, access, permission facts and
//! path locks (delegated to it), so the gate decides on a call exactly as
//! it would on the built-in's: rules, protected paths, plan mode. The path
//! is confined by rein before the editor is asked, as the built-ins
//! confine it: resolved inside the workspace with symlinks followed (`..`,
//! absolute paths and symlinks leaving it are refused), and the canonical
//! path is what the editor gets. The observation is the built-in's
//! (numbered lines, the diff, the same size caps), from the helpers
//! rein-tools exposes. Whatever only the disk can answer (a folder, a
//! missing file, a device, a saved tool output outside the workspace)
//! goes to the built-in, which refuses or reads it as before.
//!
//! The editor opens a path by name, and a command running at the same
//! time can swap a folder on it for a symlink to a folder outside and back
//! (the model read `~/.ssh/id_rsa` this way). So:
//!
//! - **Reads** hold the path still ([`HeldFile`]): every folder on it is
//!   watched through its own handle before the editor is asked, and when
//!   any name on the path was renamed, replaced or removed in between, or
//!   the path leads to another file now, the editor's answer is dropped
//!   and the model gets a refusal. Where the path cannot be held, the
//!   built-in reads the disk.
//! - **Writes never go through the editor.** A write by name lands
//!   wherever the path leads at that instant; no check before it or after
//!   it can undo one made outside. So `write_file` is rein's own (beneath
//!   the workspace's handle, never through a symlink), and `edit_file`
//!   applies the edit to the held buffer's text and writes the result the
//!   same way. The editor sees the change as the call's diff and reloads
//!   the file from disk as it does for any change made outside it.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, Diff, ReadTextFileRequest, SessionNotification, SessionUpdate,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use async_trait::async_trait;
use rein_core::{
    AgentEngine, Assessment, CancellationToken, PathLock, PermissionMode, Tool, ToolAccess,
    ToolContext, ToolError, ToolOutput, ToolSpec,
};
use rein_tools::beneath::Kind;
use rein_tools::fileio::{self, HeldFile, Target};
use rein_tools::{EditFile, ReadFile, edit_file, read_file, workspace};
use serde::Deserialize;
use serde_json::Value;

/// What the client offers of its file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Through {
    pub read: bool,
    pub write: bool,
}

impl Through {
    /// What the client offered in `initialize`.
    pub fn offered(caps: &ClientCapabilities) -> Through {
        Through {
            read: caps.fs.read_text_file,
            write: caps.fs.write_text_file,
        }
    }
}

/// The client's file system, for one ACP session.
pub struct Editor {
    client: ConnectionTo<Client>,
    /// The ACP session id (a sub-agent's calls have sessions of their own
    /// in rein's store, but the editor knows only this one).
    session: String,
}

/// Put the editor's file tools in `engine` over the built-ins it offers,
/// as far as `through` allows. Returns whether `edit_file` now shows the
/// diff it made itself (of the buffer's text, which the disk may not
/// have had).
pub fn install(
    engine: &AgentEngine,
    through: Through,
    session: &str,
    client: &ConnectionTo<Client>,
) -> bool {
    let editor = Arc::new(Editor {
        client: client.clone(),
        session: session.to_string(),
    });
    // Only tools the engine offers are replaced: a profile without one
    // does not get it back this way.
    let offered: Vec<String> = engine
        .tool_specs(PermissionMode::Auto)
        .into_iter()
        .map(|s| s.name)
        .collect();
    let has = |name: &str| offered.iter().any(|n| n == name);
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    if through.read && has("read_file") {
        tools.push(Arc::new(EditorRead(editor.clone())));
    }
    let edits = through.read && through.write && has("edit_file");
    if edits {
        tools.push(Arc::new(EditorEdit(editor)));
    }
    if tools.is_empty() {
        return false;
    }
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    engine.replace_tools(|n| names.iter().any(|m| m == n), tools);
    edits
}

impl Editor {
    /// The buffer's text of canonical `path` (at most what read_file scans).
    async fn read(
        &self,
        path: &Path,
        shown: &str,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let request = ReadTextFileRequest::new(self.session.clone(), path.to_path_buf());
        let sent = self.client.send_request(request).block_task();
        let answer = tokio::select! {
            answer = sent => answer,
            () = cancel.cancelled() => return Err(cancelled(shown)),
        };
        let text = answer
            .map_err(|e| {
                ToolError::new(format!(
                    "the editor could not read `{shown}`: {}",
                    e.message
                ))
            })?
            .content;
        if text.len() as u64 > read_file::MAX_SCAN_BYTES {
            return Err(ToolError::new(format!(
                "the editor's text of `{shown}` is {} bytes, more than the {} MiB rein reads at \
                 once; search it with grep, or read parts of it with a command",
                text.len(),
                read_file::MAX_SCAN_BYTES / (1024 * 1024)
            )));
        }
        Ok(text)
    }

    /// Show the change a call made as its diff (the buffer's text before,
    /// which only this call knows). Calls of sub-agents are left to the
    /// session's updates: their ids there are nested.
    fn show_diff(&self, ctx: &ToolContext, path: &Path, before: &str, after: &str) {
        if ctx.session_id != self.session {
            return;
        }
        let diff = Diff::new(path.to_path_buf(), after).old_text(before.to_string());
        let update = ToolCallUpdate::new(
            ctx.call_id.clone(),
            ToolCallUpdateFields::new().content(vec![ToolCallContent::Diff(diff)]),
        );
        let note =
            SessionNotification::new(self.session.clone(), SessionUpdate::ToolCallUpdate(update));
        // Only a view: a client gone away ends the run by itself.
        let _ = self.client.send_notification(note);
    }
}

/// `read_file` through the editor.
struct EditorRead(Arc<Editor>);

/// `edit_file` through the editor.
struct EditorEdit(Arc<Editor>);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    replace_all: Option<bool>,
}

/// The gate's view of a tool is the built-in's: spec, access, permission
/// facts, locks and timeout are delegated to it.
macro_rules! as_builtin {
    ($builtin:expr) => {
        fn spec(&self) -> ToolSpec {
            $builtin.spec()
        }

        fn access(&self) -> ToolAccess {
            $builtin.access()
        }

        fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
            $builtin.assess(args, ctx)
        }

        fn locks(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
            $builtin.locks(args, ctx)
        }

        fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
            $builtin.touches(args)
        }

        fn timeout(&self, args: &Value) -> Option<std::time::Duration> {
            $builtin.timeout(args)
        }
    };
}

#[async_trait]
impl Tool for EditorRead {
    as_builtin!(ReadFile::default());

    async fn call(&self, raw: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse("read_file", &raw)?;
        let path = workspace::resolve_for_read(&ctx, &args.path)?;
        // A saved tool output (a read root) is rein's, and a folder, a
        // missing file or a device only the disk can answer for.
        if !in_workspace(&ctx, &path) || !is_regular_file(&path) {
            return ReadFile::default().call(raw, ctx).await;
        }
        let shown = workspace::display(&ctx.workspace, &path);
        let Some(held) = HeldFile::hold(&ctx, &path, &shown)? else {
            return ReadFile::default().call(raw, ctx).await;
        };
        let text = self.0.read(&path, &shown, &ctx.cancel).await?;
        // A path changed while the editor opened it by name: what it read
        // may be from anywhere, and the model gets none of it.
        held.unchanged()?;
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || {
            read_file::render_text(&text, &shown, args.offset, args.limit, &cancel)
        })
        .await
        .map_err(|e| ToolError::new(format!("reading the file failed: {e}")))?
        .map(ToolOutput::ok)
    }
}

#[async_trait]
impl Tool for EditorEdit {
    as_builtin!(EditFile);

    async fn call(&self, raw: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: EditArgs = parse("edit_file", &raw)?;
        edit_file::check_strings(&args.old_string, &args.new_string)?;
        let path = workspace::resolve(&ctx.workspace, &args.path)?;
        fileio::check_protected(&ctx, &args.path, &path)?;
        let shown = workspace::display(&ctx.workspace, &path);
        let target = opened(&ctx, &path, &shown, false).await?;
        // Missing, a folder, a device, too big: the built-in refuses it
        // before it writes anything, with its own words.
        match target.existing {
            Some(e) if e.kind == Kind::File && e.size <= fileio::MAX_WRITE_BYTES as u64 => {}
            _ => return EditFile.call(raw, ctx).await,
        }
        target.check_writable()?;
        let Some(held) = HeldFile::hold(&ctx, &path, &shown)? else {
            return EditFile.call(raw, ctx).await;
        };
        let before = self.0.read(&path, &shown, &ctx.cancel).await?;
        held.unchanged()?;
        let edited = edit_file::plan(
            &shown,
            &before,
            &args.old_string,
            &args.new_string,
            args.replace_all.unwrap_or(false),
        )?;
        // Written by rein into the folder it opened beneath the workspace,
        // never by name through the editor.
        let text = edited.text.clone();
        tokio::task::spawn_blocking(move || target.replace(text.as_bytes()))
            .await
            .map_err(|e| ToolError::new(format!("writing the file failed: {e}")))??;
        self.0.show_diff(&ctx, &path, &before, &edited.text);
        Ok(ToolOutput::ok(edited.observation))
    }
}

/// Arguments the gate checked against the schema, as the tool's struct.
fn parse<T: serde::de::DeserializeOwned>(tool: &str, raw: &Value) -> Result<T, ToolError> {
    serde_json::from_value(raw.clone())
        .map_err(|e| ToolError::new(format!("{}{tool}`: {e}", rein_core::INVALID_ARGUMENTS)))
}

/// The file at canonical `path` opened as the built-ins open it (its
/// missing folders made when `create`).
async fn opened(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    create: bool,
) -> Result<Target, ToolError> {
    let (ctx, path, shown) = (ctx.clone(), path.to_path_buf(), shown.to_string());
    tokio::task::spawn_blocking(move || Target::open(&ctx, &path, &shown, create))
        .await
        .map_err(|e| ToolError::new(format!("opening the file failed: {e}")))?
}

fn in_workspace(ctx: &ToolContext, path: &Path) -> bool {
    path.starts_with(workspace::canonical_workspace(&ctx.workspace))
}

/// A regular file now (canonical paths have no symlink left to follow).
fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

fn cancelled(shown: &str) -> ToolError {
    ToolError::new(format!(
        "cancelled while waiting for the editor about `{shown}`"
    ))
}

#[cfg(test)]
mod tests;
