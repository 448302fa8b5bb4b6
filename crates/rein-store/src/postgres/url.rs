//! Reading a PostgreSQL connection string (a `postgres://` URL or libpq's
//! `key=value` form) into a client configuration, a TLS choice and a name
//! for the server that error messages can show.
//!
//! `sslmode` is taken out before tokio-postgres sees the string: it knows
//! only `disable`, `prefer` and `require`, and rein also accepts libpq's
//! `allow`, `verify-ca` and `verify-full`. Every mode that uses TLS verifies
//! the server's certificate and name against the system's trust store
//! (stricter than libpq's `require`, which encrypts without checking who
//! answers). Without `sslmode`, a server on a Unix socket or a loopback
//! address is reached in plain text and any other one with `prefer`.
//!
//! No error made here ever contains the password: the string is shown with
//! its password replaced by `***`, and the password's text is scrubbed from
//! any message a library returns.

use std::net::IpAddr;
use std::ops::Range;
use std::time::Duration;

use tokio_postgres::config::Host;

use rein_core::StoreError;

/// How long connecting may take when the string does not say
/// (`connect_timeout`): an unreachable server fails in seconds, not minutes.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether and how a connection uses TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TlsMode {
    /// Plain text (`sslmode=disable`; the default for sockets and loopback).
    Disable,
    /// TLS when the server offers it, plain text when it does not
    /// (`allow`, `prefer`; the default for remote hosts).
    Prefer,
    /// TLS or no connection (`require`, `verify-ca`, `verify-full`).
    Require,
}

/// A parsed connection string.
#[derive(Clone)]
pub(crate) struct Target {
    /// What tokio-postgres connects with.
    pub config: tokio_postgres::Config,
    /// Whether to use TLS.
    pub tls: TlsMode,
    /// The server as messages name it: `db on host:port`, no secrets.
    pub shown: String,
    /// The password as written and as decoded, scrubbed from messages.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("shown", &self.shown)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// `text` with the password (if any) replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        scrub_all(text, &self.secrets)
    }
}

/// `text` with every occurrence of each secret replaced by `***`.
fn scrub_all(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_string(), |text, secret| {
            text.replace(secret.as_str(), "***")
        })
}

/// Parse `url`; a malformed one is a one-line [`StoreError::Other`] that
/// shows the string without its password.
pub(crate) fn parse(url: &str) -> Result<Target, StoreError> {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let mut secrets = if is_url {
        url_secrets(url)
    } else {
        kv_password(url).into_iter().collect()
    };
    let malformed = |why: &str| {
        let why = scrub_all(why, &secrets);
        StoreError::Other(match redact(url, is_url) {
            Some(shown) => format!(
                "malformed PostgreSQL URL `{}`: {why}",
                scrub_all(&shown, &secrets)
            ),
            None => format!("malformed PostgreSQL URL: {why}"),
        })
    };
    if is_url && url.contains(char::is_whitespace) {
        return Err(malformed("a URL cannot hold spaces; percent-encode them"));
    }
    let (rest, sslmode) = if is_url {
        take_url_sslmode(url)
    } else {
        take_kv_sslmode(url).map_err(|why| malformed(&why))?
    };
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|e: tokio_postgres::Error| malformed(&e.to_string()))?;
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(malformed(
            "it names no host (give host=... or postgres://host/db)",
        ));
    }
    let tls = match sslmode.as_deref() {
        None => default_tls(&config),
        Some(mode) => tls_mode(mode).ok_or_else(|| {
            malformed(&format!(
                "sslmode `{mode}` is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ))
        })?,
    };
    // The client's own mode only decides whether it asks for TLS; the
    // connector passed at connect time does the verifying.
    config.ssl_mode(match tls {
        TlsMode::Disable => tokio_postgres::config::SslMode::Disable,
        TlsMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        TlsMode::Require => tokio_postgres::config::SslMode::Require,
    });
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("rein");
    }
    if let Some(decoded) = config.get_password() {
        secrets.push(String::from_utf8_lossy(decoded).into_owned());
    }
    // Scrub longer secrets first, so no piece of one is left behind.
    secrets.retain(|s| !s.is_empty());
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    Ok(Target {
        shown: describe(&config),
        config,
        tls,
        secrets,
    })
}

fn tls_mode(mode: &str) -> Option<TlsMode> {
    match mode {
        "disable" => Some(TlsMode::Disable),
        "allow" | "prefer" => Some(TlsMode::Prefer),
        "require" | "verify-ca" | "verify-full" => Some(TlsMode::Require),
        _ => None,
    }
}

/// Plain text for a server on this machine, `prefer` for any other.
fn default_tls(config: &tokio_postgres::Config) -> TlsMode {
    let local_host = |h: &Host| match h {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name == "localhost" || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
    };
    let hosts_local = config.get_hosts().iter().all(local_host);
    let addrs_local = config.get_hostaddrs().iter().all(IpAddr::is_loopback);
    if hosts_local && addrs_local {
        TlsMode::Disable
    } else {
        TlsMode::Prefer
    }
}

/// `dbname on host:port[, host:port]` for messages.
fn describe(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let mut places: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| match h {
            Host::Tcp(name) => format!("{name}:{}", port(i)),
            Host::Unix(dir) => format!("{}/.s.PGSQL.{}", dir.display(), port(i)),
        })
        .collect();
    if places.is_empty() {
        places = config
            .get_hostaddrs()
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{a}:{}", port(i)))
            .collect();
    }
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("database {db} on {}", places.join(", "))
}

