//! `rein serve` end to end over HTTP/1.1 and Server-Sent Events, with a
//! client written against the wire (std sockets), the replay provider
//! behind it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

/// A `rein serve` process and how to reach it.
pub struct Served {
    pub child: Child,
    pub addr: String,
    pub token: String,
}

impl Served {
    /// Start `rein serve` on a free loopback port with `args`, and wait
    /// for its "listening" line.
    pub fn start(env: &Env, args: &[&str]) -> Served {
        Served::start_with(env, args, &[])
    }

    pub fn start_with(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Served {
        let mut cmd = env.command();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--root"])
            .arg(env.ws.path())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            if stderr.read_line(&mut line).unwrap() == 0 {
                panic!("rein serve ended before listening: {line}");
            }
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || {
            let mut sink = String::new();
            let _ = stderr.read_to_string(&mut sink);
        });
        let token = match vars.iter().find(|(k, _)| *k == "REIN_SERVE_TOKEN") {
            Some((_, t)) => t.to_string(),
            None => std::fs::read_to_string(env.home.path().join("serve/token"))
                .unwrap()
                .trim()
                .to_string(),
        };
        Served { child, addr, token }
    }

    /// One request with the token; the status and the JSON body.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let auth = format!("Bearer {}", self.token);
        let (status, _, text) = self.raw(method, path, &[("Authorization", &auth)], body);
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// One request with exactly these headers (and Host); the status, the
    /// headers (lowercased names) and the body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (u16, Vec<(String, String)>, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("Host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
        s.write_all(req.as_bytes()).unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        parse_response(&text)
    }

    /// Read the session's event stream (after `last_id`) until an event of
    /// `until` type arrives; the events with their ids.
    pub fn events_until(
        &self,
        session: &str,
        last_id: Option<u64>,
        until: &str,
    ) -> Vec<(u64, Value)> {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut req = format!(
            "GET /sessions/{session}/events HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n",
            self.addr, self.token
        );
        if let Some(id) = last_id {
            req.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut reader = BufReader::new(s);
        let mut events = Vec::new();
        let mut id = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap() == 0 {
                panic!("the event stream ended before `{until}`: {events:?}");
            }
            let l = line.trim_end();
            if let Some(n) = l.strip_prefix("id: ") {
                id = n.parse().unwrap();
            } else if let Some(data) = l.strip_prefix("data: ") {
                let event: Value = serde_json::from_str(data).unwrap();
                let done = event["type"] == until;
                events.push((id, event));
                if done {
                    return events;
                }
            }
        }
    }

    /// Wait for the session to have no run going.
    pub fn wait_idle(&self, session: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let (_, s) = self.call("GET", &format!("/sessions/{session}"), None);
            if s["running"] == false {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("session {session} still running");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Status, headers and body of an HTTP/1.1 answer (chunked or not).
fn parse_response(text: &str) -> (u16, Vec<(String, String)>, String) {
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        unchunk(body)
    } else {
        body.to_string()
    };
    (status, headers, body)
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

fn write_script(env: &Env) -> String {
    env.script(
        "write.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "out.txt", "content": "served\n"}}]},
            {"text": "Wrote out.txt."}
        ]}),
    )
}

fn create(s: &Served, body: Value) -> String {
    let (status, session) = s.call("POST", "/sessions", Some(body));
    assert_eq!(status, 201, "{session}");
    session["id"].as_str().unwrap().to_string()
}

#[test]
fn serve_runs_a_prompt_asks_approval_over_http_and_streams_events() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({"workspace": "proj"}));
    let (status, accepted) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "write out.txt"})),
    );
    assert_eq!(status, 202, "{accepted}");
    // The write waits for an approval, seen on the stream and the session.
    let events = s.events_until(&id, None, "approval_required");
    let ask = &events.last().unwrap().1;
    assert_eq!(ask["request"]["tool"], "write_file", "{ask}");
    let (_, session) = s.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(session["running"], true);
    assert_eq!(
        session["pending_approvals"][0]["call_id"], "w1",
        "{session}"
    );
    // A second prompt while it runs is a conflict.
    let (status, busy) = s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "again"})),
    );
    assert_eq!(status, 409, "{busy}");
    let (status, _) = s.call(
        "POST",
        &format!("/sessions/{id}/approvals/w1"),
        Some(json!({"decision": "approve"})),
    );
    assert_eq!(status, 204);
    let events = s.events_until(&id, Some(events.last().unwrap().0), "stopped");
    let stopped = &events.last().unwrap().1;
    assert_eq!(stopped["reason"], "completed", "{events:?}");
    assert_eq!(stopped["final_text"], "Wrote out.txt.");
    let file = env.ws.path().join("proj/out.txt");
    assert_eq!(std::fs::read_to_string(file).unwrap(), "served\n");
    // Ids follow on: a reconnect after the first gets the rest only.
    let all = s.events_until(&id, None, "stopped");
    let ids: Vec<u64> = all.iter().map(|(i, _)| *i).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let rest = s.events_until(&id, Some(ids[2]), "stopped");
    assert_eq!(rest[0].0, ids[3]);
    assert_eq!(rest.len(), all.len() - 3);
    // The session is listed and stored.
    let (_, list) = s.call("GET", "/sessions", None);
    assert_eq!(list["sessions"][0]["id"], id.as_str(), "{list}");
    assert_eq!(stored(&env, &id).len(), 4);
}

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
}

