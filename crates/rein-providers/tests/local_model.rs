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
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::StreamExt;
use rein_core::{
    AgentEngine, AssistantMessage, CancellationToken, ContentPart, InMemorySessionStore, Message,
    ModelProgress, ModelRequest, NullSink, Provider, ProviderErrorKind, RunRequest, StopReason,
    StreamChunk, Tool, ToolAccess, ToolCall, ToolContext, ToolError, ToolOutput, ToolResult,
    ToolSpec,
};
use rein_providers::local::{LocalConfig, LocalProvider, parse_tool_calls};
use serde_json::{Value, json};
use tokio::sync::{Mutex, MutexGuard};

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
        system: SYSTEM.into(),
        messages: vec![Message::user("Show me what is in notes.txt.")],
        tools: tools(),
        max_output_tokens: Some(60),
        tool_choice: Default::default(),
        single_tool_call: false,
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
        system: SYSTEM.into(),
        messages: vec![Message::user(format!(
            "{filler}\nCount from 1 to 100 in words, one per line."
        ))],
        tools: Vec::new(),
        max_output_tokens: Some(120),
        tool_choice: Default::default(),
        single_tool_call: false,
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_grammar_every_call_parses_and_names_an_offered_tool() {
    let _serial = serial().await;
    let provider = load(config());
    let offered = tools();
    let system = engine_system(&offered);
    // Prompts on which the model, unconstrained, calls tools that do not
    // exist ("Cargo.toml", "grep", "python3") or writes broken calls.
    let prompts = [
        "Show me what is in notes.txt.",
        "Read Cargo.toml and tell me the package name.",
        "Find every TODO in the project with grep.",
        "Which Python version is installed? Run python3 --version.",
        "Read CHANGELOG.md and summarise the latest release.",
    ];
    let mut seen = 0;
    for prompt in prompts {
        let request = ModelRequest {
            system: system.clone(),
            messages: vec![Message::user(prompt)],
            tools: offered.clone(),
            max_output_tokens: Some(80),
            tool_choice: Default::default(),
            single_tool_call: false,
        };
        let answer = complete(&provider, &request).await;
        println!("{prompt}: {:?}", answer.content);
        for call in answer.tool_calls() {
            seen += 1;
            assert!(
                offered.iter().any(|t| t.name == call.name),
                "{prompt}: {call:?}"
            );
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            assert!(args.is_object(), "{prompt}: {call:?}");
        }
        let text = answer.text();
        assert!(
            !text.contains("<tool_call>"),
            "{prompt}: unparsed call in {text:?}"
        );
    }
    assert!(seen > 0, "the model made tool calls");
}

/// The prompts on which the model answers from memory instead of looking
/// ("3", "1000"): with a call required, the first thing it writes is a
/// well-formed call to an offered tool, never text; asked for one call, it
/// writes exactly one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_call_is_always_a_call_to_an_offered_tool() {
    let _serial = serial().await;
    let provider = load(config());
    let offered = tools();
    let system = engine_system(&offered);
    let prompts = [
        "How many rows of data does data.csv have, not counting the header?",
        "What does the function mean() in calc.py return for [1, 2, 3]?",
        "Hello! What can you do?",
    ];
    for (prompt, single) in prompts.iter().flat_map(|p| [(*p, false), (*p, true)]) {
        let request = ModelRequest {
            system: system.clone(),
            messages: vec![Message::user(prompt)],
            tools: offered.clone(),
            max_output_tokens: Some(120),
            tool_choice: rein_core::ToolChoice::Required,
            single_tool_call: single,
        };
        let answer = complete(&provider, &request).await;
        println!("{prompt} (single: {single}): {:?}", answer.content);
        let calls: Vec<_> = answer.tool_calls().collect();
        assert!(
            !calls.is_empty(),
            "{prompt}: no call in {:?}",
            answer.content
        );
        if single {
            assert_eq!(calls.len(), 1, "{prompt}: {calls:?}");
        }
        for call in calls {
            assert!(offered.iter().any(|t| t.name == call.name), "{call:?}");
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            assert!(args.is_object(), "{call:?}");
        }
        assert_eq!(answer.text().trim(), "", "{prompt}: text beside the call");
    }
}

