//! Lazy tools: when the servers' tools would fill too much of the context
//! window, the model is offered `tool_search` instead of every schema; a
//! search loads the few tools it finds, offered from the next turn.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rein_core::{Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::hub::McpHub;

/// The search tool's name.
pub const TOOL_SEARCH: &str = "tool_search";

/// Most tools one search loads.
const MOST: usize = 5;

/// The names of the tools searches loaded, shared by the hub and the tool.
pub(crate) type Loaded = Arc<Mutex<BTreeSet<String>>>;

/// `tool_search`: finds MCP tools by words of their names and
/// descriptions and loads them.
pub struct ToolSearch {
    hub: Arc<McpHub>,
}

impl ToolSearch {
    pub fn new(hub: Arc<McpHub>) -> ToolSearch {
        ToolSearch { hub }
    }
}

/// How well `tool` matches the query's words: an exact name wins, then
/// each word found in the name counts more than one in the description.
fn score(spec: &ToolSpec, words: &[String]) -> usize {
    let name = spec.name.to_lowercase();
    let about = spec.description.to_lowercase();
    words
        .iter()
        .map(|w| {
            if name == *w || name.ends_with(&format!("__{w}")) {
                100
            } else if name.contains(w.as_str()) {
                10
            } else if about.contains(w.as_str()) {
                3
            } else {
                0
            }
        })
        .sum()
}

#[async_trait]
impl Tool for ToolSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_SEARCH.into(),
            description: "Find tools of the connected MCP servers by what they do (a few words, \
                          or a tool's name). The tools found are described here and can be called \
                          from your next step."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "words of what the tool should do"}},
                "required": ["query"],
            }),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_lowercase();
        let words: Vec<String> = query
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| w.len() >= 2)
            .map(str::to_string)
            .collect();
        if words.is_empty() {
            return Err(ToolError::new("say in a few words what the tool should do"));
        }
        // Servers still starting are waited for (each within its startup
        // timeout): their tools are what is searched.
        self.hub.settled().await;
        let mut found: Vec<(usize, ToolSpec)> = self
            .hub
            .tools()
            .iter()
            .map(|t| t.spec())
            .map(|s| (score(&s, &words), s))
            .filter(|(n, _)| *n > 0)
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        found.truncate(MOST);
        if found.is_empty() {
            return Ok(ToolOutput::ok(format!(
                "no MCP tool matches `{query}`; try other words"
            )));
        }
        let names: Vec<String> = found.iter().map(|(_, s)| s.name.clone()).collect();
        self.hub.load(&names);
        let mut text = String::from("Loaded (call them from your next step):\n");
        for (_, s) in &found {
            text.push_str(&format!(
                "- {}: {}\n  parameters: {}\n",
                s.name, s.description, s.parameters
            ));
        }
        Ok(ToolOutput::ok(text))
    }
}
