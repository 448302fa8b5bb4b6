//! A long task of edits, the run that compaction and the budgets are
//! measured on: its tools (an edit that records the file it writes, a
//! todo list) and its script.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use rein_core::compaction::CompactionConfig;
use rein_core::*;
use serde_json::{Value, json};

use super::support::*;

/// Writes a "file" (records the path) and returns a sizeable output.
pub struct Edit;

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
    /// Where it works: the file it is given (the folder's instructions
    /// come with its result).
    fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
        args["path"].as_str().map(Into::into).into_iter().collect()
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
pub struct Todos;

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
        ctx.session.set_todos(&todos).await.unwrap();
        Ok(ToolOutput::ok("saved"))
    }
}

/// Turn `i` of a long task: one edit of one of seven files.
pub fn edit_step(i: usize) -> Step {
    Ok(calls(&[(
        &format!("e{i}"),
        "edit",
        json!({"path": format!("src/f{}.rs", i % 7), "n": i}),
    )]))
}

/// A task of `turns` turns: set the todos, edit, edit, ..., then answer.
pub fn long_task(turns: usize) -> Vec<Step> {
    let mut steps = vec![Ok(calls(&[("t0", "todos", json!({}))]))];
    steps.extend((1..turns).map(edit_step));
    steps.push(Ok(text("all done")));
    steps
}

/// The long task with no usage reported: the scripted model's fixed 10
/// input tokens a turn would tell the engine the context never grows (the
/// size of a request follows the provider's report when there is one), so
/// tests of compaction leave the size to the estimate.
pub fn unmeasured_task(turns: usize) -> Vec<Step> {
    let unmeasured = |chunks: Vec<StreamChunk>| -> Vec<StreamChunk> {
        chunks
            .into_iter()
            .filter(|c| !matches!(c, StreamChunk::Usage(_)))
            .collect()
    };
    long_task(turns)
        .into_iter()
        .map(|step| step.map(unmeasured))
        .collect()
}

/// A scripted model with a context window of `window` tokens.
pub fn provider(steps: Vec<Step>, window: u64) -> Arc<Scripted> {
    let mut p = Scripted::build(steps);
    p.window = window;
    Arc::new(p)
}

/// The long task's tools, compaction on, and turns enough for it.
pub fn with_compaction(b: AgentEngineBuilder) -> AgentEngineBuilder {
    b.tool(Arc::new(Edit))
        .tool(Arc::new(Todos))
        .compaction(CompactionConfig::default())
        .max_turns(1000)
}

/// Every tool call in a request has exactly one result right after its
/// message, and every result has its call.
pub fn assert_paired(req: &ModelRequest) {
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