/// A fixed text and its length in Qwen2.5-Coder's vocabulary, measured once
/// with this model file (o200k_base makes it 23 tokens, the four bytes a
/// token estimate 21).
const COUNTED: &str =
    "Qwen's tokenizer splits `fn main() { println!(\"héllo, 世界\"); }` its own way.\n";
const COUNTED_TOKENS: u64 = 25;

/// The prompt tokens the provider reports for one user message.
async fn prompt_tokens(provider: &LocalProvider, text: &str) -> u64 {
    let request = ModelRequest {
        messages: vec![Message::user(text)],
        max_output_tokens: Some(1),
        ..Default::default()
    };
    complete(provider, &request)
        .await
        .usage
        .unwrap()
        .input_tokens
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_counter_uses_the_models_own_vocabulary() {
    let _serial = serial().await;
    let provider = load(config());
    let counter = provider
        .token_counter()
        .expect("the local model counts with its own vocabulary");
    assert!(counter.exact());
    let n = counter.count(COUNTED);
    assert_eq!(n, COUNTED_TOKENS, "measured once with this model");
    assert_eq!(counter.count(COUNTED), n, "counting is deterministic");
    assert_eq!(provider.gguf_counter().tokenize(COUNTED).len() as u64, n);
    // Not an estimate, nor OpenAI's tokenizer.
    let estimate = rein_core::CalibratedEstimator::default();
    assert_ne!(n, rein_core::TokenCounter::count(&estimate, COUNTED));
    let o200k = rein_providers::tokens::openai_counter("gpt-4o").unwrap();
    assert_ne!(n, o200k.count(COUNTED));
    // What the provider bills for the text inside a prompt: the prompt
    // with the text, less the same prompt with an empty message.
    let with = prompt_tokens(&provider, COUNTED).await;
    let without = prompt_tokens(&provider, "").await;
    assert_eq!(with - without, n, "{with} - {without}");
    // A chat-template marker is the one special token it names, as the
    // worker reads it in a prompt.
    assert_eq!(counter.count("<|im_end|>"), 1);
    assert_eq!(counter.count(""), 0);
    // A local model costs nothing.
    let p = provider.pricing().unwrap();
    assert_eq!((p.input, p.cached_input, p.output), (0.0, 0.0, 0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_model_files_are_clear_errors() {
    let _serial = serial().await;
    let dir = tempfile::tempdir().unwrap();
    let err = |path: &Path| {
        let e = LocalProvider::load(LocalConfig {
            model_path: path.to_path_buf(),
            ..LocalConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::Config, "{e:?}");
        assert!(!e.message.contains('\n'), "one line: {}", e.message);
        e.message
    };
    let missing = err(&dir.path().join("missing.gguf"));
    assert!(missing.contains("does not exist"), "{missing}");

    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "just some text, not a model\n").unwrap();
    let foreign = err(&text);
    assert!(foreign.contains("not a GGUF file"), "{foreign}");

    let mut head = vec![0u8; 1024 * 1024];
    let mut f = std::fs::File::open(model_path()).unwrap();
    std::io::Read::read_exact(&mut f, &mut head).unwrap();
    let truncated = dir.path().join("truncated.gguf");
    std::fs::write(&truncated, &head).unwrap();
    let started = Instant::now();
    let broken = err(&truncated);
    assert!(broken.contains("truncated or corrupt"), "{broken}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_the_context_is_refused() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        context_size: 512,
        ..config()
    });
    assert_eq!(provider.capabilities().context_window, Some(512));
    let request = ModelRequest {
        messages: vec![Message::user("lorem ipsum dolor sit amet ".repeat(400))],
        ..Default::default()
    };
    let (chunks, error) = collect(&provider, &request, &CancellationToken::new()).await;
    let error = error.expect("an error");
    assert_eq!(
        error.kind,
        ProviderErrorKind::ContextLengthExceeded,
        "{error:?}"
    );
    assert!(chunks.is_empty());
    // The provider still works afterwards.
    let ok = ModelRequest {
        messages: vec![Message::user("Say hi.")],
        max_output_tokens: Some(5),
        ..Default::default()
    };
    let answer = complete(&provider, &ok).await;
    assert!(answer.usage.unwrap().output_tokens > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_stops_at_the_end_of_the_context() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        context_size: 128,
        max_output_tokens: 1000,
        ..config()
    });
    let request = ModelRequest {
        messages: vec![Message::user("Count from 1 to 500, one number per line.")],
        ..Default::default()
    };
    let answer = complete(&provider, &request).await;
    let usage = answer.usage.unwrap();
    assert_eq!(
        answer.finish,
        Some(rein_core::FinishReason::Length),
        "{answer:?}"
    );
    // llama.cpp rounds the context up to a multiple of 256; the last token
    // sampled is never evaluated.
    let n_ctx = u64::from(provider.context_size());
    assert!(n_ctx < 512, "{n_ctx}");
    assert_eq!(
        usage.input_tokens + usage.output_tokens,
        n_ctx + 1,
        "{usage:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_generation_ends_the_stream_promptly() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        max_output_tokens: 2000,
        ..config()
    });
    let request = ModelRequest {
        messages: vec![Message::user(
            "Write a long, detailed essay about the history of computing.",
        )],
        ..Default::default()
    };
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(&request, &cancel).await.unwrap();
    let mut deltas = 0;
    let cancelled_at = loop {
        let item = tokio::time::timeout(Duration::from_secs(120), stream.next())
            .await
            .expect("text comes")
            .expect("the stream goes on");
        if let Ok(StreamChunk::TextDelta(_)) = item {
            deltas += 1;
            if deltas == 5 {
                cancel.cancel();
                break Instant::now();
            }
        }
    };
    let mut ended_with = None;
    while let Some(item) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream ends promptly")
    {
        if let Err(e) = item {
            ended_with = Some(e.kind);
        }
    }
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "stream ended {:?} after the cancel",
        cancelled_at.elapsed()
    );
    assert_eq!(ended_with, Some(ProviderErrorKind::Cancelled));
    // The next request is served normally.
    let ok = ModelRequest {
        messages: vec![Message::user("Say hi.")],
        max_output_tokens: Some(5),
        ..Default::default()
    };
    assert!(complete(&provider, &ok).await.usage.unwrap().output_tokens > 0);
}

