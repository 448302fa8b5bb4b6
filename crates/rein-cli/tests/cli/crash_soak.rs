//! Crash soak: `rein exec` killed with SIGKILL at random points of a
//! 10-turn task (while the answer streams, while a tool runs, while a
//! message is committed), each time followed by `rein exec --last` run to
//! completion. After every pair the files are right, every tool call in the
//! session has exactly one result and none is stored twice, and SQLite's
//! `integrity_check` passes on the sessions database.
//!
//! The "model" is the mock server speaking OpenAI Chat over real HTTP: it
//! looks at the workspace and asks for the first file that is missing or
//! wrong, so a resumed run carries on from wherever the killed one stopped.
//! `REIN_CRASH_RUNS` (default 100) and `REIN_CRASH_SEED` change the size and
//! the seed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_core::{Message, ToolResult};
use rein_providers::mock_server::{MockResponse, Part};
use serde_json::{Value, json};

use super::support::*;

/// Files the task writes; the tenth turn is the answer.
const FILES: u32 = 9;
/// A pause between the events of a streamed answer, so that kills land
/// inside streams too.
const PAUSE: Duration = Duration::from_millis(15);

fn content_of(i: u32) -> String {
    format!("file {i}\n")
}

/// The first file of the task that is missing or wrong.
fn next_missing(ws: &Path) -> Option<u32> {
    (1..=FILES).find(|i| {
        std::fs::read_to_string(ws.join(format!("f{i}.txt"))).ok() != Some(content_of(*i))
    })
}

fn chunk(delta: Value, finish: Option<&str>) -> Vec<u8> {
    let body = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                      "usage": finish.map(|_| json!({"prompt_tokens": 100, "completion_tokens": 9}))});
    format!("data: {body}\n\n").into_bytes()
}

/// An answer streamed in three pieces with pauses: a tool call whose
/// arguments arrive in two halves, or a text.
fn streamed(first: Vec<u8>, second: Vec<u8>, finish: &str) -> MockResponse {
    let mut last = chunk(json!({}), Some(finish));
    last.extend_from_slice(b"data: [DONE]\n\n");
    MockResponse::sse_parts(vec![
        Part::Bytes(first),
        Part::Pause(PAUSE),
        Part::Bytes(second),
        Part::Pause(PAUSE),
        Part::Bytes(last),
    ])
}

/// The model: odd files by `write_file`, even ones by a shell command that
/// takes a moment (a window to be killed in), then the answer.
fn answer(ws: &Path, id: u64) -> MockResponse {
    let Some(i) = next_missing(ws) else {
        return streamed(
            chunk(json!({"content": "All nine "}), None),
            chunk(json!({"content": "files are written."}), None),
            "stop",
        );
    };
    let (name, args) = if i % 2 == 1 {
        (
            "write_file",
            json!({"path": format!("f{i}.txt"), "content": content_of(i)}),
        )
    } else {
        let cmd = format!("sleep 0.05; printf 'file {i}\\n' > f{i}.txt");
        ("bash", json!({"command": cmd}))
    };
    let args = args.to_string();
    let (a, b) = args.split_at(args.len() / 2);
    let call_id = format!("call_{id}");
    streamed(
        chunk(
            json!({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": a}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": b}}]}),
            None,
        ),
        "tool_calls",
    )
}

/// When a round's SIGKILL is sent.
#[derive(Clone, Copy)]
enum Kill {
    /// This long after the start.
    After(Duration),
    /// As soon as the run prints an event of one of these types.
    OnEvent(&'static [&'static str]),
}

