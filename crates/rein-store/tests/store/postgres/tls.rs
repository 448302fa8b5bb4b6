//! PostgreSQL over TLS: a second throwaway cluster listening on
//! 127.0.0.1 with `ssl=on`, a certificate signed by an authority made here
//! with openssl, and `pg_hba.conf` refusing plain TCP connections, so a
//! store that works there spoke TLS.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rein_core::SessionStore;
use rein_store::PgStore;

use super::server::{self, Listen};

/// The TLS cluster: its port and the folder holding the authorities.
struct TlsServer {
    port: u16,
    dir: PathBuf,
}

impl TlsServer {
    /// The authority that signed the server's certificate.
    fn ca(&self) -> String {
        self.dir.join("ca.pem").display().to_string()
    }

    /// An authority that signed nothing the server holds.
    fn other_ca(&self) -> String {
        self.dir.join("other-ca.pem").display().to_string()
    }

    /// A key=value connection string over TCP with `extra` pairs.
    fn url(&self, extra: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=rein dbname=postgres {extra}",
            self.port
        )
    }
}

static TLS_SERVER: OnceLock<Result<TlsServer, String>> = OnceLock::new();

/// The TLS cluster, started once; `None` (a recorded skip) without server
/// binaries.
fn tls_server() -> Option<&'static TlsServer> {
    let Some(bin) = server::find_bin_dir() else {
        rein_test_support::skip(
            rein_test_support::Component::Postgres,
            "no PostgreSQL server binaries (initdb, postgres) found",
        );
        return None;
    };
    let started = TLS_SERVER.get_or_init(|| start(&bin));
    Some(
        started
            .as_ref()
            .unwrap_or_else(|e| panic!("PostgreSQL with TLS: {e}")),
    )
}

/// Start the cluster on a free port. The port is picked by binding port 0
/// and released before the server binds it, so another process may take
/// it in between: a start that fails for that reason is retried on a new
/// port.
fn start(bin: &Path) -> Result<TlsServer, String> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("picking a port: {e}"))?
            .port();
        let mut certs = PathBuf::new();
        let started = server::start_cluster(bin, server::Durability::Fast, |dir| {
            make_certificates(dir)?;
            certs = dir.to_path_buf();
            Ok(Listen::Tls {
                port,
                cert: dir.join("server.pem").display().to_string(),
                key: dir.join("server.key").display().to_string(),
            })
        });
        match started {
            Ok(_) => return Ok(TlsServer { port, dir: certs }),
            Err(e) if e.contains("could not bind") || e.contains("TCP/IP") => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(format!("no free port after 5 tries: {last}"))
}

/// An authority, a server certificate it signs for `localhost` and
/// 127.0.0.1, and a second authority, as PEM files in `dir`.
fn make_certificates(dir: &Path) -> Result<(), String> {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    for ca in ["ca", "other-ca"] {
        openssl(
            dir,
            &ec,
            &["req", "-x509", "-days", "2"],
            &[
                "-subj",
                &format!("/CN=rein test {ca}"),
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign",
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
            ],
        )?;
    }
    openssl(
        dir,
        &ec,
        &["req"],
        &[
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    )?;
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n\
         basicConstraints=CA:FALSE\n\
         extendedKeyUsage=serverAuth\n",
    )
    .map_err(|e| e.to_string())?;
    openssl(
        dir,
        &[],
        &["x509", "-req", "-days", "2"],
        &[
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    )?;
    // PostgreSQL refuses a key others may read.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o600),
    )
    .map_err(|e| e.to_string())
}

fn openssl(dir: &Path, key: &[&str], command: &[&str], rest: &[&str]) -> Result<(), String> {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(command)
        .args(key)
        .args(rest)
        .output()
        .map_err(|e| format!("running openssl: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "openssl {command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// Connecting must fail; the error as a string.
async fn refused(url: &str) -> String {
    match PgStore::connect(url).await {
        Ok(_) => panic!("{url} connected"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_store_reaches_a_tls_only_server_through_the_authority_named_in_sslrootcert() {
    let Some(server) = tls_server() else { return };
    let ca = server.ca();
    // Both forms, both names the certificate holds.
    for url in [
        server.url(&format!("sslmode=verify-full sslrootcert={ca}")),
        format!(
            "postgres://rein@localhost:{}/postgres?sslmode=require&sslrootcert={ca}",
            server.port
        ),
    ] {
        let store = PgStore::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let session = crate::fixtures::session(&store, "/tls", "over tls").await;
        let listed = store.list_sessions(Some("/tls"), 100).await.unwrap();
        assert!(listed.iter().any(|s| s.id == session.id), "{url}");
    }
    // The same server refuses a connection without TLS, so the store above
    // did encrypt.
    let plain = refused(&server.url("sslmode=disable")).await;
    assert!(plain.contains("no encryption"), "{plain}");
}

#[tokio::test]
async fn a_certificate_from_an_unknown_authority_is_refused_with_a_hint_in_one_line() {
    let Some(server) = tls_server() else { return };
    // `require` checks the certificate too (the system does not trust the
    // test authority), and so does `prefer` once the server offers TLS.
    for extra in [
        "sslmode=require".to_string(),
        "sslmode=prefer".to_string(),
        format!("sslmode=verify-ca sslrootcert={}", server.other_ca()),
    ] {
        let err = refused(&server.url(&extra)).await;
        assert!(
            err.contains("certificate") && err.contains("sslrootcert=PATH"),
            "{extra}: {err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }
}

#[tokio::test]
async fn an_sslrootcert_that_is_missing_or_holds_no_certificate_is_named_in_one_line() {
    let Some(server) = tls_server() else { return };
    let empty = server.dir.join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    for (path, why) in [
        ("/nonexistent/ca.pem".to_string(), "/nonexistent/ca.pem"),
        (empty.display().to_string(), "holds no certificate"),
    ] {
        let err = refused(&server.url(&format!("sslrootcert={path}"))).await;
        assert!(err.contains("sslrootcert") && err.contains(why), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
