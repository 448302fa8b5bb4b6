//! One server tool as a rein tool: its name, description and schema as
//! the model sees them, what the gate decides on, and the call.

use std::sync::Arc;

use async_trait::async_trait;
use rein_core::{Assessment, Risk, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{Map, Value};

use crate::content::{images, observation};
use crate::naming::exposed_name;
use crate::server::McpServer;

/// Most bytes of a description kept (a server may send a book).
const DESCRIPTION_CAP: usize = 2_000;
/// Most bytes of a parameter schema kept; a bigger one becomes "an
/// object" (the server still checks the arguments).
const SCHEMA_CAP: usize = 32 * 1024;

/// A tool of an MCP server, offered as `mcp__SERVER__TOOL`.
pub struct McpTool {
    server: Arc<McpServer>,
    /// The server's own name for the tool.
    name: String,
    spec: ToolSpec,
    access: ToolAccess,
    /// The server marks it destructive: it asks in every mode unless a
    /// rule names it.
    destructive: bool,
}

impl McpTool {
    pub(crate) fn new(
        server: Arc<McpServer>,
        tool: &rmcp::model::Tool,
        taken: &[String],
    ) -> McpTool {
        let exposed = exposed_name(server.prefix(), &tool.name, taken);
        let about = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("");
        let mut description: String = about.chars().take(DESCRIPTION_CAP).collect();
        let own: String = tool.name.chars().take(64).collect();
        description.push_str(&format!(
            " (tool `{own}` of MCP server `{}`)",
            server.name()
        ));
        let Hints {
            access,
            destructive,
        } = Hints::of(tool.annotations.as_ref());
        McpTool {
            name: tool.name.to_string(),
            spec: ToolSpec {
                name: exposed,
                description,
                parameters: parameters(&tool.input_schema),
            },
            access,
            destructive,
            server,
        }
    }

    /// The name the model calls it by.
    pub fn exposed(&self) -> &str {
        &self.spec.name
    }

    /// The name of the server it belongs to.
    pub fn server_name(&self) -> &str {
        self.server.name()
    }
}

/// What the gate takes from a tool's annotations. They are hints from a
/// server rein does not control, so where they contradict each other the
/// more dangerous reading wins: a tool marked both read-only and
/// destructive is destructive (and not read-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hints {
    access: ToolAccess,
    /// Asks in every mode unless a rule names the tool.
    destructive: bool,
}

impl Hints {
    fn of(annotations: Option<&rmcp::model::ToolAnnotations>) -> Hints {
        let said = |hint: Option<bool>| hint == Some(true);
        let destructive = annotations.is_some_and(|a| said(a.destructive_hint));
        let read_only = annotations.is_some_and(|a| said(a.read_only_hint)) && !destructive;
        Hints {
            access: if read_only {
                ToolAccess::Read
            } else {
                ToolAccess::Execute
            },
            destructive,
        }
    }
}

/// The schema the model and the gate see: the server's, bounded, always
/// an object.
fn parameters(schema: &Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    // Draft markers mean nothing to the wire APIs.
    schema.remove("$schema");
    let too_big = serde_json::to_string(&schema).map_or(true, |s| s.len() > SCHEMA_CAP);
    if too_big || schema.get("type").and_then(Value::as_str) != Some("object") {
        let mut any = Map::new();
        any.insert("type".into(), Value::String("object".into()));
        return Value::Object(any);
    }
    Value::Object(schema)
}

#[async_trait]
impl rein_core::Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn access(&self) -> ToolAccess {
        self.access
    }

    fn assess(&self, args: &Value, _ctx: &ToolContext) -> Assessment {
        let shown = args.to_string();
        let shown: String = shown.chars().take(200).collect();
        let mut a = Assessment {
            summary: format!(
                "{} on MCP server `{}`: {shown}",
                self.name,
                self.server.name()
            ),
            ..Default::default()
        };
        if self.destructive {
            a.risk = Risk::High;
            a.reasons
                .push("the MCP server marks this tool destructive".to_string());
        }
        a
    }

    /// A server's tool says nothing of its arguments; one naming a `path`
    /// (or `file_path`) is taken to work there, as file tools do.
    fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
        args.get("path")
            .or_else(|| args.get("file_path"))
            .and_then(Value::as_str)
            .map(std::path::PathBuf::from)
            .into_iter()
            .collect()
    }

    fn timeout(&self, _args: &Value) -> Option<std::time::Duration> {
        self.server.config().tool_timeout()
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::new(format!(
                    "the arguments must be an object, got {other}"
                )));
            }
        };
        let result = self
            .server
            .call(&self.name, arguments)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let blocks = serde_json::to_value(&result.content)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default();
        let text = observation(&blocks, result.structured_content.as_ref());
        let mut output = if result.is_error == Some(true) {
            ToolOutput::error(text)
        } else {
            ToolOutput::ok(text)
        };
        output.images = images(&blocks);
        Ok(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ToolAnnotations;

    fn hints(read_only: Option<bool>, destructive: Option<bool>) -> Hints {
        let mut a = ToolAnnotations::default();
        a.read_only_hint = read_only;
        a.destructive_hint = destructive;
        Hints::of(Some(&a))
    }

    #[test]
    fn a_tool_marked_read_only_and_destructive_is_destructive_not_read_only() {
        assert_eq!(
            hints(Some(true), Some(true)),
            Hints {
                access: ToolAccess::Execute,
                destructive: true
            }
        );
    }

    #[test]
    fn consistent_hints_are_read_as_the_server_states_them() {
        let read = Hints {
            access: ToolAccess::Read,
            destructive: false,
        };
        let write = Hints {
            access: ToolAccess::Execute,
            destructive: false,
        };
        assert_eq!(hints(Some(true), None), read);
        assert_eq!(hints(Some(true), Some(false)), read);
        assert_eq!(hints(None, None), write);
        assert_eq!(Hints::of(None), write);
        assert!(hints(Some(false), Some(true)).destructive);
        assert_eq!(hints(None, Some(true)).access, ToolAccess::Execute);
    }
}
