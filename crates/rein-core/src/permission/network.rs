//! Which hosts shell commands may reach (`permissions.network`).
//!
//! Three settings ([`NetworkAccess`]): no network, all of it, or a list of
//! host patterns with an optional deny list that wins ([`HostPolicy`]). A
//! list is enforced outside the sandbox by a proxy (the tools crate); this
//! module only decides, and it decides by the host *name* a command asked
//! for, never by an address it resolves to:
//!
//! 1. [`Target::parse`] turns what a command asked for (`host:port`) into a
//!    [`Target`], refusing control characters, empty labels and anything
//!    that is neither a host name nor an IP literal;
//! 2. [`HostPolicy::decide`] matches it against the deny list, then the
//!    allow list ([`HostPattern`]: `example.org`, `*.example.com`, `*`, an
//!    IP literal, each optionally with `:port`; without a port only 80 and
//!    443 match);
//! 3. the proxy connects only when the answer is [`Decision::Allowed`], and
//!    to a private, loopback or link-local address only when the name was
//!    listed exactly ([`is_public`] tells them apart).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Host lists with a name, written `@NAME` in `network`, `network_deny`
/// and `web` (users add their own under `[permissions.presets]`).
pub const PRESETS: &[(&str, &[&str])] = &[(
    "github",
    &[
        "github.com",
        "api.github.com",
        "codeload.github.com",
        "*.githubusercontent.com",
    ],
)];

/// The built-in preset `name` (without `@`), parsed.
pub fn preset(name: &str) -> Option<Vec<HostPattern>> {
    let (_, list) = PRESETS.iter().find(|(n, _)| *n == name)?;
    list.iter().map(|p| p.parse().ok()).collect()
}

/// What network a shell command gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkAccess {
    /// None at all (the default).
    #[default]
    Off,
    /// All of it, as the host has it.
    On,
    /// Only the listed hosts, through rein's proxy.
    Hosts(HostPolicy),
}

impl NetworkAccess {
    /// `On` with a deny list is every name but those, through the proxy
    /// (so the deny list and the private-address guard hold); other
    /// settings take the deny list as it is.
    pub fn with_deny(self, deny: &[HostPattern]) -> NetworkAccess {
        match self {
            NetworkAccess::On if !deny.is_empty() => NetworkAccess::Hosts(HostPolicy {
                allow: vec![HostPattern {
                    host: HostMatch::Any,
                    port: None,
                }],
                deny: deny.to_vec(),
            }),
            NetworkAccess::Hosts(mut h) => {
                h.deny.extend(deny.iter().cloned());
                NetworkAccess::Hosts(h)
            }
            other => other,
        }
    }

    /// Whether a command may reach anything at all.
    pub fn any(&self) -> bool {
        !matches!(self, NetworkAccess::Off)
    }

    /// How permissive a setting is, to compare a project's setting with the
    /// user's: off < a list < on. Two lists compare by being a subset.
    pub fn loosens(&self, current: &NetworkAccess) -> bool {
        match (self, current) {
            (NetworkAccess::Off, _) => false,
            (_, NetworkAccess::On) => false,
            (NetworkAccess::On, _) => true,
            (NetworkAccess::Hosts(_), NetworkAccess::Off) => true,
            (NetworkAccess::Hosts(new), NetworkAccess::Hosts(old)) => {
                new.allow.iter().any(|p| !old.allow.contains(p))
                    || old.deny.iter().any(|p| !new.deny.contains(p))
            }
        }
    }
}

/// The hosts a list setting lets commands reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPolicy {
    pub allow: Vec<HostPattern>,
    /// Checked first: a host matching one is refused even when listed.
    #[serde(default)]
    pub deny: Vec<HostPattern>,
}

/// What [`HostPolicy::decide`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead. `exact`: the host was listed by its exact name or address,
    /// so it may resolve to a private address (a local server the user
    /// named); a wildcard never lets a name reach one.
    Allowed { exact: bool },
    /// On the deny list (the pattern that matched).
    Denied(HostPattern),
    /// On neither list.
    NotListed,
}

impl HostPolicy {
    /// Whether a command may connect to `target`: deny wins, then the
    /// allow list.
    pub fn decide(&self, target: &Target) -> Decision {
        if let Some(p) = self.deny.iter().find(|p| p.matches(target)) {
            return Decision::Denied(p.clone());
        }
        let mut found = None;
        for p in self.allow.iter().filter(|p| p.matches(target)) {
            let exact = !matches!(p.host, HostMatch::Subdomains(_) | HostMatch::Any);
            found = Some(found.unwrap_or(false) || exact);
        }
        match found {
            Some(exact) => Decision::Allowed { exact },
            None => Decision::NotListed,
        }
    }
}

/// One entry of an allow or deny list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostMatch,
    /// `None`: the web's ports, 80 and 443.
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    /// Any name (`*`), never an IP literal; never a private address.
    Any,
    /// Exactly this name (lower case, no trailing dot).
    Name(String),
    /// Any name below this one (`*.example.com`), not the name itself.
    Subdomains(String),
    /// Exactly this address.
    Ip(IpAddr),
}

impl HostPattern {
    fn matches(&self, target: &Target) -> bool {
        let port_ok = match self.port {
            Some(p) => p == target.port,
            None => target.port == 80 || target.port == 443,
        };
        port_ok
            && match (&self.host, &target.host) {
                (HostMatch::Any, Host::Name(_)) => true,
                (HostMatch::Name(n), Host::Name(h)) => n == h,
                (HostMatch::Subdomains(n), Host::Name(h)) => h
                    .strip_suffix(n.as_str())
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
                (HostMatch::Ip(a), Host::Ip(b)) => a == b,
                _ => false,
            }
    }
}

