//! `[mcp_servers.NAME.oauth]`: how rein identifies itself to a remote
//! server's authorization server, for the user's own servers only (a
//! project's settings may not carry secrets or name the user's keys).
//!
//! Without the table, `rein mcp login` registers a client dynamically (or
//! by a client ID metadata document when `client_metadata_url` is set and
//! the server supports it). With `client_id` it uses that pre-registered
//! client, with `client_secret` (or `client_secret_env`) when the client
//! is confidential. `grant = "client_credentials"` signs in with no browser,
//! by secret or by a JWT signed with `private_key_file`.

use std::path::PathBuf;

use serde::Deserialize;

/// The OAuth grant a server's sign-in uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person signs in in the browser (PKCE).
    #[default]
    AuthorizationCode,
    /// Machine to machine: the client's own credentials, no browser.
    ClientCredentials,
}

/// The algorithm of a `private_key_jwt` client assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum SigningAlgorithm {
    ES256,
    ES384,
    RS256,
    RS384,
    RS512,
}

impl SigningAlgorithm {
    pub fn name(self) -> &'static str {
        match self {
            SigningAlgorithm::ES256 => "ES256",
            SigningAlgorithm::ES384 => "ES384",
            SigningAlgorithm::RS256 => "RS256",
            SigningAlgorithm::RS384 => "RS384",
            SigningAlgorithm::RS512 => "RS512",
        }
    }
}

/// A secret from the config: compared and used, never printed.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `[mcp_servers.NAME.oauth]` as written and checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, try_from = "RawOAuth")]
pub struct OAuthConfig {
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// Its secret, written in the config (owner-only file)…
    pub client_secret: Option<Secret>,
    /// …or named as a variable of rein's environment.
    pub client_secret_env: Option<String>,
    pub grant: Grant,
    /// A PEM private key (PKCS#8) for `private_key_jwt`.
    pub private_key_file: Option<PathBuf>,
    pub signing_algorithm: Option<SigningAlgorithm>,
    /// The scopes to ask for (default: what the server says it needs).
    pub scopes: Vec<String>,
    /// The https URL of rein's client ID metadata document, used as the
    /// client id when the authorization server supports such documents.
    pub client_metadata_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOAuth {
    client_id: Option<String>,
    client_secret: Option<Secret>,
    client_secret_env: Option<String>,
    #[serde(default)]
    grant: Grant,
    private_key_file: Option<PathBuf>,
    signing_algorithm: Option<SigningAlgorithm>,
    #[serde(default)]
    scopes: Vec<String>,
    client_metadata_url: Option<String>,
}

impl TryFrom<RawOAuth> for OAuthConfig {
    type Error = String;

    fn try_from(raw: RawOAuth) -> Result<OAuthConfig, String> {
        let secret = raw.client_secret.is_some() || raw.client_secret_env.is_some();
        if raw.client_secret.is_some() && raw.client_secret_env.is_some() {
            return Err("oauth sets both `client_secret` and `client_secret_env`; give one".into());
        }
        if raw.private_key_file.is_some() && secret {
            return Err("oauth sets both a client secret and `private_key_file`; give one".into());
        }
        if raw.private_key_file.is_some() != raw.signing_algorithm.is_some() {
            return Err("oauth `private_key_file` and `signing_algorithm` go together".into());
        }
        if (secret || raw.private_key_file.is_some()) && raw.client_id.is_none() {
            return Err("oauth has credentials but no `client_id`".into());
        }
        if raw.grant == Grant::ClientCredentials && !(secret || raw.private_key_file.is_some()) {
            return Err(
                "oauth `grant = \"client_credentials\"` needs a `client_secret`, \
                        `client_secret_env` or `private_key_file`"
                    .into(),
            );
        }
        if raw.private_key_file.is_some() && raw.grant != Grant::ClientCredentials {
            return Err("oauth `private_key_file` is for `grant = \"client_credentials\"`".into());
        }
        if let Some(url) = &raw.client_metadata_url {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| format!("oauth has a bad `client_metadata_url` ({e})"))?;
            if parsed.scheme() != "https" || parsed.path() == "/" {
                return Err("oauth `client_metadata_url` must be an https URL with a path".into());
            }
        }
        Ok(OAuthConfig {
            client_id: raw.client_id,
            client_secret: raw.client_secret,
            client_secret_env: raw.client_secret_env,
            grant: raw.grant,
            private_key_file: raw.private_key_file,
            signing_algorithm: raw.signing_algorithm,
            scopes: raw.scopes,
            client_metadata_url: raw.client_metadata_url,
        })
    }
}

impl OAuthConfig {
    /// The client secret, from the config or its variable; an error names
    /// the variable when it is not set.
    pub fn secret(&self) -> Result<Option<Secret>, String> {
        if let Some(secret) = &self.client_secret {
            return Ok(Some(secret.clone()));
        }
        let Some(var) = &self.client_secret_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(value) if !value.trim().is_empty() => Ok(Some(Secret::new(value.trim()))),
            _ => Err(format!(
                "oauth `client_secret_env` names `{var}`, which is not set"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(text: &str) -> Result<OAuthConfig, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn the_table_reads_each_kind_of_client_and_refuses_mixtures() {
        let c = oauth(r#"{"client_id": "a", "client_secret": "s3cret"}"#).unwrap();
        assert_eq!(c.grant, Grant::AuthorizationCode);
        assert_eq!(c.secret().unwrap().unwrap().expose(), "s3cret");
        let c = oauth(
            r#"{"client_id": "a", "grant": "client_credentials",
                "private_key_file": "/k.pem", "signing_algorithm": "ES256"}"#,
        )
        .unwrap();
        assert_eq!(c.signing_algorithm, Some(SigningAlgorithm::ES256));
        for (bad, why) in [
            (
                r#"{"client_id": "a", "client_secret": "s", "client_secret_env": "V"}"#,
                "both",
            ),
            (r#"{"client_secret": "s"}"#, "no `client_id`"),
            (
                r#"{"grant": "client_credentials", "client_id": "a"}"#,
                "needs",
            ),
            (
                r#"{"client_id": "a", "grant": "client_credentials", "private_key_file": "/k"}"#,
                "go together",
            ),
            (
                r#"{"client_metadata_url": "http://x.example/c.json"}"#,
                "https",
            ),
            (r#"{"client_id": "a", "secret": "s"}"#, "unknown field"),
        ] {
            let err = oauth(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn a_secret_never_shows_in_debug_output() {
        let c = oauth(r#"{"client_id": "a", "client_secret": "hunter2-s3cret"}"#).unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("<redacted>"),
            "{shown}"
        );
    }

    #[test]
    fn a_secret_variable_that_is_not_set_is_named() {
        let c = oauth(r#"{"client_id": "a", "client_secret_env": "REIN_TEST_NO_SUCH_VAR_30"}"#)
            .unwrap();
        let err = c.secret().unwrap_err();
        assert!(err.contains("REIN_TEST_NO_SUCH_VAR_30"), "{err}");
    }
}
