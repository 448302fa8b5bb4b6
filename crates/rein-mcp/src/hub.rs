//! The MCP servers of one run, together: started side by side without
//! holding anything up, their tools gathered for the engine whenever the
//! set changes (a server ready, a list changed, a server failed), and a
//! call to a tool of a server still starting waits for it.

use std::sync::Arc;

use async_trait::async_trait;
use rein_core::{LateTools, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::Value;
use tokio::sync::watch;

use crate::config::McpServerConfig;
use crate::naming::server_prefixes;
use crate::search::{Loaded, TOOL_SEARCH, ToolSearch};
use crate::server::{Launch, McpServer, ServerReport, ServerStatus};

/// About how many tokens the model's request spends on `tools`' names,
/// descriptions and schemas (four bytes a token).
pub fn schema_tokens(tools: &[Arc<dyn Tool>]) -> usize {
    tools
        .iter()
        .map(|t| {
            let s = t.spec();
            s.name.len() + s.description.len() + s.parameters.to_string().len()
        })
        .sum::<usize>()
        / 4
}

/// The run's servers.
pub struct McpHub {
    servers: Vec<Arc<McpServer>>,
    /// Who answers the servers' forms (shared with their launch).
    asker: crate::elicit::AskerSlot,
    /// Bumped whenever the set of tools changes.
    changed: Arc<watch::Sender<u64>>,
    /// The tools `tool_search` loaded.
    loaded: Loaded,
}

/// Whether the model gets `tool_search` instead of every MCP tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LazyTools {
    /// When the tools' schemas would take more than this many tokens.
    Above(usize),
    Always,
    Never,
}

impl McpHub {
    /// Start every enabled server in `configs`, each in a task of its own,
    /// and return at once (inside a Tokio runtime). The servers stop when
    /// the hub and the tools it gave out are dropped, or rein exits.
    pub fn start(configs: Vec<McpServerConfig>, launch: Launch) -> Arc<McpHub> {
        let enabled: Vec<McpServerConfig> = configs.into_iter().filter(|c| c.enabled).collect();
        let names: Vec<&str> = enabled.iter().map(|c| c.name.as_str()).collect();
        let prefixes = server_prefixes(&names);
        let changed = Arc::new(watch::Sender::new(0));
        let asker = launch.asker.clone();
        let launch = Arc::new(launch);
        let servers: Vec<Arc<McpServer>> = enabled
            .into_iter()
            .zip(prefixes)
            .map(|(config, prefix)| McpServer::new(config, prefix, launch.clone(), changed.clone()))
            .collect();
        for server in &servers {
            tokio::spawn(server.clone().start());
        }
        Arc::new(McpHub {
            servers,
            asker,
            changed,
            loaded: Loaded::default(),
        })
    }

    /// Send the servers' form requests to `asker` (a person) from now on.
    pub fn set_asker(&self, asker: Arc<dyn crate::elicit::Asker>) {
        self.asker.set(asker);
    }

    /// What the model is offered of the servers' tools: all of them, or,
    /// lazy, `tool_search` and what searches loaded.
    pub fn offered(self: &Arc<Self>, lazy: LazyTools) -> Vec<Arc<dyn Tool>> {
        let all = self.tools();
        let lazy = match lazy {
            LazyTools::Always => true,
            LazyTools::Never => false,
            LazyTools::Above(budget) => schema_tokens(&all) > budget,
        };
        if !lazy {
            return all;
        }
        let loaded = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut offered: Vec<Arc<dyn Tool>> = vec![Arc::new(ToolSearch::new(self.clone()))];
        offered.extend(all.into_iter().filter(|t| loaded.contains(&t.spec().name)));
        offered
    }

    /// Offer `names` from the next turn (a search found them).
    pub(crate) fn load(&self, names: &[String]) {
        self.loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(names.iter().cloned());
        self.changed.send_modify(|n| *n += 1);
    }

    /// Every ready server's tools, in configuration order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers
            .iter()
            .flat_map(|s| s.tools())
            .map(|t| Arc::new(t) as Arc<dyn Tool>)
            .collect()
    }

    /// Whether `name` is the kind of name this hub's tools have (what to
    /// drop when the set is replaced), `tool_search` included.
    pub fn names(name: &str) -> bool {
        name.starts_with("mcp__") || name == TOOL_SEARCH
    }

    /// Changes when the set of tools changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Wait until every server has started or failed.
    pub async fn settled(&self) {
        for server in &self.servers {
            server.settled().await;
        }
    }

    /// Each server's status, in configuration order.
    pub fn reports(&self) -> Vec<ServerReport> {
        self.servers.iter().map(McpServer::report).collect()
    }

    /// The server configured as `name`.
    pub(crate) fn server_named(&self, name: &str) -> Option<&Arc<McpServer>> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// The servers that are ready.
    pub(crate) fn ready_servers(&self) -> impl Iterator<Item = &Arc<McpServer>> {
        self.servers
            .iter()
            .filter(|s| s.status() == ServerStatus::Ready)
    }

    /// The server whose tools are named `mcp__PREFIX__...` like `name`.
    fn server_for(&self, name: &str) -> Option<&Arc<McpServer>> {
        let rest = name.strip_prefix("mcp__")?;
        self.servers.iter().find(|s| {
            rest.strip_prefix(s.prefix())
                .is_some_and(|r| r.starts_with("__"))
        })
    }
}

#[async_trait]
impl LateTools for McpHub {
    /// A call to a tool of a server still starting waits for the server
    /// (its startup timeout bounds the wait), then finds the tool.
    async fn wait_for(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let server = self.server_for(name)?;
        if server.status() == ServerStatus::Starting {
            server.settled().await;
        }
        if server.status() == ServerStatus::Failed {
            // Say why rather than "unknown tool".
            return Some(Arc::new(Unavailable {
                name: name.to_string(),
                why: server.report().error.unwrap_or_default(),
                server: server.name().to_string(),
            }));
        }
        server
            .tools()
            .into_iter()
            .find(|t| t.exposed() == name)
            .map(|t| Arc::new(t) as Arc<dyn Tool>)
    }
}

/// What a call to a tool of a server that is not running reaches: an
/// error naming the server and why.
struct Unavailable {
    name: String,
    server: String,
    why: String,
}

#[async_trait]
impl Tool for Unavailable {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: String::new(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let named = format!("MCP server `{}`: ", self.server);
        let why = self.why.strip_prefix(named.as_str()).unwrap_or(&self.why);
        Err(ToolError::new(format!(
            "MCP server `{}` is not running ({why}): its tools cannot be called in this run",
            self.server
        )))
    }
}
