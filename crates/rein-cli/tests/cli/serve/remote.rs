//! `rein serve` beyond loopback: over TLS with `--tls-cert` (a self-signed
//! certificate made here with openssl), and the refusal of a non-loopback
//! address without TLS unless `--allow-insecure-remote`. The client is curl,
//! a TLS stack nobody here wrote.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{Served, write_script};
use crate::cli::support::*;

/// A self-signed certificate for 127.0.0.1 and its key, in `dir`.
fn self_signed(dir: &Path) -> (String, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        cert.to_str().unwrap().to_string(),
        key.to_str().unwrap().to_string(),
    )
}

/// curl's status line for `url` (`000` when no HTTP answer came) and body.
fn curl(args: &[&str], url: &str) -> (String, String) {
    let out = Command::new("curl")
        .args(["-s", "-m", "20", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

#[test]
fn serve_over_tls_answers_with_its_certificate_and_only_over_tls() {
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(dir.path());
    let script = write_script(&env);
    let s = Served::start(
        &env,
        &["--script", &script, "--tls-cert", &cert, "--tls-key", &key],
    );
    let https = format!("https://{}", s.addr);
    // Trusting the certificate made here: the routes answer, token and all.
    let (code, body) = curl(&["--cacert", &cert], &format!("{https}/health"));
    assert_eq!(code, "200", "{body}");
    let auth = format!("Authorization: Bearer {}", s.token);
    let (code, body) = curl(
        &["--cacert", &cert, "-H", &auth],
        &format!("{https}/sessions"),
    );
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("sessions"), "{body}");
    // Without trusting it, curl refuses: it is that certificate being served.
    let (code, _) = curl(&[], &format!("{https}/health"));
    assert_eq!(code, "000");
    // Plain HTTP on the same port gets no HTTP answer.
    let (code, body) = curl(&[], &format!("http://{}/health", s.addr));
    assert_eq!(code, "000", "{body}");
}

#[test]
fn serve_refuses_a_non_loopback_address_without_tls_unless_allowed_insecure() {
    let env = Env::new();
    let o = env
        .command()
        .args(["serve", "--listen", "0.0.0.0:0", "--root"])
        .arg(env.ws.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("reachable from other machines") && err.contains("--allow-insecure-remote"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // With the flag it listens (on every address: loopback reaches it).
    let mut cmd = env.command();
    cmd.args([
        "serve",
        "--listen",
        "0.0.0.0:0",
        "--allow-insecure-remote",
        "--root",
    ])
    .arg(env.ws.path())
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let addr = line
        .split("listening on http://")
        .nth(1)
        .unwrap_or_else(|| panic!("not listening: {line}"))
        .split_whitespace()
        .next()
        .unwrap();
    assert!(addr.starts_with("0.0.0.0:"), "{line}");
}
