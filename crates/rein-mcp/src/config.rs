//! One server's settings, in the shape of Codex's `[mcp_servers.NAME]`:
//! a local server (`command`, `args`, `env`, `cwd`) or a remote one
//! (`url`, `headers`, `bearer_token_env_var`, `oauth`), never both; and
//! how its questions are answered when no one is asked (`elicitation`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::elicit::ElicitationPolicy;
use crate::oauth_config::OAuthConfig;

/// How rein reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program to run (looked up on `PATH`).
        command: String,
        args: Vec<String>,
        /// Variables set for the server, on top of the launch's environment.
        env: BTreeMap<String, String>,
        /// The server's working directory (default: the workspace).
        cwd: Option<PathBuf>,
    },
    /// A server at an `http(s)://` URL speaking streamable HTTP.
    Http {
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// A variable of rein's environment holding a bearer token sent as
        /// `Authorization: Bearer …` (the token never sits in a file).
        bearer_token_env_var: Option<String>,
    },
}

/// `[mcp_servers.NAME]`: how to reach a server and which of its tools to
/// offer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawServer")]
pub struct McpServerConfig {
    /// The server's name (the table's key): the `SERVER` of
    /// `mcp__SERVER__TOOL`.
    pub name: String,
    pub transport: McpTransport,
    /// How long the handshake and the tool list may take (default 10 s).
    pub startup_timeout_sec: u64,
    /// How long one call may take (default: rein's tool timeout).
    pub tool_timeout_sec: Option<u64>,
    /// `false` keeps the server configured but not started.
    pub enabled: bool,
    /// Only these tools (by the server's names) are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools (by the server's names) are never offered.
    pub disabled_tools: Vec<String>,
    /// `[mcp_servers.NAME.oauth]`: the client and grant of its sign-in.
    pub oauth: Option<OAuthConfig>,
    /// How its elicitation requests are answered when no one is asked.
    pub elicitation: ElicitationPolicy,
}

/// The table as written; [`McpServerConfig`] is what it means.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bearer_token_env_var: Option<String>,
    #[serde(default = "default_startup")]
    startup_timeout_sec: u64,
    tool_timeout_sec: Option<u64>,
    #[serde(default = "yes")]
    enabled: bool,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    oauth: Option<OAuthConfig>,
    #[serde(default)]
    elicitation: ElicitationPolicy,
}

fn default_startup() -> u64 {
    10
}

fn yes() -> bool {
    true
}

impl TryFrom<RawServer> for McpServerConfig {
    type Error = String;

    fn try_from(raw: RawServer) -> Result<McpServerConfig, String> {
        let transport = match (raw.command, raw.url) {
            (Some(_), Some(_)) => return Err("has both `command` and `url`; give one".into()),
            (None, None) => return Err("needs a `command` (local) or a `url` (remote)".into()),
            (Some(command), None) => {
                if command.trim().is_empty() {
                    return Err("has an empty `command`".into());
                }
                if !raw.headers.is_empty()
                    || raw.bearer_token_env_var.is_some()
                    || raw.oauth.is_some()
                {
                    return Err(
                        "sets `headers`, `bearer_token_env_var` or `oauth`, which only a \
                                `url` server uses"
                            .into(),
                    );
                }
                McpTransport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                check_url(&url)?;
                if !raw.args.is_empty() || !raw.env.is_empty() || raw.cwd.is_some() {
                    return Err(
                        "sets `args`, `env` or `cwd`, which only a `command` server \
                                uses"
                            .into(),
                    );
                }
                McpTransport::Http {
                    url,
                    headers: raw.headers,
                    bearer_token_env_var: raw.bearer_token_env_var,
                }
            }
        };
        Ok(McpServerConfig {
            name: String::new(),
            transport,
            startup_timeout_sec: raw.startup_timeout_sec,
            tool_timeout_sec: raw.tool_timeout_sec,
            enabled: raw.enabled,
            enabled_tools: raw.enabled_tools,
            disabled_tools: raw.disabled_tools,
            oauth: raw.oauth,
            elicitation: raw.elicitation,
        })
    }
}

