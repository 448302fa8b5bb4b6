//! Fault soak: seeded runs of a 10-turn task over real HTTP against the mock
//! server, which answers each request with a random fault (or two) before
//! the good answer — statuses, refused and dropped connections, streams cut
//! mid-event or between events, silence, malformed events — on all three
//! wire APIs. Every run must end with the right files, every message stored
//! once, and one ledger entry per attempt.
//!
//! `REIN_SOAK_RUNS` (default 200) and `REIN_SOAK_SEED` change the size and
//! the seed; a failure names the run's seed to reproduce it alone.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rein_core::{
    AgentEngine, CallKind, Message, PermissionMode, RunRequest, SessionStore, StopReason,
};
use rein_providers::anthropic::Anthropic;
use rein_providers::http::{HttpOptions, HttpProvider};
use rein_providers::mock_server::{Fault, MockResponse, MockServer};
use rein_providers::openai_chat::OpenAiChat;
use rein_providers::openai_responses::OpenAiResponses;
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Turns per run: nine file writes, then the answer.
const TURNS: usize = 10;

/// The client's idle timeout, which the `Idle` fault must trip and a good
/// answer (served from memory, in milliseconds) never may: the soak runs
/// with the cores to itself (no real model or crash soak beside it), and a
/// good answer gets half a second between two chunks.
const IDLE_TIMEOUT: Duration = Duration::from_millis(500);

/// A small seeded generator (xorshift64*), so a failing run replays exactly.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The wire APIs, and how each streams a `write_file` call and a text answer.
#[derive(Debug, Clone, Copy)]
enum Api {
    Chat,
    Responses,
    Anthropic,
}

fn sse(events: &[Value], named: bool) -> Vec<u8> {
    let mut out = String::new();
    for e in events {
        if named {
            out.push_str(&format!("event: {}\n", e["type"].as_str().unwrap_or("")));
        }
        out.push_str(&format!("data: {e}\n\n"));
    }
    out.into_bytes()
}

impl Api {
    fn protocol(self) -> Arc<dyn WireProtocol> {
        match self {
            Api::Chat => Arc::new(OpenAiChat::new()),
            Api::Responses => Arc::new(OpenAiResponses),
            Api::Anthropic => Arc::new(Anthropic),
        }
    }

    fn write_call(self, id: &str, path: &str, content: &str) -> Vec<u8> {
        let args = json!({"path": path, "content": content}).to_string();
        let (a, b) = args.split_at(args.len() / 2);
        match self {
            Api::Chat => {
                let mut body = sse(
                    &[
                        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "write_file", "arguments": a}}]}}]}),
                        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": b}}]}}]}),
                        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 100, "completion_tokens": 9}}),
                    ],
                    false,
                );
                body.extend_from_slice(b"data: [DONE]\n\n");
                body
            }
            Api::Responses => sse(
                &[
                    json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "write_file", "arguments": ""}}),
                    json!({"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": format!("fc_{id}"), "delta": a}),
                    json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call", "id": format!("fc_{id}"), "call_id": id, "name": "write_file", "arguments": args}}),
                    json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 100, "output_tokens": 9}}}),
                ],
                true,
            ),
            Api::Anthropic => sse(
                &[
                    json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 100, "output_tokens": 1}}}),
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": "write_file", "input": {}}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": a}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": b}}),
                    json!({"type": "content_block_stop", "index": 0}),
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
                    json!({"type": "message_stop"}),
                ],
                true,
            ),
        }
    }

    fn text(self, text: &str) -> Vec<u8> {
        let (a, b) = text.split_at(text.len() / 2);
        match self {
            Api::Chat => {
                let mut body = sse(
                    &[
                        json!({"choices": [{"index": 0, "delta": {"content": a}}]}),
                        json!({"choices": [{"index": 0, "delta": {"content": b}, "finish_reason": "stop"}]}),
                    ],
                    false,
                );
                body.extend_from_slice(b"data: [DONE]\n\n");
                body
            }
            Api::Responses => sse(
                &[
                    json!({"type": "response.output_text.delta", "output_index": 0, "delta": a}),
                    json!({"type": "response.output_text.delta", "output_index": 0, "delta": b}),
                    json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 100, "output_tokens": 5}}}),
                ],
                true,
            ),
            Api::Anthropic => sse(
                &[
                    json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 100, "output_tokens": 1}}}),
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": a}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": b}}),
                    json!({"type": "content_block_stop", "index": 0}),
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
                    json!({"type": "message_stop"}),
                ],
                true,
            ),
        }
    }
}

/// What the soak injected, summed over runs.
#[derive(Default)]
struct Tally {
    faults: BTreeMap<String, u32>,
    attempts: usize,
}

