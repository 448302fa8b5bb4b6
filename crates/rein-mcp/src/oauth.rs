//! OAuth 2.1 for remote servers: `rein mcp login NAME` (authorization code
//! with PKCE, the browser sent back to a one-shot listener on 127.0.0.1;
//! the client pre-registered in `[mcp_servers.NAME.oauth]`, else named by
//! its client ID metadata document when one is configured and the server
//! supports them, else registered dynamically; or, with `grant =
//! "client_credentials"`, [`crate::grant`] with no browser), and the
//! tokens it gets, kept per server URL in `$REIN_HOME/mcp-auth/`
//! (owner-only files) and refreshed before they expire by every later
//! connection.
//!
//! Tokens are keyed by the URL, not the server's name: a repository that
//! names its own server like one of the user's gets no token for it, and a
//! token is only ever sent to the server it was issued for.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    StoredCredentials, WWWAuthenticateParams,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::config::{McpServerConfig, McpTransport};
use crate::probe::{Probe, challenge};

/// How long `login` waits for the browser to come back.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// The tokens of one server URL, in a file of their own.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
    url: String,
}

/// What the file holds: the URL it is for (checked on load) and rmcp's
/// credentials (client id, tokens, when they were received).
#[derive(Serialize, Deserialize)]
struct Stored {
    url: String,
    credentials: StoredCredentials,
}

impl TokenFile {
    /// The file for `url` in `dir`.
    pub fn new(dir: &Path, url: &str) -> TokenFile {
        TokenFile {
            path: dir.join(file_name(url)),
            url: url.to_string(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether tokens are stored for this URL.
    pub fn exists(&self) -> bool {
        self.read().ok().flatten().is_some()
    }

    pub(crate) fn read(&self) -> std::io::Result<Option<StoredCredentials>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let stored: Stored = serde_json::from_str(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        // A file for another URL (a collision of names) is not used.
        Ok((stored.url == self.url).then_some(stored.credentials))
    }

    fn write(&self, credentials: StoredCredentials) -> std::io::Result<()> {
        let stored = Stored {
            url: self.url.clone(),
            credentials,
        };
        let text = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
        rein_core::private_fs::write_private(&self.path, &text)
    }
}

fn store_error(file: &TokenFile, e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(format!("{}: {e}", file.path.display()))
}

#[async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(|e| store_error(self, e))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).map_err(|e| store_error(self, e))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_error(self, e)),
        }
    }
}

/// A file name for `url`: readable, and unique by a hash of the whole URL.
fn file_name(url: &str) -> String {
    let readable: String = url
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(60)
        .collect();
    // FNV-1a: a stable hash with no dependency; the URL inside is checked.
    let hash = url.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{readable}-{hash:016x}.json")
}

/// An authorization manager for `url` whose tokens come from (and are
/// saved back to) `file`; `None` when nothing is stored for it.
pub(crate) async fn stored_manager(
    url: &str,
    file: TokenFile,
) -> Result<Option<AuthorizationManager>, AuthError> {
    if !file.exists() {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(url).await?;
    manager.set_credential_store(file);
    Ok(manager.initialize_from_store().await?.then_some(manager))
}

/// How a sign-in ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginOutcome {
    /// Tokens were received and saved.
    SignedIn,
    /// The server took a request without a token: nothing to sign in to.
    NotNeeded,
}

/// What `login` tells the user along the way.
pub trait LoginUi {
    /// The browser must open `url` (rein prints it and may open it).
    fn open(&mut self, url: &str);

    /// Whether no one can come back from the page (no browser could be
    /// opened and no one was told): the sign-in stops instead of waiting.
    fn gave_up(&self) -> bool {
        false
    }
}

/// Sign in to the remote server `config`: its challenge read from an
/// initialize request sent without a token, then the authorization code
/// flow: discovery, dynamic registration, the browser sent to the
/// authorization server and back to 127.0.0.1, the code exchanged, the
/// tokens saved to `file`.
pub async fn login(
    config: &McpServerConfig,
    file: TokenFile,
    ui: &mut (dyn LoginUi + Send),
) -> Result<LoginOutcome, AuthError> {
    authorize(config, file, ui, &[]).await
}

