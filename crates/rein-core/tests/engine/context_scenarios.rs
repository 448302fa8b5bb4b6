//! What a run carries besides the conversation, inside whole runs: the
//! todo list's events, big outputs saved aside, the system note, and the
//! instructions files.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rein_core::*;
use serde_json::{Value, json};

use super::long_task::*;
use super::support::*;

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
    assert!(obs[0].output.contains(rein_core::GENERIC_READING_HINT));
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
