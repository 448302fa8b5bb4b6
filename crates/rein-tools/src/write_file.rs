//! `write_file`: create or replace a whole file.

use async_trait::async_trait;
use rein_core::{
    Assessment, PathLock, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::workspace;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Path of the file, relative to the workspace (or absolute inside it). Missing parent folders are created.
    path: String,
    /// The complete new content of the file.
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
                          any missing parent folders, or replacing everything it held. To change \
                          part of an existing file, prefer edit_file."
                .into(),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Write
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
        let path = workspace::resolve(&ctx.workspace, &args.path)?;
        let shown = workspace::display(&ctx.workspace, &path);
        let previous = match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError(format!(
                    "`{shown}` is a directory; give the path of a file inside it"
                )));
            }
            Ok(meta) if !meta.is_file() => {
                return Err(ToolError(format!(
                    "`{shown}` is not a regular file (a device, socket or pipe); refusing to write to it"
                )));
            }
            Ok(meta) => Some(meta.len()),
            Err(_) => None,
        };
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(|e| {
                ToolError(format!(
                    "cannot create the folder `{}`: {e}",
                    workspace::display(&ctx.workspace, parent)
                ))
            })?;
        }
        tokio::fs::write(&path, args.content.as_bytes())
            .await
            .map_err(|e| ToolError(format!("cannot write `{shown}`: {e}")))?;
        let bytes = args.content.len();
        let lines = match count_lines(&args.content) {
            1 => "1 line".to_string(),
            n => format!("{n} lines"),
        };
        Ok(ToolOutput::ok(match previous {
            None => format!("Created `{shown}` ({bytes} bytes, {lines})."),
            Some(old) => {
                format!("Overwrote `{shown}` ({bytes} bytes, {lines}; it had {old} bytes).")
            }
        }))
    }
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
