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

use percent_encoding::percent_decode_str;
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
    /// The certificate authorities to trust instead of the system's
    /// (`sslrootcert=PATH`; `system` or none: the system's).
    pub root_cert: Option<std::path::PathBuf>,
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
            .field("root_cert", &self.root_cert)
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
/// shows the string without its password. A string without a password
/// takes `PGPASSWORD`'s, as libpq does: a way to keep it off the command
/// line.
pub(crate) fn parse(url: &str) -> Result<Target, StoreError> {
    parse_with(url, std::env::var("PGPASSWORD").ok())
}

/// [`parse`] with `env_password` standing for `PGPASSWORD`.
fn parse_with(url: &str, env_password: Option<String>) -> Result<Target, StoreError> {
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
    let (rest, tls_params) = if is_url {
        take_url_params(&encode_userinfo(url))
    } else {
        take_kv_params(url).map_err(|why| malformed(&why))?
    };
    let TlsParams {
        mode: sslmode,
        root_cert,
    } = tls_params;
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|e: tokio_postgres::Error| malformed(&e.to_string()))?;
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(malformed(
            "it names no host (give host=... or postgres://host/db)",
        ));
    }
    let tls = match sslmode.as_deref() {
        // A CA named for the server means the server speaks TLS.
        None if root_cert.is_some() => TlsMode::Require,
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
    if config.get_password().is_none()
        && let Some(password) = env_password.filter(|p| !p.is_empty())
    {
        config.password(password);
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
        root_cert: root_cert.filter(|p| p != "system").map(Into::into),
        secrets,
    })
}

/// Where the passwords sit in a connection string as written: a URL's
/// user info password and `password=` parameter, the key=value form's
/// `password` value; the whole string when where they sit cannot be known
/// (a string that cannot be read). For a caller that must blank them in
/// place, such as the process's own command line.
pub fn password_spans(s: &str) -> Vec<Range<usize>> {
    let is_url = s.starts_with("postgres://") || s.starts_with("postgresql://");
    if is_url {
        if userinfo_range(s).is_none() && !authority_is_hosts(s) {
            return std::iter::once(0..s.len()).collect();
        }
        return [url_password_range(s), url_query_password_range(s)]
            .into_iter()
            .flatten()
            .collect();
    }
    match kv_pairs(s) {
        Ok(pairs) => pairs
            .into_iter()
            .filter(|p| p.key == "password")
            .map(|p| p.value_span)
            .collect(),
        Err(_) => std::iter::once(0..s.len()).collect(),
    }
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

/// Where the user info sits in a URL (`user:password` between `//` and
/// `@`). A password may hold `@`, `/`, `?`, `#` or `:` unencoded, so the
/// user info ends at the last `@` before the first `/` or `?` that follows
/// the first `@`: host names hold none of these, and a `@` further on
/// (in the path or the query) is not the host's.
fn userinfo_range(url: &str) -> Option<Range<usize>> {
    let start = url.find("://")? + 3;
    let first_at = start + url[start..].find('@')?;
    let host_end = url[first_at..]
        .find(['/', '?'])
        .map_or(url.len(), |i| first_at + i);
    let last_at = start + url[start..host_end].rfind('@')?;
    Some(start..last_at)
}

/// Where the password sits in a URL: the user info after its first `:`.
fn url_password_range(url: &str) -> Option<Range<usize>> {
    let info = userinfo_range(url)?;
    let colon = info.start + url[info.clone()].find(':')?;
    Some(colon + 1..info.end)
}

/// Where the query starts (its `?`), after the user info.
fn url_query_start(url: &str) -> Option<usize> {
    let from = userinfo_range(url).map_or(0, |r| r.end);
    url[from..].find('?').map(|i| from + i)
}

/// Where the value of a `password=` query parameter sits: from wherever
/// `password=` appears in the query (even inside a malformed pair) to the
/// next `&`.
fn url_query_password_range(url: &str) -> Option<Range<usize>> {
    let query = url_query_start(url)?;
    let start = query + url[query..].find("password=")? + "password=".len();
    let end = url[start..].find('&').map_or(url.len(), |i| start + i);
    Some(start..end)
}

/// The passwords a URL holds, as written and percent-decoded: in its user
/// info (`postgres://user:password@host/...`) and in a `password=`
/// parameter.
fn url_secrets(url: &str) -> Vec<String> {
    [url_password_range(url), url_query_password_range(url)]
        .into_iter()
        .flatten()
        .flat_map(|r| {
            let written = &url[r];
            let decoded = percent_decode_str(written).decode_utf8_lossy();
            [written.to_string(), decoded.into_owned()]
        })
        .collect()
}

/// The URL with `@`, `/`, `?` and `#` in its user info percent-encoded,
/// so the client reads the whole password (it splits at the first `@`:
/// `user:p@ss@host` would connect to the host `ss@host` and print it).
fn encode_userinfo(url: &str) -> String {
    let Some(info) = userinfo_range(url) else {
        return url.to_string();
    };
    let encoded: String = url[info.clone()]
        .chars()
        .map(|c| match c {
            '@' => "%40".to_string(),
            '/' => "%2F".to_string(),
            '?' => "%3F".to_string(),
            '#' => "%23".to_string(),
            c => c.to_string(),
        })
        .collect();
    format!("{}{encoded}{}", &url[..info.start], &url[info.end..])
}

/// Whether a URL without user info has an authority that is only hosts
/// and numeric ports: `postgres://user:secret` (its `@` forgotten) reads
/// as host `user`, port `secret`, and must not be shown.
fn authority_is_hosts(url: &str) -> bool {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..]
        .find(['/', '?'])
        .map_or(url.len(), |i| start + i);
    url[start..end].split(',').all(|chunk| {
        let port = match chunk.strip_prefix('[') {
            Some(v6) => match v6.find(']') {
                Some(close) => v6[close + 1..].strip_prefix(':').unwrap_or(""),
                None => return false,
            },
            None => chunk.split_once(':').map_or("", |(_, port)| port),
        };
        port.bytes().all(|b| b.is_ascii_digit())
    })
}

