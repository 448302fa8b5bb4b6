//! The network as a user meets it. `web_fetch` reads hosts on the `web`
//! list (in plan mode too) and refuses others headless; `web_search` asks
//! the backend of the user's config, never a repository's. `network` as a
//! list of hosts: commands reach the
//! listed hosts through rein's proxy (curl over CONNECT and plain HTTP,
//! `pip download` from a package index), and nothing else — not an
//! unlisted port, not an IP literal, not a direct socket; when the proxy
//! cannot start, commands have no network and say why. The servers run
//! on the host's loopback, which a sandboxed command cannot reach but
//! through the proxy.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

use rein_test_support::{Component, skip};

use super::sandbox::{Dirs, bash_output, dirs, run_one};

/// A server on the host's loopback answering GET requests for `files`
/// (path → body), 404 otherwise; its port.
fn serve(files: HashMap<String, Vec<u8>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let files = Arc::new(files);
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let files = files.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                let (status, body) = match files.get(&path) {
                    Some(b) => ("200 OK", b.clone()),
                    None => ("404 Not Found", b"no such file\n".to_vec()),
                };
                let kind = if path.ends_with('/') {
                    "text/html"
                } else {
                    "application/octet-stream"
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(&body);
            });
        }
    });
    port
}

fn text_server(body: &str) -> u16 {
    serve(HashMap::from([(
        "/hello".to_string(),
        body.as_bytes().to_vec(),
    )]))
}

fn needs_bubblewrap_and(tools: &[&str]) -> bool {
    if !rein_tools::sandbox::bubblewrap_usable() {
        skip(Component::Bubblewrap, "a list of hosts needs bubblewrap");
        return false;
    }
    for tool in tools {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "{tool} is not installed (.ci/run installs it)");
    }
    true
}

fn config(d: &Dirs, toml: &str) {
    std::fs::write(d.home.join("config.toml"), toml).unwrap();
}

/// Run `command` (its output written to a file in the workspace, so none
/// of it is cut) in auto mode; the file's text, the tool's notes and the
/// notices of the run.
fn run(d: &Dirs, command: &str) -> (String, String, Vec<String>) {
    let events = run_one(d, "auto", &format!("({command}) > out.txt 2>&1"));
    let out = bash_output(&events);
    let text = std::fs::read_to_string(d.ws.join("out.txt")).unwrap_or_default();
    let notices = events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["message"].as_str().map(String::from))
        .collect();
    (text, out, notices)
}

#[test]
fn commands_reach_listed_hosts_through_the_proxy_and_nothing_else() {
    if !needs_bubblewrap_and(&["curl"]) {
        return;
    }
    let allowed = text_server("ALLOWED-BODY\n");
    let other = text_server("OTHER-BODY\n");
    let d = dirs();
    config(
        &d,
        &format!("[permissions]\nnetwork = [\"localhost:{allowed}\"]\n"),
    );
    // NO_PROXY names localhost (servers a command starts itself, inside the
    // sandbox); `--noproxy ''` sends these requests to the proxy anyway.
    let (text, notes, notices) = run(
        &d,
        &format!(
            "curl -sS --noproxy '' http://localhost:{allowed}/hello; \
             curl -sS --noproxy '' http://localhost:{other}/hello; echo rc=$?; \
             curl -sS --noproxy '' -p http://localhost:{allowed}/hello; echo rc=$?; \
             curl -sS --noproxy '' http://127.0.0.1:{allowed}/hello; echo rc=$?; \
             curl -sS --noproxy '' -p http://localhost:{other}/hello; echo rc=$?; \
             curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:{allowed}/hello; echo rc=$?; \
             python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {allowed}), 5)' \
               2>&1 | tail -1"
        ),
    );
    eprintln!("{text}\n---\n{notes}");
    // Plain HTTP and a CONNECT tunnel (-p) to the listed host both work.
    assert_eq!(text.matches("ALLOWED-BODY").count(), 2, "{text}");
    assert!(!text.contains("OTHER-BODY"), "{text}");
    // Another port of the same name and the IP literal are refused by the
    // proxy, with a line saying how to allow them.
    let blocked_port = format!("rein: network: blocked localhost:{other}: add it to `network`");
    let blocked_ip = format!("rein: network: blocked 127.0.0.1:{allowed}: add it to `network`");
    assert!(text.contains(&blocked_port), "{text}");
    assert!(text.contains(&blocked_ip), "{text}");
    // A direct connection has nowhere to go: the sandbox's own loopback.
    assert!(
        text.contains("Couldn't connect") || text.contains("Failed to connect"),
        "{text}"
    );
    assert!(text.contains("ConnectionRefusedError"), "{text}");
    // The tool's result ends with the refusals, once each.
    assert_eq!(notes.matches(&blocked_port).count(), 1, "{notes}");
    assert_eq!(notes.matches(&blocked_ip).count(), 1, "{notes}");
    // And each is a notice the app shows, whatever the output's length.
    assert!(
        notices.iter().any(|n| n.starts_with(&blocked_port)),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|n| n.starts_with(&blocked_ip)),
        "{notices:?}"
    );
}

