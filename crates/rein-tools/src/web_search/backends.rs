//! The search services `web_search` can ask, each behind [`Backend`]:
//! a SearXNG instance's JSON API (self-hosted, no key) and the Brave
//! Search API (hosted, with a key). Each turns its service's answer into
//! [`Hit`]s; an HTTP error or an answer of the wrong shape is an error
//! naming the backend.

use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// How long one search may take.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(20);
/// The most bytes of an error body quoted.
const ERROR_QUOTE: usize = 200;

/// Which service answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// A SearXNG instance (`url`, its JSON format enabled).
    Searxng,
    /// The Brave Search API (`api_key`).
    Brave,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Searxng => "searxng",
            BackendKind::Brave => "brave",
        }
    }
}

/// A configured search service.
#[derive(Debug, Clone)]
pub struct Backend {
    kind: BackendKind,
    base: Url,
    key: Option<String>,
    client: reqwest::Client,
}

/// The Brave Search API's web search endpoint.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

impl Backend {
    /// `url`: the SearXNG instance (required), or another endpoint for
    /// Brave's API (default [`BRAVE_URL`]); `key`: Brave's subscription
    /// token (required for Brave).
    pub fn new(
        kind: BackendKind,
        url: Option<&str>,
        key: Option<String>,
    ) -> Result<Backend, String> {
        let url = match (kind, url) {
            (_, Some(u)) => u.to_string(),
            (BackendKind::Brave, None) => BRAVE_URL.to_string(),
            (BackendKind::Searxng, None) => {
                return Err("the searxng backend needs `url`, its instance's address".into());
            }
        };
        let base = Url::parse(&url).map_err(|e| format!("web_search url {url:?}: {e}"))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(format!("web_search url {url:?} is not http or https"));
        }
        if kind == BackendKind::Brave && key.as_deref().is_none_or(str::is_empty) {
            return Err(
                "the brave backend needs an API key (`api_key_env` names its variable)".into(),
            );
        }
        crate::install_tls_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")))
            .timeout(SEARCH_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot set up HTTP: {e}"))?;
        Ok(Backend {
            kind,
            base,
            key,
            client,
        })
    }

    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// Up to `limit` results for `query`.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, String> {
        let name = self.kind.name();
        let mut url = self.base.clone();
        let request = match self.kind {
            BackendKind::Searxng => {
                let path = format!("{}/search", url.path().trim_end_matches('/'));
                url.set_path(&path);
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                self.client.get(url)
            }
            BackendKind::Brave => {
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &limit.min(20).to_string());
                self.client
                    .get(url)
                    .header("accept", "application/json")
                    .header("x-subscription-token", self.key.clone().unwrap_or_default())
            }
        };
        let response = request
            .send()
            .await
            .map_err(|e| format!("the {name} search failed: {}", without_query(e)))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| format!("reading the {name} answer failed: {}", without_query(e)))?;
        if !status.is_success() {
            let quote: String = body.chars().take(ERROR_QUOTE).collect();
            return Err(format!(
                "the {name} search answered {status}: {}",
                quote.trim()
            ));
        }
        let hits = match self.kind {
            BackendKind::Searxng => searxng_hits(&body),
            BackendKind::Brave => brave_hits(&body),
        }
        .map_err(|e| format!("the {name} answer is not what its API returns: {e}"))?;
        Ok(hits.into_iter().take(limit).collect())
    }
}

/// A request error without the URL (it carries the query, and for some
/// services a key).
fn without_query(e: reqwest::Error) -> String {
    crate::net::error_chain(&e.without_url())
}

#[derive(Deserialize)]
struct SearxngAnswer {
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    content: Option<String>,
}

fn searxng_hits(body: &str) -> Result<Vec<Hit>, serde_json::Error> {
    let answer: SearxngAnswer = serde_json::from_str(body)?;
    Ok(answer
        .results
        .into_iter()
        .map(|r| Hit {
            title: r.title,
            url: r.url,
            snippet: r.content.unwrap_or_default(),
        })
        .collect())
}

#[derive(Deserialize)]
struct BraveAnswer {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    url: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: Option<String>,
}

fn brave_hits(body: &str) -> Result<Vec<Hit>, serde_json::Error> {
    let answer: BraveAnswer = serde_json::from_str(body)?;
    Ok(answer
        .web
        .map(|w| w.results)
        .unwrap_or_default()
        .into_iter()
        .map(|r| Hit {
            title: r.title,
            url: r.url,
            snippet: r.description.unwrap_or_default(),
        })
        .collect())
}
