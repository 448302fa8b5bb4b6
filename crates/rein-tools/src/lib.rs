//! rein-tools: the built-in tools of the rein coding agent.
//!
//! Every tool implements [`rein_core::Tool`]; the gate in rein-core checks
//! arguments against the schema each tool publishes, takes the path locks it
//! asks for, and bounds its time and output. File tools are confined to the
//! workspace by [`workspace::resolve`], and open what it resolved beneath a
//! handle of the workspace ([`beneath`]), so that a symlink swapped in after
//! the check cannot lead them outside.

use std::sync::Arc;

use rein_core::{Assessment, SubjectKind, Tool, ToolContext, ToolError};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod bash;
pub mod beneath;
pub mod claude_names;
pub mod edit_file;
mod edit_match;
pub mod fileio;
pub mod glob;
pub mod grep;
pub mod lsp;
pub mod memory;
pub mod net;
pub mod read_file;
pub mod read_first;
pub mod sandbox;
pub mod shell;
pub mod skills;
pub mod todo;
pub mod user_hooks;
mod walk;
pub mod web_fetch;
pub mod web_search;
pub mod workspace;
pub mod worktrees;
pub mod write_file;

pub use bash::Bash;
pub use edit_file::EditFile;
pub use glob::Glob;
pub use grep::Grep;
pub use memory::{MemorySearch, MemoryWrite, memory_tools};
pub use read_file::ReadFile;
pub use read_first::ReadBeforeOverwrite;
pub use todo::TodoWrite;
pub use web_fetch::WebFetch;
pub use web_search::WebSearch;
pub use write_file::WriteFile;

/// Every built-in tool, ready to hand to a `rein_core::Gate`.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile::default()),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(Bash),
        Arc::new(Glob),
        Arc::new(Grep::default()),
        Arc::new(TodoWrite),
    ]
}

/// The tools a small model gets (the small profile): reading, listing,
/// searching, editing, writing and commands; no todo list (small models
/// spend their turns on it instead of the task). `hints`: grep and
/// read_file say what a search that found nothing was near
/// ([`Grep::with_hints`], [`ReadFile::with_hints`]).
pub fn small_model_tools(hints: bool) -> Vec<Arc<dyn Tool>> {
    let (read, grep) = match hints {
        true => (ReadFile::with_hints(), Grep::with_hints()),
        false => (ReadFile::default(), Grep::default()),
    };
    vec![
        Arc::new(read),
        Arc::new(Glob),
        Arc::new(grep),
        Arc::new(EditFile),
        Arc::new(WriteFile),
        Arc::new(Bash),
    ]
}

/// Makes ring rustls's process-wide crypto provider (reqwest is built
/// without one). Harmless when one is already installed.
pub(crate) fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The JSON Schema of an argument struct, as the model sees it: no
/// `$schema` or `title` noise.
pub(crate) fn schema_of<T: schemars::JsonSchema>() -> Value {
    let mut value: Value = schemars::schema_for!(T).into();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    value
}

/// Parse checked arguments into the tool's argument struct.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::new(format!("{}{tool}`: {e}", rein_core::INVALID_ARGUMENTS)))
}

/// The permission facts of a call that touches one path given in `key`:
/// rules match the path relative to the workspace (absolute for a read
/// inside one of the context's read roots). A path that cannot be resolved
/// is still described (the call itself then fails with the reason).
pub(crate) fn path_assessment(
    args: &Value,
    ctx: &ToolContext,
    key: &str,
    write: bool,
    summary: String,
) -> Assessment {
    let raw = args.get(key).and_then(Value::as_str);
    let root = workspace::canonical_workspace(&ctx.workspace);
    let resolved = match raw {
        Some(p) if write => workspace::resolve(&ctx.workspace, p),
        Some(p) => workspace::resolve_for_read(ctx, p),
        None => Ok(workspace::canonical_workspace(&ctx.workspace)),
    };
    let mut a = Assessment {
        kind: SubjectKind::Path,
        summary,
        ..Assessment::default()
    };
    match resolved {
        Ok(path) => {
            a.subjects = vec![workspace::display(&ctx.workspace, &path)];
            if write {
                // What the model named is checked too: a symlink swapped in
                // after this check cannot turn it into a protected path the
                // rules did not see (the tool refuses a protected path that
                // differs from it).
                let named = raw.and_then(|p| workspace::lexical(&root, p));
                a.writes.push(path.clone());
                if let Some(named) = named.filter(|n| *n != path) {
                    a.writes.push(named);
                }
            } else {
                a.reads.push(path);
            }
        }
        Err(_) => a.subjects = vec![raw.unwrap_or(".").to_string()],
    }
    a
}

/// Where a call whose path argument is `key` works (for
/// [`rein_core::Tool::touches`]): that path as the model wrote it.
pub(crate) fn path_arg(args: &Value, key: &str) -> Vec<std::path::PathBuf> {
    args.get(key)
        .and_then(Value::as_str)
        .map(std::path::PathBuf::from)
        .into_iter()
        .collect()
}

/// A string argument, or "" (for descriptions only).
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn every_tool_has_a_distinct_name_and_an_object_schema_without_noise() {
        let mut names = std::collections::HashSet::new();
        for tool in builtin_tools() {
            let spec = tool.spec();
            assert!(names.insert(spec.name.clone()), "duplicate {}", spec.name);
            assert!(!spec.description.is_empty());
            let obj = spec.parameters.as_object().unwrap();
            assert_eq!(
                obj.get("type"),
                Some(&Value::from("object")),
                "{}",
                spec.name
            );
            assert!(!obj.contains_key("$schema"));
            assert!(!obj.contains_key("title"));
        }
        assert_eq!(names.len(), 7);
        let read = ReadFile::default().spec().parameters;
        assert_eq!(read["required"], serde_json::json!(["path"]));
        assert!(read["properties"]["offset"].get("default").is_none());
    }
}
