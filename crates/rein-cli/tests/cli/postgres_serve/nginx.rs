//! Three `rein serve` processes on one PostgreSQL database behind nginx
//! (the distribution's package, running `deploy/nginx/rein.conf`), a
//! client sending every request through nginx, so each lands on whichever
//! server nginx picks: sessions made, prompts sent, events streamed and
//! reconnected, approvals answered, runs cancelled; then the server
//! running a session is killed mid-answer, another takes the run over, and
//! the client's reconnected stream goes on with no gap and no duplicate.
//!
//! The model is the local mock service speaking OpenAI's chat-completions
//! stream; it answers from the conversation it is sent (so a server that
//! takes a run over gets the answer the conversation calls for).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_providers::mock_server::{MockResponse, MockServer, Part, RecordedRequest};
use rein_test_support::ports::Handover;
use serde_json::{Value, json};

use super::EventStream;
use crate::cli::postgres::database;
use crate::cli::serve::Served;
use crate::cli::support::*;

/// nginx's binary, if installed.
pub fn nginx_binary() -> Option<String> {
    rein_test_support::nginx::binary()
}

/// nginx running: its master process as a [`Served`] (so the usual client
/// calls go through it), stopped with SIGTERM (its workers with it).
pub struct Nginx(pub Served);

impl std::ops::Deref for Nginx {
    type Target = Served;
    fn deref(&self) -> &Served {
        &self.0
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.0.child.id() as i32, libc::SIGTERM) };
        let _ = self.0.child.wait();
    }
}

/// nginx in the foreground (a master process and one worker; `user root`
/// only matters, and is needed, when the tests run as root) with its own
/// prefix, on a handed-over port.
pub fn start_nginx(
    bin: &str,
    dir: &Path,
    port: Handover,
    servers: &[String],
    token: &str,
) -> Nginx {
    let mut cmd = rein_test_support::nginx::command(bin, dir, &port, servers, 512);
    let child = cmd.spawn().unwrap();
    let mut front = Served {
        child,
        addr: format!("127.0.0.1:{}", port.port()),
        token: token.to_string(),
        log: Default::default(),
    };
    let (status, _) = front.call("GET", "/health", None);
    if status != 200 {
        let _ = front.child.kill();
        let log = std::fs::read_to_string(dir.join("logs/error.log")).unwrap_or_default();
        panic!("nginx did not pass /health on ({status}): {log}");
    }
    Nginx(front)
}

/// The model: a `write_file` call first; then a long answer, slow the
/// first time for a session (the server running it dies meanwhile) and
/// quick after; a title for title requests.
fn model(
    slow_answers: Arc<Mutex<HashMap<String, usize>>>,
) -> impl Fn(&RecordedRequest) -> MockResponse {
    move |request| {
        let body = request.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        if body["tools"].as_array().is_none_or(Vec::is_empty) {
            return MockResponse::sse(chunk_stream(&["A title"], None));
        }
        let tag = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        let results = messages.iter().filter(|m| m["role"] == "tool").count();
        if results == 0 {
            let call = json!({"index": 0, "id": "w1", "type": "function",
                "function": {"name": "write_file",
                             "arguments": "{\"path\":\"out.txt\",\"content\":\"once\\n\"}"}});
            let delta = json!({"role": "assistant", "tool_calls": [call]});
            return MockResponse::sse(chunk_stream(&[], Some(delta)));
        }
        let asked = {
            let mut seen = slow_answers.lock().unwrap();
            let n = seen.entry(tag).or_default();
            *n += 1;
            *n
        };
        if asked > 1 {
            return MockResponse::sse(chunk_stream(&["Finished."], None));
        }
        // Slow: a word every 250 ms for 15 s, then the end.
        let mut parts = Vec::new();
        for i in 0..60 {
            let text = format!("w{i} ");
            parts.push(Part::Bytes(chunk_stream_open(&text)));
            parts.push(Part::Pause(Duration::from_millis(250)));
        }
        parts.push(Part::Bytes(chunk_stream(&[], None)));
        MockResponse::sse_parts(parts)
    }
}

pub fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

fn chunk_stream_open(text: &str) -> Vec<u8> {
    chunk(json!({"role": "assistant", "content": text}), None).into_bytes()
}

/// Whole stream: `texts` as deltas (or one `delta`), the finish, usage.
pub fn chunk_stream(texts: &[&str], delta: Option<Value>) -> Vec<u8> {
    let mut out = String::new();
    for t in texts {
        out.push_str(&chunk(json!({"role": "assistant", "content": t}), None));
    }
    let finish = if delta.is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    if let Some(d) = delta {
        out.push_str(&chunk(d, None));
    }
    out.push_str(&chunk(json!({}), Some(finish)));
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
        "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    out.into_bytes()
}

/// Three servers on one database behind nginx, and what starts one
/// again on its address.
pub struct Three {
    pub servers: Vec<Served>,
    pub front: Nginx,
    args: Vec<String>,
    vars: Vec<(String, String)>,
}