/// [`login`], asking for `scopes` (with those the server named) when some
/// are given: a step-up to a larger scope.
pub(crate) async fn authorize(
    config: &McpServerConfig,
    file: TokenFile,
    ui: &mut (dyn LoginUi + Send),
    scopes: &[String],
) -> Result<LoginOutcome, AuthError> {
    crate::install_tls_provider();
    let McpTransport::Http { url, headers, .. } = &config.transport else {
        return Err(AuthError::InternalError(format!(
            "`{}` is not a remote server",
            config.name
        )));
    };
    if let Some(oauth) = crate::grant::client_credentials_of(config) {
        crate::grant::sign_in(config, oauth, file, &[]).await?;
        return Ok(LoginOutcome::SignedIn);
    }
    let challenge = match challenge(url, headers).await? {
        Probe::Open => return Ok(LoginOutcome::NotNeeded),
        Probe::Unauthorized(challenge) => challenge,
    };
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| AuthError::InternalError(format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| AuthError::InternalError(e.to_string()))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");

    let mut manager = AuthorizationManager::new(url.as_str()).await?;
    manager.set_credential_store(file);
    let metadata = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await?;
    manager.set_metadata(metadata.metadata);
    let mut request = client_request(config, &redirect).map_err(AuthError::InternalError)?;
    if !scopes.is_empty() {
        let mut all = request.scopes.clone();
        all.extend(
            scopes
                .iter()
                .filter(|s| !request.scopes.contains(s))
                .cloned(),
        );
        request = request.with_scopes(all);
    }
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| e)?;
    ui.open(&session.auth_url);
    if ui.gave_up() {
        return Err(AuthError::AuthorizationRequired);
    }

    let back = tokio::time::timeout(LOGIN_WAIT, callback(&listener))
        .await
        .map_err(|_| {
            AuthError::AuthorizationFailed(format!(
                "the browser did not come back within {} s",
                LOGIN_WAIT.as_secs()
            ))
        })??;
    session
        .handle_callback_url(&format!("http://127.0.0.1:{port}{back}"))
        .await?;
    Ok(LoginOutcome::SignedIn)
}

/// Who rein is to the authorization server, from the server's oauth table:
/// a pre-registered client (with its secret), a client ID metadata
/// document, or (the fallback rmcp takes) dynamic registration as "rein".
fn client_request(
    config: &McpServerConfig,
    redirect: &str,
) -> Result<AuthorizationRequest, String> {
    // The first sign-in asks for the scope the server's challenge names
    // (else what its metadata lists); a step-up adds to it.
    let mut request = AuthorizationRequest::new(redirect)
        .with_client_name("rein")
        .with_initial_scope_selection();
    let Some(oauth) = &config.oauth else {
        return Ok(request);
    };
    if let Some(id) = &oauth.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = oauth.secret()? {
            request = request.with_client_secret(secret.expose());
        }
    }
    if let Some(url) = &oauth.client_metadata_url {
        request = request.with_client_metadata_url(url);
    }
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.iter().cloned());
    }
    Ok(request)
}

/// The `scope` a `WWW-Authenticate` challenge asks for.
pub(crate) fn scope_of(challenge: &str, url: &str) -> Option<String> {
    let base = reqwest::Url::parse(url).ok()?;
    WWWAuthenticateParams::parse(challenge, &base).scope
}

/// Wait for the browser's request to `/callback` and answer it; returns its
/// path and query. Other requests (a favicon) get 404 and are not the end.
async fn callback(listener: &TcpListener) -> Result<String, AuthError> {
    loop {
        let (stream, _) = listener
            .accept()
            .await
            .map_err(|e| AuthError::InternalError(e.to_string()))?;
        if let Some(target) = answer(stream).await {
            if let Some(refused) = refusal(&target) {
                return Err(AuthError::AuthorizationFailed(refused));
            }
            return Ok(target);
        }
    }
}

/// Read one request's first line; answer it. The callback's target, when
/// it was the callback.
async fn answer(stream: TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let read = reader.read_line(&mut line);
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .ok()?
        .ok()?;
    let target = line
        .strip_prefix("GET ")
        .and_then(|rest| rest.split(' ').next())
        .filter(|t| t.starts_with("/callback?"))
        .map(str::to_string);
    let (status, body) = match target {
        Some(_) => ("200 OK", "rein: signed in. You can close this tab."),
        None => ("404 Not Found", "not found"),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = reader.get_mut().write_all(reply.as_bytes()).await;
    target
}

/// The authorization server's refusal, when the callback carries one
/// (`error=access_denied&error_description=…`).
fn refusal(target: &str) -> Option<String> {
    let url = reqwest::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    let error = get("error")?;
    let text: String = match get("error_description") {
        Some(d) => format!("the authorization server refused: {error} ({d})"),
        None => format!("the authorization server refused: {error}"),
    };
    Some(text.chars().filter(|c| !c.is_control()).take(300).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_are_owner_only_and_keyed_by_the_whole_url() {
        let dir = tempfile::tempdir().unwrap();
        let a = TokenFile::new(dir.path(), "https://mcp.example/a");
        let b = TokenFile::new(dir.path(), "https://mcp.example/b");
        assert_ne!(a.path(), b.path());
        a.write(StoredCredentials::new("client".into(), None, vec![], None))
            .unwrap();
        assert!(a.exists() && !b.exists());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // The same file read for another URL is not used.
        std::fs::copy(a.path(), b.path()).unwrap();
        assert!(!b.exists());
    }

    #[test]
    fn a_refusal_in_the_callback_is_reported_in_one_clean_line() {
        let said = refusal("/callback?error=access_denied&error_description=no%0Away").unwrap();
        assert_eq!(
            said,
            "the authorization server refused: access_denied (noway)"
        );
        assert!(refusal("/callback?code=1&state=2").is_none());
    }
}