/// Queue one run's responses: per turn up to two faults, then the good one.
fn script(server: &MockServer, api: Api, rng: &mut Rng, tally: &mut Tally) -> usize {
    let mut faults = 0;
    for turn in 1..=TURNS {
        let good = if turn < TURNS {
            api.write_call(
                &format!("call_{turn}"),
                &format!("f{turn}.txt"),
                &format!("file {turn}\n"),
            )
        } else {
            api.text("all files written")
        };
        let n = match rng.below(10) {
            0..=5 => 0,
            6..=8 => 1,
            _ => 2,
        };
        let mut tolerated = false;
        for _ in 0..n {
            let fault = Fault::ALL[rng.below(Fault::ALL.len() as u64) as usize];
            *tally.faults.entry(format!("{fault:?}")).or_default() += 1;
            if matches!((api, fault), (Api::Responses, Fault::Malformed)) {
                // The Responses API skips events that are not JSON: the
                // answer with one in it is still the good answer.
                server.push(fault.response(&good));
                tolerated = true;
                break;
            }
            server.push(fault.response(&good));
            faults += 1;
        }
        if !tolerated {
            server.push(MockResponse::sse(good));
        }
    }
    faults
}

/// One seeded run; returns what went wrong, if anything.
async fn run_once(api: Api, seed: u64, tally: &mut Tally) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let server = MockServer::start().await.map_err(|e| e.to_string())?;
    let faults = script(&server, api, &mut rng, tally);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let work = dir.path().join("work");
    std::fs::create_dir(&work).map_err(|e| e.to_string())?;
    let store = Arc::new(
        rein_store::SqliteStore::open(&dir.path().join("sessions.db"))
            .map_err(|e| e.to_string())?,
    );
    let endpoint = EndpointConfig {
        base_url: server.url(),
        api_key: Some("k".into()),
        model: "soak-model".into(),
        ..Default::default()
    };
    let options = HttpOptions {
        idle_timeout: IDLE_TIMEOUT,
        connect_timeout: Duration::from_secs(2),
        context_window: Some(1_000_000),
    };
    let provider =
        HttpProvider::new("soak", api.protocol(), endpoint, options).map_err(|e| e.to_string())?;
    let engine = AgentEngine::builder(Arc::new(provider), store.clone())
        .workspace(&work)
        .tools(rein_tools::builtin_tools())
        .mode(PermissionMode::Auto)
        .provider_retries(4)
        .retry_base_delay(Duration::from_millis(1))
        .build()
        .map_err(|e| e.to_string())?;
    let mut events = Vec::new();
    let outcome = engine
        .run(
            RunRequest::new("write the files"),
            CancellationToken::new(),
            &mut events,
        )
        .await;
    if outcome.reason != StopReason::Completed || outcome.final_text != "all files written" {
        return Err(format!(
            "run ended {:?}: {:?}",
            outcome.reason, outcome.error
        ));
    }
    for turn in 1..TURNS {
        let got = std::fs::read_to_string(work.join(format!("f{turn}.txt"))).unwrap_or_default();
        if got != format!("file {turn}\n") {
            return Err(format!("f{turn}.txt holds {got:?}"));
        }
    }
    let id = outcome.session_id.clone().unwrap_or_default();
    check_messages(&store.messages(&id).await.map_err(|e| e.to_string())?)?;
    let (ledger, _) = store.ledger(&id).await.map_err(|e| e.to_string())?;
    let turns = ledger
        .iter()
        .filter(|e| e.kind == CallKind::Turn && e.ok)
        .count();
    if ledger.len() != server.served() || server.queued() != 0 || turns != TURNS {
        return Err(format!(
            "ledger has {} entries ({turns} good turns) for {} attempts ({faults} faults); {} responses left",
            ledger.len(),
            server.served(),
            server.queued()
        ));
    }
    tally.attempts += ledger.len();
    Ok(())
}

/// Each message once: one prompt, one answer per turn, one result per call.
fn check_messages(stored: &[Message]) -> Result<(), String> {
    let mut calls = Vec::new();
    let mut results = HashSet::new();
    let (mut users, mut answers) = (0, 0);
    for m in stored {
        match m {
            Message::User { .. } => users += 1,
            Message::Assistant(a) => {
                answers += 1;
                calls.extend(a.tool_calls().map(|c| c.id.clone()));
            }
            Message::Tool(r) if !results.insert(r.call_id.clone()) || r.is_error => {
                return Err(format!(
                    "result of {} duplicated or failed: {}",
                    r.call_id, r.output
                ));
            }
            _ => {}
        }
    }
    let unique: HashSet<_> = calls.iter().cloned().collect();
    if users != 1 || answers != TURNS || calls.len() != TURNS - 1 || unique != results {
        return Err(format!(
            "{users} prompts, {answers} answers, calls {calls:?}, results {results:?}"
        ));
    }
    Ok(())
}

#[test]
fn runs_under_random_faults_on_every_wire_api_complete_with_each_message_once() {
    let runs = super::support::env_number("REIN_SOAK_RUNS", 200);
    let base = super::support::env_number("REIN_SOAK_SEED", 12);
    let _cores = super::support::quiet_cpu();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for i in 0..runs {
        let seed = base + i;
        let api = [Api::Chat, Api::Responses, Api::Anthropic][(seed % 3) as usize];
        if let Err(why) = rt.block_on(run_once(api, seed, &mut tally)) {
            failures.push(format!("seed {seed} ({api:?}): {why}"));
        }
    }
    let injected: u32 = tally.faults.values().sum();
    eprintln!(
        "fault soak: {runs} runs, {injected} faults {:?}, {} attempts, {:.1} s",
        tally.faults,
        tally.attempts,
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} failed runs:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        tally.faults.len() >= 12,
        "every kind of fault was injected: {:?}",
        tally.faults
    );
}
