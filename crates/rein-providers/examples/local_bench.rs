//! rein's half of the side-by-side benchmark against llama.cpp's own server
//! (`scripts/bench-local.py` runs both halves and prints the table).
//!
//! ```sh
//! cargo run --release -p rein-providers --features local --example local_bench
//! cargo run --release -p rein-providers --features local --example local_bench -- --workload
//! ```
//!
//! Options: `--model PATH`; `--workload` (print the workload and exit);
//! `--single-only` (skip the session, for quick experiments).
//!
//! The workload is defined here, once: `--workload` prints it as JSON (the
//! script replays exactly that against the server), otherwise it is run
//! against the embedded provider and one JSON object of raw results goes to
//! stdout. Derived rates are computed by the script, the same way for both
//! sides.
//!
//! The workload: a warm-up request (not measured), then the same long
//! prompt a few times (prompt processing, time to first token, generation;
//! each repeat starts with a different line so that no cache can serve it),
//! then a 10-turn session that grows like an agent's: each turn appends a
//! tool result (a source file of a few hundred tokens, given as user text)
//! and the model's answer.
//!
//! Model: `--model PATH`, else `REIN_MODEL_PATH`, else the file
//! `scripts/fetch-model.sh` fetches.

use std::path::PathBuf;
use std::time::Instant;

use futures_util::StreamExt;
use rein_core::{
    AssistantMessage, CancellationToken, Message, ModelRequest, Provider, StreamChunk, Usage,
};
use rein_providers::local::{LocalConfig, LocalProvider};
use serde::Serialize;

const MODEL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
const THREADS: usize = 2;
const CONTEXT_SIZE: u32 = 8192;
const SINGLE_REPEATS: usize = 3;
const SINGLE_MAX_TOKENS: u32 = 256;
const SESSION_TURNS: usize = 10;
const SESSION_MAX_TOKENS: u32 = 64;

type BoxError = Box<dyn std::error::Error>;

/// One chat message of the workload (OpenAI shape, so the script can send it
/// as is).
#[derive(Debug, Clone, Serialize)]
struct ChatMessage {
    role: &'static str,
    content: String,
}

/// One request of the workload.
#[derive(Debug, Clone, Serialize)]
struct BenchRequest {
    system: String,
    messages: Vec<ChatMessage>,
    max_tokens: u32,
}

/// The session: each turn sends the history plus the next user message.
#[derive(Debug, Clone, Serialize)]
struct Session {
    system: String,
    user_messages: Vec<String>,
    max_tokens: u32,
}

#[derive(Debug, Clone, Serialize)]
struct Workload {
    threads: usize,
    context_size: u32,
    warmup: BenchRequest,
    single: Vec<BenchRequest>,
    session: Session,
}

/// What one streamed request gave, measured on the client side.
#[derive(Debug, Clone, Serialize)]
struct Measured {
    prompt_tokens: u64,
    cached_tokens: u64,
    generated_tokens: u64,
    /// From the call to the first text delta.
    ttft_s: f64,
    /// From the call to the end of the stream.
    total_s: f64,
    finish: String,
    text: String,
}

#[derive(Debug, Serialize)]
struct SessionResult {
    wall_s: f64,
    turns: Vec<Measured>,
}

/// VmHWM and VmRSS of this process, in KiB.
#[derive(Debug, Serialize)]
struct Memory {
    hwm_kib: u64,
    rss_kib: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    side: &'static str,
    model: String,
    threads: usize,
    context_size: u32,
    load_s: f64,
    memory_before_load: Memory,
    memory_after_load: Memory,
    memory_end: Memory,
    warmup: Measured,
    single: Vec<Measured>,
    session: SessionResult,
}

