//! rein's side of an MCP session: who it says it is in the handshake (form
//! elicitation included), what it does when a server says its tool list
//! changed (reads it again, so the run's tools follow from the next turn),
//! and how it answers a server's question ([`crate::elicit`]).

use std::sync::Weak;

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};

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

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(server) = self.server.upgrade() else {
            return Ok(crate::elicit::answer(Default::default(), &request));
        };
        let config = server.config();
        let slot = &server.launch().asker;
        Ok(crate::elicit::respond(slot, &config.name, config.elicitation, &request).await)
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(FormElicitationCapability::new());
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(
            capabilities,
            Implementation::new("rein", env!("CARGO_PKG_VERSION")),
        )
    }
}
