//! The file tools through the editor: when the client offers
//! `fs/read_text_file` and `fs/write_text_file`, a session's `read_file`
//! reads the editor's buffer (unsaved changes included) and `write_file`
//! and `edit_file` write into it (so the change has the editor's undo).
//!
//! Only the transport changes. Each tool here has the built-in's spec,
//! access, permission facts and path locks (delegated to it), so the gate
//! decides on a call exactly as it would on the built-in's: rules, protected
//! paths, plan mode. The path is confined by rein before the editor is
//! asked, as the built-ins confine it: resolved inside the workspace with
//! symlinks followed (`..`, absolute paths and symlinks leaving it are
//! refused), a write's last protected-path check, and the canonical path is
//! what the editor gets. The observation is the built-in's (numbered lines,
//! the diff, the same size caps), from the helpers rein-tools exposes.
//! Whatever only the disk can answer (a folder, a missing file, a device, a
//! saved tool output outside the workspace) goes to the built-in, which
//! refuses or reads it as before.
//!
//! `edit_file` goes through the editor only when it offers both: applying
//! an edit to the disk's text and writing that into the buffer would drop
//! the buffer's unsaved changes.
//!
//! What stays open: between rein's check and the editor opening the path,
//! a command running at the same time could swap a folder on the path for
//! a symlink. The built-ins close that gap by opening beneath a handle of
//! the workspace; an editor opens by name. The path is checked for
//! symlinks again just before the request, which narrows the gap to the
//! editor's own latency.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, Diff, ReadTextFileRequest, SessionNotification, SessionUpdate,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields, WriteTextFileRequest,
};
use async_trait::async_trait;
use rein_core::{
    AgentEngine, Assessment, CancellationToken, PathLock, PermissionMode, Tool, ToolAccess,
    ToolContext, ToolError, ToolOutput, ToolSpec,
};
use rein_tools::beneath::Kind;
use rein_tools::fileio::{self, Target};
use rein_tools::{EditFile, ReadFile, WriteFile, edit_file, read_file, workspace, write_file};
use serde::Deserialize;
use serde_json::Value;

/// Which file operations go through the editor.
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
/// as far as `through` allows. Returns whether writes now go through the
/// editor (the disk is then not where a change shows first).
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
    let writes = through.write && has("write_file");
    if writes {
        tools.push(Arc::new(EditorWrite(editor.clone())));
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
    writes || edits
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
                ToolError(format!(
                    "the editor could not read `{shown}`: {}",
                    e.message
                ))
            })?
            .content;
        if text.len() as u64 > read_file::MAX_SCAN_BYTES {
            return Err(ToolError(format!(
                "the editor's text of `{shown}` is {} bytes, more than the {} MiB rein reads at \
                 once; search it with grep, or read parts of it with a command",
                text.len(),
                read_file::MAX_SCAN_BYTES / (1024 * 1024)
            )));
        }
        Ok(text)
    }

    /// Replace the whole text of canonical `path` in the editor.
    async fn write(
        &self,
        path: &Path,
        shown: &str,
        content: &str,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        let request = WriteTextFileRequest::new(self.session.clone(), path.to_path_buf(), content);
        let sent = self.client.send_request(request).block_task();
        let answer = tokio::select! {
            answer = sent => answer,
            () = cancel.cancelled() => return Err(cancelled(shown)),
        };
        answer.map(|_| ()).map_err(|e| {
            ToolError(format!(
                "the editor could not write `{shown}`: {}",
                e.message
            ))
        })
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

/// `write_file` through the editor.
struct EditorWrite(Arc<Editor>);

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
struct WriteArgs {
    path: String,
    content: String,
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

        fn timeout(&self, args: &Value) -> Option<std::time::Duration> {
            $builtin.timeout(args)
        }
    };
}

#[async_trait]
impl Tool for EditorRead {
    as_builtin!(ReadFile);

