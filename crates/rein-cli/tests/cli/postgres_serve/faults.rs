//! The database going away under a running server: it answers 503 with a
//! clear message, the running session stops at the commit it cannot
//! make, nothing is shown as stored that was not, and once the database
//! is back the session's run is taken up again and finishes.
//!
//! The server reaches PostgreSQL through a TCP link this test holds (to
//! the cluster's Unix socket), so the test can cut every connection and
//! refuse new ones, as a database that went down looks to a server, and
//! restore it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rein_core::SessionStore;
use rein_store::SessionEvents;
use serde_json::{Value, json};

use super::EventStream;
use crate::cli::postgres::{block_on, database};
use crate::cli::serve::Served;
use crate::cli::support::*;

/// A TCP port that forwards to PostgreSQL's Unix socket until cut.
struct Link {
    port: u16,
    down: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Link {
    fn start(socket: String) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let down = Arc::new(AtomicBool::new(false));
        let open = Arc::new(Mutex::new(Vec::new()));
        let (d, o) = (down.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().map_while(Result::ok) {
                if d.load(Ordering::SeqCst) {
                    continue; // dropped: the connection closes at once
                }
                let Ok(db) = UnixStream::connect(&socket) else {
                    continue;
                };
                o.lock().unwrap().push(client.try_clone().unwrap());
                pipe(client.try_clone().unwrap(), db.try_clone().unwrap());
                pipe(db, client);
            }
        });
        Link { port, down, open }
    }

    /// Every connection broken, new ones refused.
    fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for c in self.open.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

/// Copy `from` to `to` on a thread until either side ends.
fn pipe(mut from: impl Read + Send + 'static, mut to: impl Write + Send + 'static) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
}

/// The value of `key` in a `key=value ...` connection string.
fn param<'a>(url: &'a str, key: &str) -> &'a str {
    url.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap()
}

#[test]
fn the_database_down_is_a_503_the_run_stops_at_its_next_commit_and_goes_on_once_it_is_back() {
    let Some(url) = database("serve_faults") else {
        return;
    };
    if url.contains("://") {
        return; // REIN_TEST_POSTGRES_URL: no socket to forward to
    }
    let socket = format!("{}/.s.PGSQL.{}", param(&url, "host"), param(&url, "port"));
    let link = Link::start(socket);
    let store = format!(
        "host=127.0.0.1 port={} user={} dbname={} sslmode=disable connect_timeout=2",
        link.port,
        param(&url, "user"),
        param(&url, "dbname")
    );
    let env = Env::new();
    let script = env.script(
        "run.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "out.txt", "content": "kept\n"}}]},
            {"text": "an answer the database never gets", "delay_ms": 60, "chunk_chars": 3},
            {"text": "Back again."}
        ]}),
    );
    let s = Served::start(
        &env,
        &[
            "--store",
            &store,
            "--lease-secs",
            "2",
            "--mode",
            "accept-edits",
            "--script",
            &script,
        ],
    );
    let (status, session) = s.call("POST", "/sessions", Some(json!({"workspace": "f"})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_string();
    s.call(
        "POST",
        &format!("/sessions/{id}/prompt"),
        Some(json!({"text": "go"})),
    );
    let mut stream = EventStream::open(&s.addr, &s.token, &id, None);
    stream.until("text_delta");

    link.cut();
    // Every route that needs the database says so, clearly.
    for (method, path) in [
        ("GET", format!("/sessions/{id}")),
        ("GET", "/sessions".into()),
    ] {
        let (status, body) = s.call(method, &path, None);
        assert_eq!(status, 503, "{method} {path}: {body}");
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains("unavailable") && error.contains("PostgreSQL"),
            "{error}"
        );
    }
    // The run stops at the commit of its answer.
    s.wait_for_log(&format!("the run of session {id} stopped"));
    // The stream ends (its log cannot be read); a reconnect waits for the
    // database.
    while stream.next().is_some() {}

    link.restore();
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.call("GET", &format!("/sessions/{id}"), None).0 != 200 {
        assert!(Instant::now() < deadline, "the server never came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its lease expires, the server takes the session up again, and the
    // run goes on from the last committed message.
    let events = EventStream::open(&s.addr, &s.token, &id, None).until("stopped");
    let stopped = &events.last().unwrap().1;
    assert_eq!(stopped["final_text"], "Back again.", "{events:?}");

    // Nothing shown as stored that was not: every committed message on the
    // stream is in the store, with the same content, and in order.
    let pg = block_on(rein_store::PgStore::connect(&url)).unwrap();
    let messages: Vec<Value> = block_on(pg.messages(&id))
        .unwrap()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let committed: Vec<(u64, Value)> = events
        .iter()
        .filter(|(_, e)| e["type"] == "message_committed")
        .map(|(_, e)| (e["seq"].as_u64().unwrap(), e["message"].clone()))
        .collect();
    for (seq, message) in &committed {
        assert_eq!(&messages[*seq as usize - 1], message, "message {seq}");
    }
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "{messages:#?}"
    );
    assert_eq!(messages[3]["content"][0]["text"], "Back again.");
    let log = block_on(pg.events_after(&id, 0, 100_000)).unwrap();
    assert_eq!(log.events.len() as u64, log.last, "numbered without gaps");
}