/// Why a pattern or a requested host was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("an empty host")]
    Empty,
    #[error("a host with a control character, space or other character no host name has")]
    BadCharacter,
    #[error("a host name with an empty or over-long label")]
    BadLabel,
    #[error("a bad port {0:?}")]
    BadPort(String),
    #[error("no port (expected host:port)")]
    NoPort,
    #[error("`*` only as the first label (`*.example.com`)")]
    BadWildcard,
}

impl FromStr for HostPattern {
    type Err = HostError;

    /// `example.org`, `*.example.com`, `*` (any name), `10.0.0.5`,
    /// `[::1]`, each optionally followed by `:port`.
    fn from_str(s: &str) -> Result<HostPattern, HostError> {
        let (host, port) = split_port(s.trim())?;
        let host = if host == "*" {
            HostMatch::Any
        } else if let Some(rest) = host.strip_prefix("*.") {
            match parse_host(rest)? {
                Host::Name(n) => HostMatch::Subdomains(n),
                Host::Ip(_) => return Err(HostError::BadWildcard),
            }
        } else {
            match parse_host(host)? {
                Host::Name(n) => HostMatch::Name(n),
                Host::Ip(ip) => HostMatch::Ip(ip),
            }
        };
        Ok(HostPattern { host, port })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostMatch::Any => f.write_str("*")?,
            HostMatch::Name(n) => f.write_str(n)?,
            HostMatch::Subdomains(n) => write!(f, "*.{n}")?,
            HostMatch::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostMatch::Ip(ip) => write!(f, "{ip}")?,
        }
        match self.port {
            Some(p) => write!(f, ":{p}"),
            None => Ok(()),
        }
    }
}

impl Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HostPattern, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|e| serde::de::Error::custom(format!("network host {text:?}: {e}")))
    }
}

/// A host a command asked to reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A name: lower case, ASCII, no trailing dot.
    Name(String),
    Ip(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Host::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// A host and port a command asked to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: Host,
    pub port: u16,
}

impl Target {
    /// `host:port` as a proxy request names it (`CONNECT` authority);
    /// `default_port` when the port is left out (`None`: it is required).
    pub fn parse(authority: &str, default_port: Option<u16>) -> Result<Target, HostError> {
        let (host, port) = split_port(authority)?;
        let port = port.or(default_port).ok_or(HostError::NoPort)?;
        Ok(Target {
            host: parse_host(host)?,
            port,
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// Split `host[:port]` (`[v6]:port` for IPv6).
fn split_port(s: &str) -> Result<(&str, Option<u16>), HostError> {
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or(HostError::BadCharacter)?;
        match after {
            "" => (inside, None),
            _ => (
                inside,
                Some(after.strip_prefix(':').ok_or(HostError::BadCharacter)?),
            ),
        }
    } else {
        match s.rsplit_once(':') {
            // A bare IPv6 address has several colons.
            Some((h, _)) if h.contains(':') => (s, None),
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err(HostError::BadPort(p.chars().take(16).collect())),
        },
    };
    Ok((host, port))
}

/// A host name or IP literal, checked: only letters, digits, `-`, `_` and
/// dots; labels of 1 to 63 characters; at most 253 in all. Names are
/// lower-cased and lose a trailing dot, so `Example.ORG.` is
/// `example.org`. Anything else (a NUL, a space, a percent sign, a
/// non-ASCII letter that could look like another) is refused.
pub fn parse_host(raw: &str) -> Result<Host, HostError> {
    if raw.is_empty() {
        return Err(HostError::Empty);
    }
    if let Ok(ip) = raw.parse::<IpAddr>() {
        return Ok(Host::Ip(ip));
    }
    if !raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(HostError::BadCharacter);
    }
    let name = raw.strip_suffix('.').unwrap_or(raw).to_ascii_lowercase();
    if name.len() > 253 || name.split('.').any(|l| l.is_empty() || l.len() > 63) {
        return Err(HostError::BadLabel);
    }
    // Names every resolver turns into an address without asking DNS:
    // all-numeric forms such as `2130706433` or `127.1`.
    if name
        .split('.')
        .all(|l| l.bytes().all(|b| b.is_ascii_digit()))
        || name.starts_with("0x")
    {
        return Err(HostError::BadCharacter);
    }
    Ok(Host::Name(name))
}

/// Whether `ip` is an address on the public internet: not loopback,
/// private, link-local (cloud metadata services live there), shared
/// (carrier-grade NAT), unspecified, multicast, broadcast, reserved or
/// documentation space; IPv4 mapped or translated into IPv6 is judged as
/// the IPv4 address it carries.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => public_v6(v6),
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return public_v4(v4);
    }
    let seg = ip.segments();
    // 64:ff9b::/96 carries an IPv4 address for NAT64.
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return public_v4(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local
        || (seg[0] & 0xffc0) == 0xfe80 // link-local
        || (seg[0] & 0xffc0) == 0xfec0 // old site-local
        || (seg[0] == 0x2001 && seg[1] == 0xdb8) // documentation
        || seg[0..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible, deprecated
}

#[cfg(test)]
#[path = "network_tests.rs"]
mod tests;