    async fn call(&self, raw: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: ReadArgs = parse("read_file", &raw)?;
        let path = workspace::resolve_for_read(&ctx, &args.path)?;
        // A saved tool output (a read root) is rein's, and a folder, a
        // missing file or a device only the disk can answer for.
        if !in_workspace(&ctx, &path) || !is_regular_file(&path) {
            return ReadFile.call(raw, ctx).await;
        }
        let shown = workspace::display(&ctx.workspace, &path);
        still_plain(&ctx, &path, &shown)?;
        let text = self.0.read(&path, &shown, &ctx.cancel).await?;
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || {
            read_file::render_text(&text, &shown, args.offset, args.limit, &cancel)
        })
        .await
        .map_err(|e| ToolError(format!("reading the file failed: {e}")))?
        .map(ToolOutput::ok)
    }
}

#[async_trait]
impl Tool for EditorWrite {
    as_builtin!(WriteFile);

    async fn call(&self, raw: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: WriteArgs = parse("write_file", &raw)?;
        fileio::check_size("content", args.content.len())?;
        let path = workspace::resolve(&ctx.workspace, &args.path)?;
        fileio::check_protected(&ctx, &args.path, &path)?;
        let shown = workspace::display(&ctx.workspace, &path);
        // Missing folders are made by rein, beneath the workspace's
        // handle, as the built-in makes them; the file is the editor's.
        let target = opened(&ctx, &path, &shown, true).await?;
        let previous = match target.existing {
            Some(e) if e.kind != Kind::File => return WriteFile.call(raw, ctx).await,
            Some(e) => Some(e.size),
            None => None,
        };
        target.check_writable()?;
        still_plain(&ctx, &path, &shown)?;
        self.0
            .write(&path, &shown, &args.content, &ctx.cancel)
            .await?;
        Ok(ToolOutput::ok(write_file::written(
            &shown,
            &args.content,
            previous,
        )))
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
        still_plain(&ctx, &path, &shown)?;
        let before = self.0.read(&path, &shown, &ctx.cancel).await?;
        let edited = edit_file::plan(
            &shown,
            &before,
            &args.old_string,
            &args.new_string,
            args.replace_all.unwrap_or(false),
        )?;
        still_plain(&ctx, &path, &shown)?;
        self.0
            .write(&path, &shown, &edited.text, &ctx.cancel)
            .await?;
        self.0.show_diff(&ctx, &path, &before, &edited.text);
        Ok(ToolOutput::ok(edited.observation))
    }
}

/// Arguments the gate checked against the schema, as the tool's struct.
fn parse<T: serde::de::DeserializeOwned>(tool: &str, raw: &Value) -> Result<T, ToolError> {
    serde_json::from_value(raw.clone()).map_err(|e| {
        ToolError(format!(
            "{}{tool}`: {e}",
            rein_core::gate::INVALID_ARGUMENTS
        ))
    })
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
        .map_err(|e| ToolError(format!("opening the file failed: {e}")))?
}

fn in_workspace(ctx: &ToolContext, path: &Path) -> bool {
    path.starts_with(workspace::canonical_workspace(&ctx.workspace))
}

/// A regular file now (canonical paths have no symlink left to follow).
fn is_regular_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// Refuse when a symlink now stands anywhere on canonical `path` below the
/// workspace: it appeared after the path was resolved, and the editor,
/// which opens by name, would follow it.
fn still_plain(ctx: &ToolContext, path: &Path, shown: &str) -> Result<(), ToolError> {
    let root = workspace::canonical_workspace(&ctx.workspace);
    let Ok(rest) = path.strip_prefix(&root) else {
        return Err(ToolError(format!(
            "`{shown}` is outside the workspace {}; only paths inside the workspace can be used",
            root.display()
        )));
    };
    let mut at = PathBuf::from(&root);
    for part in rest.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(ToolError(format!(
                "`{shown}` changed while it was being opened: a symlink appeared on its path \
                 (which could lead outside the workspace), so nothing was done; try again"
            )));
        }
    }
    Ok(())
}

fn cancelled(shown: &str) -> ToolError {
    ToolError(format!(
        "cancelled while waiting for the editor about `{shown}`"
    ))
}

#[cfg(test)]
mod tests;
