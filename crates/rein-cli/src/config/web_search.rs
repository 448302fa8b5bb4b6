//! `[web_search]`: the search service the `web_search` tool asks. Read
//! from the user's own config only (a repository could otherwise send
//! every query to a server of its choosing). Without it, the tool is not
//! offered.

use anyhow::{Result, anyhow, bail};
use rein_tools::web_search::{Backend, BackendKind};
use serde::Deserialize;

/// `[web_search]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchSection {
    /// `searxng` or `brave`.
    pub backend: Option<BackendKind>,
    /// The SearXNG instance (required for it); another endpoint for
    /// Brave's API.
    pub url: Option<String>,
    /// The variable holding the API key (Brave; default `BRAVE_API_KEY`).
    pub api_key_env: Option<String>,
}

/// The variable Brave's key is read from when `api_key_env` is not set.
pub const BRAVE_KEY_ENV: &str = "BRAVE_API_KEY";

impl WebSearchSection {
    /// A later file's fields replace ours.
    pub fn merge_from(&mut self, other: WebSearchSection) {
        if other.backend.is_some() {
            self.backend = other.backend;
        }
        if other.url.is_some() {
            self.url = other.url;
        }
        if other.api_key_env.is_some() {
            self.api_key_env = other.api_key_env;
        }
    }

    /// The backend these settings name (its key read from the
    /// environment), or why it cannot be used.
    pub fn backend(&self) -> Result<Backend> {
        let Some(kind) = self.backend else {
            bail!("[web_search] needs `backend` (\"searxng\" or \"brave\")");
        };
        let key = match kind {
            BackendKind::Searxng => None,
            BackendKind::Brave => {
                let var = self.api_key_env.as_deref().unwrap_or(BRAVE_KEY_ENV);
                let key = std::env::var(var).ok().filter(|k| !k.trim().is_empty());
                Some(key.ok_or_else(|| {
                    anyhow!("[web_search] backend \"brave\" needs its API key in ${var}")
                })?)
            }
        };
        Backend::new(kind, self.url.as_deref(), key).map_err(|e| anyhow!("[web_search] {e}"))
    }
}