/// A file of the project as a tool would return it: a few hundred tokens
/// of Rust, different for every `n`.
fn module_source(n: usize) -> String {
    const NAMES: [&str; 12] = [
        "ledger",
        "router",
        "parser",
        "scheduler",
        "journal",
        "registry",
        "throttle",
        "archive",
        "index",
        "mailbox",
        "budget",
        "catalog",
    ];
    let name = NAMES[n % NAMES.len()];
    let kind = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
    let limit = 16 + n * 7;
    format!(
        r#"//! The {name}: keeps at most {limit} entries and evicts the oldest.

use std::collections::{{HashMap, VecDeque}};
use std::time::{{Duration, Instant}};

/// One entry of the {name}.
#[derive(Debug, Clone)]
pub struct Entry {{
    pub key: String,
    pub value: u64,
    pub added: Instant,
}}

/// The {name} itself.
#[derive(Debug, Default)]
pub struct {kind} {{
    entries: HashMap<String, Entry>,
    order: VecDeque<String>,
    evicted: u64,
}}

impl {kind} {{
    pub const LIMIT: usize = {limit};

    /// Insert or replace `key`; returns the entry it evicted, if any.
    pub fn insert(&mut self, key: &str, value: u64) -> Option<Entry> {{
        let entry = Entry {{ key: key.to_string(), value, added: Instant::now() }};
        if self.entries.insert(key.to_string(), entry).is_none() {{
            self.order.push_back(key.to_string());
        }}
        if self.order.len() > Self::LIMIT {{
            let oldest = self.order.pop_front()?;
            self.evicted += 1;
            return self.entries.remove(&oldest);
        }}
        None
    }}

    /// The value of `key` when it is younger than `max_age`.
    pub fn get_fresh(&self, key: &str, max_age: Duration) -> Option<u64> {{
        let entry = self.entries.get(key)?;
        (entry.added.elapsed() <= max_age).then_some(entry.value)
    }}

    /// How many entries were evicted so far.
    pub fn evicted(&self) -> u64 {{
        self.evicted
    }}
}}
"#
    )
}

const AGENT_SYSTEM: &str = "You are a coding agent working in the user's Rust project through \
tools (read_file, list_dir, bash). The harness runs the tools and gives you their results. \
Read carefully, keep track of what each file does, and answer in plain prose, concisely and \
precisely. Do not invent files or functions that you have not seen.";

fn workload() -> Workload {
    let user = |content: String| ChatMessage {
        role: "user",
        content,
    };
    let warmup = BenchRequest {
        system: "You are a helpful assistant.".to_string(),
        messages: vec![user("Say hello in five words.".to_string())],
        max_tokens: 8,
    };
    let big_file = format!(
        "{}\n{}\n{}",
        module_source(0),
        module_source(1),
        module_source(2)
    );
    let single = (1..=SINGLE_REPEATS)
        .map(|i| BenchRequest {
            system: format!("Request {i} of {SINGLE_REPEATS}. {AGENT_SYSTEM}"),
            messages: vec![user(format!(
                "The read_file call for src/store.rs returned:\n\n{big_file}\n\
                 Write a long and detailed walkthrough of this file in plain prose, without \
                 code blocks: for every type and method, explain what it does, how it can fail, \
                 and how you would test it."
            ))],
            max_tokens: SINGLE_MAX_TOKENS,
        })
        .collect();
    let user_messages = (0..SESSION_TURNS)
        .map(|turn| {
            let file = format!("src/module_{turn}.rs");
            let intro = if turn == 0 {
                "I am reviewing the modules of this crate one by one. "
            } else {
                ""
            };
            format!(
                "{intro}The read_file call for {file} returned:\n\n{}\n\
                 Summarise what {file} does in two sentences of plain prose, and say how it \
                 differs from the files before it.",
                module_source(turn + 3)
            )
        })
        .collect();
    Workload {
        threads: THREADS,
        context_size: CONTEXT_SIZE,
        warmup,
        single,
        session: Session {
            system: AGENT_SYSTEM.to_string(),
            user_messages,
            max_tokens: SESSION_MAX_TOKENS,
        },
    }
}

/// VmHWM and VmRSS from /proc/self/status (0 where unreadable).
fn memory() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Memory {
        hwm_kib: field("VmHWM:"),
        rss_kib: field("VmRSS:"),
    }
}