#[test]
fn pip_downloads_from_a_listed_package_index_through_the_proxy() {
    if !needs_bubblewrap_and(&["python3"]) {
        return;
    }
    let d = dirs();
    // A minimal wheel, built by Python's own zipfile.
    let wheel = d.home.join("tinypkg-1.0-py3-none-any.whl");
    let made = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('tinypkg/__init__.py', '')\n\
             z.writestr('tinypkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')\n\
             z.writestr('tinypkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr('tinypkg-1.0.dist-info/RECORD', '')\n\
             z.close()\n",
        )
        .arg(&wheel)
        .status()
        .unwrap();
    assert!(made.success());
    let name = "tinypkg-1.0-py3-none-any.whl";
    let index = format!("<html><body><a href=\"/files/{name}\">{name}</a></body></html>");
    let port = serve(HashMap::from([
        ("/simple/tinypkg/".to_string(), index.into_bytes()),
        (format!("/files/{name}"), std::fs::read(&wheel).unwrap()),
    ]));
    config(
        &d,
        &format!("[permissions]\nnetwork = [\"localhost:{port}\"]\n"),
    );
    let (text, notes, _) = run(
        &d,
        &format!(
            "NO_PROXY= no_proxy= python3 -m pip download --no-deps --no-cache-dir \
             --disable-pip-version-check --index-url http://localhost:{port}/simple/ \
             --trusted-host localhost -d dl tinypkg"
        ),
    );
    eprintln!("{text}\n---\n{notes}");
    assert!(d.ws.join("dl").join(name).is_file(), "{text}");
}

