//! `edit_file`: replace one exact piece of a file, with lenient fallbacks
//! for whitespace the model got wrong, and a diff of what changed.

use async_trait::async_trait;
use rein_core::text::truncate_middle;
use rein_core::{
    Assessment, PathLock, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use similar::TextDiff;

use std::io::Read;
use std::path::Path;

use crate::beneath::Kind;
use crate::edit_match::{self, Level, MatchError};
use crate::fileio::{self, Target};
use crate::workspace;

/// Largest diff shown in the result.
const MAX_DIFF_BYTES: usize = 16 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Path of the file to edit, relative to the workspace (or absolute inside it).
    path: String,
    /// The text to replace, copied from the file. Include enough surrounding lines to make it unique.
    old_string: String,
    /// The text to put in its place.
    new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Defaults to false.
    replace_all: Option<bool>,
}

/// Replaces text in a file and shows the diff.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditFile;

#[async_trait]
impl Tool for EditFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description:
                "Replace `old_string` with `new_string` in a text file and show the diff. \
                          old_string must occur exactly once (or set replace_all); it is matched \
                          exactly first, then ignoring line-ending, trailing-whitespace and \
                          indentation differences (the replacement is re-indented). Read the file \
                          first; to create a file or replace all of it, use write_file. Files \
                          and strings up to 16 MiB."
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
                "edit {}\n- {}\n+ {}",
                crate::str_arg(args, "path"),
                rein_core::text::preview(crate::str_arg(args, "old_string"), 6, 400),
                rein_core::text::preview(crate::str_arg(args, "new_string"), 6, 400)
            ),
        )
    }

    fn locks(&self, args: &Value, ctx: &ToolContext) -> Result<Vec<PathLock>, ToolError> {
        let args: Args = crate::parse_args("edit_file", args.clone())?;
        Ok(vec![PathLock::Write(workspace::resolve(
            &ctx.workspace,
            &args.path,
        )?)])
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::parse_args("edit_file", args)?;
        check_strings(&args.old_string, &args.new_string)?;
        let path = workspace::resolve(&ctx.workspace, &args.path)?;
        fileio::check_protected(&ctx, &args.path, &path)?;
        let shown = workspace::display(&ctx.workspace, &path);
        let task_shown = shown.clone();
        tokio::task::spawn_blocking(move || edit(&ctx, &path, &task_shown, &args))
            .await
            .map_err(|e| ToolError::new(format!("editing the file failed: {e}")))?
            .map(ToolOutput::ok)
    }
}