/// Read the child's events as they come and SIGKILL it at the first of
/// one of `types`; everything it printed.
fn kill_on_event(child: &mut std::process::Child, types: &[&str]) -> String {
    use std::io::{BufRead, Read};
    let mut out = child.stdout.take().unwrap();
    let mut reader = std::io::BufReader::new(&mut out);
    let mut printed = String::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        printed.push_str(&line);
        let event = serde_json::from_str::<Value>(&line).unwrap_or(Value::Null);
        line.clear();
        if types.contains(&event["type"].as_str().unwrap_or("")) {
            let _ = child.kill(); // SIGKILL
            break;
        }
    }
    let _ = reader.read_to_string(&mut printed);
    printed
}

/// Where the killed run was, from the last event it printed.
fn phase(stdout: &str) -> &'static str {
    let last = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok());
    match last.as_ref().and_then(|e| e["type"].as_str()) {
        None => "starting",
        Some("text_delta" | "turn_started" | "reasoning_delta") => "streaming",
        Some("tool_started" | "permission_denied") => "tool running",
        Some("message_committed" | "tool_finished") => "committing",
        Some("stopped") => "finished",
        Some(_) => "between steps",
    }
}

/// Every tool call of the session has exactly one result after it, and no
/// message is stored twice.
fn check_transcript(messages: &[Message], run: u64) {
    let mut calls: HashMap<String, usize> = HashMap::new();
    let mut results: HashMap<String, usize> = HashMap::new();
    for (index, m) in messages.iter().enumerate() {
        match m {
            Message::Assistant(a) => {
                for c in a.tool_calls() {
                    let earlier = calls.insert(c.id.clone(), index);
                    assert!(earlier.is_none(), "run {run}: call {} stored twice", c.id);
                }
            }
            Message::Tool(ToolResult { call_id, .. }) => {
                let Some(at) = calls.get(call_id) else {
                    panic!("run {run}: result of {call_id} has no call before it");
                };
                assert!(*at < index);
                let earlier = results.insert(call_id.clone(), index);
                assert!(earlier.is_none(), "run {run}: {call_id} has two results");
            }
            _ => {}
        }
    }
    for id in calls.keys() {
        assert!(
            results.contains_key(id),
            "run {run}: call {id} has no result"
        );
    }
}

fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

struct Soak {
    env: Env,
    url: String,
    /// The workspace of the current run (the mock reads it to answer).
    workspace: Arc<Mutex<PathBuf>>,
}

impl Soak {
    fn exec(&self, ws: &Path, extra: &[&str], prompt: &str) -> std::process::Command {
        let mut cmd = self.env.command();
        cmd.current_dir(ws)
            .env("OPENAI_BASE_URL", format!("{}/v1", self.url))
            .env("OPENAI_API_KEY", "sk-crash-soak")
            .args(["exec", "--json", "--provider", "openai", "--mode", "auto"])
            .args(extra)
            .arg(prompt)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd
    }

    /// How long one run of the task takes when nothing kills it.
    fn whole_run(&self) -> Duration {
        let ws = self.env.ws.path().join("whole");
        std::fs::create_dir_all(&ws).unwrap();
        *self.workspace.lock().unwrap() = ws.clone();
        let started = std::time::Instant::now();
        let out = self
            .exec(&ws, &[], "Write f1.txt to f9.txt.")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        started.elapsed()
    }

    /// One kill and the run that finishes the task; returns where the kill
    /// landed.
    fn round(&self, run: u64, kill: Kill) -> &'static str {
        let ws = self.env.ws.path().join(format!("ws{run}"));
        std::fs::create_dir_all(&ws).unwrap();
        *self.workspace.lock().unwrap() = ws.clone();
        let prompt = "Write f1.txt to f9.txt.";
        let mut child = self.exec(&ws, &[], prompt).spawn().unwrap();
        let printed = match kill {
            Kill::After(delay) => {
                std::thread::sleep(delay);
                let _ = child.kill(); // SIGKILL
                String::new()
            }
            Kill::OnEvent(types) => kill_on_event(&mut child, types),
        };
        let killed = child.wait_with_output().unwrap();
        let printed = printed + &stdout(&killed);
        let landed = phase(&printed);

