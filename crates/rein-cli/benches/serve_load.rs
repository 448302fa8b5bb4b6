//! Many concurrent sessions through `rein serve`: each a scripted 10-turn
//! task (nine tool calls, then the answer) against a local mock service
//! speaking OpenAI's chat-completions stream.
//!
//! ```sh
//! cargo bench -p rein-cli --no-default-features --bench serve_load -- \
//!     [--sessions 1000] [--turns 10] [--store sqlite|postgres|postgres-fast] \
//!     [--servers 1|N]
//! ```
//!
//! With `--servers N` (N > 1, PostgreSQL only) N servers share the
//! database and the root behind nginx running `deploy/nginx/rein.conf`,
//! and every request of the load goes through nginx (round robin: a
//! session's prompt, stream and creation each land on any server).
//!
//! The stores compare at the same durability: SQLite in rein's mode (WAL,
//! a commit survives a crash of rein) and `postgres`, a throwaway cluster
//! with PostgreSQL's durable defaults. `postgres-fast` turns fsync,
//! synchronous commit and full-page writes off (the tests' setting) and is
//! labelled so in the row; it is not a like-for-like comparison.
//!
//! Steps: start the mock model service and (for PostgreSQL) the cluster,
//! start `rein serve` (and nginx in front of several), run every session
//! at once, print one table row and exit 1 when any session did not
//! complete.
//!
//! Reports sessions completed, the latency per turn (from one request of a
//! session arriving at the mock to its next one arriving: the mock reading
//! the request and streaming its answer, rein reading the stream, the
//! tool, the store, the events and building the next request), the
//! servers' peak memory (each), their CPU seconds per session, sessions
//! completed per second of the whole run and, on PostgreSQL, the most
//! connections the database had open at once (sampled every 100 ms) and
//! its commits per turn (and how many of them appended events).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rein_providers::mock_server::{MockResponse, RecordedRequest};
use serde_json::{Value, json};

#[allow(dead_code)]
mod serve_common;

use serve_common::{Bench, Front, chunks, percentile, pg, usage};

/// Which store the server keeps its sessions in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Store {
    Sqlite,
    Postgres(pg::Durability),
}

impl Store {
    fn parse(value: &str) -> Store {
        match value {
            "sqlite" => Store::Sqlite,
            "postgres" => Store::Postgres(pg::Durability::Durable),
            "postgres-fast" => Store::Postgres(pg::Durability::Fast),
            other => {
                eprintln!("error: --store {other}: expected sqlite, postgres or postgres-fast");
                std::process::exit(2);
            }
        }
    }

    /// The row's label: the store and its durability.
    fn label(self) -> &'static str {
        let external = std::env::var_os("REIN_TEST_POSTGRES_URL").is_some();
        match self {
            Store::Sqlite => "SQLite (WAL, durable)",
            Store::Postgres(_) if external => {
                "PostgreSQL (REIN_TEST_POSTGRES_URL, its own settings)"
            }
            Store::Postgres(pg::Durability::Durable) => "PostgreSQL (durable defaults)",
            Store::Postgres(pg::Durability::Fast) => {
                "PostgreSQL (fast: fsync, synchronous commit off)"
            }
        }
    }
}

/// What one run is asked for.
struct Options {
    sessions: usize,
    turns: usize,
    store: Store,
    servers: usize,
}

fn options() -> Options {
    let mut o = Options {
        sessions: 1000,
        turns: 10,
        store: Store::Sqlite,
        servers: 1,
    };
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--sessions" => o.sessions = value.parse().expect("--sessions N"),
            "--turns" => o.turns = value.parse().expect("--turns N"),
            "--store" => o.store = Store::parse(&value),
            "--servers" => o.servers = value.parse().expect("--servers N"),
            _ => {
                i += 1; // cargo's own flags (--bench)
                continue;
            }
        }
        i += 2;
    }
    if o.servers == 0 || (o.servers > 1 && o.store == Store::Sqlite) {
        eprintln!(
            "error: --servers {}: one, or several on PostgreSQL",
            o.servers
        );
        std::process::exit(2);
    }
    o
}

/// Longest one session may take before it counts as failed (the bench
/// ends instead of waiting for a stuck one).
const SESSION_LIMIT: Duration = Duration::from_secs(600);

/// When each session's requests arrived at the mock.
type Arrivals = Arc<Mutex<HashMap<String, Vec<Instant>>>>;

/// Answer like a model doing a `turns`-turn task: a `glob` call until the
/// conversation holds `turns - 1` results, then the answer.
fn responder(turns: usize, arrivals: Arrivals) -> rein_providers::mock_server::Responder {
    Arc::new(move |request: &RecordedRequest| {
        let now = Instant::now();
        let body = request.json();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tag = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        let results = messages.iter().filter(|m| m["role"] == "tool").count();
        if body
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
        {
            return MockResponse::sse(chunks(&[text_delta("A title")], "stop"));
        }
        arrivals.lock().unwrap().entry(tag).or_default().push(now);
        if results + 1 < turns {
            let call = json!({"index": 0, "id": format!("call_{results}"), "type": "function",
                              "function": {"name": "glob",
                                           "arguments": format!("{{\"pattern\":\"*{results}*\"}}")}});
            MockResponse::sse(chunks(
                &[json!({"role": "assistant", "tool_calls": [call]})],
                "tool_calls",
            ))
        } else {
            MockResponse::sse(chunks(&[text_delta("Done: the task is finished.")], "stop"))
        }
    })
}