#[test]
fn tool_calls_found_in_model_style_text() {
    // A shape the 0.5B model writes without the grammar.
    let (rest, calls) = parse_tool_calls(
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
        &tools(),
    );
    assert_eq!(rest, "");
    assert_eq!(calls[0].name, "read_file");
}

// ---------------------------------------------------------------------
// Measurements (ignored; see the file's header for the command).

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

/// (file, content, question, expected answer)
const FACT_TASKS: [(&str, &str, &str, &str); 10] = [
    (
        "secret.txt",
        "The code word is QUOKKA-7391.",
        "the code word it contains",
        "QUOKKA-7391",
    ),
    (
        "deploy.md",
        "Deploy with the password TANGO-5521 on the staging host.",
        "the deploy password",
        "TANGO-5521",
    ),
    (
        "server.toml",
        "[server]\nhost = \"0.0.0.0\"\nport = 48213\n",
        "which port the server listens on",
        "48213",
    ),
    (
        "MAINTAINERS",
        "Lead maintainer: Ingrid Bjornstad <ingrid@example.org>\n",
        "who the lead maintainer is",
        "Bjornstad",
    ),
    ("VERSION", "7.3.19\n", "the version number", "7.3.19"),
    (
        "notes.txt",
        "Remember: the build cache lives in /var/cache/zeta-42.\n",
        "where the build cache lives",
        "zeta-42",
    ),
    (
        "colors.json",
        "{\"primary\": \"#7A3E9D\", \"secondary\": \"#FFFFFF\"}",
        "the primary color",
        "7A3E9D",
    ),
    (
        "todo.txt",
        "1. Rewrite the parser in Zig\n2. Ship release 0.9\n",
        "the first item of the list",
        "Zig",
    ),
    (
        "owner.txt",
        "This service is owned by team Pelican.\n",
        "which team owns the service",
        "Pelican",
    ),
    (
        "limits.yaml",
        "max_connections: 1337\ntimeout_s: 30\n",
        "the maximum number of connections",
        "1337",
    ),
];

