//! Context management inside whole runs: compaction, budgets, the loop
//! guard, the cost ledger, big outputs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rein_core::compaction::CompactionConfig;
use rein_core::*;
use serde_json::{Value, json};

use super::support::*;

/// Writes a "file" (records the path) and returns a sizeable output.
struct Edit;

#[async_trait]
impl Tool for Edit {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: "edits".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}, "required": ["path"]}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Write
    }
    /// The file it writes, which the task ledger lists.
    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        Assessment {
            writes: vec![ctx.workspace.join(args["path"].as_str().unwrap_or(""))],
            ..Assessment::default()
        }
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let n = args["n"].as_u64().unwrap_or(0);
        Ok(ToolOutput::ok(format!(
            "edited {} (step {n})\n{}",
            args["path"].as_str().unwrap(),
            "context line\n".repeat(40)
        )))
    }
}

/// Sets the session's todo list.
struct Todos;

#[async_trait]
impl Tool for Todos {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todos".into(),
            description: "todos".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let todos = vec![
            Todo {
                id: "1".into(),
                content: "rewrite the parser".into(),
                status: TodoStatus::InProgress,
            },
            Todo {
                id: "2".into(),
                content: "run the tests".into(),
                status: TodoStatus::Pending,
            },
        ];
        ctx.store.set_todos(&ctx.session_id, &todos).await.unwrap();
        Ok(ToolOutput::ok("saved"))
    }
}

fn edit_step(i: usize) -> Step {
    Ok(calls(&[(
        &format!("e{i}"),
        "edit",
        json!({"path": format!("src/f{}.rs", i % 7), "n": i}),
    )]))
}

fn long_task(turns: usize) -> Vec<Step> {
    let mut steps = vec![Ok(calls(&[("t0", "todos", json!({}))]))];
    steps.extend((1..turns).map(edit_step));
    steps.push(Ok(text("all done")));
    steps
}

fn provider(steps: Vec<Step>, window: u64) -> Arc<Scripted> {
    let mut p = Scripted::build(steps);
    p.window = window;
    Arc::new(p)
}

fn with_compaction(b: AgentEngineBuilder) -> AgentEngineBuilder {
    b.tool(Arc::new(Edit))
        .tool(Arc::new(Todos))
        .compaction(CompactionConfig::default())
        .max_turns(1000)
}

/// Every tool call in a request has exactly one result right after its
/// message, and every result has its call.
fn assert_paired(req: &ModelRequest) {
    let mut open: HashSet<String> = HashSet::new();
    for m in &req.messages {
        match m {
            Message::Assistant(a) => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                open = a.tool_calls().map(|c| c.id.clone()).collect();
            }
            Message::Tool(r) => assert!(open.remove(&r.call_id), "orphan result {}", r.call_id),
            Message::User { .. } | Message::System { .. } => {
                assert!(open.is_empty(), "calls without results: {open:?}")
            }
        }
    }
}

#[tokio::test]
async fn a_200_turn_task_compacts_several_times_and_keeps_its_head() {
    let instruction = "Rewrite the parser module.\nKeep the public API unchanged.";
    let h = harness(provider(long_task(200), 4000), with_compaction);
    let (outcome, events) = h.run(RunRequest::new(instruction)).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.turns, 201);

    let compactions: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Compaction { .. }))
        .collect();
    assert!(
        compactions.len() >= 3,
        "only {} compactions",
        compactions.len()
    );
    for c in &compactions {
        let Event::Compaction {
            summarized,
            tokens_before,
            tokens_after,
            ..
        } = c
        else {
            unreachable!()
        };
        assert!(*summarized);
        assert!(tokens_after < tokens_before);
    }
    // One summary per crossing, never one per turn.
    assert_eq!(
        *h.provider.summaries.lock().unwrap() as usize,
        compactions.len()
    );

    let requests = h.provider.requests();
    let mut after_compaction = 0;
    for req in &requests {
        assert_paired(req);
        let first = match req.messages.first() {
            Some(Message::User { content }) => content.clone(),
            other => panic!("first message {other:?}"),
        };
        if first.starts_with(compaction::SUMMARY_MARKER) {
            after_compaction += 1;
            // The latest instruction verbatim, the todos, the files changed.
            assert!(
                first.contains("> Rewrite the parser module.\n> Keep the public API unchanged.")
            );
            assert!(first.contains("rewrite the parser (1)"));
            assert!(first.contains("- src/f3.rs: edit at turn"));
            // Later summaries build on the earlier ones.
            assert!(first.contains("## Summary"));
        }
    }
    assert!(after_compaction > 100, "{after_compaction}");
    // Nothing is lost from the store.
    let stored = h.stored(&outcome).await;
    assert_eq!(stored.len(), 1 + 200 * 2 + 1);
    let id = outcome.session_id.clone().unwrap();
    // What /context counts is what the next request sends: the latest
    // summary and what followed it, not the whole stored transcript.
    let sent = h.engine.model_messages(&id).await.unwrap();
    assert!(
        sent.len() < stored.len() / 4,
        "{} of {}",
        sent.len(),
        stored.len()
    );
    assert!(
        matches!(&sent[0], Message::User { content } if content.starts_with(compaction::SUMMARY_MARKER))
    );
    let fixed = h.engine.fixed_tokens(PermissionMode::Default);
    assert!(
        fixed.system_prompt > 0 && fixed.tools > 0 && fixed.tool_count > 0,
        "{fixed:?}"
    );
    let records = h.store.compactions(&id).await.unwrap();
    assert_eq!(records.len(), compactions.len());
    assert!(records.windows(2).all(|w| w[0].upto_seq < w[1].upto_seq));
}