/// `@python`, `@node` and `@rust` are the hosts the user's pip, npm and
/// cargo are set up to use (here through `PIP_CONFIG_FILE`,
/// `NPM_CONFIG_USERCONFIG` and `CARGO_HOME`), asked outside the
/// workspace: the project's own `.npmrc`, `pip.conf` and
/// `.cargo/config.toml` point elsewhere and add nothing.
#[test]
fn ecosystem_presets_are_the_users_tool_settings_and_never_the_projects() {
    if !needs_bubblewrap_and(&["curl", "npm", "python3"]) {
        return;
    }
    let pip = text_server("PIP-INDEX\n");
    let npm = text_server("NPM-REGISTRY\n");
    let cargo = text_server("CARGO-INDEX\n");
    let project = text_server("PROJECT-CHOICE\n");
    let d = dirs();
    let home = &d.home;
    std::fs::write(
        home.join("pip.conf"),
        format!("[global]\nindex-url = http://localhost:{pip}/simple/\n"),
    )
    .unwrap();
    std::fs::write(
        home.join("npmrc"),
        format!("registry=http://localhost:{npm}/\n"),
    )
    .unwrap();
    std::fs::create_dir_all(home.join("cargo")).unwrap();
    std::fs::write(
        home.join("cargo/config.toml"),
        format!("[registries.corp]\nindex = \"sparse+http://localhost:{cargo}/index/\"\n"),
    )
    .unwrap();
    // The project's settings, each naming its own host.
    let elsewhere = format!("http://localhost:{project}/");
    std::fs::write(d.ws.join(".npmrc"), format!("registry={elsewhere}\n")).unwrap();
    std::fs::write(
        d.ws.join("pip.conf"),
        format!("[global]\nindex-url = {elsewhere}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(d.ws.join(".cargo")).unwrap();
    std::fs::write(
        d.ws.join(".cargo/config.toml"),
        format!("[registries.p]\nindex = \"{elsewhere}\"\n"),
    )
    .unwrap();
    config(
        &d,
        "[permissions]\nnetwork = [\"@python\", \"@node\", \"@rust\"]\n",
    );
    let command = format!(
        "(for port in {pip} {npm} {cargo} {project}; do \
           curl -sS --noproxy '' http://localhost:$port/hello; done) > out.txt 2>&1"
    );
    let script = d.home.join("script.json");
    let turns = serde_json::json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "done"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", home)
        .env("PIP_CONFIG_FILE", home.join("pip.conf"))
        .env("NPM_CONFIG_USERCONFIG", home.join("npmrc"))
        .env("CARGO_HOME", home.join("cargo"))
        .env_remove("REIN_PROVIDER")
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(["--mode", "auto", "go"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let text = std::fs::read_to_string(d.ws.join("out.txt")).unwrap_or_default();
    for body in ["PIP-INDEX", "NPM-REGISTRY", "CARGO-INDEX"] {
        assert!(text.contains(body), "{body}: {text}");
    }
    assert!(!text.contains("PROJECT-CHOICE"), "{text}");
    let blocked = format!("rein: network: blocked localhost:{project}: add it to `network`");
    assert!(text.contains(&blocked), "{text}");
}

/// A preset whose tool names nothing is one line saying how to name the
/// hosts instead.
#[test]
fn an_ecosystem_preset_that_finds_nothing_is_one_line() {
    let d = dirs();
    config(&d, "[permissions]\nnetwork = [\"@rust\"]\n");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env("CARGO_HOME", d.home.join("no-cargo-here"))
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args([
            "exec",
            "--provider",
            "replay",
            "--script",
            "/nonexistent",
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    // (A line before it may say the test's home folder was made private.)
    let err = err.trim_end().lines().last().unwrap_or_default();
    assert!(err.starts_with("rein: "), "{err}");
    assert!(
        err.contains("@rust: cargo names no package host on this machine"),
        "{err}"
    );
    assert!(err.contains("[permissions.presets] rust = [...]"), "{err}");
}

#[test]
fn when_the_proxy_cannot_start_commands_get_no_network_and_a_note() {
    if !needs_bubblewrap_and(&["curl"]) {
        return;
    }
    let allowed = text_server("ALLOWED-BODY\n");
    let d = dirs();
    config(
        &d,
        &format!("[permissions]\nnetwork = [\"localhost:{allowed}\"]\n"),
    );
    // The proxy's private folder is made under TMPDIR.
    let script = d.home.join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command":
                format!("curl -sS --noproxy '' http://localhost:{allowed}/hello > out.txt 2>&1")}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env("TMPDIR", d.home.join("no-such-folder"))
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(["--mode", "auto", "go"])
        .output()
        .unwrap();
    let events = super::support::json_lines(&o);
    let notes = bash_output(&events);
    let text = std::fs::read_to_string(d.ws.join("out.txt")).unwrap_or_default();
    assert!(!text.contains("ALLOWED-BODY"), "{text}");
    assert!(
        notes.contains("rein's proxy could not start") && notes.contains("no network at all"),
        "{notes}"
    );
}

#[test]
fn a_bad_host_pattern_is_one_clear_line_naming_the_file() {
    let d = dirs();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d.home, std::fs::Permissions::from_mode(0o700)).unwrap();
    config(&d, "[permissions]\nnetwork = [\"exa mple.org\"]\n");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--provider", "replay", "go"])
        .output()
        .unwrap();
    let err = super::support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("config.toml") && err.contains("exa mple.org"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Run `calls` (tool calls) through a replay model in `mode`; the events
/// (the exit code must be `code`).
fn run_calls(d: &Dirs, mode: &str, calls: serde_json::Value, code: i32) -> Vec<serde_json::Value> {
    let script = d.home.join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"turns": [{"tool_calls": calls}, {"text": "done"}]}).to_string(),
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(["--mode", mode, "go"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(code),
        "{}",
        super::support::stderr(&o)
    );
    super::support::json_lines(&o)
}

#[test]
fn web_fetch_reads_listed_hosts_in_plan_mode_too_and_headless_refuses_others() {
    let page = b"<html><body><h1>Hello docs</h1><script>bad()</script></body></html>".to_vec();
    let port = serve(HashMap::from([("/page.html".to_string(), page)]));
    let d = dirs();
    config(
        &d,
        &format!("[permissions]\nweb = [\"localhost:{port}\"]\n"),
    );
    for mode in ["default", "plan"] {
        let events = run_calls(
            &d,
            mode,
            serde_json::json!([
                {"name": "web_fetch", "arguments": {"url": format!("http://localhost:{port}/page.html")}},
                {"name": "web_fetch", "arguments": {"url": format!("http://vm.invalid:{port}/page.html")}}
            ]),
            // A call that needed an approval nobody could give.
            9,
        );
        let finished: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["type"] == "tool_finished")
            .collect();
        let listed = finished
            .iter()
            .find(|e| {
                e["output_preview"]
                    .as_str()
                    .unwrap_or("")
                    .contains("<web_page")
            })
            .unwrap_or_else(|| panic!("{mode}: no page: {events:?}"));
        let text = listed["output_preview"].as_str().unwrap();
        assert!(
            text.contains("# Hello docs") && !text.contains("bad()"),
            "{text}"
        );
        let stopped = events.iter().find(|e| e["type"] == "stopped").unwrap();
        let refused = stopped["refused"].as_array().unwrap();
        assert_eq!(refused.len(), 1, "{mode}: {refused:?}");
        assert!(
            refused[0]["why"]
                .as_str()
                .unwrap()
                .contains("vm.invalid is not on the `web` list"),
            "{refused:?}"
        );
    }
}

const SEARXNG_ANSWER: &str = r#"{"query": "tokio", "results": [
  {"url": "https://tokio.rs/", "title": "Tokio", "content": "An asynchronous runtime.", "engine": "bing"}
]}"#;

#[test]
fn web_search_asks_the_users_backend_and_a_projects_backend_is_ignored() {
    let port = serve(HashMap::from([(
        "/search?q=tokio+runtime&format=json".to_string(),
        SEARXNG_ANSWER.as_bytes().to_vec(),
    )]));
    let d = dirs();
    config(
        &d,
        &format!("[web_search]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:{port}\"\n"),
    );
    // A repository's own backend would receive every query.
    std::fs::create_dir_all(d.ws.join(".rein")).unwrap();
    std::fs::write(
        d.ws.join(".rein/config.toml"),
        "[web_search]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:9\"\n",
    )
    .unwrap();
    let events = run_calls(
        &d,
        "default",
        serde_json::json!([{"name": "web_search", "arguments": {"query": "tokio runtime"}}]),
        0,
    );
    let out = bash_output_of(&events, "web_search");
    assert!(
        out.contains("1. Tokio\n   https://tokio.rs/\n   An asynchronous runtime."),
        "{out}"
    );
}

#[test]
fn web_search_is_not_offered_without_a_backend_and_a_broken_one_is_one_line() {
    let d = dirs();
    let events = run_calls(
        &d,
        "default",
        serde_json::json!([{"name": "web_search", "arguments": {"query": "x"}}]),
        0,
    );
    let out = bash_output_of(&events, "web_search");
    assert!(
        out.contains("unknown tool") || out.contains("no tool"),
        "{out}"
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d.home, std::fs::Permissions::from_mode(0o700)).unwrap();
    config(
        &d,
        "[web_search]\nbackend = \"brave\"\napi_key_env = \"REIN_TEST_NO_SUCH_KEY\"\n",
    );
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--provider", "replay", "go"])
        .output()
        .unwrap();
    let err = super::support::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("$REIN_TEST_NO_SUCH_KEY"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// The output of the call of `tool` in `events`.
fn bash_output_of(events: &[serde_json::Value], tool: &str) -> String {
    events
        .iter()
        .find(|e| e["type"] == "tool_finished" && e["name"] == tool)
        .and_then(|e| e["output_preview"].as_str())
        .unwrap_or_else(|| panic!("no {tool} call finished: {events:?}"))
        .to_string()
}
