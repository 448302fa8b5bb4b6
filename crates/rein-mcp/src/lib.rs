//! rein's Model Context Protocol client.
//!
//! The servers configured by the user (`[mcp_servers.NAME]` in rein's own
//! config.toml) are started by an [`McpHub`], as child processes speaking
//! MCP over stdio or as remote servers over streamable HTTP (with a static
//! bearer token or OAuth tokens from `rein mcp login`, through the `rmcp`
//! SDK), side by side and in the background: the first model request never waits for them. Each ready
//! server's tools are offered as `mcp__SERVER__TOOL`; a call to a tool of
//! a server still starting waits for it (the engine's late tools); a
//! server that says its tool list changed has it read again, and the
//! run's tools follow from the next turn; one that dies is started again
//! once. Every call goes through rein's one gate like a built-in tool:
//! permission rules (`mcp__github__*`), approvals, the per-call timeout,
//! cancellation, output caps and spill. A server's stderr goes to its log
//! file (`$REIN_HOME/logs/mcp/SERVER.log`), never the screen.
//!
//! What a server sends is bounded and cleaned: tool names become what every
//! wire API accepts, descriptions and schemas are capped, results are read
//! as text. Its annotations feed the permission decision as the user's
//! configured server states them: a tool it calls read-only runs without
//! asking (plan mode included), every other one asks in default mode, and
//! one it calls destructive asks in every mode unless a rule names it
//! exactly (`mcp__db__drop_table`). Hints that contradict each other are
//! read as the more dangerous: read-only and destructive is destructive.

mod client;
mod config;
mod connect;
mod content;
mod elicit;
mod error;
mod grant;
mod hub;
mod jwt;
mod naming;
mod oauth;
mod oauth_config;
mod probe;
mod prompts;
mod search;
mod server;
mod stderr;
mod stepup;
mod stream_first;
mod tool;

pub use config::{McpServerConfig, McpTransport};
pub use elicit::{ASK_WAIT, Answer, Asker, AskerSlot, ElicitationPolicy};
pub use error::McpError;
pub use hub::{LazyTools, McpHub, schema_tokens};
pub use naming::{exposed_name, server_prefixes};
pub use oauth::{LOGIN_WAIT, LoginOutcome, LoginUi, TokenFile, login};
pub use oauth_config::{Grant, OAuthConfig, Secret, SigningAlgorithm};
pub use prompts::PromptCommand;
pub use search::{TOOL_SEARCH, ToolSearch};
pub use server::{Launch, McpServer, ServerReport, ServerStatus};
pub use stepup::{Browser, BrowserHandle};
pub use tool::McpTool;

/// Makes ring rustls's process-wide crypto provider, which HTTP servers and
/// OAuth need (reqwest is built without one, so that aws-lc stays out of
/// the build). Harmless when one is installed already.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
