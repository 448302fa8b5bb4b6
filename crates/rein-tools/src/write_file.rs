//! `write_file`: create or replace a whole file.

use async_trait::async_trait;
use rein_core::{
    Assessment, PathLock, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use std::path::Path;

use crate::beneath::Kind;
use crate::fileio::{self, Target};
use crate::workspace;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Path of the file, relative to the workspace (or absolute inside it). Missing parent folders are created.
    path: String,
    /// The complete new content of the file (at most 16 MiB).
    content: String,
}

/// Writes a whole file, creating it (and its folders) when needed.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFile;

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Write a file in the workspace with exactly `content`, creating it and \
                          any missing parent folders, or replacing everything it held (at most \
                          16 MiB per call). To change part of an existing file, prefer edit_file."
                .into(),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Write
    }

    fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
        crate::path_arg(args, "path")
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        crate::path_assessment(
            args,
            ctx,
            "path",
            true,
            format!(
                "write {} ({} bytes)",
                crate::str_arg(args, "path"),
                crate::str_arg(args, "content").len()
            ),
        )
    }

    fn locks(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
        let args: Args = crate::parse_args("write_file", args.clone())?;
        Ok(vec![PathLock::Write(workspace::resolve(
            &ctx.workspace,
            &args.path,
        )?)])
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::parse_args("write_file", args)?;
        fileio::check_size("content", args.content.len())?;
        let path = workspace::resolve(&ctx.workspace, &args.path)?;
        fileio::check_protected(&ctx, &args.path, &path)?;
        let shown = workspace::display(&ctx.workspace, &path);
        let content = args.content;
        let task_shown = shown.clone();
        let (previous, content) = tokio::task::spawn_blocking(move || {
            write(&ctx, &path, &task_shown, &content).map(|p| (p, content))
        })
        .await
        .map_err(|e| ToolError::new(format!("writing the file failed: {e}")))??;
        Ok(ToolOutput::ok(written(&shown, &content, previous)))
    }
}

/// The observation of a write of `content` to `shown`, which held
/// `previous` bytes before (None: it was created).
pub fn written(shown: &str, content: &str, previous: Option<u64>) -> String {
    let bytes = content.len();
    let lines = match count_lines(content) {
        1 => "1 line".to_string(),
        n => format!("{n} lines"),
    };
    match previous {
        None => format!("Created `{shown}` ({bytes} bytes, {lines})."),
        Some(old) => format!("Overwrote `{shown}` ({bytes} bytes, {lines}; it had {old} bytes)."),
    }
}

/// Write `content` at canonical `path` beneath the workspace handle:
/// folders created step by step, the file replaced by rename. Returns the
/// old size, if there was a file.
fn write(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    content: &str,
) -> Result<Option<u64>, ToolError> {
    let target = Target::open(ctx, path, shown, true)?;
    let previous = match target.existing {
        Some(e) if e.kind == Kind::Dir => {
            return Err(ToolError::new(format!(
                "`{shown}` is a directory; give the path of a file inside it"
            )));
        }
        Some(e) if e.kind != Kind::File => {
            return Err(ToolError::new(format!(
                "`{shown}` is not a regular file (a device, socket or pipe); refusing to write to it"
            )));
        }
        Some(e) => Some(e.size),
        None => None,
    };
    target.check_writable()?;
    target.replace(content.as_bytes())?;
    Ok(previous)
}

fn count_lines(text: &str) -> usize {
    let newlines = text.matches('\n').count();
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_like_an_editor_does() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
    }
}