#[tokio::test]
async fn a_resumed_session_starts_from_its_last_compaction() {
    let mut steps = long_task(40);
    steps.push(Ok(text("resumed answer")));
    let h = harness(provider(steps, 3000), with_compaction);
    let (first, _) = h.run(RunRequest::new("do the long thing")).await;
    assert_eq!(first.reason, StopReason::Completed);
    let id = first.session_id.clone().unwrap();
    let records = h.store.compactions(&id).await.unwrap();
    assert!(!records.is_empty());
    let last = records.last().unwrap();
    let (second, _) = h
        .run(RunRequest {
            prompt: "and now the docs".into(),
            resume: Some(id.clone()),
            mode: None,
            control: None,
        })
        .await;
    assert_eq!(second.reason, StopReason::Completed);
    let req = h.provider.requests().last().unwrap().clone();
    assert_eq!(req.messages[0], last.summary);
    let stored = h.store.messages(&id).await.unwrap();
    // The summary, then every stored message after it but the final answer.
    assert_eq!(
        req.messages.len(),
        1 + stored.len() - last.upto_seq as usize - 1
    );
    assert_paired(&req);
}

#[tokio::test]
async fn a_failed_summary_falls_back_to_dropping_turns_and_says_so() {
    let mut p = Scripted::build(long_task(30));
    // Small: the scripted usage teaches the estimator about 12 characters a
    // token.
    p.window = 1500;
    p.summary_reply = Some(Ok("   ".into()));
    let h = harness(Arc::new(p), with_compaction);
    let (outcome, events) = h.run(RunRequest::new("task")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let notes: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Compaction {
                summarized: false,
                note,
                ..
            } => note.clone(),
            _ => None,
        })
        .collect();
    assert!(!notes.is_empty());
    assert!(notes[0].contains("empty"), "{}", notes[0]);
    for req in h.provider.requests() {
        assert_paired(&req);
    }
    // The ledger is still in the request after a fallback.
    let last = h.provider.requests().last().unwrap().clone();
    let Message::User { content } = &last.messages[0] else {
        panic!()
    };
    assert!(content.contains("dropped without a summary"));
    assert!(content.contains("> task"));
}