/// (file, content, question, the file the answer must read next)
const TWO_STEP_TASKS: [(&str, &str, &str, &str); 5] = [
    (
        "index.txt",
        "The deploy password is stored in secrets/deploy.txt.",
        "the deploy password (index.txt says where it is)",
        "secrets/deploy.txt",
    ),
    (
        "README.md",
        "# Config\nAll settings are documented in docs/settings.md.\n",
        "which settings exist (README.md points to the docs)",
        "docs/settings.md",
    ),
    (
        "pointer.txt",
        "See vault/key.txt for the code word.",
        "the code word (pointer.txt says where to look)",
        "vault/key.txt",
    ),
    (
        "Cargo.toml",
        "[workspace]\nmembers = [\"core\"]\n",
        "the version of the core crate (its manifest is core/Cargo.toml)",
        "core/Cargo.toml",
    ),
    (
        "MOVED",
        "This file moved to archive/old_notes.txt",
        "what the notes say (MOVED says where they are)",
        "archive/old_notes.txt",
    ),
];

/// The conversation after a read_file call of `file` that returned
/// `content`.
fn after_call(
    system: &str,
    file: &str,
    content: &str,
    question: &str,
    tools: &[ToolSpec],
) -> ModelRequest {
    ModelRequest {
        system: system.to_string(),
        messages: vec![
            Message::user(format!("Read {file} and tell me {question}.")),
            Message::Assistant(AssistantMessage {
                content: vec![ContentPart::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "read_file".into(),
                    arguments: json!({ "path": file }).to_string(),
                })],
                ..Default::default()
            }),
            Message::Tool(ToolResult {
                images: Vec::new(),
                call_id: "call_1".into(),
                name: "read_file".into(),
                output: content.into(),
                is_error: false,
            }),
        ],
        tools: tools.to_vec(),
        max_output_tokens: Some(80),
        tool_choice: Default::default(),
        single_tool_call: false,
    }
}

/// The two ways of showing tool results to the model, compared on what the
/// model does next: answer from a result that holds the answer; call the
/// next tool when the result only says where to look; and whole agent runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_tool_results_modes() {
    let _serial = serial().await;
    let specs = vec![read_file_spec(), list_dir_spec(), bash_spec()];
    let system = engine_system(&specs);
    let modes: Vec<bool> = match std::env::var("MEASURE_MODES").as_deref() {
        Ok("user") => vec![true],
        Ok("tool") => vec![false],
        _ => vec![false, true],
    };
    for &as_user in &modes {
        let provider = load(LocalConfig {
            tool_results_as_user: as_user,
            ..config()
        });
        let mut answered = 0;
        for (file, content, question, expected) in FACT_TASKS {
            let request = after_call(&system, file, content, question, &specs);
            let answer = complete(&provider, &request).await;
            let ok = answer.text().contains(expected) && !answer.has_tool_calls();
            answered += usize::from(ok);
            println!("as_user={as_user} {file}: ok={ok} {:?}", answer.content);
        }
        let mut went_on = 0;
        for (file, content, question, target) in TWO_STEP_TASKS {
            let request = after_call(&system, file, content, question, &specs);
            let answer = complete(&provider, &request).await;
            let ok = answer
                .tool_calls()
                .any(|c| c.name == "read_file" && c.arguments.contains(target));
            went_on += usize::from(ok);
            println!(
                "as_user={as_user} two-step {file}: ok={ok} {:?}",
                answer.content
            );
        }
        println!(
            "RESULT tool_results_as_user={as_user}: {answered}/10 answers use the result; {went_on}/5 read the file the result points to"
        );
    }
    if std::env::var_os("MEASURE_NO_LOOP").is_some() {
        return;
    }
    // Whole runs: the model must call the tool itself, then answer.
    for &as_user in &modes {
        let provider = Arc::new(load(LocalConfig {
            tool_results_as_user: as_user,
            ..config()
        }));
        let mut right = 0;
        for (file, content, question, expected) in FACT_TASKS {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(file), content).unwrap();
            let engine =
                AgentEngine::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
                    .workspace(dir.path())
                    .tool(Arc::new(ReadFile))
                    .max_turns(4)
                    .build()
                    .unwrap();
            let outcome = engine
                .run(
                    RunRequest::new(format!("Read {file} and tell me {question}.")),
                    CancellationToken::new(),
                    &mut NullSink,
                )
                .await;
            let ok = outcome.final_text.contains(expected);
            right += usize::from(ok);
            println!(
                "loop as_user={as_user} {file}: ok={ok} turns={} {:?}",
                outcome.turns, outcome.final_text
            );
        }
        println!("RESULT whole runs: tool_results_as_user={as_user}: {right}/10 runs answer right");
    }
}

