//! MCP servers' forms sent to the editor: when the client offered form
//! elicitation, a session's MCP hub asks it (`elicitation/create`, scoped
//! to the session) instead of answering by the server's policy. Steps:
//!
//! 1. The server's message and requested schema become the ACP request;
//!    a schema the editor's protocol cannot carry leaves the answer to the
//!    policy.
//! 2. The editor's accept (with its content), decline or cancel is the
//!    server's answer; an error or a dropped connection cancels.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateElicitationRequest, CreateElicitationResponse,
};
use serde_json::{Value, json};

/// Install the editor as the asker of `hub`'s servers, when it offered
/// form elicitation.
pub fn install(
    hub: Option<&Arc<rein_mcp::McpHub>>,
    caps: &ClientCapabilities,
    session: &str,
    client: &ConnectionTo<Client>,
) {
    let offers_forms = caps.elicitation.as_ref().is_some_and(|e| e.form.is_some());
    if let (Some(hub), true) = (hub, offers_forms) {
        hub.set_asker(Arc::new(Editor {
            session: session.to_string(),
            client: client.clone(),
        }));
    }
}

struct Editor {
    session: String,
    client: ConnectionTo<Client>,
}

#[async_trait::async_trait]
impl rein_mcp::Asker for Editor {
    async fn ask(&self, server: &str, message: &str, schema: &Value) -> Option<rein_mcp::Answer> {
        let request: CreateElicitationRequest = serde_json::from_value(json!({
            "mode": "form",
            "sessionId": self.session,
            "message": format!("MCP server `{server}` asks: {message}"),
            "requestedSchema": schema,
        }))
        .ok()?;
        let answer = self.client.send_request(request).block_task().await;
        Some(match answer {
            Ok(response) => answer_of(&response),
            Err(_) => rein_mcp::Answer::Cancel,
        })
    }
}

/// The editor's answer as the server gets it.
fn answer_of(response: &CreateElicitationResponse) -> rein_mcp::Answer {
    let wire = serde_json::to_value(response).unwrap_or_default();
    match wire["action"].as_str() {
        Some("accept") => {
            rein_mcp::Answer::Accept(wire["content"].as_object().cloned().unwrap_or_default())
        }
        Some("decline") => rein_mcp::Answer::Decline,
        _ => rein_mcp::Answer::Cancel,
    }
}
