//! The guarded GET behind `web_fetch`: one host, checked addresses only.
//!
//! 1. the URL must be `http` or `https`, with a host and no user info;
//! 2. the host is checked and resolved once ([`crate::net::check`]): the
//!    `web` list (or the call's approval) decides the name, and a name that
//!    resolves to a private address is refused unless listed exactly;
//! 3. the client connects only to the checked addresses (the name is
//!    pinned to them, and no proxy from the environment is used);
//! 4. a redirect to the same host is followed (each hop checked again, at
//!    most [`MAX_REDIRECTS`]); one to another host ends the fetch and says
//!    where, so the model asks for it by a call of its own, which the gate
//!    judges;
//! 5. the body is read up to [`MAX_BODY`] bytes within the time limit;
//!    more is cut and said.

use std::time::Duration;

use rein_core::{HostPolicy, Target};
use reqwest::Url;

use crate::net::{Resolve, check};

/// Redirects followed within one host.
pub const MAX_REDIRECTS: usize = 5;
/// The most bytes of a body read.
pub const MAX_BODY: usize = 5 * 1024 * 1024;
/// How long a whole fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// A fetched page.
#[derive(Debug)]
pub struct Page {
    /// Where it was finally read from.
    pub url: Url,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// The body went past [`MAX_BODY`] and was cut.
    pub cut: bool,
}

/// How a fetch ended without a page.
#[derive(Debug)]
pub enum FetchError {
    /// The model's mistake or a refusal: said to it as is.
    Refused(String),
    /// A redirect to another host, not followed.
    Redirected { from: String, to: String },
    /// The network failed.
    Failed(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Refused(why) | FetchError::Failed(why) => f.write_str(why),
            FetchError::Redirected { from, to } => write!(
                f,
                "{from} redirects to another host: {to}. It was not followed; call web_fetch \
                 with that URL to fetch it."
            ),
        }
    }
}

/// The target of a URL, or why it cannot be fetched.
pub fn target_of(url: &Url) -> Result<Target, FetchError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(FetchError::Refused(format!(
            "only http and https URLs can be fetched, not {}:",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::Refused(
            "a URL with a user name or password is not fetched".into(),
        ));
    }
    let host = url
        .host_str()
        .ok_or_else(|| FetchError::Refused("the URL has no host".into()))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| FetchError::Refused("the URL has no port".into()))?;
    // An IPv6 host is written in brackets, as `Target::parse` reads it.
    let authority = format!("{host}:{port}");
    Target::parse(&authority, None)
        .map_err(|e| FetchError::Refused(format!("cannot fetch from {host}: {e}")))
}

/// GET `url` under `policy`, resolving with `resolver`, within `timeout`.
pub async fn get(
    url: Url,
    policy: &HostPolicy,
    resolver: &dyn Resolve,
    timeout: Duration,
) -> Result<Page, FetchError> {
    tokio::time::timeout(timeout, follow(url, policy, resolver))
        .await
        .unwrap_or_else(|_| {
            Err(FetchError::Failed(format!(
                "the fetch took longer than {} s and was stopped",
                timeout.as_secs_f32()
            )))
        })
}

async fn follow(
    mut url: Url,
    policy: &HostPolicy,
    resolver: &dyn Resolve,
) -> Result<Page, FetchError> {
    for _ in 0..=MAX_REDIRECTS {
        let target = target_of(&url)?;
        let checked = check(policy, &target, resolver)
            .await
            .map_err(|r| FetchError::Refused(r.line(&target, "web")))?;
        let host = url.host_str().unwrap_or_default().to_string();
        crate::install_tls_provider();
        let client = reqwest::Client::builder()
            .user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .resolve_to_addrs(&host, &checked.addrs)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| FetchError::Failed(format!("cannot set up HTTP: {e}")))?;
        let response = client
            .get(url.clone())
            .header(
                "accept",
                "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| {
                FetchError::Failed(format!(
                    "fetching {url} failed: {}",
                    crate::net::error_chain(&e)
                ))
            })?;
        if response.status().is_redirection() {
            let to = redirect_target(&url, &response)?;
            if target_of(&to)?.host != target.host {
                return Err(FetchError::Redirected {
                    from: url.to_string(),
                    to: to.to_string(),
                });
            }
            url = to;
            continue;
        }
        return read(url, response).await;
    }
    Err(FetchError::Failed(format!(
        "more than {MAX_REDIRECTS} redirects; stopped at {url}"
    )))
}

fn redirect_target(url: &Url, response: &reqwest::Response) -> Result<Url, FetchError> {
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| FetchError::Failed(format!("{url} redirects without a Location")))?;
    url.join(location)
        .map_err(|e| FetchError::Failed(format!("{url} redirects to a bad URL: {e}")))
}

async fn read(url: Url, mut response: reqwest::Response) -> Result<Page, FetchError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        FetchError::Failed(format!(
            "reading {url} failed: {}",
            crate::net::error_chain(&e)
        ))
    })? {
        let room = MAX_BODY - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page {
        url,
        status,
        content_type,
        body,
        cut,
    })
}