impl Three {
    /// Three servers on `url` (leases of `lease_secs`) with `mock` as
    /// their model, behind nginx (`bin`, its files in `dir`).
    pub fn start(
        env: &Env,
        url: &str,
        lease_secs: u64,
        mock: &MockServer,
        bin: &str,
        dir: &Path,
    ) -> Three {
        let vars = vec![
            ("OPENAI_BASE_URL".into(), format!("{}/v1", mock.url())),
            ("OPENAI_API_KEY".into(), "sk-test".into()),
        ];
        // nginx's port first (held until nginx serves on it): the servers
        // answer to the Host clients send there.
        let front_port = Handover::new();
        let host = format!("127.0.0.1:{}", front_port.port());
        let lease = lease_secs.to_string();
        let args = [
            "--store",
            url,
            "--lease-secs",
            &lease,
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--allow-host",
            &host,
        ];
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let servers: Vec<Served> = (0..3)
            .map(|_| spawn(env, "127.0.0.1:0", &args, &vars))
            .collect();
        let addrs: Vec<String> = servers.iter().map(|s| s.addr.clone()).collect();
        let front = start_nginx(bin, dir, front_port, &addrs, &servers[0].token);
        Three {
            servers,
            front,
            args,
            vars,
        }
    }

    /// Kill server `i` (SIGKILL) and start another on its address.
    pub fn kill_and_restart(&mut self, env: &Env, i: usize) {
        let listen = self.servers[i].addr.clone();
        self.servers[i].child.kill().unwrap();
        self.servers[i].child.wait().unwrap();
        self.servers[i] = spawn(env, &listen, &self.args, &self.vars);
    }
}

/// A server listening on `listen` with `args` and environment `vars`.
fn spawn(env: &Env, listen: &str, args: &[String], vars: &[(String, String)]) -> Served {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Served::start_on(env, listen, &args, &vars)
}

fn ids(events: &[(u64, Value)]) -> Vec<u64> {
    events.iter().map(|(i, _)| *i).collect()
}

#[test]
fn three_servers_behind_nginx_answer_any_request_and_a_killed_servers_run_goes_on_elsewhere() {
    let Some(bin) = nginx_binary() else {
        rein_test_support::skip(rein_test_support::Component::Nginx, "no nginx binary");
        return;
    };
    let Some(url) = database("serve_nginx") else {
        return;
    };
    let env = Env::new();
    let (_rt, mock) = mock_server();
    mock.respond_with(Arc::new(model(Arc::default())));
    let dir = tempfile::tempdir().unwrap();
    let Three {
        mut servers, front, ..
    } = Three::start(&env, &url, 3, &mock, &bin, dir.path());

    // A session made, a prompt sent, its approval seen, all through nginx.
    let (status, session) = front.call("POST", "/sessions", Some(json!({"workspace": "lb"})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    let path = |p: &str| format!("/sessions/{id}{p}");
    let (status, _) = front.call("POST", &path("/prompt"), Some(json!({"text": "write it"})));
    assert_eq!(status, 202);
    let stream = |after: Option<u64>| EventStream::open(&front.addr, &front.token, &id, after);
    let mut seen = stream(None).until("approval_required");
    // Whichever server answers, it says the same.
    for _ in 0..3 {
        let (_, view) = front.call("GET", &path(""), None);
        assert_eq!(view["running"], true, "{view}");
        assert_eq!(view["pending_approvals"][0]["call_id"], "w1", "{view}");
        let (status, _) = front.call("POST", &path("/prompt"), Some(json!({"text": "again"})));
        assert_eq!(status, 409);
    }
    let approve = json!({"decision": "approve"});
    let (status, body) = front.call("POST", &path("/approvals/w1"), Some(approve));
    assert_eq!(status, 204, "{body}");
    // Reconnected (likely to another server): the answer streams on.
    let mut follow = stream(Some(seen.last().unwrap().0));
    for _ in 0..3 {
        seen.extend(follow.until("text_delta"));
    }

    // The server running it dies mid-answer.
    let (_, view) = front.call("GET", &path(""), None);
    let owner = view["server"].as_str().unwrap().to_string();
    let pid: u32 = owner.split('/').nth(1).unwrap().parse().unwrap();
    let victim = servers.iter_mut().find(|s| s.child.id() == pid).unwrap();
    victim.child.kill().unwrap();
    victim.child.wait().unwrap();
    drop(follow);
    seen.extend(stream(Some(seen.last().unwrap().0)).until("stopped"));
    let stopped = &seen.last().unwrap().1;
    assert_eq!(stopped["reason"], "completed", "{seen:?}");
    assert_eq!(stopped["final_text"], "Finished.");
    let got = ids(&seen);
    assert_eq!(
        got,
        (1..=got.len() as u64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    assert_eq!(
        stream(None).until("stopped"),
        seen,
        "the stored log reads the same"
    );
    let (_, view) = front.call("GET", &path(""), None);
    assert_ne!(view["server"], owner.as_str(), "{view}");
    front.wait_idle(&id);
    let roles: Vec<String> = crate::cli::postgres::stored_messages(&url, &id)
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let written = std::fs::read_to_string(env.ws.path().join("lb/out.txt")).unwrap();
    assert_eq!(written, "once\n");

    // A run cancelled through nginx, wherever it runs.
    let (_, other) = front.call("POST", "/sessions", Some(json!({"workspace": "lb2"})));
    let id2 = other["id"].as_str().unwrap().to_string();
    let path2 = |p: &str| format!("/sessions/{id2}{p}");
    front.call(
        "POST",
        &path2("/prompt"),
        Some(json!({"text": "write more"})),
    );
    let mut s2 = EventStream::open(&front.addr, &front.token, &id2, None);
    s2.until("approval_required");
    let approve = json!({"decision": "approve"});
    assert_eq!(
        front.call("POST", &path2("/approvals/w1"), Some(approve)).0,
        204
    );
    s2.until("text_delta");
    let (status, body) = front.call("POST", &path2("/cancel"), None);
    assert_eq!(status, 202, "{body}");
    let events = s2.until("stopped");
    assert_eq!(
        events.last().unwrap().1["reason"],
        "cancelled",
        "{events:?}"
    );
}