#[test]
fn serve_openapi_lists_every_route_and_each_answers() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let (status, doc) = s.call("GET", "/openapi.json", None);
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let id = create(&s, json!({}));
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 9, "{:?}", paths.keys());
    for (path, ops) in paths {
        for method in ops
            .as_object()
            .unwrap()
            .keys()
            .filter(|m| *m != "parameters")
        {
            let concrete = path.replace("{id}", &id).replace("{call_id}", "c1");
            if concrete.ends_with("/events") || method == "delete" {
                continue; // a stream; a deletion (tested below)
            }
            let (status, body) = s.call(&method.to_uppercase(), &concrete, Some(json!({})));
            assert!(
                status != 404 || body["error"].as_str().unwrap_or("").contains("approval"),
                "{method} {path} is documented but not served: {status} {body}"
            );
            assert_ne!(status, 405, "{method} {path}");
        }
        // A method the path does not take: 405, and `Allow` lists exactly
        // the documented ones.
        let concrete = path.replace("{id}", &id).replace("{call_id}", "c1");
        let auth = format!("Bearer {}", s.token);
        let (status, headers, _) = s.raw("PUT", &concrete, &[("Authorization", &auth)], None);
        assert_eq!(status, 405, "PUT {path}");
        let allow = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("allow"))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("PUT {path}: 405 without Allow: {headers:?}"));
        let mut said: Vec<String> = allow.split(',').map(|m| m.trim().to_string()).collect();
        let mut documented: Vec<String> = ops
            .as_object()
            .unwrap()
            .keys()
            .filter(|m| *m != "parameters")
            .map(|m| m.to_uppercase())
            .collect();
        said.sort();
        documented.sort();
        assert_eq!(said, documented, "Allow of {path}");
    }
    let (status, _) = s.call("DELETE", &format!("/sessions/{id}"), None);
    assert_eq!(status, 204);
    let (status, _) = s.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(status, 404);
}

#[test]
fn serve_cancel_stops_a_run_and_budgets_hold_per_session() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"turns": [
            {"text": "slowly", "delay_ms": 30000, "chunk_chars": 1},
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}]},
            {"text": "never"}
        ]}),
    );
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({}));
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "go"})),
    );
    s.events_until(&id, None, "turn_started");
    let (status, _) = s.call("POST", &format!("/sessions/{id}/cancel"), None);
    assert_eq!(status, 202);
    let events = s.events_until(&id, None, "stopped");
    assert_eq!(events.last().unwrap().1["reason"], "cancelled");
    s.wait_idle(&id);
    // A budget of one turn stops the next prompt after its first.
    let limited = create(&s, json!({"budget": {"max_turns": 1}}));
    s.call(
        "POST",
        &format!("/sessions/{limited}/prompt"),
        Some(json!({"text": "go"})),
    );
    let events = s.events_until(&limited, None, "stopped");
    assert_eq!(
        events.last().unwrap().1["reason"],
        "max_turns",
        "{events:?}"
    );
    let (status, body) = s.call(
        "POST",
        "/sessions",
        Some(json!({"budget": {"max_cost_usd": -1}})),
    );
    assert_eq!(status, 400, "{body}");
}

#[test]
fn serve_shuts_down_on_sigterm_cancelling_runs() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"turns": [{"text": "slowly", "delay_ms": 30000, "chunk_chars": 1}]}),
    );
    let mut s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({}));
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "go"})),
    );
    s.events_until(&id, None, "turn_started");
    let started = Instant::now();
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    let status = s.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(15));
    let list = env.rein(&["sessions", "list", "--json"]);
    assert!(stdout(&list).contains("cancelled"), "{}", stdout(&list));
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

#[test]
fn serve_mode_change_applies_to_the_next_prompt() {
    let env = Env::new();
    let script = write_script(&env);
    let s = Served::start(&env, &["--script", &script]);
    let id = create(&s, json!({"workspace": "m"}));
    let (status, body) = s.call(
        "POST",
        &format!("/sessions/{id}/mode"),
        Some(json!({"mode": "plan"})),
    );
    assert_eq!(status, 200, "{body}");
    let (_, session) = s.call("GET", &format!("/sessions/{id}"), None);
    assert_eq!(session["mode"], "plan");
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "write out.txt"})),
    );
    let events = s.events_until(&id, None, "stopped");
    // Plan mode: the write is refused without an approval being asked.
    assert_eq!(events[0].1["mode"], "plan", "{events:?}");
    let refused = events
        .iter()
        .find(|(_, e)| e["type"] == "tool_finished")
        .unwrap();
    assert_eq!(refused.1["is_error"], true, "{events:?}");
    let why = refused.1["output_preview"].as_str().unwrap();
    assert!(why.contains("plan mode"), "{why}");
    assert!(!events.iter().any(|(_, e)| e["type"] == "approval_required"));
    assert!(!env.ws.path().join("m/out.txt").exists());
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