#[tokio::test]
async fn a_context_length_error_compacts_and_retries_the_turn_once() {
    let mut steps = long_task(8);
    let last = steps.pop().unwrap();
    steps.push(Err(ProviderError::new(
        ProviderErrorKind::ContextLengthExceeded,
        "prompt is too long: 250000 tokens > 200000 maximum",
    )));
    steps.push(last);
    // A big window: only the error makes it compact.
    let h = harness(provider(steps, 1_000_000), with_compaction);
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{:?}", outcome.error);
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Compaction { reason, .. } => Some(format!("{reason:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, ["ContextLengthExceeded"]);
    let retried = h.provider.requests().last().unwrap().clone();
    assert!(
        matches!(&retried.messages[0], Message::User { content } if content.starts_with(compaction::SUMMARY_MARKER))
    );
}

#[tokio::test]
async fn the_token_budget_stops_the_run_after_the_current_tools() {
    let h = harness(provider(long_task(20), 1_000_000), |b| {
        with_compaction(b).max_tokens(40)
    });
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    // Each turn reports 15 tokens: the third crosses 40.
    assert_eq!(outcome.reason, StopReason::MaxTokens);
    assert_eq!(outcome.turns, 3);
    assert_eq!(
        outcome.totals.input_tokens + outcome.totals.output_tokens,
        45
    );
    // The last turn's calls got their results before the stop.
    assert_paired(&ModelRequest {
        messages: h.stored(&outcome).await,
        ..Default::default()
    });
}

#[tokio::test]
async fn the_cost_budget_stops_the_run_and_the_ledger_sums_match() {
    let mut p = Scripted::build(long_task(20));
    p.window = 1_000_000;
    p.pricing = Some(Pricing {
        input: 1000.0,
        cached_input: 100.0,
        output: 2000.0,
    });
    let h = harness(Arc::new(p), |b| with_compaction(b).max_cost_usd(0.05));
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    // A turn costs 10 * 0.001 + 5 * 0.002 = 0.02 dollars.
    assert_eq!(outcome.reason, StopReason::MaxCost);
    assert_eq!(outcome.turns, 3);
    let id = outcome.session_id.clone().unwrap();
    let (entries, unreadable) = h.store.ledger(&id).await.unwrap();
    assert_eq!(unreadable, 0);
    assert_eq!(entries.len(), 3);
    let sum: f64 = entries.iter().map(|e| e.cost_usd.unwrap()).sum();
    assert!((sum - 0.06).abs() < 1e-9, "{sum}");
    assert_eq!(LedgerTotals::of(&entries), outcome.totals);
    match events.last().unwrap() {
        Event::Stopped { totals, reason, .. } => {
            assert_eq!(*reason, StopReason::MaxCost);
            assert_eq!(*totals, outcome.totals);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn the_wall_time_budget_stops_the_run() {
    let steps: Vec<Step> = (0..10)
        .map(|i| {
            Ok(calls(&[(
                &format!("s{i}"),
                "sleep",
                json!({"ms": 1000, "label": format!("{i}")}),
            )]))
        })
        .collect();
    let h = harness(Scripted::new(steps), |b| {
        b.max_wall_time(Duration::from_millis(2500))
    });
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::MaxWallTime);
    assert!(outcome.turns <= 4, "{}", outcome.turns);
}

#[tokio::test]
async fn the_same_call_gets_a_reminder_then_stops_the_run_for_repetition() {
    let same = || {
        Ok(calls(&[(
            "x",
            "sleep",
            json!({"ms": 1, "label": "nothing new"}),
        )]))
    };
    let h = harness(
        Scripted::new(vec![same(), same(), same(), same(), same()]),
        |b| b,
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Repetition);
    assert_eq!(outcome.turns, 4);
    let results = tool_results(&h.stored(&outcome).await);
    assert_eq!(results.len(), 4);
    assert!(results[2].output.contains("exact call 3 times in a row"));
    assert!(results[3].output.contains("not run"));
}

#[tokio::test]
async fn todo_changes_are_reported_as_events() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("t", "todos", json!({}))])),
            Ok(text("ok")),
        ]),
        |b| b.tool(Arc::new(Todos)),
    );
    let (_, events) = h.run(RunRequest::new("go")).await;
    let updates: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::TodosUpdated { .. }))
        .collect();
    assert_eq!(updates.len(), 1);
}

/// The todo list is announced when the call that changed it ends, not
/// after the slowest call of its round.
#[tokio::test]
async fn todo_changes_are_reported_before_a_slower_call_of_the_same_round_ends() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[
                ("slow", "sleep", json!({"ms": 400, "label": "slow"})),
                ("t", "todos", json!({})),
            ])),
            Ok(text("ok")),
        ]),
        |b| b.tool(Arc::new(Todos)),
    );
    let (_, events) = h.run(RunRequest::new("go")).await;
    let kinds = kinds(&events);
    let update = kinds.iter().position(|k| k == "todos_updated").unwrap();
    let slow_done = events
        .iter()
        .position(|e| matches!(e, Event::ToolFinished { call_id, .. } if call_id == "slow"))
        .unwrap();
    assert!(update < slow_done, "{kinds:?}");
}

/// Saves outputs under a temp dir.
struct Spill(PathBuf, Mutex<u32>);

impl OutputSpill for Spill {
    fn dir(&self, session_id: &str) -> PathBuf {
        self.0.join(session_id)
    }
    fn save(&self, session_id: &str, call_id: &str, content: &str) -> Result<PathBuf, SpillError> {
        *self.1.lock().unwrap() += 1;
        let dir = self.dir(session_id);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{call_id}.txt"));
        std::fs::write(&path, content).unwrap();
        Ok(path)
    }
}

/// Returns a big output, and the read roots it was given.
struct Big(Arc<Mutex<Vec<PathBuf>>>);

