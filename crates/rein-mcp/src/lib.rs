//! rein's Model Context Protocol client.
//!
//! A server configured by the user (`[mcp_servers.NAME]` in rein's own
//! config.toml) is started as a child process speaking MCP over stdio
//! (through the `rmcp` SDK); its tools are offered to the model as
//! `mcp__SERVER__TOOL` and every call goes through rein's one gate like a
//! built-in tool: permission rules (`mcp__github__*`), approvals, the
//! per-call timeout, cancellation, output caps and spill.
//!
//! What a server sends is bounded and cleaned: tool names become what every
//! wire API accepts, descriptions and schemas are capped, results are read
//! as text. Its annotations feed the permission decision as the user's
//! configured server states them: a tool it calls read-only runs without
//! asking (plan mode included), every other one asks in default mode, and
//! one it calls destructive asks in every mode unless a rule names it
//! exactly (`mcp__db__drop_table`).

mod config;
mod content;
mod error;
mod naming;
mod server;
mod tool;

pub use config::McpServerConfig;
pub use error::McpError;
pub use naming::exposed_name;
pub use server::{McpServer, start_all};
pub use tool::McpTool;
