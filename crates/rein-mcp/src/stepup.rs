//! Step-up authorization: a server that answers a request with 403
//! `insufficient_scope` names the scope it wants. Steps:
//!
//! 1. Read the scope from the challenge; without one there is nothing to
//!    ask for, and the request fails.
//! 2. A scope rein holds already is not asked for again (the server will
//!    not be satisfied by a new sign-in), and a server gets at most
//!    [`MAX_STEP_UPS`] step-ups in a run: no sign-in loop.
//! 3. Sign in again for the union of the scopes held and wanted: by client
//!    credentials with no one involved, or in the browser the front end
//!    opens (the same flow as `rein mcp login`); with no browser, the
//!    request fails saying to run `rein mcp login NAME`.
//! 4. The new token is saved where the connection reads it: the request is
//!    sent again (it was refused, so it had no effect).

use std::sync::Arc;

use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::{InsufficientScopeError, StreamableHttpError};

use crate::config::McpTransport;
use crate::error::McpError;
use crate::oauth::{LoginUi, TokenFile, scope_of};
use crate::server::McpServer;

/// Step-ups one server gets in a run.
pub(crate) const MAX_STEP_UPS: u32 = 2;

/// Opens a sign-in page during a run (the front end's browser); `false`
/// when it cannot.
pub trait Browser: Send + Sync {
    fn open(&self, url: &str) -> bool;
}

/// A front end's [`Browser`], shared by a run's servers.
#[derive(Clone)]
pub struct BrowserHandle(pub Arc<dyn Browser>);

impl std::fmt::Debug for BrowserHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrowserHandle")
    }
}

/// The `WWW-Authenticate` challenge of a 403 `insufficient_scope` under
/// `e`, when it is one.
pub(crate) fn insufficient_scope(e: &ServiceError) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(found) = s.downcast_ref::<InsufficientScopeError>() {
            return Some(found.www_authenticate_header.clone());
        }
        if let Some(StreamableHttpError::InsufficientScope(found)) =
            s.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return Some(found.www_authenticate_header.clone());
        }
        source = s.source();
    }
    None
}

struct StepUpUi<'a> {
    browser: Option<&'a BrowserHandle>,
    opened: bool,
}

impl LoginUi for StepUpUi<'_> {
    fn open(&mut self, url: &str) {
        self.opened = self.browser.is_some_and(|b| b.0.open(url));
    }

    fn gave_up(&self) -> bool {
        !self.opened
    }
}

impl McpServer {
    /// After `e`: `None` when it is no scope refusal; otherwise whether a
    /// new token for the larger scope was saved (`Ok`: send the request
    /// again) or why not.
    pub(crate) async fn step_up(
        self: &Arc<Self>,
        e: &ServiceError,
    ) -> Option<Result<(), McpError>> {
        let header = insufficient_scope(e)?;
        Some(self.step_up_for(&header).await)
    }

    async fn step_up_for(self: &Arc<Self>, header: &str) -> Result<(), McpError> {
        let config = self.config();
        let (McpTransport::Http { url, .. }, Some(dir)) =
            (&config.transport, &self.launch().auth_dir)
        else {
            return Err(self.protocol("it refused for want of a scope".into()));
        };
        let Some(wanted) = scope_of(header, url) else {
            return Err(self.protocol("it refused for want of a scope it did not name".into()));
        };
        let file = TokenFile::new(dir, url);
        let held: Vec<String> = file
            .read()
            .ok()
            .flatten()
            .map(|c| c.granted_scopes)
            .unwrap_or_default();
        let wanted: Vec<String> = wanted.split_whitespace().map(str::to_string).collect();
        if wanted.iter().all(|w| held.contains(w)) {
            return Err(self.protocol(format!(
                "it refused for want of scope `{}`, which rein holds already; not signing in again",
                wanted.join(" ")
            )));
        }
        if !self.count_step_up() {
            return Err(self.protocol(format!(
                "it still wants more scope (`{}`) after {MAX_STEP_UPS} re-authorizations in \
                 this run; not signing in again",
                wanted.join(" ")
            )));
        }
        let mut scopes = held;
        scopes.extend(
            wanted
                .iter()
                .filter(|w| !scopes.contains(w))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let done = match crate::grant::client_credentials_of(config) {
            Some(oauth) => crate::grant::sign_in(config, oauth, file, &scopes).await,
            None => {
                let mut ui = StepUpUi {
                    browser: self.launch().browser.as_ref(),
                    opened: false,
                };
                crate::oauth::authorize(config, file, &mut ui, &scopes)
                    .await
                    .map(|_| ())
            }
        };
        done.map_err(|e| {
            self.protocol(format!(
                "it needs scope `{}` and signing in for it failed ({e}): run `rein mcp login {}`",
                wanted.join(" "),
                self.name()
            ))
        })
    }
}
