//! rein's side of an MCP session: who it says it is in the handshake, and
//! what it does when a server says its tool list changed (reads it again,
//! so the run's tools follow from the next turn).

use std::sync::Weak;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient};

use crate::server::McpServer;

/// The client handler of one connection.
pub(crate) struct Client {
    server: Weak<McpServer>,
}

impl Client {
    pub(crate) fn new(server: Weak<McpServer>) -> Client {
        Client { server }
    }
}

impl rmcp::ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Read the list in a task of its own: the answer comes through the
        // same connection this notification is being handled on.
        if let Some(server) = self.server.upgrade() {
            tokio::spawn(async move { server.relist().await });
        }
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("rein", env!("CARGO_PKG_VERSION")),
        )
    }
}
