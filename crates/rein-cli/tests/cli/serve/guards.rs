//! What `rein serve` refuses: requests without the right token, web pages,
//! listening beyond loopback without TLS, workspaces outside the root, bad
//! bodies, clients that never finish their headers, and a store password on
//! the process list.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{Served, write_script};
use crate::cli::support::*;

#[test]
fn serve_refuses_no_token_a_wrong_one_and_web_pages() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(
        &env,
        &["--script", &script, "--allow-origin", "https://app.example"],
    );
    let good = format!("Bearer {}", s.token);
    let (status, _, body) = s.raw("GET", "/sessions", &[], None);
    assert_eq!(status, 401, "{body}");
    let (status, _, _) = s.raw(
        "GET",
        "/sessions",
        &[("Authorization", "Bearer nope")],
        None,
    );
    assert_eq!(status, 401);
    // With the token, a foreign page or a DNS-rebound name is still refused.
    let evil = [
        ("Authorization", good.as_str()),
        ("Origin", "https://evil.example"),
    ];
    let (status, _, body) = s.raw("POST", "/sessions", &evil, Some(json!({})));
    assert_eq!(status, 403, "{body}");
    let rebound = [
        ("Authorization", good.as_str()),
        ("Host", "evil.example:80"),
    ];
    let (status, _, _) = s.raw("GET", "/sessions", &rebound, None);
    assert_eq!(status, 403);
    // A preflight from a foreign page learns nothing; an allowed one may go.
    let (status, headers, _) = s.raw(
        "OPTIONS",
        "/sessions",
        &[("Origin", "https://evil.example")],
        None,
    );
    assert_eq!(status, 403);
    assert!(
        !headers
            .iter()
            .any(|(k, _)| k == "access-control-allow-origin")
    );
    let app = [
        ("Authorization", good.as_str()),
        ("Origin", "https://app.example"),
    ];
    let (status, headers, _) = s.raw("GET", "/sessions", &app, None);
    assert_eq!(status, 200);
    assert!(headers.contains(&(
        "access-control-allow-origin".into(),
        "https://app.example".into()
    )));
    // Nothing was created by the refused requests.
    let (_, list) = s.call("GET", "/sessions", None);
    assert_eq!(list["sessions"], json!([]));
    // The token file is private.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.home.path().join("serve/token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn serve_will_not_listen_beyond_loopback_without_tls() {
    let env = Env::new();
    let o = env.rein(&["serve", "--listen", "0.0.0.0:0", "--provider", "replay"]);
    assert_clean_failure(&o, 2, "reachable from other machines");
}

#[test]
fn serve_workspaces_cannot_leave_the_root_and_bad_bodies_are_one_line_errors() {
    let env = Env::new();
    let script = write_script(&env);
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), env.ws.path().join("escape")).unwrap();
    let s = Served::start(&env, &["--script", &script]);
    for name in ["..", "../x", "a/b", "/etc", "escape", ""] {
        let (status, body) = s.call("POST", "/sessions", Some(json!({"workspace": name})));
        assert_eq!(status, 400, "{name}: {body}");
        assert!(body["error"].is_string(), "{body}");
    }
    let (status, body) = s.call("POST", "/sessions", Some(json!({"mode": "bypass"})));
    assert_eq!(status, 400, "{body}");
    let (status, body) = s.call("POST", "/sessions", Some(json!({"unknown": 1})));
    assert_eq!(status, 400, "{body}");
    let (status, _, body) = s.raw(
        "POST",
        "/sessions",
        &[("Authorization", &format!("Bearer {}", s.token))],
        None,
    );
    assert_eq!(status, 201, "an empty body is {{}}: {body}");
    let (status, body) = s.call("GET", "/sessions/doesnotexist", None);
    assert_eq!(status, 404, "{body}");
    let (status, body) = s.call(
        "POST",
        "/sessions/doesnotexist/prompt",
        Some(json!({"text": "x"})),
    );
    assert_eq!(status, 404, "{body}");
    // A session of another folder of the same store is not this server's.
    let elsewhere = env.replay_json(&script, &["hi"]);
    let other = session_id(&json_lines(&elsewhere));
    let (status, _) = s.call("GET", &format!("/sessions/{other}"), None);
    assert_eq!(status, 404);
    // Prompts are text: images are refused, never dropped unseen.
    let id = super::create(&s, json!({}));
    let image = json!({"media_type": "image/png", "data": "iVBORw0KGgo="});
    let with_images = json!({"text": "what is this?", "images": [image]});
    let (status, body) = s.call("POST", &format!("/sessions/{id}/prompt"), Some(with_images));
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("images"), "{body}");
}

#[test]
fn serve_drops_a_client_that_never_finishes_its_headers() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let mut slow = TcpStream::connect(&s.addr).unwrap();
    slow.write_all(b"GET /sessions HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let started = Instant::now();
    // Others are served while it hangs...
    let (status, _) = s.call("GET", "/sessions", None);
    assert_eq!(status, 200);
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the connection was kept open"
    );
    // ... and after it was dropped.
    let (status, _) = s.call("GET", "/sessions", None);
    assert_eq!(status, 200);
}

/// Start `rein serve --store URL` against `listener`, a "database" that
/// accepts and never answers; once rein has connected (its start-up is
/// over), its command line as the process list shows it, then its stderr.
fn serve_stalled_on_store(
    env: &Env,
    listener: &std::net::TcpListener,
    store: &str,
) -> (String, String) {
    let mut child = env
        .command()
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(env.ws.path())
        .arg(store)
        .env_remove("PGPASSWORD")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let _held = loop {
        match listener.accept() {
            Ok((conn, _)) => break conn,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "rein never reached the store");
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "rein serve ended early"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    child.kill().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    child.wait().unwrap();
    (cmdline, stderr)
}

#[test]
fn serve_blanks_a_store_password_from_the_process_list_and_names_safer_ways() {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    for store in [
        format!("--store=postgres://rein:p@ss-hunter2@127.0.0.1:{port}/db"),
        format!("--store=postgres://rein@127.0.0.1:{port}/db?password=hunter2"),
    ] {
        let (cmdline, stderr) = serve_stalled_on_store(&env, &listener, &store);
        assert!(!cmdline.contains("hunter2"), "{cmdline}");
        assert!(!cmdline.contains("ss-"), "{cmdline}");
        assert!(
            cmdline.contains(&format!("@127.0.0.1:{port}/db")),
            "{cmdline}"
        );
        assert!(cmdline.contains("****"), "{cmdline}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
        let warnings = stderr.lines().filter(|l| l.contains("REIN_STORE")).count();
        assert_eq!(warnings, 1, "{stderr}");
        assert!(stderr.contains("PGPASSWORD"), "{stderr}");
    }
    // Without a password on the command line there is nothing to warn of.
    let store = format!("--store=postgres://rein@127.0.0.1:{port}/db");
    let (_, stderr) = serve_stalled_on_store(&env, &listener, &store);
    assert!(!stderr.contains("warning"), "{stderr}");
}