/// The TLS parameters of a connection string, which tokio-postgres does
/// not read itself (`sslmode` it reads, but rein decides the mode).
#[derive(Debug, Default)]
struct TlsParams {
    /// `sslmode`, as written.
    mode: Option<String>,
    /// `sslrootcert`, decoded.
    root_cert: Option<String>,
}

impl TlsParams {
    /// Keep `key=value` if it is one of these parameters (the last wins).
    fn take(&mut self, key: &str, value: String) -> bool {
        match key {
            "sslmode" => self.mode = Some(value),
            "sslrootcert" => self.root_cert = Some(value),
            _ => return false,
        }
        true
    }
}

/// The URL with its TLS parameters taken out of its query, and them.
fn take_url_params(url: &str) -> (String, TlsParams) {
    let mut params = TlsParams::default();
    let Some(q) = url_query_start(url) else {
        return (url.to_string(), params);
    };
    let mut kept = Vec::new();
    for pair in url[q + 1..].split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode_str(value).decode_utf8_lossy().into_owned();
        if !pair.is_empty() && !params.take(key, value) {
            kept.push(pair);
        }
    }
    let mut rest = url[..q].to_string();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    (rest, params)
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

/// The string with its TLS pairs cut out, and them.
fn take_kv_params(s: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams::default();
    let mut rest = String::new();
    let mut from = 0;
    for pair in kv_pairs(s)? {
        if params.take(&pair.key, pair.value) {
            rest.push_str(&s[from..pair.span.start]);
            rest.push(' ');
            from = pair.span.end;
        }
    }
    rest.push_str(&s[from..]);
    Ok((rest, params))
}

/// The string as errors may show it: in a URL, the user info (see
/// [`userinfo_range`]) and a `password=` parameter's value replaced by
/// `***`; in the key=value form, the password's value. A string whose
/// password cannot be located (a key=value string that cannot be read, a
/// URL whose "port" is not a number) is not shown at all.
fn redact(s: &str, is_url: bool) -> Option<String> {
    if is_url {
        let mut shown = s.to_string();
        // The later range first, so the earlier one's offsets still hold.
        if let Some(r) = url_query_password_range(s) {
            shown.replace_range(r, "***");
        }
        match userinfo_range(s) {
            Some(info) => shown.replace_range(info, "***"),
            None if !authority_is_hosts(s) => return None,
            None => {}
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
