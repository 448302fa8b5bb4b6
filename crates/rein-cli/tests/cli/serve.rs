//! `rein serve` end to end over HTTP/1.1 and Server-Sent Events, with a
//! client written against the wire (std sockets), the replay provider
//! behind it. This module holds the client; its submodules hold the
//! tests, one module per behaviour.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

mod guards;
mod openapi;
mod remote;
mod restart;
mod runs;
mod stored;

/// A `rein serve` process and how to reach it.
pub struct Served {
    pub child: Child,
    pub addr: String,
    pub token: String,
    /// What it wrote to stderr after its listening line.
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Served {
    /// Start `rein serve` on a free loopback port with `args`, and wait
    /// for its "listening" line.
    pub fn start(env: &Env, args: &[&str]) -> Served {
        Served::start_with(env, args, &[])
    }

    pub fn start_with(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Served {
        Served::start_on(env, "127.0.0.1:0", args, vars)
    }

    /// [`Served::start_with`] listening on `listen`.
    pub fn start_on(env: &Env, listen: &str, args: &[&str], vars: &[(&str, &str)]) -> Served {
        let mut cmd = env.command();
        cmd.args(["serve", "--listen", listen, "--root"])
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
            // http:// or, with --tls-cert, https://
            if let Some(rest) = line.split("listening on ").nth(1) {
                let url = rest.split_whitespace().next().unwrap();
                break url.split("://").nth(1).unwrap().to_string();
            }
        };
        // Keep draining stderr so the server never blocks on it, kept.
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).unwrap_or(0) > 0 {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let token = match vars.iter().find(|(k, _)| *k == "REIN_SERVE_TOKEN") {
            Some((_, t)) => t.to_string(),
            None => std::fs::read_to_string(env.home.path().join("serve/token"))
                .unwrap()
                .trim()
                .to_string(),
        };
        Served {
            child,
            addr,
            token,
            log,
        }
    }

    /// Wait (at most 60 s) until the server's stderr holds `text`.
    pub fn wait_for_log(&self, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.log.lock().unwrap().contains(text) {
            assert!(
                Instant::now() < deadline,
                "never logged `{text}`: {}",
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
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

/// A script whose run writes `step.txt` ("done once"), then answers one
/// character every 300 ms: a run to kill mid-turn.
pub fn write_then_answer_slowly(env: &Env) -> String {
    let slow = "one two three four five six seven eight nine ten eleven twelve";
    env.script(
        "first.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "step.txt", "content": "done once\n"}}]},
            {"text": slow, "delay_ms": 300, "chunk_chars": 1}
        ]}),
    )
}

fn create(s: &Served, body: Value) -> String {
    let (status, session) = s.call("POST", "/sessions", Some(body));
    assert_eq!(status, 201, "{session}");
    session["id"].as_str().unwrap().to_string()
}
