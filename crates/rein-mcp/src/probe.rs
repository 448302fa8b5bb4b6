//! Whether a remote server wants a sign-in, and its challenge when it
//! does. Steps:
//!
//! 1. An initialize request without a token: a 401 (or 403) is the
//!    answer, with its `WWW-Authenticate` challenge when it gave one.
//! 2. A server that takes the handshake may still guard its methods (the
//!    handshake open, the tools not): the session's `initialized`
//!    notification and a `tools/list` follow, and a 401 there is the
//!    answer too.
//! 3. Otherwise the server is open: there is nothing to sign in to.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::transport::auth::AuthError;

/// How a server answers requests sent without a token.
pub(crate) enum Probe {
    /// It took them: there is nothing to sign in to.
    Open,
    /// 401, with its `WWW-Authenticate` challenge when it gave one (the
    /// challenge points at its OAuth metadata; without one, discovery
    /// tries the well-known paths).
    Unauthorized(Option<String>),
}

const VERSION: &str = "2025-11-25";

/// Ask the server at `url` (sending its configured `headers`).
pub(crate) async fn challenge(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<Probe, AuthError> {
    let client =
        crate::connect::http_client().map_err(|e| AuthError::InternalError(e.to_string()))?;
    let post = |body: serde_json::Value, session: Option<&str>| {
        let mut request = client
            .post(url)
            .timeout(Duration::from_secs(30))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", VERSION);
        }
        for (k, v) in headers {
            request = request.header(k, v);
        }
        request.send()
    };
    let reach = |e: reqwest::Error| AuthError::InternalError(format!("cannot reach {url}: {e}"));
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "rein", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let response = post(initialize, None).await.map_err(reach)?;
    if !response.status().is_success() {
        return Ok(Probe::Unauthorized(www_authenticate(&response)));
    }
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    drop(response);
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    // Its answer does not matter: some servers refuse the notification.
    let _ = post(initialized, session.as_deref()).await;
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let response = post(list, session.as_deref()).await.map_err(reach)?;
    if response.status() == reqwest::StatusCode::UNAUTHORIZED {
        return Ok(Probe::Unauthorized(www_authenticate(&response)));
    }
    Ok(Probe::Open)
}

fn www_authenticate(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}
