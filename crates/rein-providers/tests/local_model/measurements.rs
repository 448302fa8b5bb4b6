//! Measurements behind the provider's defaults (ignored; see the crate's
//! header for the command). Each prints its figures (BENCHMARKS.md, "The
//! embedded local model") and then fails below a stated floor: a share of
//! the last recorded count (temperature 0 or fixed seeds, so a drop is a
//! change, not luck), or half the last recorded speed on the same machine
//! class (2 cores).

use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use rein_core::{
    AgentEngine, AssistantMessage, CancellationToken, ContentPart, InMemorySessionStore, Message,
    ModelRequest, NullSink, Provider, RunRequest, StreamChunk, ToolCall, ToolResult, ToolSpec,
};
use rein_providers::local::LocalConfig;
use serde_json::{Value, json};

use crate::{
    ReadFile, bash_spec, complete, config, engine_system, list_dir_spec, load, read_file_spec,
    serial, tools,
};

/// Floors under the recorded figures (9/10, 7/10 and 11/20 of 20 with no
/// malformed call; 137 and 23.7 tok/s in release on 2 cores).
const ANSWERS_FLOOR: usize = 8;
const WHOLE_RUNS_FLOOR: usize = 6;
const GRAMMAR_VALID_FLOOR: usize = 9;
const PROMPT_TOKS_FLOOR: f64 = 137.0 / 2.0;
const GEN_TOKS_FLOOR: f64 = 23.7 / 2.0;

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
        temperature: None,
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
        answer_schema: None,
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
        if as_user {
            assert!(
                answered >= ANSWERS_FLOOR,
                "results as user text (the default): {answered}/10 answers use the result, floor {ANSWERS_FLOOR}"
            );
        }
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
        if as_user {
            assert!(
                right >= WHOLE_RUNS_FLOOR,
                "whole runs (the default): {right}/10 right, floor {WHOLE_RUNS_FLOOR}"
            );
        }
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
                temperature: None,
                system: system.clone(),
                messages: vec![Message::user(*prompt)],
                tools: offered.clone(),
                max_output_tokens: Some(120),
                tool_choice: Default::default(),
                single_tool_call: false,
                answer_schema: None,
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
        if grammar {
            // The grammar's promise: no malformed call, and at least the floor valid.
            assert_eq!(invalid, 0, "malformed calls with the grammar on");
            assert!(
                valid >= GRAMMAR_VALID_FLOOR,
                "grammar on: {valid}/20 valid calls, floor {GRAMMAR_VALID_FLOOR}"
            );
        }
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
        temperature: None,
        system: engine_system(&offered),
        messages: vec![Message::user(
            "Write a detailed explanation of how a hash map works, with an example in Rust.",
        )],
        tools: offered,
        max_output_tokens: Some(256),
        tool_choice: Default::default(),
        single_tool_call: false,
        answer_schema: None,
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
    let prompt_rate = usage.input_tokens as f64 / first.as_secs_f64();
    let gen_rate = (usage.output_tokens.saturating_sub(1)) as f64 / gen_secs;
    println!(
        "RESULT prompt {} tokens, first text after {:.2}s ({prompt_rate:.0} prompt tok/s); {} tokens generated at {gen_rate:.1} tok/s",
        usage.input_tokens,
        first.as_secs_f64(),
        usage.output_tokens,
    );
    assert!(
        usage.output_tokens > 100,
        "only {} tokens generated",
        usage.output_tokens
    );
    assert!(
        prompt_rate >= PROMPT_TOKS_FLOOR,
        "prompt {prompt_rate:.0} tok/s, floor {PROMPT_TOKS_FLOOR}"
    );
    assert!(
        gen_rate >= GEN_TOKS_FLOOR,
        "generation {gen_rate:.1} tok/s, floor {GEN_TOKS_FLOOR}"
    );
}