fn to_request(system: &str, messages: &[Message], max_tokens: u32) -> ModelRequest {
    ModelRequest {
        temperature: None,
        system: system.to_string(),
        messages: messages.to_vec(),
        tools: Vec::new(),
        max_output_tokens: Some(max_tokens),
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    }
}

fn bench_request(request: &BenchRequest) -> ModelRequest {
    let messages: Vec<Message> = request
        .messages
        .iter()
        .map(|m| Message::user(m.content.clone()))
        .collect();
    to_request(&request.system, &messages, request.max_tokens)
}

/// Stream one request to its end, timing it from the call.
async fn measure(provider: &LocalProvider, request: &ModelRequest) -> Result<Measured, BoxError> {
    let started = Instant::now();
    let mut stream = provider.stream(request, &CancellationToken::new()).await?;
    let mut first = None;
    let mut text = String::new();
    let mut usage = Usage::default();
    let mut finish = String::new();
    while let Some(item) = stream.next().await {
        match item? {
            StreamChunk::TextDelta(delta) => {
                if first.is_none() && !delta.is_empty() {
                    first = Some(started.elapsed());
                }
                text.push_str(&delta);
            }
            StreamChunk::Usage(u) => usage = u,
            StreamChunk::Done(reason) => finish = format!("{reason:?}"),
            _ => {}
        }
    }
    let total = started.elapsed();
    Ok(Measured {
        prompt_tokens: usage.input_tokens,
        cached_tokens: usage.cached_input_tokens,
        generated_tokens: usage.output_tokens,
        ttft_s: first.unwrap_or(total).as_secs_f64(),
        total_s: total.as_secs_f64(),
        finish,
        text,
    })
}

fn model_path(args: &[String]) -> Result<PathBuf, BoxError> {
    if let Some(i) = args.iter().position(|a| a == "--model") {
        return args
            .get(i + 1)
            .map(PathBuf::from)
            .ok_or_else(|| "--model needs a path".into());
    }
    if let Some(p) = std::env::var_os("REIN_MODEL_PATH") {
        return Ok(PathBuf::from(p));
    }
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    Ok(PathBuf::from(home)
        .join(".cache/rein/models")
        .join(MODEL_FILE))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = workload();
    if args.iter().any(|a| a == "--workload") {
        println!("{}", serde_json::to_string_pretty(&workload)?);
        return Ok(());
    }
    let model = model_path(&args)?;

    let memory_before_load = memory();
    let started = Instant::now();
    let provider = LocalProvider::load(LocalConfig {
        model_path: model.clone(),
        context_size: workload.context_size,
        threads: Some(workload.threads),
        temperature: 0.0,
        ..LocalConfig::default()
    })?;
    let load_s = started.elapsed().as_secs_f64();
    let memory_after_load = memory();

    let warmup = measure(&provider, &bench_request(&workload.warmup)).await?;
    let mut single = Vec::new();
    for request in &workload.single {
        single.push(measure(&provider, &bench_request(request)).await?);
    }

    let session_spec = &workload.session;
    let skip_session = args.iter().any(|a| a == "--single-only");
    let mut history: Vec<Message> = Vec::new();
    let mut turns = Vec::new();
    let session_started = Instant::now();
    for user in session_spec
        .user_messages
        .iter()
        .take(if skip_session { 0 } else { usize::MAX })
    {
        history.push(Message::user(user.clone()));
        let request = to_request(&session_spec.system, &history, session_spec.max_tokens);
        let turn = measure(&provider, &request).await?;
        history.push(Message::Assistant(AssistantMessage::from_text(
            turn.text.clone(),
        )));
        turns.push(turn);
    }
    let wall_s = session_started.elapsed().as_secs_f64();

    let report = Report {
        side: "rein",
        model: model.display().to_string(),
        threads: workload.threads,
        context_size: provider.context_size(),
        load_s,
        memory_before_load,
        memory_after_load,
        memory_end: memory(),
        warmup,
        single,
        session: SessionResult { wall_s, turns },
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
