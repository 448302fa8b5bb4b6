//! `/mcp` and `/lsp`: the lines the app shows for the MCP servers and the
//! language servers, each from the front end's one source (the MCP hub's
//! reports, the LSP manager's status).

/// Lines made when asked.
pub type StatusLines = Box<dyn Fn() -> Vec<String> + Send + Sync>;

/// What the app knows of the servers.
#[derive(Default)]
pub(super) struct ServerViews {
    /// `/mcp`'s lines, when MCP servers are configured.
    pub mcp_status: Option<StatusLines>,
    /// Why configured MCP servers were not started.
    pub mcp_not_started: Option<String>,
    /// `/lsp`'s lines.
    pub lsp_status: Option<StatusLines>,
}

impl ServerViews {
    /// `/mcp`: a line per server, or why there are none.
    pub fn mcp(&self) -> Vec<String> {
        match (&self.mcp_status, &self.mcp_not_started) {
            (Some(status), _) => status(),
            (None, Some(why)) => vec![why.clone()],
            (None, None) => vec![
                "no MCP servers configured ([mcp_servers.NAME] in $REIN_HOME/config.toml)".into(),
            ],
        }
    }

    /// `/lsp`: a line per language server: not started yet, starting,
    /// ready, slow, crashed, missing or off.
    pub fn lsp(&self) -> Vec<String> {
        match &self.lsp_status {
            Some(status) => status(),
            None => vec!["no language servers in this front end".into()],
        }
    }
}
