//! Several `rein serve` processes on one PostgreSQL database as one
//! service: a client streams a session from a server that is not the one
//! running it, live (through the listening connection's notifications),
//! through the loss of that connection, and on through a takeover after
//! the running server is killed, every event once and in order.

mod batching;
pub(crate) mod closing;
mod faults;
mod nginx;
mod soak;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::postgres::{block_on, database, pg};
use super::serve::Served;
use super::support::*;

/// An open Server-Sent Events stream of one session, read event by event.
pub struct EventStream {
    reader: BufReader<TcpStream>,
    /// The id of the last event read (what a reconnect sends).
    pub last_id: u64,
}

impl EventStream {
    /// `GET /sessions/{session}/events` on `addr`, after `last_id`.
    pub fn open(addr: &str, token: &str, session: &str, last_id: Option<u64>) -> EventStream {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut req = format!(
            "GET /sessions/{session}/events HTTP/1.1\r\nHost: {addr}\r\n\
             Authorization: Bearer {token}\r\n"
        );
        if let Some(id) = last_id {
            req.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        EventStream {
            reader: BufReader::new(s),
            last_id: last_id.unwrap_or(0),
        }
    }

    /// The next event (its id, 0 for one without) or `None` at the end.
    pub fn next(&mut self) -> Option<(u64, Value)> {
        let mut id = 0;
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
                return None;
            }
            let l = line.trim_end();
            if let Some(n) = l.strip_prefix("id: ") {
                id = n.parse().unwrap();
            } else if let Some(data) = l.strip_prefix("data: ") {
                if id > 0 {
                    self.last_id = id;
                }
                return Some((id, serde_json::from_str(data).unwrap()));
            }
        }
    }

    /// Events until one of type `until` (included).
    pub fn until(&mut self, until: &str) -> Vec<(u64, Value)> {
        let mut events = Vec::new();
        while let Some((id, e)) = self.next() {
            let done = e["type"] == until;
            events.push((id, e));
            if done {
                return events;
            }
        }
        panic!("the stream ended before `{until}`: {events:?}");
    }
}

/// Terminate the listening connections of the servers on `url`'s
/// database; how many there were.
fn kill_listeners(url: &str) -> i64 {
    block_on(async {
        pg::raw(url)
            .await
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE application_name = $1 AND datname = current_database()",
                &[&rein_store::LISTENER_NAME],
            )
            .await
            .unwrap()
            .get(0)
    })
}

fn ids(events: &[(u64, Value)]) -> Vec<u64> {
    events.iter().map(|(i, _)| *i).collect()
}

#[test]
fn another_server_streams_a_run_live_through_a_lost_listener_and_a_takeover_without_gap() {
    let Some(url) = database("serve_stream") else {
        return;
    };
    let env = Env::new();
    let first = super::serve::write_then_answer_slowly(&env);
    let second = env.script(
        "second.json",
        &json!({"turns": [{"text": "Finished after the takeover."}]}),
    );
    let common = [
        "--store",
        url.as_str(),
        "--lease-secs",
        "2",
        "--mode",
        "accept-edits",
    ];
    let mut a = Served::start(&env, &[&common[..], &["--script", &first]].concat());
    let b = Served::start(&env, &[&common[..], &["--script", &second]].concat());
    let (status, session) = b.call("POST", "/sessions", Some(json!({"workspace": "shared"})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    // The client follows the session on B while A runs it.
    let mut stream = EventStream::open(&b.addr, &b.token, &id, None);
    let (status, body) = a.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "make step.txt"})),
    );
    assert_eq!(status, 202, "{body}");
    let mut seen = stream.until("tool_finished");
    seen.extend(stream.until("text_delta"));

    // B's listening connection is dropped mid-run: it comes back, and the
    // stream goes on from the table.
    assert_eq!(
        kill_listeners(&url),
        2,
        "one listening connection per server"
    );
    seen.extend(stream.until("text_delta"));
    seen.extend(stream.until("text_delta"));

    // A dies mid-answer; B takes the run over and the numbering goes on.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    drop(stream);
    let mut again = EventStream::open(&b.addr, &b.token, &id, Some(seen.last().unwrap().0));
    seen.extend(again.until("stopped"));
    let stopped = &seen.last().unwrap().1;
    assert_eq!(stopped["reason"], "completed", "{seen:?}");
    assert_eq!(stopped["final_text"], "Finished after the takeover.");
    let got = ids(&seen);
    assert_eq!(got, (1..=got.len() as u64).collect::<Vec<_>>(), "{seen:?}");
    let deltas = seen
        .iter()
        .filter(|(_, e)| e["type"] == "text_delta")
        .count();
    assert!(deltas >= 3, "{seen:?}");

    // Everything stored reads the same from the start, on either server.
    let all = EventStream::open(&b.addr, &b.token, &id, None).until("stopped");
    assert_eq!(all, seen);
}

