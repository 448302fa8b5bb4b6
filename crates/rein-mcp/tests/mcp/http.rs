//! Remote servers over streamable HTTP: the reference server in its
//! `streamableHttp` mode, a Python SDK server behind the SDK's own OAuth
//! authorization server (short-lived tokens, refresh tokens), and servers
//! that are not there or do not speak MCP. All on 127.0.0.1.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rein_mcp::{LoginUi, McpServerConfig, McpTransport, ServerStatus, TokenFile};
use rein_test_support::ports::{ClosedPort, Handover};
use serde_json::json;

use super::{context, everything, launch, python_sdk};

/// `python3 -m http.server`'s handler, serving the working folder on the
/// listening socket found as descriptor 3.
const SERVE_FILES_ON_FD_3: &str = "\
import http.server, socket
server = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler, bind_and_activate=False)
server.socket = socket.socket(fileno=3)
server.serve_forever()
";

/// A child process killed when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wait (up to a minute on a loaded machine) until `port` accepts; `Err`
/// when the server exited first.
fn wait_for(port: u16, server: &mut Server) -> Result<(), String> {
    for _ in 0..600 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        if let Ok(Some(status)) = server.0.try_wait() {
            return Err(format!("the test server exited early: {status}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the test server did not listen on {port}");
}

/// The reference server over streamable HTTP and its port. It binds the
/// port it is told itself (it cannot take a socket), so a port picked here
/// may be taken by another process before it binds: a start that fails is
/// retried on a new port.
fn reference_server_over_http(bin: &Path) -> (Server, u16) {
    let mut last = String::new();
    for _ in 0..5 {
        // Picked here, let go at once for the server to bind.
        let port = ClosedPort::new().port();
        let mut server = Server(
            Command::new(bin)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        match wait_for(port, &mut server) {
            Ok(()) => return (server, port),
            Err(e) => last = e,
        }
    }
    panic!("{last}, five times");
}

fn remote(name: &str, url: &str) -> McpServerConfig {
    let mut c = McpServerConfig::http(name, url);
    c.startup_timeout_sec = 60;
    c
}

/// The reference server over streamable HTTP: the handshake (with its
/// session id), the tool list and a call, the same as over stdio.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_works_over_streamable_http() {
    let Some(bin) = everything() else { return };
    let (_server, port) = reference_server_over_http(&bin);
    let ws = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let hub = super::started(vec![remote("web", &url)], ws.path()).await;
    let report = &hub.reports()[0];
    assert_eq!(report.status, ServerStatus::Ready, "{report:?}");
    let tools = hub.tools();
    let echo = tools
        .iter()
        .find(|t| t.spec().name == "mcp__web__echo")
        .unwrap_or_else(|| panic!("no echo among {:?}", report.tools));
    let out = echo
        .call(json!({"message": "over http"}), context(ws.path()))
        .await
        .unwrap();
    assert!(out.content.contains("over http"), "{}", out.content);
}

/// Remote servers that cannot be used are one clear line each, and the
/// others start: nothing listening, a web server that does not speak MCP,
/// a token variable that is not set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_servers_that_cannot_be_used_are_clear_errors() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("index.html"), "<html>hello</html>").unwrap();
    // Python's own file server, on a socket opened here.
    let socket = Handover::new();
    let web_port = socket.port();
    let mut cmd = Command::new("python3");
    cmd.args(["-c", SERVE_FILES_ON_FD_3])
        .current_dir(ws.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    socket.give_to(&mut cmd);
    let _web = Server(cmd.spawn().unwrap());
    let nobody = ClosedPort::new();
    let mut token = remote("token", &format!("http://127.0.0.1:{web_port}/"));
    if let McpTransport::Http {
        bearer_token_env_var,
        ..
    } = &mut token.transport
    {
        *bearer_token_env_var = Some("REIN_TEST_TOKEN_THAT_IS_NOT_SET".into());
    }
    let configs = vec![
        remote("nobody", &format!("http://127.0.0.1:{}/mcp", nobody.port())),
        remote("html", &format!("http://127.0.0.1:{web_port}/")),
        token,
    ];
    let hub = super::started(configs, ws.path()).await;
    let reports = hub.reports();
    for r in &reports {
        assert_eq!(r.status, ServerStatus::Failed, "{r:?}");
        let error = r.error.as_deref().unwrap();
        assert!(!error.contains('\n'), "one line: {error}");
        assert!(
            error.starts_with(&format!("MCP server `{}`", r.server)),
            "{error}"
        );
    }
    let error = |name: &str| {
        reports
            .iter()
            .find(|r| r.server == name)
            .and_then(|r| r.error.clone())
            .unwrap()
    };
    assert!(
        error("nobody").contains("handshake failed: cannot reach http://127.0.0.1:"),
        "{}",
        error("nobody")
    );
    assert!(
        error("html").contains("the server answered HTTP 501"),
        "{}",
        error("html")
    );
    assert!(
        error("token").contains("`REIN_TEST_TOKEN_THAT_IS_NOT_SET`, which is not set"),
        "{}",
        error("token")
    );
}

/// The OAuth test server (`servers/oauth_server.py`), started on a free
/// port; its grants are written to `log`.
fn oauth_server(log: &Path, extra: &[&str]) -> Option<(Server, String)> {
    let sdk = python_sdk()?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/oauth_server.py");
    let socket = Handover::new();
    let port = socket.port();
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .arg(port.to_string())
        .arg(log)
        .args(extra)
        .arg("--handed-socket")
        .env("PYTHONPATH", sdk)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    socket.give_to(&mut cmd);
    let mut server = Server(cmd.spawn().unwrap());
    wait_for(port, &mut server).unwrap_or_else(|e| panic!("{e}"));
    Some((server, format!("http://127.0.0.1:{port}/mcp")))
}

/// A browser that follows the authorization server's redirects back to
/// rein's callback, as a user's would after they approve.
struct Browser {
    visits: Vec<tokio::task::JoinHandle<()>>,
}

impl LoginUi for Browser {
    fn open(&mut self, url: &str) {
        let url = url.to_string();
        self.visits.push(tokio::spawn(async move {
            let _ = reqwest::get(url).await;
        }));
    }
}

/// `login` gets tokens by the authorization code flow (discovery, dynamic
/// registration, PKCE) and keeps them owner-only; a server that needs them
/// says to log in until then; with them its tools work, and an access token
/// that expired is refreshed (by a call on an open connection and by a new
/// connection) with no new login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_login_gets_tokens_that_are_used_and_refreshed() {
    let ws = tempfile::tempdir().unwrap();
    let log = ws.path().join("grants.log");
    let Some((_server, url)) = oauth_server(&log, &["--token-secs", "2"]) else {
        return;
    };
    let auth = ws.path().join("auth");
    let mut launch = launch(ws.path());
    launch.auth_dir = Some(auth.clone());
    let config = remote("secure", &url);

    // Before login: the server answers 401, and the error says what to do.
    let hub = rein_mcp::McpHub::start(vec![config.clone()], launch.clone());
    hub.settled().await;
    let report = &hub.reports()[0];
    assert_eq!(report.status, ServerStatus::Failed, "{report:?}");
    assert!(
        report
            .error
            .as_deref()
            .unwrap()
            .contains("needs authorization: run `rein mcp login secure`"),
        "{report:?}"
    );

    let tokens = TokenFile::new(&auth, &url);
    let mut browser = Browser { visits: Vec::new() };
    let outcome = rein_mcp::login(&config, tokens.clone(), &mut browser)
        .await
        .unwrap();
    assert_eq!(outcome, rein_mcp::LoginOutcome::SignedIn);
    assert_eq!(browser.visits.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(tokens.path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let hub = rein_mcp::McpHub::start(vec![config.clone()], launch.clone());
    hub.settled().await;
    let report = &hub.reports()[0];
    assert_eq!(report.status, ServerStatus::Ready, "{report:?}");
    let call = |hub: std::sync::Arc<rein_mcp::McpHub>| {
        let ctx = context(ws.path());
        async move {
            let tools = hub.tools();
            let tool = tools
                .iter()
                .find(|t| t.spec().name == "mcp__secure__secret_word")
                .unwrap();
            tool.call(json!({}), ctx).await.unwrap().content
        }
    };
    assert!(call(hub.clone()).await.contains("swordfish"));

    // The access token lives 2 s: past it, the same connection refreshes.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(call(hub.clone()).await.contains("swordfish"));
    let grants = std::fs::read_to_string(&log).unwrap();
    assert!(grants.starts_with("code\nrefresh\n"), "{grants}");

    // And a new connection, later, refreshes from the stored tokens.
    drop(hub);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let hub = rein_mcp::McpHub::start(vec![config], launch);
    hub.settled().await;
    assert_eq!(
        hub.reports()[0].status,
        ServerStatus::Ready,
        "{:?}",
        hub.reports()
    );
    assert!(call(hub).await.contains("swordfish"));
    let grants = std::fs::read_to_string(&log).unwrap();
    assert_eq!(grants.matches("code").count(), 1, "{grants}");
    assert!(grants.matches("refresh").count() >= 2, "{grants}");
}

/// An authorization server that refuses: login fails with its words, in
/// one line, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authorization_server_that_refuses_is_one_clear_error() {
    let ws = tempfile::tempdir().unwrap();
    let log = ws.path().join("grants.log");
    let Some((_server, url)) = oauth_server(&log, &["--refuse"]) else {
        return;
    };
    let tokens = TokenFile::new(&ws.path().join("auth"), &url);
    let mut browser = Browser { visits: Vec::new() };
    let err = rein_mcp::login(&remote("secure", &url), tokens.clone(), &mut browser)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("refused: access_denied"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    assert!(!tokens.path().exists());
}

/// A server that keeps no sessions (no `Mcp-Session-Id`; each request
/// stands alone): the handshake, the list and a call work the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_sessions_works() {
    let ws = tempfile::tempdir().unwrap();
    let log = ws.path().join("grants.log");
    let Some((_server, url)) = oauth_server(&log, &["--open", "--stateless"]) else {
        return;
    };
    // Nothing to sign in to: login says so and stores nothing.
    let tokens = TokenFile::new(&ws.path().join("auth"), &url);
    let mut browser = Browser { visits: Vec::new() };
    let outcome = rein_mcp::login(&remote("plain", &url), tokens.clone(), &mut browser)
        .await
        .unwrap();
    assert_eq!(outcome, rein_mcp::LoginOutcome::NotNeeded);
    assert!(browser.visits.is_empty() && !tokens.path().exists());
    let hub = super::started(vec![remote("plain", &url)], ws.path()).await;
    assert_eq!(
        hub.reports()[0].status,
        ServerStatus::Ready,
        "{:?}",
        hub.reports()
    );
    let tools = hub.tools();
    let tool = tools
        .iter()
        .find(|t| t.spec().name == "mcp__plain__secret_word")
        .unwrap();
    let out = tool.call(json!({}), context(ws.path())).await.unwrap();
    assert!(out.content.contains("swordfish"), "{}", out.content);
    assert!(!log.exists(), "no OAuth grant was needed");
}

/// A server that asks its question on the standalone GET stream (tied to
/// no request of rein's) and answers that GET late, as a loaded server
/// does: rein opens the stream before its requests go, so the question
/// arrives (and is answered: declined, by default) and the call completes,
/// plain and through OAuth. Were a request sent first, the server would
/// send its question into nothing and the call would time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_on_a_slow_standalone_stream_reaches_rein_plain_and_with_oauth() {
    let ws = tempfile::tempdir().unwrap();
    for secured in [false, true] {
        let log = ws.path().join(format!("grants-{secured}.log"));
        let mut args = vec!["--slow-get", "1", "--token-secs", "300"];
        if !secured {
            args.push("--open");
        }
        let Some((_server, url)) = oauth_server(&log, &args) else {
            return;
        };
        let auth = ws.path().join(format!("auth-{secured}"));
        let mut launch = launch(ws.path());
        launch.auth_dir = Some(auth.clone());
        let config = remote("aside", &url);
        let mut browser = Browser { visits: Vec::new() };
        let outcome = rein_mcp::login(&config, TokenFile::new(&auth, &url), &mut browser)
            .await
            .unwrap();
        let expected = if secured {
            rein_mcp::LoginOutcome::SignedIn
        } else {
            rein_mcp::LoginOutcome::NotNeeded
        };
        assert_eq!(outcome, expected);
        let hub = rein_mcp::McpHub::start(vec![config], launch);
        hub.settled().await;
        let report = &hub.reports()[0];
        assert_eq!(report.status, ServerStatus::Ready, "{report:?}");
        let tools = hub.tools();
        let tool = tools
            .iter()
            .find(|t| t.spec().name == "mcp__aside__ask_aside")
            .unwrap_or_else(|| panic!("no ask_aside among {:?}", report.tools));
        let out = tool.call(json!({}), context(ws.path())).await;
        let text = match &out {
            Ok(out) => out.content.clone(),
            Err(e) => e.to_string(),
        };
        assert!(
            text.contains("the user's answer: decline"),
            "secured: {secured}: {text}"
        );
    }
}
