//! How long an event takes from the server running a session to a client
//! streaming that session from another server (both on one PostgreSQL
//! database, on loopback).
//!
//! ```sh
//! cargo bench -p rein-cli --no-default-features --bench serve_events -- \
//!     [--events 10000] [--pause-us 500] [--fast]
//! ```
//!
//! Steps: start the mock model service (one answer of `--events` text
//! deltas, one every `--pause-us`), a throwaway PostgreSQL cluster (its
//! durable defaults; `--fast` turns fsync, synchronous commit and
//! full-page writes off) and two `rein serve` processes, A and B; prompt
//! the session on A; follow its events from A and from B at once, noting
//! when each event number arrives on each; print the p50, p99 and max of
//! B's arrival minus A's. A's own stream is woken by A's writer right
//! after the append commits, so the difference is the cross-server path:
//! the commit's `NOTIFY`, B's listening connection, B reading the rows and
//! sending them over SSE.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rein_providers::mock_server::{MockResponse, Part};
use serde_json::json;

#[allow(dead_code)]
mod serve_common;

use serve_common::{Bench, chunks, percentile, pg};

struct Options {
    events: usize,
    pause: Duration,
    fast: bool,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let mut o = Options {
        events: 10_000,
        pause: Duration::from_micros(500),
        fast: false,
    };
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--events" => o.events = args[i + 1].parse().expect("--events N"),
            "--pause-us" => {
                o.pause = Duration::from_micros(args[i + 1].parse().expect("--pause-us N"))
            }
            "--fast" => {
                o.fast = true;
                i += 1;
                continue;
            }
            _ => {
                i += 1; // cargo's own flags (--bench)
                continue;
            }
        }
        i += 2;
    }
    o
}

/// When each event number arrived on one stream.
type Arrivals = Arc<Mutex<HashMap<u64, Instant>>>;

/// Follow `base`'s stream of session `id` until `stopped`, noting arrivals.
async fn follow(client: reqwest::Client, base: String, token: String, id: String, seen: Arrivals) {
    let events = client
        .get(format!("{base}/sessions/{id}/events"))
        .header("Authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap();
    let mut stream = events.bytes_stream();
    let mut buffer = String::new();
    while let Some(chunk) = stream.next().await {
        let now = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            if let Some(n) = event.lines().find_map(|l| l.strip_prefix("id: ")) {
                seen.lock().unwrap().insert(n.parse().unwrap(), now);
            }
            if event.contains("\"type\":\"stopped\"") {
                return;
            }
        }
    }
}

fn main() {
    let o = options();
    let durability = if o.fast {
        pg::Durability::Fast
    } else {
        pg::Durability::Durable
    };
    let bench = Bench::start(Some(("serve_events", durability)));
    let (rt, mock) = (&bench.rt, &bench.mock);
    // A title request (no tools) gets a short answer; the prompt gets the
    // long one.
    let (n, pause) = (o.events, o.pause);
    mock.respond_with(Arc::new(move |request| {
        if request.json()["tools"].as_array().is_none_or(Vec::is_empty) {
            return MockResponse::sse(chunks(
                &[json!({"role": "assistant", "content": "T"})],
                "stop",
            ));
        }
        let mut parts = Vec::new();
        for i in 0..n {
            let delta = json!({"role": "assistant", "content": format!("{i} ")});
            // Its first event only: the finish and usage come once, last.
            let whole = String::from_utf8(chunks(&[delta], "stop")).unwrap();
            let first = whole.split("\n\n").next().unwrap();
            parts.push(Part::Bytes(format!("{first}\n\n").into_bytes()));
            parts.push(Part::Pause(pause));
        }
        parts.push(Part::Bytes(chunks(&[], "stop")));
        MockResponse::sse_parts(parts)
    }));
    let a = bench.server(&[]);
    let b = bench.server(&[]);
    let client = reqwest::Client::new();
    let (on_a, on_b): (Arrivals, Arrivals) = (Arc::default(), Arc::default());
    let began = Instant::now();
    rt.block_on(async {
        let created: serde_json::Value = client
            .post(format!("http://{}/sessions", a.addr))
            .header("Authorization", format!("Bearer {}", a.token))
            .body("{}")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = created["id"].as_str().unwrap().to_string();
        let fa = tokio::spawn(follow(
            client.clone(),
            format!("http://{}", a.addr),
            a.token.clone(),
            id.clone(),
            on_a.clone(),
        ));
        let fb = tokio::spawn(follow(
            client.clone(),
            format!("http://{}", b.addr),
            b.token.clone(),
            id.clone(),
            on_b.clone(),
        ));
        tokio::time::sleep(Duration::from_millis(300)).await;
        client
            .post(format!("http://{}/sessions/{id}/prompt", a.addr))
            .header("Authorization", format!("Bearer {}", a.token))
            .body(json!({"text": "talk"}).to_string())
            .send()
            .await
            .unwrap();
        fa.await.unwrap();
        fb.await.unwrap();
    });
    let wall = began.elapsed();
    let (on_a, on_b) = (on_a.lock().unwrap(), on_b.lock().unwrap());
    let mut lags: Vec<Duration> = on_b
        .iter()
        .filter_map(|(id, tb)| on_a.get(id).map(|ta| tb.saturating_duration_since(*ta)))
        .collect();
    lags.sort();
    for mut s in [a, b] {
        let _ = s.child.kill();
        let _ = s.child.wait();
    }
    println!(
        "| {} | {} events on A, {} on B | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} s |",
        if o.fast {
            "PostgreSQL (fast)"
        } else {
            "PostgreSQL (durable)"
        },
        on_a.len(),
        on_b.len(),
        percentile(&lags, 0.5).as_secs_f64() * 1000.0,
        percentile(&lags, 0.99).as_secs_f64() * 1000.0,
        lags.last().copied().unwrap_or_default().as_secs_f64() * 1000.0,
        wall.as_secs_f64(),
    );
}
