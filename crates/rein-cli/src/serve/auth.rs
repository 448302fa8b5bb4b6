//! Who may drive `rein serve`: a bearer token on every request, and no
//! web page. A browser cannot be kept from sending requests to a local
//! port, so rein refuses what a page's requests carry: an `Origin` that
//! is not allowed, and (on loopback) a `Host` that is not the server's own
//! (a DNS-rebound name).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};

/// The environment variable that gives the token instead of the file.
pub const TOKEN_ENV: &str = "REIN_SERVE_TOKEN";
/// The shortest token accepted from the environment.
const MIN_TOKEN_LEN: usize = 32;

/// The server's token: `REIN_SERVE_TOKEN`, else the one in `file`, made
/// (0600) at the first start. A file others can read is refused.
pub fn token(file: &Path) -> anyhow::Result<String> {
    if let Ok(t) = std::env::var(TOKEN_ENV) {
        let t = t.trim().to_string();
        if t.len() < MIN_TOKEN_LEN {
            bail!("{TOKEN_ENV} must be at least {MIN_TOKEN_LEN} characters");
        }
        return Ok(t);
    }
    match std::fs::symlink_metadata(file) {
        Ok(meta) => {
            if !meta.is_file() {
                bail!("{} is not a regular file", file.display());
            }
            if meta.permissions().mode() & 0o077 != 0 {
                bail!(
                    "{} can be read by other users: remove it (a new token is made) or chmod 600 it",
                    file.display()
                );
            }
            let t = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let t = t.trim().to_string();
            if t.len() < MIN_TOKEN_LEN {
                bail!(
                    "{} holds no usable token: remove it to make a new one",
                    file.display()
                );
            }
            Ok(t)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => make_token(file),
        Err(e) => Err(anyhow!("cannot read {}: {e}", file.display())),
    }
}

/// A new random token written to `file` with mode 0600 (never over an
/// existing file).
fn make_token(file: &Path) -> anyhow::Result<String> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let token = random_token();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .with_context(|| format!("cannot create {}", file.display()))?;
    writeln!(f, "{token}").with_context(|| format!("cannot write {}", file.display()))?;
    Ok(token)
}

/// 256 random bits, hex: from the kernel, else (never expected) fastrand
/// seeded by the clock and pid.
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    let from_kernel = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !from_kernel {
        let mut rng = fastrand::Rng::new();
        bytes.iter_mut().for_each(|b| *b = rng.u8(..));
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the token is kept under the rein home.
pub fn token_file(home: &Path) -> PathBuf {
    home.join("serve").join("token")
}

/// What the guard decided about one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// 401: no token or a wrong one.
    Unauthenticated,
    /// 403: a web page's request (a foreign Origin or Host).
    Forbidden(&'static str),
}

/// The request checks every route passes.
#[derive(Debug, Clone)]
pub struct Guard {
    token: String,
    /// Origins whose pages may call (exactly as the browser sends them).
    allowed_origins: Vec<String>,
    /// On loopback, the Host values accepted (`127.0.0.1:PORT`,
    /// `localhost:PORT`, `[::1]:PORT`); empty: any.
    hosts: Vec<String>,
}

impl Guard {
    pub fn new(token: String, allowed_origins: Vec<String>, hosts: Vec<String>) -> Guard {
        Guard {
            token,
            allowed_origins,
            hosts,
        }
    }

    /// Whether a request with these headers may go on.
    pub fn check(
        &self,
        authorization: Option<&str>,
        origin: Option<&str>,
        host: Option<&str>,
    ) -> Verdict {
        if let Some(origin) = origin
            && !self.origin_allowed(origin)
        {
            return Verdict::Forbidden("requests from web pages are refused (Origin not allowed)");
        }
        if !self.hosts.is_empty() && !host.is_some_and(|h| self.hosts.iter().any(|a| a == h)) {
            return Verdict::Forbidden("the Host header is not this server's address");
        }
        let given = authorization.and_then(|a| a.strip_prefix("Bearer "));
        match given {
            Some(t) if same(t.trim().as_bytes(), self.token.as_bytes()) => Verdict::Allowed,
            _ => Verdict::Unauthenticated,
        }
    }

    /// Whether pages of `origin` may call (CORS answers name it).
    pub fn origin_allowed(&self, origin: &str) -> bool {
        self.allowed_origins.iter().any(|o| o == origin)
    }
}

/// Equal in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard::new(
            "t".repeat(40),
            vec!["https://app.example".into()],
            vec!["127.0.0.1:7420".into(), "localhost:7420".into()],
        )
    }

    #[test]
    fn the_token_is_required_and_compared_whole() {
        let g = guard();
        let good = format!("Bearer {}", "t".repeat(40));
        let host = Some("127.0.0.1:7420");
        assert_eq!(g.check(Some(&good), None, host), Verdict::Allowed);
        assert_eq!(g.check(None, None, host), Verdict::Unauthenticated);
        let short = format!("Bearer {}", "t".repeat(39));
        assert_eq!(g.check(Some(&short), None, host), Verdict::Unauthenticated);
        let basic = format!("Basic {}", "t".repeat(40));
        assert_eq!(g.check(Some(&basic), None, host), Verdict::Unauthenticated);
    }

    #[test]
    fn a_foreign_origin_or_a_rebound_host_is_refused_even_with_the_token() {
        let g = guard();
        let good = format!("Bearer {}", "t".repeat(40));
        let host = Some("127.0.0.1:7420");
        assert!(matches!(
            g.check(Some(&good), Some("https://evil.example"), host),
            Verdict::Forbidden(_)
        ));
        assert!(matches!(
            g.check(Some(&good), Some("null"), host),
            Verdict::Forbidden(_)
        ));
        assert!(matches!(
            g.check(Some(&good), None, Some("evil.example:7420")),
            Verdict::Forbidden(_)
        ));
        assert!(matches!(
            g.check(Some(&good), None, None),
            Verdict::Forbidden(_)
        ));
        assert_eq!(
            g.check(Some(&good), Some("https://app.example"), host),
            Verdict::Allowed
        );
    }

    #[test]
    fn a_token_file_is_made_private_once_and_a_readable_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("serve/token");
        let first = make_token(&file).unwrap();
        assert_eq!(first.len(), 64);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(
            make_token(&file).is_err(),
            "an existing token file was overwritten"
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = token(&file).unwrap_err().to_string();
        assert!(err.contains("other users"), "{err}");
    }
}