/// Read the file beneath the workspace handle, apply the edit and replace
/// the file by rename; the result text with its diff.
fn edit(ctx: &ToolContext, path: &Path, shown: &str, args: &Args) -> Result<String, ToolError> {
    let target = Target::open(ctx, path, shown, false)?;
    let shown = shown.to_string();
    match target.existing {
        None => {
            return Err(ToolError::new(format!(
                "`{shown}` does not exist; use write_file to create it"
            )));
        }
        Some(e) if e.kind == Kind::Dir => {
            return Err(ToolError::new(format!(
                "`{shown}` is a directory, not a file"
            )));
        }
        Some(e) if e.kind != Kind::File => {
            return Err(ToolError::new(format!(
                "`{shown}` is not a regular file (a device, socket or pipe)"
            )));
        }
        Some(e) if e.size > fileio::MAX_WRITE_BYTES as u64 => {
            return Err(too_big(&shown, e.size));
        }
        Some(_) => {}
    }
    target.check_writable()?;
    let mut bytes = Vec::new();
    target
        .open_read()?
        .take(fileio::MAX_WRITE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new(format!("cannot read `{shown}`: {e}")))?;
    if bytes.len() > fileio::MAX_WRITE_BYTES {
        return Err(too_big(&shown, bytes.len() as u64));
    }
    if bytes.contains(&0) {
        return Err(ToolError::new(format!(
            "`{shown}` looks like a binary file; edit_file edits text only"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        ToolError::new(format!(
            "`{shown}` is not valid UTF-8, so edit_file cannot change it without damaging \
             it; use write_file or bash instead"
        ))
    })?;
    let replace_all = args.replace_all.unwrap_or(false);
    let edited = plan(
        &shown,
        &text,
        &args.old_string,
        &args.new_string,
        replace_all,
    )?;
    target.replace(edited.text.as_bytes())?;
    Ok(edited.observation)
}

/// Refuse an edit that cannot change anything, or strings over the size
/// limit, before any file is looked at.
pub fn check_strings(old_string: &str, new_string: &str) -> Result<(), ToolError> {
    if old_string.is_empty() {
        return Err(ToolError::new(
            "old_string is empty; to create a file or replace its whole content, use write_file",
        ));
    }
    if old_string == new_string {
        return Err(ToolError::new(
            "old_string and new_string are identical, so there is nothing to change",
        ));
    }
    fileio::check_size("old_string", old_string.len())?;
    fileio::check_size("new_string", new_string.len())?;
    Ok(())
}

/// An edit worked out on a file's text, not yet written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The file's whole new text.
    pub text: String,
    /// What the model is told: the replacements made and the diff.
    pub observation: String,
}

/// The edit of `text` (the file `shown`, as read by whoever reads it):
/// the same size cap, matching, refusals and observation as the tool.
pub fn plan(
    shown: &str,
    text: &str,
    old_string: &str,
    new_string: &str,
    replace_all: bool,
) -> Result<Edited, ToolError> {
    if text.len() > fileio::MAX_WRITE_BYTES {
        return Err(too_big(shown, text.len() as u64));
    }
    if text.contains('\0') {
        return Err(ToolError::new(format!(
            "`{shown}` looks like a binary file; edit_file edits text only"
        )));
    }
    let planned = edit_match::apply(text, old_string, new_string, replace_all)
        .map_err(|e| match_error(shown, e))?;
    if planned.text == text {
        return Err(ToolError::new(format!(
            "the replacement leaves `{shown}` unchanged (old_string matched {} only after \
             ignoring whitespace that new_string also lacks)",
            planned.level.describe()
        )));
    }
    let mut out = format!(
        "Edited `{shown}`: {} replacement{}",
        planned.replacements,
        if planned.replacements == 1 { "" } else { "s" }
    );
    if planned.level != Level::Exact {
        out.push_str(&format!(
            " (old_string matched {})",
            planned.level.describe()
        ));
    }
    out.push_str(".\n");
    out.push_str(&diff(shown, text, &planned.text));
    Ok(Edited {
        text: planned.text,
        observation: out,
    })
}

fn too_big(shown: &str, size: u64) -> ToolError {
    ToolError::new(format!(
        "`{shown}` is {size} bytes; edit_file edits files up to {} MiB. Use a command (sed, a \
         script) to change it",
        fileio::MAX_WRITE_BYTES / (1024 * 1024)
    ))
}

fn match_error(shown: &str, e: MatchError) -> ToolError {
    match e {
        MatchError::NotFound {
            hint,
            region: Some(region),
        } => ToolError::new(format!(
            "old_string was not found in `{shown}`: {hint}. To change that region, use exactly \
             this old_string (the file's text, every line included):\n{region}"
        )),
        MatchError::NotFound { hint, region: None } => ToolError::new(format!(
            "old_string was not found in `{shown}`. {hint}\nRead the file again and copy the \
             text exactly, including whitespace."
        )),
        MatchError::Ambiguous { level, lines } => {
            let list: Vec<String> = lines.iter().map(usize::to_string).collect();
            let how = if level == Level::Exact {
                String::new()
            } else {
                format!(" ({})", level.describe())
            };
            ToolError::new(format!(
                "old_string matches {} places in `{shown}`{how}, starting at lines {}. Include \
                 more surrounding lines to make it unique, or set replace_all=true to change \
                 all of them.",
                lines.len(),
                list.join(", ")
            ))
        }
    }
}

/// A unified diff of the change, line endings shown as LF.
fn diff(shown: &str, before: &str, after: &str) -> String {
    let before = before.replace("\r\n", "\n");
    let after = after.replace("\r\n", "\n");
    let text = TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    truncate_middle(&text, MAX_DIFF_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_the_changed_lines_with_a_header() {
        let d = diff("src/a.rs", "a\nb\nc\n", "a\nB\nc\n");
        assert!(d.starts_with("--- a/src/a.rs\n+++ b/src/a.rs\n"), "{d}");
        assert!(d.contains("-b\n+B\n"), "{d}");
    }
}