// ------------------------------------------------------------- URL form

/// The passwords a URL holds, as written: in its user info
/// (`postgres://user:password@host/...`) and in a `password=` parameter.
fn url_secrets(url: &str) -> Vec<String> {
    [url_password_range(url), url_query_password_range(url)]
        .into_iter()
        .flatten()
        .map(|r| url[r].to_string())
        .collect()
}

/// Where the value of a `password=` query parameter sits: from wherever
/// `password=` appears in the query (even inside a malformed pair) to the
/// next `&`.
fn url_query_password_range(url: &str) -> Option<Range<usize>> {
    let query = url.find('?')?;
    let start = query + url[query..].find("password=")? + "password=".len();
    let end = url[start..].find('&').map_or(url.len(), |i| start + i);
    Some(start..end)
}

/// Where the password sits in a URL: after the first `:` of the user info
/// (everything between `//` and the last `@` before the path).
fn url_password_range(url: &str) -> Option<Range<usize>> {
    let start = url.find("://")? + 3;
    let authority_end = url[start..]
        .find(['/', '?'])
        .map_or(url.len(), |i| start + i);
    let at = start + url[start..authority_end].rfind('@')?;
    let colon = start + url[start..at].find(':')?;
    Some(colon + 1..at)
}

/// The URL with `sslmode=...` taken out of its query, and the mode.
fn take_url_sslmode(url: &str) -> (String, Option<String>) {
    let Some(q) = url.find('?') else {
        return (url.to_string(), None);
    };
    let mut mode = None;
    let mut kept = Vec::new();
    for pair in url[q + 1..].split('&') {
        match pair.strip_prefix("sslmode=") {
            Some(value) => mode = Some(value.to_string()),
            None if pair.is_empty() => {}
            None => kept.push(pair),
        }
    }
    let mut rest = url[..q].to_string();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    (rest, mode)
}

// ------------------------------------------------------- key=value form

/// One `key=value` pair of libpq's form, with where its value sits.
struct Pair {
    key: String,
    value: String,
    /// The whole pair, key to end of value, in the original string.
    span: Range<usize>,
    /// The value as written (quotes included).
    value_span: Range<usize>,
}

/// The pairs of a `key=value` string: values bare up to whitespace, or in
/// single quotes with `\'` and `\\` escapes. `Err` names what is wrong.
fn kv_pairs(s: &str) -> Result<Vec<Pair>, String> {
    let bytes = s.as_bytes();
    let mut pairs = Vec::new();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i >= bytes.len() {
            return Ok(pairs);
        }
        let start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = s[start..i].to_string();
        i = skip_space(i);
        if bytes.get(i) != Some(&b'=') {
            // The word itself is not shown: it may be a stray password.
            return Err(format!(
                "expected key=value pairs; the word at byte {start} has no `=value`"
            ));
        }
        i = skip_space(i + 1);
        let value_start = i;
        let mut value = String::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err(format!("the value of `{key}` has no closing quote")),
                    Some(b'\'') => break,
                    Some(b'\\') if i + 1 < bytes.len() => {
                        let c = s[i + 1..].chars().next().unwrap_or_default();
                        value.push(c);
                        i += 1 + c.len_utf8();
                    }
                    Some(_) => {
                        let c = s[i..].chars().next().unwrap_or_default();
                        value.push(c);
                        i += c.len_utf8().max(1);
                    }
                }
            }
            i += 1;
        } else {
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            value.push_str(&s[value_start..i]);
        }
        pairs.push(Pair {
            key,
            value,
            span: start..i,
            value_span: value_start..i,
        });
    }
}

fn kv_password(s: &str) -> Option<String> {
    let pairs = kv_pairs(s).ok()?;
    pairs
        .into_iter()
        .find(|p| p.key == "password")
        .map(|p| p.value)
}

/// The string with its `sslmode` pair cut out, and the mode.
fn take_kv_sslmode(s: &str) -> Result<(String, Option<String>), String> {
    let pairs = kv_pairs(s)?;
    let Some(pair) = pairs.iter().rev().find(|p| p.key == "sslmode") else {
        return Ok((s.to_string(), None));
    };
    let mut rest = s[..pair.span.start].to_string();
    rest.push(' ');
    rest.push_str(&s[pair.span.end..]);
    Ok((rest, Some(pair.value.clone())))
}

/// The string as errors may show it: in a URL, the user and password
/// (everything up to the last `@` before the query) and a `password=`
/// parameter's value replaced by `***`; in the key=value
/// form, the password's value. A key=value string that cannot be read is
/// not shown at all: where its password is cannot be known.
fn redact(s: &str, is_url: bool) -> Option<String> {
    if is_url {
        let start = s.find("://").map_or(0, |i| i + 3);
        let query = s.find('?').unwrap_or(s.len()).max(start);
        let mut shown = s.to_string();
        // The later range first, so the earlier one's offsets still hold.
        if let Some(r) = url_query_password_range(s) {
            shown.replace_range(r, "***");
        }
        if let Some(at) = s[start..query].rfind('@') {
            shown.replace_range(start..start + at, "***");
        }
        return Some(shown);
    }
    let pairs = kv_pairs(s).ok()?;
    Some(match pairs.into_iter().find(|p| p.key == "password") {
        Some(p) => format!("{}***{}", &s[..p.value_span.start], &s[p.value_span.end..]),
        None => s.to_string(),
    })
}

#[cfg(test)]
mod tests;
