//! What every part of rein that opens a connection for the model checks
//! first: the host name against a [`HostPolicy`], then the addresses it
//! resolves to. Used by the sandbox's proxy ([`crate::sandbox::netproxy`])
//! and by `web_fetch` ([`crate::web_fetch`]), so both refuse the same
//! things in the same words.
//!
//! 1. [`HostPolicy::decide`] by name (deny wins, then the allow list);
//! 2. the name is resolved once, here ([`Resolve`]);
//! 3. only public addresses are kept, unless the name was listed exactly
//!    (a local server the user named); a name that resolves only to
//!    private ones is refused;
//! 4. the caller connects to an address from [`Checked::addrs`] and never
//!    resolves the name again, so a second DNS answer cannot swap in
//!    another address.

use std::io;
use std::net::SocketAddr;

use rein_core::{Host, HostDecision, HostPolicy, Target, is_public};

/// How names become addresses. The system's resolver in rein; tests put
/// names of their own on loopback.
#[async_trait::async_trait]
pub trait Resolve: Send + Sync {
    async fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo`).
pub struct SystemResolver;

#[async_trait::async_trait]
impl Resolve for SystemResolver {
    async fn resolve(&self, name: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((name, port)).await?.collect())
    }
}

/// Why a host may not be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// On the deny list (the pattern, as written).
    Denied(String),
    /// On no allow list.
    NotListed,
    /// It resolves to private, loopback or link-local addresses only, and
    /// was not listed by its exact name.
    Private,
    /// It could not be resolved (the resolver's words).
    Unresolved(String),
}

impl Refused {
    /// One line for people and the model; `list` names the setting that
    /// would allow it (`network`, `web`).
    pub fn line(&self, target: &Target, list: &str) -> String {
        match self {
            Refused::Denied(p) => format!("blocked {target} (denied by `{p}` in `{list}_deny`)"),
            Refused::NotListed => format!("blocked {target}: add it to `{list}` to allow it"),
            Refused::Private => format!(
                "blocked {target}: it resolves to a private address, which only a host listed in \
                 `{list}` by its exact name may reach"
            ),
            Refused::Unresolved(e) => format!("could not resolve {}: {e}", target.host),
        }
    }
}

/// A host that passed every check, and the addresses that may be used.
#[derive(Debug, Clone)]
pub struct Checked {
    pub addrs: Vec<SocketAddr>,
}

/// Check `target` against `policy` and resolve it once (steps 1 to 3).
pub async fn check(
    policy: &HostPolicy,
    target: &Target,
    resolver: &dyn Resolve,
) -> Result<Checked, Refused> {
    let exact = match policy.decide(target) {
        HostDecision::Allowed { exact } => exact,
        HostDecision::Denied(p) => return Err(Refused::Denied(p.to_string())),
        HostDecision::NotListed => return Err(Refused::NotListed),
    };
    let found = match &target.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
        Host::Name(name) => resolver
            .resolve(name, target.port)
            .await
            .map_err(|e| Refused::Unresolved(e.to_string()))?,
    };
    let addrs: Vec<SocketAddr> = found
        .iter()
        .copied()
        .filter(|a| exact || is_public(a.ip()))
        .collect();
    if addrs.is_empty() {
        return Err(if found.is_empty() {
            Refused::Unresolved("no address".into())
        } else {
            Refused::Private
        });
    }
    Ok(Checked { addrs })
}

/// An error and its causes, in one line (`a: b: c`).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}
