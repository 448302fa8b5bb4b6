//! The `lsp` tool: navigate by symbols with the project's language server
//! (definition, references, hover, a file's symbols, the workspace's
//! symbols), read-only. The file named is sent to the server as it is on
//! disk first, so answers match what the model last wrote.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rein_core::{Assessment, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::server::{LanguageServer, uri};
use super::servers::{Found, Servers};

/// The tool's name.
pub const NAME: &str = "lsp";
/// How long one question may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// Most locations or symbols listed.
const MAX_ITEMS: usize = 50;

// The operations are told in the tool's description; without a doc
// comment each, the schema is a compact `enum` (every request carries it).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Operation {
    Definition,
    References,
    Hover,
    DocumentSymbols,
    WorkspaceSymbols,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    operation: Operation,
    /// A file of the workspace; its language picks the server.
    path: String,
    /// From 1.
    line: Option<u32>,
    /// From 1.
    column: Option<u32>,
    /// For workspace_symbols.
    query: Option<String>,
}

/// Asks the workspace's language servers.
pub struct LspTool {
    servers: Arc<Servers>,
}

impl LspTool {
    pub fn new(servers: Arc<Servers>) -> LspTool {
        LspTool { servers }
    }
}

#[async_trait]
impl Tool for LspTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Ask the project's language server: `definition`, `references` or \
                          `hover` of the symbol at path:line:column, the `document_symbols` \
                          of a file, or the `workspace_symbols` matching `query` (a file of \
                          their language as path). Faster and more exact than grep for code."
                .into(),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        crate::path_assessment(
            args,
            ctx,
            "path",
            false,
            format!(
                "lsp {} {}",
                crate::str_arg(args, "operation"),
                crate::str_arg(args, "path")
            ),
        )
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::parse_args(NAME, args)?;
        let path = crate::workspace::resolve_for_read(&ctx, &args.path)?;
        let root = crate::workspace::canonical_workspace(&ctx.workspace);
        let server = match self.servers.for_file(&path, &root).await {
            Found::Server { server, .. } => server,
            Found::Failed(why) => return Err(ToolError::new(why)),
            Found::None => {
                return Err(ToolError::new(format!(
                    "no language server for `{}` here; use grep and read_file",
                    args.path
                )));
            }
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ToolError::new(format!("cannot read `{}`: {e}", args.path)))?;
        server
            .sync(&path, &text)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let (method, params) = request(&args, &path)?;
        let answer = server
            .request(method, params, ANSWER_TIMEOUT)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok(ToolOutput::ok(present(
            args.operation,
            &answer,
            &root,
            &server,
        )))
    }
}

/// The LSP request for an operation.
fn request(args: &Args, path: &Path) -> Result<(&'static str, Value), ToolError> {
    let doc = json!({"uri": uri(path)});
    let at = || -> Result<Value, ToolError> {
        match (args.line, args.column) {
            (Some(l), Some(c)) if l >= 1 && c >= 1 => {
                Ok(json!({"line": l - 1, "character": c - 1}))
            }
            _ => Err(ToolError::new(
                "this operation needs `line` and `column` (from 1)",
            )),
        }
    };
    Ok(match args.operation {
        Operation::Definition => (
            "textDocument/definition",
            json!({"textDocument": doc, "position": at()?}),
        ),
        Operation::References => (
            "textDocument/references",
            json!({"textDocument": doc, "position": at()?, "context": {"includeDeclaration": true}}),
        ),
        Operation::Hover => (
            "textDocument/hover",
            json!({"textDocument": doc, "position": at()?}),
        ),
        Operation::DocumentSymbols => ("textDocument/documentSymbol", json!({"textDocument": doc})),
        Operation::WorkspaceSymbols => {
            let query = args
                .query
                .as_deref()
                .filter(|q| !q.trim().is_empty())
                .ok_or_else(|| ToolError::new("workspace_symbols needs `query`"))?;
            ("workspace/symbol", json!({"query": query}))
        }
    })
}

/// The answer as lines for the model.
fn present(op: Operation, answer: &Value, root: &Path, server: &LanguageServer) -> String {
    let lines: Vec<String> = match op {
        Operation::Hover => {
            return hover_text(answer).unwrap_or_else(|| "Nothing known here.".into());
        }
        Operation::Definition | Operation::References => locations(answer)
            .into_iter()
            .map(|(p, l, c)| format!("{}:{l}:{c}", shown(&p, root)))
            .collect(),
        Operation::DocumentSymbols | Operation::WorkspaceSymbols => symbols(answer, root, 0),
    };
    if lines.is_empty() {
        return format!("The {} language server found nothing.", server.name());
    }
    let total = lines.len();
    let mut out: Vec<String> = lines.into_iter().take(MAX_ITEMS).collect();
    if total > MAX_ITEMS {
        out.push(format!("[{MAX_ITEMS} of {total} shown]"));
    }
    out.join("\n")
}

fn hover_text(answer: &Value) -> Option<String> {
    let contents = answer.get("contents")?;
    let text = match contents {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| {
                i.as_str()
                    .or_else(|| i.get("value").and_then(Value::as_str))
            })
            .collect::<Vec<_>>()
            .join("\n\n"),
        other => other.get("value")?.as_str()?.to_string(),
    };
    Some(text).filter(|t| !t.trim().is_empty())
}

/// (path, line from 1, column from 1) of a Location, Location[] or
/// LocationLink[] answer.
fn locations(answer: &Value) -> Vec<(PathBuf, u32, u32)> {
    let items = match answer {
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        one => vec![one.clone()],
    };
    items
        .iter()
        .filter_map(|i| {
            let uri = i.get("uri").or_else(|| i.get("targetUri"))?.as_str()?;
            let range = i.get("range").or_else(|| i.get("targetSelectionRange"))?;
            Some((file_path(uri)?, position(&range["start"])))
        })
        .map(|(p, (l, c))| (p, l, c))
        .collect()
}

/// Symbols, nested ones indented, as `kind name (path:)line`.
fn symbols(answer: &Value, root: &Path, depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    for s in answer.as_array().into_iter().flatten() {
        let name = s["name"].as_str().unwrap_or("?");
        let kind = kind_name(s["kind"].as_u64().unwrap_or(0));
        let (place, line) = match s.get("location") {
            Some(loc) => {
                let path = loc["uri"].as_str().and_then(file_path);
                let (line, _) = position(&loc["range"]["start"]);
                (
                    path.map(|p| format!("{}:", shown(&p, root)))
                        .unwrap_or_default(),
                    line,
                )
            }
            None => (String::new(), position(&s["selectionRange"]["start"]).0),
        };
        out.push(format!("{}{kind} {name} {place}{line}", "  ".repeat(depth)));
        if let Some(children) = s.get("children") {
            out.extend(symbols(children, root, depth + 1));
        }
    }
    out
}

fn position(p: &Value) -> (u32, u32) {
    let n = |k: &str| p[k].as_u64().unwrap_or(0) as u32 + 1;
    (n("line"), n("character"))
}

fn file_path(uri: &str) -> Option<PathBuf> {
    reqwest::Url::parse(uri).ok()?.to_file_path().ok()
}

fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// LSP's SymbolKind numbers, in words.
fn kind_name(kind: u64) -> &'static str {
    const KINDS: [&str; 27] = [
        "symbol",
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    KINDS.get(kind as usize).copied().unwrap_or("symbol")
}
