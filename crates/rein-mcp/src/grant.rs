//! The client-credentials grant (machine to machine, no browser): the
//! server's challenge read, its authorization server discovered, a token
//! requested with the client's secret (rmcp's exchange: HTTP Basic or the
//! request body, as the server supports) or with a signed JWT assertion
//! (`private_key_jwt`, built here on ring), and saved to the server's
//! token file. A connection re-requests the token when it has expired
//! (there is no refresh token in this grant).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, ClientCredentialsConfig, CredentialStore, OAuthTokenResponse,
    StoredCredentials,
};

use crate::config::{McpServerConfig, McpTransport};
use crate::jwt::{self, SigningKey};
use crate::oauth::{TokenFile, scope_of};
use crate::oauth_config::{Grant, OAuthConfig};
use crate::probe::{Probe, challenge};

/// A token this close to its end is requested again.
const MARGIN: Duration = Duration::from_secs(30);

fn failed(message: impl Into<String>) -> AuthError {
    AuthError::ClientCredentialsError(message.into())
}

/// The server's oauth table when it signs in by client credentials.
pub(crate) fn client_credentials_of(config: &McpServerConfig) -> Option<&OAuthConfig> {
    config
        .oauth
        .as_ref()
        .filter(|o| o.grant == Grant::ClientCredentials)
}

/// Request a token for `config` with its client credentials, asking for
/// `more` scopes besides the configured ones (a step-up), and save it.
pub(crate) async fn sign_in(
    config: &McpServerConfig,
    oauth: &OAuthConfig,
    file: TokenFile,
    more: &[String],
) -> Result<(), AuthError> {
    let McpTransport::Http { url, headers, .. } = &config.transport else {
        return Err(failed("not a remote server"));
    };
    let challenge = match challenge(url, headers).await? {
        Probe::Open => None,
        Probe::Unauthorized(challenge) => challenge,
    };
    let mut scopes = oauth.scopes.clone();
    if scopes.is_empty()
        && let Some(hint) = challenge.as_deref().and_then(|c| scope_of(c, url))
    {
        scopes.extend(hint.split_whitespace().map(str::to_string));
    }
    for scope in more {
        if !scopes.contains(scope) {
            scopes.push(scope.clone());
        }
    }
    let mut manager = AuthorizationManager::new(url.as_str()).await?;
    manager.set_credential_store(file.clone());
    let metadata = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await?
        .metadata;
    manager.set_metadata(metadata.clone());
    let client_id = oauth.client_id.clone().unwrap_or_default();
    if let (Some(key_file), Some(algorithm)) = (&oauth.private_key_file, oauth.signing_algorithm) {
        let pem = std::fs::read(key_file)
            .map_err(|e| failed(format!("cannot read {}: {e}", key_file.display())))?;
        let key = SigningKey::from_pem(&pem, algorithm).map_err(failed)?;
        let audience = metadata
            .issuer
            .clone()
            .unwrap_or_else(|| metadata.token_endpoint.clone());
        let assertion = jwt::assertion(&key, algorithm, &client_id, &audience).map_err(failed)?;
        let token = jwt_exchange(&metadata.token_endpoint, &assertion, &scopes, url).await?;
        let granted = granted(&token, &scopes);
        let stored = StoredCredentials::new(client_id, Some(token), granted, Some(now()))
            .with_issuer(metadata.issuer.clone());
        return file.save(stored).await;
    }
    let secret = oauth
        .secret()
        .map_err(failed)?
        .unwrap_or_else(|| crate::Secret::new(""));
    let cc = ClientCredentialsConfig::ClientSecret {
        client_id,
        client_secret: secret.expose().to_string(),
        scopes,
        resource: Some(url.clone()),
    };
    manager.validate_client_credentials_metadata(&cc)?;
    manager.configure_client_credentials(&cc)?;
    manager.exchange_client_credentials(&cc).await?;
    Ok(())
}

/// The token request of `private_key_jwt` (RFC 7523: the client is named
/// by the assertion alone, no `client_id` in the body).
async fn jwt_exchange(
    token_endpoint: &str,
    assertion: &str,
    scopes: &[String],
    resource: &str,
) -> Result<OAuthTokenResponse, AuthError> {
    let client = crate::connect::http_client().map_err(|e| failed(e.to_string()))?;
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", "client_credentials".into()),
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
        ),
        ("client_assertion", assertion.into()),
        ("resource", resource.into()),
    ];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let body: String = reqwest::Url::parse_with_params("http://x/", &form)
        .map_err(|e| failed(e.to_string()))?
        .query()
        .unwrap_or_default()
        .to_string();
    let response = client
        .post(token_endpoint)
        .timeout(Duration::from_secs(30))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| failed(format!("cannot reach the token endpoint: {e}")))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| failed(format!("the token endpoint's answer broke off: {e}")))?;
    if !status.is_success() {
        let said: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let error = said["error"].as_str().unwrap_or("no reason given");
        let text: String = format!("the token endpoint refused ({status}): {error}")
            .chars()
            .filter(|c| !c.is_control())
            .take(300)
            .collect();
        return Err(failed(text));
    }
    serde_json::from_slice(&bytes).map_err(|e| failed(format!("a bad token answer: {e}")))
}

/// A token answer's field, read from its wire form.
fn field(token: &OAuthTokenResponse, name: &str) -> serde_json::Value {
    serde_json::to_value(token)
        .ok()
        .and_then(|mut v| v.get_mut(name).map(serde_json::Value::take))
        .unwrap_or_default()
}

/// The scopes a token was granted: its `scope`, else what was asked.
fn granted(token: &OAuthTokenResponse, asked: &[String]) -> Vec<String> {
    match field(token, "scope").as_str() {
        Some(scope) => scope.split_whitespace().map(str::to_string).collect(),
        None => asked.to_vec(),
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `credentials` hold a token that is not about to expire.
pub(crate) fn fresh(credentials: &StoredCredentials) -> bool {
    let Some(token) = &credentials.token_response else {
        return false;
    };
    match (
        field(token, "expires_in").as_u64(),
        credentials.token_received_at,
    ) {
        (Some(life), Some(at)) => at + life > now() + MARGIN.as_secs(),
        _ => true,
    }
}
