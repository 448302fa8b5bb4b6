//! The local provider against the real model (Qwen2.5-Coder-0.5B-Instruct,
//! Q4_K_M). The model comes from `REIN_MODEL_PATH`, else the cache where
//! `scripts/fetch-model.sh` puts it; without it these tests fail.
//!
//! Every test is deterministic (greedy sampling, fixed seed), bounded (small
//! output caps, a timeout) and runs alone (one lock), since two models
//! generating at once on a small machine only slow each other down.
//!
//! The `measure_*` tests are ignored: they are the measurements behind the
//! provider's defaults, run by hand with
//! `cargo test --release -p rein-providers --features local --test local_model -- --ignored --nocapture measure`.
#![cfg(feature = "local")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use rein_core::{
    AgentEngine, AssistantMessage, CancellationToken, InMemorySessionStore, Message, ModelProgress,
    ModelRequest, Provider, RunRequest, StopReason, StreamChunk, Tool, ToolAccess, ToolCall,
    ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec,
};
use rein_providers::local::{LocalConfig, LocalProvider};
use serde_json::{Value, json};
use tokio::sync::{Mutex, MutexGuard};

/// The other tests, by subject; they share the helpers of this file.
mod local_model {
    mod limits;
    mod measurements;
    mod tool_calls;
}

const MODEL_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
const CODE_WORD: &str = "QUOKKA-7391";

/// The model file, or a failure saying how to get it.
fn model_path() -> PathBuf {
    if let Some(p) = std::env::var_os("REIN_MODEL_PATH") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "REIN_MODEL_PATH={} does not exist: run scripts/fetch-model.sh",
            p.display()
        );
        return p;
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let p = home.join(".cache/rein/models").join(MODEL_FILE);
    assert!(
        p.is_file(),
        "the local model is missing ({}): run scripts/fetch-model.sh (or set REIN_MODEL_PATH)",
        p.display()
    );
    p
}

/// One real-model test at a time (a failed test does not poison it).
async fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::const_new(());
    LOCK.lock().await
}

fn config() -> LocalConfig {
    LocalConfig {
        model_path: model_path(),
        context_size: 4096,
        max_output_tokens: 200,
        ..LocalConfig::default()
    }
}

fn load(config: LocalConfig) -> LocalProvider {
    LocalProvider::load(config).expect("the model loads")
}

/// Reads a file of the workspace.
struct ReadFile;

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        read_file_spec()
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = args["path"]
            .as_str()
            .ok_or_else(|| ToolError::new("path is required"))?;
        let full = if Path::new(path).is_absolute() {
            PathBuf::from(path)
        } else {
            ctx.workspace.join(path)
        };
        std::fs::read_to_string(&full)
            .map(ToolOutput::ok)
            .map_err(|e| ToolError::new(format!("cannot read {path}: {e}")))
    }
}

fn read_file_spec() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a text file of the project and return its contents.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path of the file, relative to the project root"}},
            "required": ["path"]
        }),
    }
}

fn list_dir_spec() -> ToolSpec {
    ToolSpec {
        name: "list_dir".into(),
        description: "List the files in a directory of the project.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Directory, relative to the project root"}},
            "required": ["path"]
        }),
    }
}

fn bash_spec() -> ToolSpec {
    ToolSpec {
        name: "bash".into(),
        description: "Run a shell command in the project and return its output.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line"}},
            "required": ["command"]
        }),
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![read_file_spec(), list_dir_spec(), bash_spec()]
}

const SYSTEM: &str = "You are a coding agent working in the user's project through tools. \
    Use a tool whenever you need to see a file or run a command; answer concisely when done.";

/// The system prompt the engine gives the model, for `tools`.
fn engine_system(tools: &[ToolSpec]) -> String {
    rein_core::context::system_prompt(&rein_core::context::PromptFacts {
        workspace: Path::new("/work/project"),
        date: "2025-01-01",
        os: "linux",
        tools,
        plan: false,
        agents_md: None,
        lean: false,
        files: None,
    })
}

/// Stream one request to its end: the chunks, or the error that ended it.
async fn collect(
    provider: &LocalProvider,
    request: &ModelRequest,
    cancel: &CancellationToken,
) -> (Vec<StreamChunk>, Option<rein_core::ProviderError>) {
    let mut chunks = Vec::new();
    let mut stream = match provider.stream(request, cancel).await {
        Ok(s) => s,
        Err(e) => return (chunks, Some(e)),
    };
    while let Some(item) = stream.next().await {
        match item {
            Ok(c) => chunks.push(c),
            Err(e) => return (chunks, Some(e)),
        }
    }
    (chunks, None)
}

