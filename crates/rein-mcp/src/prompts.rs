//! What a server offers besides tools: resources the user attaches by
//! naming them in a message (`@server:uri`), and prompts the app offers as
//! commands (`/mcp__server__prompt`). Both are read as text, bounded.

use std::sync::Arc;

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value};

use crate::error::McpError;
use crate::hub::McpHub;
use crate::server::McpServer;

/// Most bytes of one resource or prompt kept.
const TEXT_CAP: usize = 64 * 1024;
/// Most resources one message attaches.
const MOST_MENTIONS: usize = 5;

/// A server's prompt, as the app offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptCommand {
    /// `/mcp__SERVER__PROMPT`.
    pub command: String,
    pub server: String,
    /// The server's own name for it.
    pub name: String,
    pub description: String,
    /// Its arguments' names, required ones first.
    pub arguments: Vec<String>,
}

fn capped(mut text: String) -> String {
    if text.len() > TEXT_CAP {
        let mut cut = TEXT_CAP;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[rein: cut at 64 KiB]");
    }
    text
}

/// The text parts of a result, as JSON (resource contents or prompt
/// messages): `text` fields joined, binary parts described.
fn texts(items: &[Value]) -> String {
    let mut out = Vec::new();
    for item in items {
        let inner = item.get("content").unwrap_or(item);
        if let Some(t) = inner.get("text").and_then(Value::as_str) {
            out.push(t.to_string());
        } else if let Some(r) = inner
            .get("resource")
            .and_then(|r| r.get("text"))
            .and_then(Value::as_str)
        {
            out.push(r.to_string());
        } else {
            let mime = inner
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("binary");
            out.push(format!("[{mime} content not shown]"));
        }
    }
    capped(out.join("\n"))
}

impl McpServer {
    async fn read_resource(self: &Arc<Self>, uri: &str) -> Result<String, McpError> {
        let conn = self.live().await?;
        let read = conn
            .service
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| self.protocol(format!("reading `{uri}` failed: {e}")))?;
        let contents = serde_json::to_value(&read.contents).unwrap_or_default();
        Ok(texts(contents.as_array().map_or(&[][..], Vec::as_slice)))
    }

    async fn prompts(self: &Arc<Self>) -> Result<Vec<rmcp::model::Prompt>, McpError> {
        let conn = self.live().await?;
        conn.service
            .list_all_prompts()
            .await
            .map_err(|e| self.protocol(format!("listing its prompts failed: {e}")))
    }

    async fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<String, McpError> {
        let conn = self.live().await?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let got = conn
            .service
            .get_prompt(params)
            .await
            .map_err(|e| self.protocol(format!("getting the prompt `{name}` failed: {e}")))?;
        let messages = serde_json::to_value(&got.messages).unwrap_or_default();
        Ok(texts(messages.as_array().map_or(&[][..], Vec::as_slice)))
    }
}

impl McpHub {
    /// The message with each `@server:uri` naming one of the run's servers
    /// followed by that resource's text (at most five, each bounded); the
    /// notes say which could not be read. Servers still starting are
    /// waited for.
    pub async fn attach_mentions(&self, message: &str) -> (String, Vec<String>) {
        let mut attached = Vec::new();
        let mut notes = Vec::new();
        for word in message
            .split_whitespace()
            .filter_map(|w| w.strip_prefix('@'))
        {
            let word = word.trim_end_matches(['.', ',', ';', '!', '?', ')']);
            let Some((name, uri)) = word.split_once(':') else {
                continue;
            };
            let Some(server) = self.server_named(name) else {
                continue;
            };
            if uri.is_empty() || attached.len() + notes.len() >= MOST_MENTIONS {
                continue;
            }
            server.settled().await;
            match server.read_resource(uri).await {
                Ok(text) => attached.push(format!(
                    "[resource {name}:{uri}, from MCP server `{name}`]\n{text}\n[end of resource]"
                )),
                Err(e) => notes.push(format!("@{name}:{uri} was not attached: {e}")),
            }
        }
        if attached.is_empty() {
            return (message.to_string(), notes);
        }
        (format!("{message}\n\n{}", attached.join("\n\n")), notes)
    }

    /// Every ready server's prompts, as app commands.
    pub async fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut commands = Vec::new();
        for server in self.ready_servers() {
            let Ok(prompts) = server.prompts().await else {
                continue;
            };
            for p in prompts {
                let mut arguments: Vec<(bool, String)> = p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| (!a.required.unwrap_or(false), a.name))
                    .collect();
                arguments.sort();
                commands.push(PromptCommand {
                    command: format!(
                        "/mcp__{}__{}",
                        server.prefix(),
                        crate::naming::clean(&p.name)
                    ),
                    server: server.name().to_string(),
                    description: p
                        .description
                        .unwrap_or_default()
                        .chars()
                        .take(200)
                        .collect(),
                    name: p.name,
                    arguments: arguments.into_iter().map(|(_, n)| n).collect(),
                });
            }
        }
        commands
    }

    /// The text of the prompt `/mcp__SERVER__PROMPT`, its arguments given
    /// as `key=value` words (a lone value goes to the first argument).
    pub async fn prompt_text(&self, command: &str, args: &str) -> Result<String, String> {
        let commands = self.prompt_commands().await;
        let Some(found) = commands.iter().find(|c| c.command == command) else {
            return Err(format!("no MCP prompt {command} (/mcp lists the servers)"));
        };
        let mut arguments = Map::new();
        for word in args.split_whitespace() {
            match word.split_once('=') {
                Some((k, v)) => arguments.insert(k.to_string(), Value::String(v.to_string())),
                None => match found.arguments.first() {
                    Some(first) if !arguments.contains_key(first) => {
                        arguments.insert(first.clone(), Value::String(word.to_string()))
                    }
                    _ => return Err(format!("{command}: say arguments as name=value")),
                },
            };
        }
        let server = self
            .server_named(&found.server)
            .ok_or_else(|| format!("MCP server `{}` is gone", found.server))?;
        server
            .get_prompt(&found.name, arguments)
            .await
            .map_err(|e| e.to_string())
    }
}