#[async_trait]
impl Tool for Big {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "big".into(),
            description: "big".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }
    async fn call(&self, _args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        *self.0.lock().unwrap() = ctx.read_roots.clone();
        let lines: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        Ok(ToolOutput::ok(lines))
    }
}

#[tokio::test]
async fn big_outputs_are_saved_to_a_file_and_the_model_gets_a_preview_and_the_path() {
    let dir = tempfile_dir();
    let spill = Arc::new(Spill(dir.clone(), Mutex::new(0)));
    let roots = Arc::new(Mutex::new(Vec::new()));
    let (r, s) = (roots.clone(), spill.clone());
    let h = harness(
        Scripted::new(vec![Ok(calls(&[("b", "big", json!({}))])), Ok(text("ok"))]),
        move |b| b.tool(Arc::new(Big(r))).output_spill(s),
    );
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    let id = outcome.session_id.clone().unwrap();
    let obs = tool_results(&h.stored(&outcome).await);
    assert!(obs[0].output.len() < 12_000, "{}", obs[0].output.len());
    assert!(obs[0].output.starts_with("line 0\n"));
    assert!(obs[0].output.contains("line 4999"));
    let saved = dir.join(&id).join("b.txt");
    assert!(obs[0].output.contains(&saved.display().to_string()));
    // Core names no tool: the spill says how to read it (here, the default).
    assert!(
        obs[0]
            .output
            .contains(rein_core::tool::GENERIC_READING_HINT)
    );
    assert!(!obs[0].output.contains("read_file"));
    assert_eq!(
        std::fs::read_to_string(&saved).unwrap().lines().count(),
        5000
    );
    assert_eq!(*roots.lock().unwrap(), vec![dir.join(&id)]);
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("rein-spill-{}", fastrand_suffix()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fastrand_suffix() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test]
async fn the_system_note_ends_the_system_prompt_of_every_call() {
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("t", "todos", json!({}))])),
            Ok(text("ok")),
        ]),
        |b| {
            b.tool(Arc::new(Todos))
                .system_note("# Memory\n- [m1] build: use make")
        },
    );
    h.run(RunRequest::new("go")).await;
    let requests = h.provider.requests();
    assert_eq!(requests.len(), 2);
    for r in requests {
        assert!(
            r.system.trim_end().ends_with("- [m1] build: use make"),
            "{}",
            r.system
        );
    }
}

/// The AGENTS.md files of a run: the user's global one, then the
/// project's from its root (where `.git` is) down to the workspace, root
/// first, a CLAUDE.md where a folder has no AGENTS.md, all in the system
/// prompt; a folder below the workspace adds its file to the result of the
/// first call that works there, once.
#[tokio::test]
async fn instructions_come_from_every_folder_and_a_nested_one_when_worked_in() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join(".git")).unwrap();
    std::fs::write(root.path().join("AGENTS.md"), "Root rule: use tabs.").unwrap();
    let ws = root.path().join("app");
    std::fs::create_dir_all(ws.join("api")).unwrap();
    std::fs::write(ws.join("CLAUDE.md"), "App rule: run make test.").unwrap();
    std::fs::write(ws.join("api/AGENTS.md"), "API rule: no panics.").unwrap();
    let global = root.path().join("home-AGENTS.md");
    std::fs::write(&global, "Mine: be brief.").unwrap();
    let provider = Scripted::new(vec![
        Ok(calls(&[(
            "c1",
            "edit",
            json!({"path": "api/handler.rs", "n": 1}),
        )])),
        Ok(calls(&[(
            "c2",
            "edit",
            json!({"path": "api/other.rs", "n": 2}),
        )])),
        Ok(text("done")),
    ]);
    let h = harness(provider, move |b| {
        b.workspace(ws)
            .global_instructions(global)
            .tool(Arc::new(Edit))
    });
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{events:?}");
    let system = h.provider.requests()[0].system.clone();
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing: {system}"))
    };
    assert!(at("Mine: be brief.") < at("Root rule") && at("Root rule") < at("App rule"));
    assert!(system.contains("## CLAUDE.md\nApp rule"), "{system}");
    assert!(
        !system.contains("API rule"),
        "not before the model works there"
    );
    let outputs: Vec<String> = h
        .stored(&outcome)
        .await
        .iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r.output.clone()),
            _ => None,
        })
        .collect();
    assert!(
        outputs[0].contains("[rein] Project instructions")
            && outputs[0].contains("API rule: no panics."),
        "{}",
        outputs[0]
    );
    assert!(!outputs[1].contains("API rule"), "once: {}", outputs[1]);
}
