//! The MCP servers a client passes with `session/new` and `session/load`,
//! as rein's server configs. They come from the user's editor, so they
//! count like the user's own config; SSE servers are refused (rein speaks
//! stdio and streamable HTTP, and says so in its capabilities).

use std::collections::BTreeMap;

use agent_client_protocol::Error as AcpError;
use agent_client_protocol::v1::schema::McpServer;
use rein_mcp::{McpServerConfig, McpTransport};

use super::session::invalid;

/// How long a client's server may take to start (as a config's default).
const STARTUP_SECS: u64 = 10;

/// The configs of `servers`.
pub fn servers(servers: &[McpServer]) -> Result<Vec<McpServerConfig>, AcpError> {
    servers.iter().map(server).collect()
}

fn server(server: &McpServer) -> Result<McpServerConfig, AcpError> {
    let (name, transport) = match server {
        McpServer::Stdio(s) => (
            s.name.clone(),
            McpTransport::Stdio {
                command: s.command.display().to_string(),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                cwd: None,
            },
        ),
        McpServer::Http(s) => (
            s.name.clone(),
            McpTransport::Http {
                url: s.url.clone(),
                headers: s
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), h.value.clone()))
                    .collect::<BTreeMap<_, _>>(),
                bearer_token_env_var: None,
            },
        ),
        McpServer::Sse(s) => {
            return Err(invalid(format!(
                "MCP server `{}`: rein does not speak the SSE transport; use streamable HTTP",
                s.name
            )));
        }
        _ => return Err(invalid("an MCP server of a kind rein does not know")),
    };
    if name.trim().is_empty() {
        return Err(invalid("an MCP server without a name"));
    }
    Ok(McpServerConfig {
        name,
        transport,
        startup_timeout_sec: STARTUP_SECS,
        tool_timeout_sec: None,
        enabled: true,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        // The editor's servers carry no client credentials, and their
        // questions are declined.
        oauth: None,
        elicitation: rein_mcp::ElicitationPolicy::Decline,
    })
}
