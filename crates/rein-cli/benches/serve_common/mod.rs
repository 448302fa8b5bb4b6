//! What the `rein serve` benchmarks share: the mock model's stream, a
//! server started against it, and the numbers read from `/proc`.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

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

pub fn start_server(
    home: &std::path::Path,
    root: &std::path::Path,
    mock: &str,
    store: Option<&str>,
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