/// A server URL rein will connect to: `http` or `https`, with a host.
fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("has a bad `url` ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "has a `url` that is not http(s)://HOST/…: `{}`",
            parsed.scheme()
        ));
    }
    Ok(())
}

impl McpServerConfig {
    /// A local server running `command args…`, with the defaults.
    pub fn stdio(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
        McpServerConfig::with_transport(
            name,
            McpTransport::Stdio {
                command: command.to_string(),
                args: args.iter().map(|a| a.to_string()).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A remote server at `url`, with the defaults.
    pub fn http(name: &str, url: &str) -> McpServerConfig {
        McpServerConfig::with_transport(
            name,
            McpTransport::Http {
                url: url.to_string(),
                headers: BTreeMap::new(),
                bearer_token_env_var: None,
            },
        )
    }

    fn with_transport(name: &str, transport: McpTransport) -> McpServerConfig {
        McpServerConfig {
            name: name.to_string(),
            transport,
            startup_timeout_sec: default_startup(),
            tool_timeout_sec: None,
            enabled: true,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            oauth: None,
            elicitation: ElicitationPolicy::Decline,
        }
    }

    pub fn startup_timeout(&self) -> Duration {
        Duration::from_secs(self.startup_timeout_sec.max(1))
    }

    pub fn tool_timeout(&self) -> Option<Duration> {
        self.tool_timeout_sec.map(|s| Duration::from_secs(s.max(1)))
    }

    /// The remote server's URL, for a `url` server.
    pub fn url(&self) -> Option<&str> {
        match &self.transport {
            McpTransport::Http { url, .. } => Some(url),
            McpTransport::Stdio { .. } => None,
        }
    }

    /// Whether the server's tool `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        let listed = self
            .enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == name));
        listed && !self.disabled_tools.iter().any(|t| t == name)
    }

    /// What the server is, in one line for people: its command line (with
    /// the names of the variables it sets) or its URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio {
                command, args, env, ..
            } => {
                let mut words = vec![command.clone()];
                words.extend(args.iter().cloned());
                let mut line = words.join(" ");
                if !env.is_empty() {
                    let names: Vec<&str> = env.keys().map(String::as_str).collect();
                    line.push_str(&format!(" (sets {})", names.join(", ")));
                }
                line
            }
            McpTransport::Http { url, headers, .. } => {
                if headers.is_empty() {
                    url.clone()
                } else {
                    let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                    format!("{url} (sends {})", names.join(", "))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_with_defaults_and_unknown_keys_are_refused() {
        let c: McpServerConfig = json(r#"{"command": "srv", "args": ["-v"]}"#).unwrap();
        assert_eq!(c.startup_timeout(), Duration::from_secs(10));
        assert!(c.enabled && c.offers("anything"));
        let c: McpServerConfig =
            json(r#"{"command": "srv", "enabled_tools": ["a", "b"], "disabled_tools": ["b"]}"#)
                .unwrap();
        assert!(c.offers("a") && !c.offers("b") && !c.offers("c"));
        assert!(json(r#"{"command": "x", "comand": 1}"#).is_err());
    }

    #[test]
    fn a_server_is_local_or_remote_never_both_or_neither() {
        let remote =
            json(r#"{"url": "https://mcp.example/mcp", "headers": {"X-A": "1"}}"#).unwrap();
        assert_eq!(remote.url(), Some("https://mcp.example/mcp"));
        assert_eq!(remote.describe(), "https://mcp.example/mcp (sends X-A)");
        for (bad, why) in [
            (r#"{"command": "x", "url": "http://h/"}"#, "both"),
            (r#"{"args": ["x"]}"#, "needs a `command`"),
            (r#"{"command": " "}"#, "empty"),
            (r#"{"url": "file:///etc/passwd"}"#, "not http"),
            (r#"{"url": "not a url"}"#, "bad `url`"),
            (
                r#"{"url": "http://h/", "env": {"A": "1"}}"#,
                "only a `command`",
            ),
            (r#"{"command": "x", "headers": {"A": "1"}}"#, "only a `url`"),
        ] {
            let err = json(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    fn json(text: &str) -> serde_json::Result<McpServerConfig> {
        serde_json::from_str(text)
    }
}