        let mut resumed = self.exec(&ws, &["--last"], "go on").output().unwrap();
        if resumed.status.code() != Some(0) && !printed.contains("run_started") {
            // Killed before its session existed: nothing to resume.
            resumed = self.exec(&ws, &[], prompt).output().unwrap();
        }
        let events = json_lines(&resumed);
        let last = events.last().unwrap_or(&Value::Null);
        assert_eq!(
            last["reason"],
            "completed",
            "run {run} (killed while {landed}):\n{}\n{}",
            stdout(&resumed),
            stderr(&resumed)
        );
        assert_eq!(next_missing(&ws), None, "run {run}: files not all written");
        let id = session_id(&events);
        let messages: Vec<Message> = stored(&self.env, &id)
            .into_iter()
            .map(|m| serde_json::from_value(m).unwrap())
            .collect();
        check_transcript(&messages, run);
        landed
    }
}

#[test]
fn kill_9_at_random_points_then_last_finishes_with_a_sound_database() {
    let runs = env_number("REIN_CRASH_RUNS", 100);
    let seed = env_number("REIN_CRASH_SEED", 0xC0FFEE);
    let _cores = busy_cpu();
    let (_rt, server) = mock_server();
    let workspace = Arc::new(Mutex::new(PathBuf::new()));
    let ids = Arc::new(AtomicU64::new(1));
    {
        let workspace = workspace.clone();
        server.respond_with(Arc::new(move |_| {
            let ws = workspace.lock().unwrap().clone();
            answer(&ws, ids.fetch_add(1, Ordering::Relaxed))
        }));
    }
    let soak = Soak {
        env: Env::new(),
        url: server.url(),
        workspace,
    };
    // The kills are spread over a whole run's time as this machine takes
    // it now (a loaded machine takes longer to start and to stream).
    let span = soak
        .whole_run()
        .mul_f64(1.2)
        .max(Duration::from_millis(1_200));
    let mut phases: BTreeMap<&str, u32> = BTreeMap::new();
    let mut state = seed | 1;
    for run in 0..runs {
        // xorshift: the kill falls anywhere in a whole run's time.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let delay = Duration::from_millis(state % span.as_millis() as u64);
        *phases
            .entry(soak.round(run, Kill::After(delay)))
            .or_default() += 1;
        if run % 10 == 9 || run + 1 == runs {
            let db = soak.env.home.path().join("sessions.db");
            assert_eq!(integrity(&db), "ok", "after run {run}");
        }
    }
    eprintln!(
        "crash soak: {runs} kills over {span:?} (seed {seed}), landed while {phases:?}; {} model requests",
        server.served()
    );
    // A point the random kills missed (a commit is over in a moment on a
    // quiet machine) is aimed at: killed on the event that starts it.
    let aimed: [(&str, &'static [&'static str]); 3] = [
        ("streaming", &["turn_started", "text_delta"]),
        ("tool running", &["tool_started"]),
        ("committing", &["message_committed", "tool_finished"]),
    ];
    let mut run = runs;
    for (p, types) in aimed {
        for _ in 0..5 {
            if runs < 20 || phases.get(p).copied().unwrap_or(0) > 0 {
                break;
            }
            *phases
                .entry(soak.round(run, Kill::OnEvent(types)))
                .or_default() += 1;
            run += 1;
        }
    }
    if run > runs {
        eprintln!("crash soak: {} aimed kills, now {phases:?}", run - runs);
    }
    let db = soak.env.home.path().join("sessions.db");
    assert_eq!(integrity(&db), "ok", "after the aimed runs");
    // Every kind of point was hit: a soak that only killed idle processes
    // would prove nothing.
    for p in ["streaming", "tool running", "committing"] {
        assert!(
            phases.get(p).copied().unwrap_or(0) > 0 || runs < 20,
            "no kill landed while {p}: {phases:?}"
        );
    }
}
