//! `glob`: find files by name pattern, newest first.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rein_core::{
    Assessment, CancellationToken, ReadFence, Tool, ToolAccess, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::{fileio, workspace};

/// Most paths listed by one call.
pub const MAX_RESULTS: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Glob pattern matched against paths relative to `path`, e.g. `**/*.rs`, `src/**/mod.rs`, `*.toml`. A pattern without `/` matches at any depth.
    pattern: String,
    /// Folder to search in, relative to the workspace. Defaults to the workspace root.
    path: Option<String>,
}

/// Finds files whose path matches a glob pattern.
#[derive(Debug, Clone, Copy, Default)]
pub struct Glob;

#[async_trait]
impl Tool for Glob {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description: format!(
                "Find files whose path matches a glob pattern (`*`, `**`, `?`, `[abc]`, `{{a,b}}`), \
                 listed newest first, relative to the workspace. Hidden files and files ignored by \
                 .gitignore/.ignore are skipped. At most {MAX_RESULTS} paths are listed."
            ),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
        crate::path_arg(args, "path")
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        crate::path_assessment(
            args,
            ctx,
            "path",
            false,
            format!("glob {}", crate::str_arg(args, "pattern")),
        )
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::parse_args("glob", args)?;
        let root = workspace::resolve_or_root_for_read(&ctx, args.path.as_deref())?;
        let shown_root = workspace::display(&ctx.workspace, &root);
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(ToolError::new(format!(
                    "`{shown_root}` is a file; `path` must be a folder to search in"
                )));
            }
            Err(_) => {
                return Err(ToolError::new(format!(
                    "the folder `{shown_root}` does not exist"
                )));
            }
        }
        let pattern = relative_pattern(&args.pattern, &root)?;
        let set = build_globset(&pattern)?;
        let cancel = ctx.cancel.clone();
        let walk_root = root.clone();
        let fence = ReadFence::new(&ctx.sandbox, &ctx.workspace, &ctx.read_roots);
        let base = fileio::anchor(&ctx, &root, false)?;
        let mut found = tokio::task::spawn_blocking(move || {
            let mut found = find(&walk_root, &set, fence, &cancel);
            // The walk lists folders by name; a folder swapped for a symlink
            // meanwhile could list names from outside. Keep only what is
            // really there, beneath the root's handle.
            found.retain(|(p, _)| really_there(&base, p));
            found
        })
        .await
        .map_err(|e| ToolError::new(format!("the file search failed: {e}")))?;
        if found.is_empty() {
            return Ok(ToolOutput::ok(format!(
                "No files match `{}` under `{shown_root}`.",
                args.pattern
            )));
        }
        found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let total = found.len();
        let mut out: Vec<String> = found
            .iter()
            .take(MAX_RESULTS)
            .map(|(p, _)| workspace::display(&ctx.workspace, p))
            .collect();
        if total > MAX_RESULTS {
            out.push(format!(
                "[{MAX_RESULTS} of {total} matching files shown, newest first; {} more. Use a \
                 narrower pattern or path to see them.]",
                total - MAX_RESULTS
            ));
        }
        Ok(ToolOutput::ok(out.join("\n")))
    }
}

/// The pattern relative to the search root: `./` dropped, and an absolute
/// pattern under the root made relative.
fn relative_pattern(pattern: &str, root: &Path) -> Result<String, ToolError> {
    let p = pattern.trim();
    if p.is_empty() {
        return Err(ToolError::new("the pattern is empty; try e.g. `**/*.rs`"));
    }
    if p.starts_with('/') {
        let root_str = root.to_string_lossy();
        return match p.strip_prefix(root_str.as_ref()) {
            Some(rest) if rest.starts_with('/') && rest.len() > 1 => Ok(rest[1..].to_string()),
            _ => Err(ToolError::new(format!(
                "the pattern `{p}` is absolute; give a pattern relative to the search folder \
                 and put the folder in `path`"
            ))),
        };
    }
    let mut p = p;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    Ok(p.to_string())
}

/// The pattern as a glob set; one without `/` matches at any depth.
pub(crate) fn build_globset(pattern: &str) -> Result<GlobSet, ToolError> {
    let mut builder = GlobSetBuilder::new();
    let mut add = |p: &str| -> Result<(), ToolError> {
        let glob = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::new(format!("invalid glob pattern `{pattern}`: {e}")))?;
        builder.add(glob);
        Ok(())
    };
    add(pattern)?;
    if !pattern.contains('/') {
        add(&format!("**/{pattern}"))?;
    }
    builder
        .build()
        .map_err(|e| ToolError::new(format!("invalid glob pattern `{pattern}`: {e}")))
}

/// Whether `path` (found by the walk) exists beneath the handle of its
/// root with no symlink on the way (the entry itself may be a symlink).
fn really_there(base: &fileio::Anchor, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(&base.root) else {
        return false;
    };
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return false;
    };
    base.dir
        .open_dir(parent)
        .is_ok_and(|d| d.entry(name).is_ok_and(|e| e.is_some()))
}

/// Every file under `root` matching `set`, with its modification time.
fn find(
    root: &Path,
    set: &GlobSet,
    fence: ReadFence,
    cancel: &CancellationToken,
) -> Vec<(PathBuf, SystemTime)> {
    let mut found = Vec::new();
    for entry in crate::walk::walker(root, fence) {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        let is_file = entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink());
        if !is_file {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if !set.is_match(rel) {
            continue;
        }
        let mtime = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        found.push((entry.into_path(), mtime));
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_pattern_without_a_slash_matches_at_any_depth() {
        let set = build_globset("*.rs").unwrap();
        assert!(set.is_match("main.rs"));
        assert!(set.is_match("src/deep/lib.rs"));
        assert!(!set.is_match("src/lib.rs.orig"));
    }

    #[test]
    fn a_pattern_with_a_slash_is_anchored_at_the_root() {
        let set = build_globset("src/*.rs").unwrap();
        assert!(set.is_match("src/lib.rs"));
        assert!(!set.is_match("src/a/lib.rs"));
        assert!(!set.is_match("x/src/lib.rs"));
    }

    #[test]
    fn patterns_are_made_relative() {
        let root = Path::new("/w/proj");
        assert_eq!(relative_pattern("./src/*.rs", root).unwrap(), "src/*.rs");
        assert_eq!(
            relative_pattern("/w/proj/src/*.rs", root).unwrap(),
            "src/*.rs"
        );
        assert!(relative_pattern("/etc/*", root).is_err());
        assert!(build_globset("src/[").is_err());
    }
}