const CALL_PROMPTS: [&str; 20] = [
    "Show me what is in notes.txt.",
    "Which files are in the src directory?",
    "Run the tests with `cargo test`.",
    "Read Cargo.toml and tell me the package name.",
    "What does README.md say about installation?",
    "List the files in the current directory.",
    "Check the git status of the project.",
    "Open src/main.rs and explain what it does.",
    "How many lines does src/lib.rs have? Use wc.",
    "What is in the docs folder?",
    "Print the contents of .gitignore.",
    "Find every TODO in the project with grep.",
    "Show me config/settings.json.",
    "Build the project with `make`.",
    "Which Python version is installed? Run python3 --version.",
    "Read LICENSE and tell me which license it is.",
    "List what is in the tests directory.",
    "Look at package.json and tell me the scripts.",
    "Run `ls -la` in the project root.",
    "Read CHANGELOG.md and summarise the latest release.",
];

/// Whether a call names an offered tool and gives every required argument
/// as a string.
fn call_is_valid(call: &ToolCall, offered: &[ToolSpec]) -> bool {
    let Some(spec) = offered.iter().find(|t| t.name == call.name) else {
        return false;
    };
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.arguments) else {
        return false;
    };
    spec.parameters["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str())
        .all(|r| args.get(r).is_some_and(|v| v.is_string()))
}

/// Rate of valid tool calls on prompts that need one, with and without the
/// grammar, sampling at 0.7 with a different seed per prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_grammar_call_validity() {
    let _serial = serial().await;
    let offered = tools();
    let system = engine_system(&offered);
    for grammar in [false, true] {
        let (mut valid, mut invalid, mut none) = (0, 0, 0);
        for (i, prompt) in CALL_PROMPTS.iter().enumerate() {
            let provider = load(LocalConfig {
                grammar,
                temperature: 0.7,
                seed: 1000 + i as u32,
                ..config()
            });
            let request = ModelRequest {
                system: system.clone(),
                messages: vec![Message::user(*prompt)],
                tools: offered.clone(),
                max_output_tokens: Some(120),
                tool_choice: Default::default(),
                single_tool_call: false,
            };
            let answer = complete(&provider, &request).await;
            let calls: Vec<&ToolCall> = answer.tool_calls().collect();
            let text = answer.text();
            let kind = if !calls.is_empty() && calls.iter().all(|c| call_is_valid(c, &offered)) {
                valid += 1;
                "valid"
            } else if !calls.is_empty()
                || text.contains("<tool_call>")
                || text.contains("\"name\"")
                || text.contains("\"arguments\"")
            {
                invalid += 1;
                "INVALID"
            } else {
                none += 1;
                "no call"
            };
            println!("grammar={grammar} #{i} {kind}: {:?}", answer.content);
        }
        println!(
            "RESULT grammar={grammar}: {valid}/20 valid calls, {invalid} malformed or wrong, {none} answered without a call"
        );
    }
}

/// Prompt evaluation and generation speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_speed() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        max_output_tokens: 256,
        ..config()
    });
    let offered = tools();
    let request = ModelRequest {
        system: engine_system(&offered),
        messages: vec![Message::user(
            "Write a detailed explanation of how a hash map works, with an example in Rust.",
        )],
        tools: offered,
        max_output_tokens: Some(256),
        tool_choice: Default::default(),
        single_tool_call: false,
    };
    let started = Instant::now();
    let mut stream = provider
        .stream(&request, &CancellationToken::new())
        .await
        .unwrap();
    let mut first = None;
    let mut usage = None;
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            StreamChunk::TextDelta(_) if first.is_none() => first = Some(started.elapsed()),
            StreamChunk::Usage(u) => usage = Some(u),
            _ => {}
        }
    }
    let total = started.elapsed();
    let usage = usage.unwrap();
    let first = first.unwrap();
    let gen_secs = (total - first).as_secs_f64();
    println!(
        "RESULT prompt {} tokens, first text after {:.2}s ({:.0} prompt tok/s); {} tokens generated at {:.1} tok/s",
        usage.input_tokens,
        first.as_secs_f64(),
        usage.input_tokens as f64 / first.as_secs_f64(),
        usage.output_tokens,
        (usage.output_tokens.saturating_sub(1)) as f64 / gen_secs
    );
}
