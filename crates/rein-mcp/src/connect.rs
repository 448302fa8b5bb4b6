//! How a connection to a server is made: a child process speaking MCP on
//! its stdio, or a remote server over streamable HTTP (the session id, the
//! stateless revision and SSE are rmcp's) with its static headers, a bearer
//! token from the environment, or the OAuth tokens `rein mcp login` stored.
//! Either HTTP client opens the session's standalone stream before the
//! first request goes ([`crate::stream_first`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use rein_core::host_process::{HostLaunch, PROJECT_VARS, ProcessGroup};
use rmcp::ServiceExt;
use rmcp::service::ClientInitializeError;
use rmcp::transport::auth::{AuthClient, AuthError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};

use crate::client::Client;
use crate::config::McpTransport;
use crate::error::McpError;
use crate::oauth::{self, TokenFile};
use crate::server::{Connection, McpServer};
use crate::stderr::StderrTail;
use crate::stream_first::StreamFirst;

/// Spawn the child as every host process starts
/// ([`rein_core::host_process`]: a neutral folder unless the server sets
/// its own `cwd`, the scrubbed environment plus the server's own `env`,
/// the project as `REIN_PROJECT_DIR`, its own process group, killed with
/// the connection and with rein) and make the handshake.
pub(crate) async fn stdio(server: &Arc<McpServer>, client: Client) -> Result<Connection, McpError> {
    let config = server.config();
    let McpTransport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &config.transport
    else {
        return Err(server.protocol("is not a local server".into()));
    };
    let launch = server.launch();
    let project = &launch.workspace;
    let expand = |text: &str| expand_project_vars(text, project);
    let host = HostLaunch {
        project: Some(project.clone()),
        cwd: cwd
            .as_ref()
            .map(|c| PathBuf::from(expand(&c.to_string_lossy()))),
        env_allow: launch.env_allow.clone(),
        env: env
            .iter()
            .map(|(k, v)| (k.into(), expand(v).into()))
            .collect(),
    };
    let mut cmd = tokio::process::Command::from(host.command(expand(command)));
    cmd.args(args.iter().map(|a| expand(a))).kill_on_drop(true);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: config.name.clone(),
            command: command.clone(),
            source,
        })?;
    let group = transport.id().and_then(ProcessGroup::of);
    let tail = StderrTail::default();
    if let Some(stderr) = stderr {
        tokio::spawn(tail.clone().read(stderr, server.log_path()));
    }
    match client.serve(transport).await {
        Ok(service) => Ok(Connection {
            service,
            stderr: tail,
            _group: group,
        }),
        Err(e) => Err(server.protocol(format!("the handshake failed: {e}{}", tail.quoted()))),
    }
}

/// `text` with `${REIN_PROJECT_DIR}` and `${CLAUDE_PROJECT_DIR}` replaced
/// by the project folder, so a server can name a script of the project
/// without running in it. No other variable is expanded: a project's
/// settings cannot send the user's variables anywhere.
pub(crate) fn expand_project_vars(text: &str, project: &Path) -> String {
    let project = project.to_string_lossy();
    PROJECT_VARS.iter().fold(text.to_string(), |text, name| {
        text.replace(&format!("${{{name}}}"), &project)
    })
}

/// Reach the server's URL and make the handshake, with the OAuth tokens
/// stored for that URL when there are any.
pub(crate) async fn http(server: &Arc<McpServer>, client: Client) -> Result<Connection, McpError> {
    crate::install_tls_provider();
    let config = server.config();
    let McpTransport::Http {
        url,
        headers,
        bearer_token_env_var,
    } = &config.transport
    else {
        return Err(server.protocol("is not a remote server".into()));
    };
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .custom_headers(header_map(headers).map_err(|m| config_error(server, m))?);
    if let Some(var) = bearer_token_env_var {
        let token = std::env::var(var)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| {
                config_error(
                    server,
                    format!("`bearer_token_env_var` names `{var}`, which is not set"),
                )
            })?;
        transport = transport.auth_header(token.trim());
    }
    let http = http_client().map_err(|e| server.protocol(format!("cannot set up HTTP: {e}")))?;
    if let (Some(dir), Some(oauth)) = (
        &server.launch().auth_dir,
        crate::grant::client_credentials_of(config),
    ) {
        // No refresh token in this grant: a token near its end is asked for again.
        let file = TokenFile::new(dir, url);
        if !file
            .read()
            .ok()
            .flatten()
            .is_some_and(|c| crate::grant::fresh(&c))
        {
            crate::grant::sign_in(config, oauth, file, &[])
                .await
                .map_err(|e| {
                    server.protocol(format!("its client-credentials sign-in failed: {e}"))
                })?;
        }
    }
    let tokens = match &server.launch().auth_dir {
        Some(dir) => oauth::stored_manager(url, TokenFile::new(dir, url))
            .await
            .map_err(|e| login_error(server, &e))?,
        None => None,
    };
    let served = match tokens {
        Some(manager) => {
            let authorized = StreamFirst::new(AuthClient::new(http, manager));
            let transport = StreamableHttpClientTransport::with_client(authorized, transport);
            client.serve(transport).await
        }
        None => {
            let transport =
                StreamableHttpClientTransport::with_client(StreamFirst::new(http), transport);
            client.serve(transport).await
        }
    };
    served
        .map(|service| Connection {
            service,
            stderr: StderrTail::default(),
            _group: None,
        })
        .map_err(|e| handshake_error(server, &e))
}