#[test]
fn any_server_answers_approvals_cancels_and_mode_changes_for_a_run_another_drives() {
    let Some(url) = database("serve_control") else {
        return;
    };
    let env = Env::new();
    let script = env.script(
        "run.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "out.txt", "content": "once\n"}}]},
            {"text": "Wrote it."},
            {"text": "a long answer that is cancelled midway", "delay_ms": 300, "chunk_chars": 1}
        ]}),
    );
    let common = [
        "--store",
        url.as_str(),
        "--lease-secs",
        "5",
        "--script",
        &script,
    ];
    let a = Served::start(&env, &common);
    let b = Served::start(&env, &common);
    let (_, session) = b.call("POST", "/sessions", Some(json!({"workspace": "ctl"})));
    let id = session["id"].as_str().unwrap().to_string();
    let path = |p: &str| format!("/sessions/{id}{p}");
    let (status, _) = a.call("POST", &path("/prompt"), Some(json!({"text": "write"})));
    assert_eq!(status, 202);
    let mut stream = EventStream::open(&b.addr, &b.token, &id, None);
    stream.until("approval_required");

    // Every server says the same: running, where, and what it waits for.
    let (_, on_a) = a.call("GET", &path(""), None);
    let (_, on_b) = b.call("GET", &path(""), None);
    for view in [&on_a, &on_b] {
        assert_eq!(view["running"], true, "{view}");
        assert_eq!(view["pending_approvals"][0]["call_id"], "w1", "{view}");
    }
    assert!(!on_b["server"].as_str().unwrap().is_empty(), "{on_b}");
    assert_eq!(on_a["server"], on_b["server"]);
    // A prompt while it runs is a conflict on the other server too.
    let (status, body) = b.call("POST", &path("/prompt"), Some(json!({"text": "again"})));
    assert_eq!(status, 409, "{body}");
    // An approval for a call that does not wait is a clear 409.
    let approve = json!({"decision": "approve"});
    let (status, body) = b.call("POST", &path("/approvals/nope"), Some(approve.clone()));
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");

    // Answered through B, applied by A; the same answer again, through
    // either, is the same one decision; another answer is refused.
    let (status, body) = b.call("POST", &path("/approvals/w1"), Some(approve.clone()));
    assert_eq!(status, 204, "{body}");
    let (status, _) = a.call("POST", &path("/approvals/w1"), Some(approve.clone()));
    assert_eq!(status, 204);
    let (status, body) = b.call(
        "POST",
        &path("/approvals/w1"),
        Some(json!({"decision": "deny"})),
    );
    assert_eq!(status, 409, "{body}");
    let events = stream.until("stopped");
    assert_eq!(
        events.last().unwrap().1["reason"],
        "completed",
        "{events:?}"
    );
    let resolved = events
        .iter()
        .filter(|(_, e)| e["type"] == "approval_resolved");
    assert_eq!(resolved.count(), 1, "{events:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("ctl/out.txt")).unwrap(),
        "once\n"
    );
    a.wait_idle(&id);

    // Nothing runs: a cancel has nobody to go to.
    let (status, body) = b.call("POST", &path("/cancel"), None);
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("not running"),
        "{body}"
    );

    // A mode change and a cancel through B reach the run on A.
    let (status, _) = a.call("POST", &path("/prompt"), Some(json!({"text": "talk"})));
    assert_eq!(status, 202);
    stream.until("text_delta");
    let (status, body) = b.call("POST", &path("/mode"), Some(json!({"mode": "plan"})));
    assert_eq!(status, 200, "{body}");
    let (_, on_a) = a.call("GET", &path(""), None);
    assert_eq!(on_a["mode"], "plan", "{on_a}");
    let (status, body) = b.call("POST", &path("/cancel"), None);
    assert_eq!(status, 202, "{body}");
    let events = stream.until("stopped");
    assert_eq!(
        events.last().unwrap().1["reason"],
        "cancelled",
        "{events:?}"
    );
}

/// `rein serve` on `root` and `url`, which must refuse to start: its
/// stderr.
fn refused_start(env: &Env, root: &std::path::Path, url: &str) -> String {
    let mut child = env
        .command()
        .args(["serve", "--listen", "127.0.0.1:0", "--store", url, "--root"])
        .arg(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("rein serve started on {}", root.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn a_server_whose_root_is_not_the_one_the_database_was_first_used_with_refuses_to_start() {
    let Some(url) = database("serve_root") else {
        return;
    };
    let env = Env::new();
    let first = Served::start(&env, &["--store", &url]);
    let id = std::fs::read_to_string(env.ws.path().join(".rein-serve-root")).unwrap();
    assert_eq!(id.trim().len(), 32, "{id}");

    // An empty folder (the shared root not mounted) and another root.
    let other = tempfile::tempdir().unwrap();
    let err = refused_start(&env, other.path(), &url);
    assert!(err.contains("has no .rein-serve-root"), "{err}");
    assert!(err.contains(id.trim()), "names the recorded root: {err}");
    assert!(
        !other.path().join(".rein-serve-root").exists(),
        "nothing made"
    );
    std::fs::write(other.path().join(".rein-serve-root"), "0123abcd\n").unwrap();
    let err = refused_start(&env, other.path(), &url);
    assert!(
        err.contains("is not the root this database was first used with"),
        "{err}"
    );

    // The same root again: a second server starts.
    let second = Served::start(&env, &["--store", &url]);
    let (status, _) = second.call("GET", "/sessions", None);
    assert_eq!(status, 200);
    drop(first);
}
