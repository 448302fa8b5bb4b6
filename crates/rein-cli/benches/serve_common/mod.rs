//! What the `rein serve` benchmarks share: the set-up ([`Bench`]: a
//! runtime, the mock model service, a throwaway PostgreSQL database when
//! asked for, one home and one shared root), servers started against it,
//! nginx in front of several, the mock model's stream, the numbers read
//! from `/proc` and the database's own counts.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use rein_providers::mock_server::MockServer;
use serde_json::{Value, json};

#[path = "../../../rein-store/tests/store/postgres/server.rs"]
pub mod pg;

/// What every run of a serve bench starts from.
pub struct Bench {
    pub rt: tokio::runtime::Runtime,
    pub mock: MockServer,
    /// The PostgreSQL database, when the run uses one.
    pub url: Option<String>,
    home: tempfile::TempDir,
    root: tempfile::TempDir,
}

impl Bench {
    /// The runtime, the mock service and (with `db`: its name and
    /// durability) a fresh PostgreSQL database.
    pub fn start(db: Option<(&str, pg::Durability)>) -> Bench {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        let mock = rt.block_on(MockServer::start()).unwrap();
        let url = db.map(|(name, durability)| {
            rt.block_on(pg::fresh_db_with(name, durability))
                .expect("PostgreSQL")
        });
        Bench {
            rt,
            mock,
            url,
            home: tempfile::tempdir().unwrap(),
            root: tempfile::tempdir().unwrap(),
        }
    }

    /// One more `rein serve` on the bench's store, home and root, with
    /// `extra` arguments.
    pub fn server(&self, extra: &[&str]) -> Server {
        start_server(
            self.home.path(),
            self.root.path(),
            &self.mock.url(),
            self.url.as_deref(),
            extra,
        )
    }

    /// The database's committed transactions so far.
    pub fn commits(&self) -> i64 {
        let Some(url) = &self.url else { return 0 };
        self.rt.block_on(async {
            pg::raw(url)
                .await
                .query_one(
                    "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
                    &[],
                )
                .await
                .unwrap()
                .get(0)
        })
    }

    /// The transactions that appended events, over the whole run: each
    /// stored event row carries the id of the transaction that inserted
    /// it (`xmin`).
    pub fn event_appends(&self) -> i64 {
        let Some(url) = &self.url else { return 0 };
        self.rt.block_on(async {
            pg::raw(url)
                .await
                .query_one("SELECT count(DISTINCT xmin::text) FROM session_events", &[])
                .await
                .unwrap()
                .get(0)
        })
    }

    /// Count the database's connections (other than the counter's own)
    /// every 100 ms until the returned flag is dropped: the most seen.
    pub fn count_connections(&self) -> ConnectionCount {
        let peak = Arc::new(AtomicI64::new(0));
        let Some(url) = self.url.clone() else {
            return ConnectionCount { peak, _stop: None };
        };
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let seen = peak.clone();
        self.rt.spawn(async move {
            let client = pg::raw(&url).await;
            loop {
                let row = client
                    .query_one(
                        "SELECT count(*) FROM pg_stat_activity
                         WHERE datname = current_database() AND pid <> pg_backend_pid()",
                        &[],
                    )
                    .await;
                if let Ok(row) = row {
                    seen.fetch_max(row.get(0), Ordering::Relaxed);
                }
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        });
        ConnectionCount {
            peak,
            _stop: Some(stop),
        }
    }
}

/// The most database connections seen (see [`Bench::count_connections`]).
pub struct ConnectionCount {
    pub peak: Arc<AtomicI64>,
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// nginx running `deploy/nginx/rein.conf` in front of `servers`; stopped
/// with SIGTERM when dropped.
pub struct Front {
    child: std::process::Child,
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Front {
    /// nginx on `port` in front of `servers` (none installed: `None`).
    pub fn start(port: rein_test_support::ports::Handover, servers: &[Server]) -> Option<Front> {
        let bin = rein_test_support::nginx::binary()?;
        let dir = tempfile::tempdir().unwrap();
        let addrs: Vec<String> = servers.iter().map(|s| s.addr.clone()).collect();
        let mut cmd = rein_test_support::nginx::command(&bin, dir.path(), &port, &addrs, 8192);
        let child = cmd.spawn().expect("start nginx");
        let addr = format!("127.0.0.1:{}", port.port());
        // The port was listening before nginx started: connections made
        // now wait for it.
        Some(Front {
            child,
            addr,
            _dir: dir,
        })
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// An OpenAI chat-completions stream of `deltas`, then the finish and usage.
pub fn chunks(deltas: &[Value], finish: &str) -> Vec<u8> {
    let mut out = String::new();
    for d in deltas {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                           "choices": [{"index": 0, "delta": d, "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    let end = json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
                     "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                     "usage": {"prompt_tokens": 200, "completion_tokens": 12, "total_tokens": 212}});
    out.push_str(&format!("data: {end}\n\ndata: [DONE]\n\n"));
    out.into_bytes()
}

/// `rein serve` started against the mock; its pid, address and token.
pub struct Server {
    pub child: std::process::Child,
    pub addr: String,
    pub token: String,
}

fn start_server(
    home: &std::path::Path,
    root: &std::path::Path,
    mock: &str,
    store: Option<&str>,
    extra: &[&str],
) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env("REIN_HOME", home)
        .env("OPENAI_BASE_URL", format!("{mock}/v1"))
        .env("OPENAI_API_KEY", "sk-bench")
        .env_remove("REIN_SERVE_TOKEN")
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--provider",
            "openai",
            "--model",
            "gpt-4o-mini",
        ])
        .arg("--root")
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(url) = store {
        cmd.args(["--store", url]);
    }
    cmd.args(extra);
    let mut child = cmd.spawn().expect("start rein serve");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "rein serve ended: {line}"
        );
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if !line.starts_with("note:") {
                eprintln!("[serve] {line}");
            }
        }
    });
    let token = std::fs::read_to_string(home.join("serve/token"))
        .unwrap()
        .trim()
        .to_string();
    Server { child, addr, token }
}

/// The process's CPU seconds and peak resident memory (MiB).
pub fn usage(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let cpu = (ticks(11) + ticks(12)) / hz;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    (cpu, hwm / 1024.0)
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}