/// The HTTP client every remote server's connection uses (no overall
/// timeout: an SSE stream may stay open for a whole run).
pub(crate) fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(15))
        .build()
}

/// The configured headers as HTTP headers, or why one cannot be sent.
fn header_map(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let bad = || format!("header `{name}` cannot be sent as written");
            let name =
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| bad())?;
            value.set_sensitive(true);
            Ok((name, value))
        })
        .collect()
}

fn config_error(server: &McpServer, message: String) -> McpError {
    McpError::Config {
        server: server.name().to_string(),
        message,
    }
}

/// A failed handshake, said plainly; a server that wants a login says how.
fn handshake_error(server: &McpServer, e: &ClientInitializeError) -> McpError {
    if e.auth_challenge().is_some() || wants_login(e) {
        return needs_login(server);
    }
    let failure = match e {
        // Its transport error is not its `source()`: start from it.
        ClientInitializeError::TransportError { error, .. } => http_failure(error.error.as_ref()),
        other => format!("{other}{}", causes(other)),
    };
    server.protocol(format!("the handshake failed: {failure}"))
}

/// What went wrong under a failed HTTP handshake, without the transport's
/// type names: the network's words ("Connection refused"), or the status
/// the server answered with.
fn http_failure(e: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        match s.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(r)) => return unreachable(r),
            Some(other) => {
                return format!("the server answered {other} (is the URL an MCP endpoint?)");
            }
            None => {}
        }
        if let Some(r) = s.downcast_ref::<reqwest::Error>() {
            return unreachable(r);
        }
        source = s.source();
    }
    format!("{e}{}", causes(e))
}

/// "cannot reach URL: Connection refused (os error 111)".
fn unreachable(e: &reqwest::Error) -> String {
    let mut deepest: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = deepest.source() {
        deepest = next;
    }
    let url = e.url().map_or(String::new(), |u| format!(" {u}"));
    format!("cannot reach{url}: {deepest}")
}

fn login_error(server: &McpServer, e: &AuthError) -> McpError {
    match e {
        AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_) => {
            needs_login(server)
        }
        other => server.protocol(format!("its stored OAuth tokens cannot be used: {other}")),
    }
}

fn needs_login(server: &McpServer) -> McpError {
    server.protocol(format!(
        "needs authorization: run `rein mcp login {}`",
        server.name()
    ))
}

/// Whether an error's causes include rmcp's "authorization required" (the
/// stored tokens expired and could not be refreshed).
fn wants_login(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(s) = source {
        if let Some(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) =
            s.downcast_ref::<AuthError>()
        {
            return true;
        }
        source = s.source();
    }
    false
}

/// The causes under an error's own message (reqwest's "connection
/// refused" sits two levels down), each once.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut said = e.to_string();
    let mut out = String::new();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !said.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
            said.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_project_variables_are_expanded() {
        let project = Path::new("/work/proj");
        assert_eq!(
            expand_project_vars("${REIN_PROJECT_DIR}/srv.py", project),
            "/work/proj/srv.py"
        );
        assert_eq!(
            expand_project_vars("--root=${CLAUDE_PROJECT_DIR}", project),
            "--root=/work/proj"
        );
        // The user's other variables stay as written.
        assert_eq!(
            expand_project_vars("${HOME}/$REIN_PROJECT_DIR", project),
            "${HOME}/$REIN_PROJECT_DIR"
        );
    }
}
