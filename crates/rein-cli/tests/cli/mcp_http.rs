//! A remote MCP server behind OAuth, through the binary: `rein mcp add
//! --url`, a run before signing in (one note saying how), `rein mcp login`
//! with a browser that approves, a whole `rein exec --json` run calling the
//! server's tool, `rein mcp logout`. The server is built with the Python
//! SDK (its own authorization server), which `.ci/run` installs under
//! `~/.cache/rein/pymcp`; without it the test says so and passes. And a
//! client secret in a server's `oauth` table never shows in output.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::support::*;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python_sdk() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("HOME")?).join(".cache/rein/pymcp");
    if dir.join("mcp").is_dir() {
        Some(dir)
    } else {
        rein_test_support::skip(
            rein_test_support::Component::PythonMcpSdk,
            format!("not installed ({})", dir.display()),
        );
        None
    }
}

/// The OAuth test server of rein-mcp's tests, on a free port.
fn oauth_server(log: &std::path::Path) -> Option<(Server, String)> {
    let sdk = python_sdk()?;
    let script = repo_root().join("crates/rein-mcp/tests/servers/oauth_server.py");
    let socket = rein_test_support::ports::Handover::new();
    let port = socket.port();
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .arg(port.to_string())
        .arg(log)
        .arg("--handed-socket")
        .env("PYTHONPATH", sdk)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    socket.give_to(&mut cmd);
    let mut server = Server(cmd.spawn().unwrap());
    for _ in 0..600 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some((server, format!("http://127.0.0.1:{port}/mcp")));
        }
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("the OAuth test server exited: {status}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the OAuth test server did not listen");
}

/// A `$BROWSER` that visits the sign-in page and follows its redirects
/// back to rein, as a user who approves would.
fn browser(env: &Env) -> String {
    let path = env.home.path().join("browser.sh");
    std::fs::write(
        &path,
        "#!/bin/sh\nexec python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1]).read()' \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn exec_calling_secret_word(env: &Env) -> std::process::Output {
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__web__secret_word", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ])
}

#[test]
fn a_remote_server_is_added_signed_in_to_and_used_in_a_run() {
    let env = Env::new();
    let log = env.home.path().join("grants.log");
    let Some((_server, url)) = oauth_server(&log) else {
        return;
    };
    let o = env.rein(&["mcp", "add", "web", "--url", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));

    // Not signed in: the run goes on, and one note says what to do.
    let o = exec_calling_secret_word(&env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("MCP server `web`: needs authorization: run `rein mcp login web`"),
        "{err}"
    );

    let o = env
        .command()
        .args(["mcp", "login", "web"])
        .env("BROWSER", browser(&env))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("to sign in to `web`, open this page:"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).starts_with("signed in to `web`"),
        "{}",
        stdout(&o)
    );
    let tokens: Vec<_> = std::fs::read_dir(env.home.path().join("mcp-auth"))
        .unwrap()
        .collect();
    assert_eq!(tokens.len(), 1);

    let o = exec_calling_secret_word(&env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(finished["is_error"], false, "{finished}");
    assert!(
        finished["output_preview"]
            .as_str()
            .unwrap()
            .contains("swordfish"),
        "{finished}"
    );

    let o = env.rein(&["mcp", "get", "web", "--json"]);
    let got: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(got["transport"]["url"], url.as_str());
    assert_eq!(got["status"]["status"], "ready", "{got}");

    let o = env.rein(&["mcp", "logout", "web"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_dir(env.home.path().join("mcp-auth"))
            .unwrap()
            .count(),
        0
    );
    let o = exec_calling_secret_word(&env);
    assert!(stderr(&o).contains("needs authorization"), "{}", stderr(&o));
}

/// Bad input to the remote-server commands: one clear line each.
#[test]
fn remote_server_commands_refuse_bad_input_in_one_line() {
    let env = Env::new();
    assert_clean_failure(
        &env.rein(&["mcp", "add", "x", "--url", "ftp://files.example/"]),
        2,
        "not http(s)",
    );
    assert_clean_failure(
        &env.rein(&[
            "mcp",
            "add",
            "x",
            "--url",
            "https://h.example/",
            "--header",
            "NOEQUALS",
        ]),
        2,
        "--header takes KEY=VALUE",
    );
    let o = env.rein(&["mcp", "add", "local", "--", "some-server"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_clean_failure(
        &env.rein(&["mcp", "login", "local"]),
        2,
        "`local` is a local server",
    );
    assert_clean_failure(
        &env.rein(&["mcp", "login", "nothing"]),
        2,
        "no MCP server named `nothing`",
    );
    // Nothing listens there: login fails saying where it could not go.
    let closed = rein_test_support::ports::ClosedPort::new();
    let url = format!("http://127.0.0.1:{}/mcp", closed.port());
    let o = env.rein(&["mcp", "add", "gone", "--url", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = env.rein(&["mcp", "login", "gone", "--no-browser"]);
    assert_clean_failure(&o, 1, "signing in to `gone` failed");
}

/// A client secret in `[mcp_servers.NAME.oauth]` is used, never shown:
/// not by `rein mcp get` or `list`, nor in a sign-in that fails.
#[test]
fn an_oauth_client_secret_never_appears_in_output() {
    let env = Env::new();
    let secret = "s3cret-do-not-print-7f2a";
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.m2m]\nurl = \"http://127.0.0.1:1/mcp\"\nstartup_timeout_sec = 5\n\n\
             [mcp_servers.m2m.oauth]\nclient_id = \"rein-ci\"\nclient_secret = {secret:?}\n\
             grant = \"client_credentials\"\n"
        ),
    )
    .unwrap();
    for args in [
        &["mcp", "get", "m2m"][..],
        &["mcp", "get", "m2m", "--json"],
        &["mcp", "list"],
        &["mcp", "login", "m2m"],
    ] {
        let o = env.rein(args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!all.contains(secret), "{args:?}: {all}");
        assert!(!all.contains("panicked"), "{args:?}: {all}");
    }
    let o = env.rein(&["mcp", "login", "m2m"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("signing in to `m2m` failed"),
        "{}",
        stderr(&o)
    );
    let logs = env.home.path().join("logs");
    if logs.exists() {
        for entry in walk(&logs) {
            let text = std::fs::read_to_string(&entry).unwrap_or_default();
            assert!(!text.contains(secret), "{}", entry.display());
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
