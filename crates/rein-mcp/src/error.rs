//! What can go wrong with a server.

/// A server that could not be started or used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The command could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        server: String,
        command: String,
        source: std::io::Error,
    },
    /// The server did not complete the MCP handshake in time (`secs`,
    /// as configured; `again`: nor in twice that when started once more).
    #[error(
        "MCP server `{server}`: did not start within {secs} s{} (the MCP handshake and its tool \
         list); a server that needs longer (an `npx` download on first use) can be given more \
         with `startup_timeout_sec` in its [mcp_servers.{server}] section",
        if *.again { ", nor in twice that when started once more" } else { "" }
    )]
    StartupTimeout {
        server: String,
        secs: u64,
        again: bool,
    },
    /// The handshake or a request failed.
    #[error("MCP server `{server}`: {message}")]
    Protocol { server: String, message: String },
    /// The configuration is unusable.
    #[error("MCP server `{server}`: {message}")]
    Config { server: String, message: String },
}

impl McpError {
    /// The server the error is about.
    pub fn server(&self) -> &str {
        match self {
            McpError::Spawn { server, .. }
            | McpError::StartupTimeout { server, .. }
            | McpError::Protocol { server, .. }
            | McpError::Config { server, .. } => server,
        }
    }
}