async fn complete(provider: &LocalProvider, request: &ModelRequest) -> AssistantMessage {
    tokio::time::timeout(
        Duration::from_secs(300),
        provider.complete(request, &CancellationToken::new()),
    )
    .await
    .expect("the answer comes within the timeout")
    .expect("the answer succeeds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_reads_a_file_and_answers_with_its_fact() {
    let _serial = serial().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("secret.txt"),
        format!("The code word is {CODE_WORD}.\n"),
    )
    .unwrap();
    let provider = Arc::new(load(config()));
    let engine = AgentEngine::builder(provider, Arc::new(InMemorySessionStore::new()))
        .workspace(dir.path())
        .tool(Arc::new(ReadFile))
        .max_turns(4)
        .build()
        .unwrap();
    let mut events: Vec<rein_core::Event> = Vec::new();
    let outcome = tokio::time::timeout(
        Duration::from_secs(300),
        engine.run(
            RunRequest::new("Read secret.txt and tell me the code word it contains."),
            CancellationToken::new(),
            &mut events,
        ),
    )
    .await
    .expect("the run ends within the timeout");
    let transcript: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            rein_core::Event::MessageCommitted { message, .. } => Some(format!("{message:?}")),
            _ => None,
        })
        .collect();
    let outcome = (outcome, transcript);
    let (run, _) = &outcome;
    assert_eq!(run.reason, StopReason::Completed, "{outcome:#?}");
    assert!(run.turns >= 2, "a tool call was needed: {outcome:#?}");
    assert!(
        run.final_text.contains(CODE_WORD),
        "the answer uses the file's content: {outcome:#?}"
    );
    assert!(run.usage.cached_input_tokens > 0, "{outcome:#?}");
}

fn first_turn() -> ModelRequest {
    ModelRequest {
        temperature: None,
        system: SYSTEM.into(),
        messages: vec![Message::user("Show me what is in notes.txt.")],
        tools: tools(),
        max_output_tokens: Some(60),
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_turn_evaluates_only_new_tokens() {
    let _serial = serial().await;
    let provider = load(config());
    let mut request = first_turn();
    let first = complete(&provider, &request).await;
    let u1 = first.usage.unwrap();
    assert_eq!(u1.cached_input_tokens, 0, "{u1:?}");
    assert!(u1.input_tokens > 100 && u1.output_tokens > 0, "{u1:?}");

    // The loop appends the answer and the results, and asks again.
    let calls: Vec<ToolCall> = first.tool_calls().cloned().collect();
    request.messages.push(Message::Assistant(first));
    if calls.is_empty() {
        request
            .messages
            .push(Message::user("Thanks. And in todo.txt?"));
    }
    for c in &calls {
        request.messages.push(Message::Tool(ToolResult {
            images: Vec::new(),
            call_id: c.id.clone(),
            name: c.name.clone(),
            output: "buy milk\nfix the flaky test".into(),
            is_error: false,
        }));
    }
    let second = complete(&provider, &request).await;
    let u2 = second.usage.unwrap();
    assert!(
        u2.cached_input_tokens >= u1.input_tokens,
        "the whole first prompt is reused: {u1:?} then {u2:?}"
    );
    // New: the answer as the template renders it (it may differ from what
    // was generated, e.g. a bare call object gets its <tool_call> tags) and
    // the results message.
    assert!(
        u2.input_tokens - u2.cached_input_tokens < u1.output_tokens + 80,
        "only the new tokens are evaluated: {u1:?} then {u2:?}"
    );
}

/// Front ends show how far the model has got: every prompt batch (256
/// tokens) is reported, in order, up to the whole prompt, before any text;
/// then generation, with the tokens so far.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_is_reported_for_every_prompt_batch_then_for_generation() {
    let _serial = serial().await;
    let provider = load(config());
    let filler = "The quick brown fox jumps over the lazy dog. ".repeat(70);
    let request = ModelRequest {
        temperature: None,
        system: SYSTEM.into(),
        messages: vec![Message::user(format!(
            "{filler}\nCount from 1 to 100 in words, one per line."
        ))],
        tools: Vec::new(),
        max_output_tokens: Some(120),
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
    };
    let (chunks, error) = collect(&provider, &request, &CancellationToken::new()).await;
    assert!(error.is_none(), "{error:?}");
    let usage = chunks
        .iter()
        .find_map(|c| match c {
            StreamChunk::Usage(u) => Some(*u),
            _ => None,
        })
        .expect("usage is reported");
    let first_text = chunks
        .iter()
        .position(|c| matches!(c, StreamChunk::TextDelta(_)))
        .expect("the model writes text");
    let mut prompt = Vec::new();
    let mut generating = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        match c {
            StreamChunk::Progress(ModelProgress::Prompt { done, total, .. }) => {
                assert!(
                    i < first_text,
                    "prompt progress after the text began: {chunks:?}"
                );
                assert_eq!(*total, usage.input_tokens, "{c:?}");
                prompt.push(*done);
            }
            StreamChunk::Progress(ModelProgress::Generating { tokens, .. }) => {
                generating.push(*tokens)
            }
            _ => {}
        }
    }
    let batches = usage.input_tokens.div_ceil(256) as usize;
    assert!(batches >= 3, "the prompt spans several batches: {usage:?}");
    assert_eq!(
        prompt.len(),
        batches + 1,
        "a start and every batch: {prompt:?}"
    );
    assert_eq!(prompt.first(), Some(&0));
    assert_eq!(prompt.last(), Some(&usage.input_tokens));
    assert!(prompt.windows(2).all(|w| w[0] < w[1]), "{prompt:?}");
    assert!(!generating.is_empty(), "no generation report in {chunks:?}");
    assert!(generating.windows(2).all(|w| w[0] < w[1]), "{generating:?}");
    assert!(generating.iter().all(|&t| t <= usage.output_tokens));
}