fn text_delta(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

/// One session: create it, prompt it, follow its events to `stopped`.
async fn session(
    client: reqwest::Client,
    base: String,
    token: String,
    i: usize,
) -> Result<String, String> {
    let auth = format!("Bearer {token}");
    let created: Value = client
        .post(format!("{base}/sessions"))
        .header("Authorization", &auth)
        .header("Content-Type", "application/json")
        .body(json!({"workspace": format!("s{i}")}).to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?
        .bytes()
        .await
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))?;
    let id = created["id"]
        .as_str()
        .ok_or(format!("create: {created}"))?
        .to_string();
    let events = client
        .get(format!("{base}/sessions/{id}/events"))
        .header("Authorization", &auth)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    client
        .post(format!("{base}/sessions/{id}/prompt"))
        .header("Authorization", &auth)
        .header("Content-Type", "application/json")
        .body(json!({"text": format!("task #{i}: list the files")}).to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let mut stream = events.bytes_stream();
    let mut buffer = String::new();
    while let Some(chunk) = stream.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk.map_err(|e| e.to_string())?));
        if let Some(at) = buffer.find("\"type\":\"stopped\"") {
            let reason = buffer[at..].split("\"reason\":\"").nth(1).unwrap_or("");
            return Ok(reason.split('"').next().unwrap_or("").to_string());
        }
    }
    Err("the event stream ended".into())
}

/// The servers, and nginx in front of them when there are several.
fn start(bench: &Bench, n: usize) -> (Vec<serve_common::Server>, Option<Front>, String) {
    if n == 1 {
        let server = bench.server(&[]);
        let addr = server.addr.clone();
        return (vec![server], None, addr);
    }
    let port = rein_test_support::ports::Handover::new();
    let host = format!("127.0.0.1:{}", port.port());
    let servers: Vec<_> = (0..n)
        .map(|_| bench.server(&["--allow-host", &host]))
        .collect();
    let front = Front::start(port, &servers).expect("nginx (the nginx package)");
    let addr = front.addr.clone();
    (servers, Some(front), addr)
}

/// Sessions that did not complete, by why.
fn failures(results: &[Result<String, String>]) -> HashMap<String, usize> {
    let mut failures: HashMap<String, usize> = HashMap::new();
    for r in results
        .iter()
        .filter(|r| !matches!(r, Ok(s) if s == "completed"))
    {
        let key = match r {
            Ok(reason) => format!("stopped: {reason}"),
            Err(e) => e.chars().take(80).collect(),
        };
        *failures.entry(key).or_default() += 1;
    }
    failures
}

fn main() {
    let o = options();
    let db = match o.store {
        Store::Sqlite => None,
        Store::Postgres(durability) => Some(("serve_load", durability)),
    };
    let bench = Bench::start(db);
    let arrivals: Arrivals = Arc::default();
    bench
        .mock
        .respond_with(responder(o.turns, arrivals.clone()));
    let (servers, front, addr) = start(&bench, o.servers);
    let base = format!("http://{addr}");
    let token = servers[0].token.clone();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(2000)
        .build()
        .unwrap();
    let connections = bench.count_connections();
    let commits_before = bench.commits();
    let began = Instant::now();
    let results: Vec<Result<String, String>> =
        bench
            .rt
            .block_on(futures_util::future::join_all((0..o.sessions).map(|i| {
                let one = session(client.clone(), base.clone(), token.clone(), i);
                async move {
                    tokio::time::timeout(SESSION_LIMIT, one)
                        .await
                        .unwrap_or_else(|_| Err("no `stopped` event within the limit".into()))
                }
            })));
    let wall = began.elapsed();
    let commits = bench.commits() - commits_before;
    let appends = bench.event_appends();
    let peak_connections = connections.peak.load(std::sync::atomic::Ordering::Relaxed);
    let used: Vec<(f64, f64)> = servers.iter().map(|s| usage(s.child.id())).collect();
    let cpu: f64 = used.iter().map(|u| u.0).sum();
    let peaks: Vec<String> = used.iter().map(|u| format!("{:.0}", u.1)).collect();
    let completed = results
        .iter()
        .filter(|r| matches!(r, Ok(s) if s == "completed"))
        .count();
    let failures = failures(&results);
    let mut gaps: Vec<Duration> = arrivals
        .lock()
        .unwrap()
        .values()
        .flat_map(|times| times.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>())
        .collect();
    gaps.sort();
    drop(front);
    for mut server in servers {
        let _ = server.child.kill();
        let _ = server.child.wait();
    }
    let database = match o.store {
        Store::Sqlite => "-".to_string(),
        Store::Postgres(_) => format!(
            "{peak_connections} connections, {:.1} commits/turn ({:.1} event appends)",
            commits as f64 / (o.sessions * o.turns) as f64,
            appends as f64 / (o.sessions * o.turns) as f64
        ),
    };
    println!(
        "| {} | {} | {} | {completed}/{} | {:.1}/s | {:.1} ms | {:.1} ms | {} MiB | {:.4} s | {database} | {:.1} s |",
        o.store.label(),
        o.servers,
        o.turns,
        o.sessions,
        completed as f64 / wall.as_secs_f64(),
        percentile(&gaps, 0.5).as_secs_f64() * 1000.0,
        percentile(&gaps, 0.99).as_secs_f64() * 1000.0,
        peaks.join(" / "),
        cpu / o.sessions as f64,
        wall.as_secs_f64(),
    );
    if !failures.is_empty() {
        println!("not completed: {failures:?}");
        std::process::exit(1);
    }
}
