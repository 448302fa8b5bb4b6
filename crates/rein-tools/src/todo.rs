//! `todo_write`: the agent's own task list, kept in the session store.

use std::collections::HashSet;

use async_trait::async_trait;
use rein_core::{Todo, TodoStatus, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The complete todo list; it replaces the previous one.
    todos: Vec<TodoArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TodoArg {
    /// A short unique id, e.g. "1".
    id: String,
    /// What is to be done, in a few words.
    content: String,
    /// pending, in_progress, completed or cancelled.
    status: StatusArg,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum StatusArg {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

impl From<StatusArg> for TodoStatus {
    fn from(s: StatusArg) -> Self {
        match s {
            StatusArg::Pending => TodoStatus::Pending,
            StatusArg::InProgress => TodoStatus::InProgress,
            StatusArg::Completed => TodoStatus::Completed,
            StatusArg::Cancelled => TodoStatus::Cancelled,
        }
    }
}

/// Replaces the session's todo list.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWrite;

#[async_trait]
impl Tool for TodoWrite {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todo_write".into(),
            description: "Replace your todo list for this task with `todos` (send the whole list \
                          every time). Use it to plan multi-step work and track progress; keep \
                          one item in_progress at a time and mark items completed as soon as \
                          they are done."
                .into(),
            parameters: crate::schema_of::<Args>(),
        }
    }

    /// It only changes the harness's own session state, so it stays
    /// available in plan mode.
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = crate::parse_args("todo_write", args)?;
        let todos = to_todos(args.todos)?;
        ctx.session
            .set_todos(&todos)
            .await
            .map_err(|e| ToolError::new(format!("could not save the todo list: {e}")))?;
        Ok(ToolOutput::ok(render(&todos)))
    }
}

fn to_todos(items: Vec<TodoArg>) -> Result<Vec<Todo>, ToolError> {
    let mut seen = HashSet::new();
    let mut todos = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let id = item.id.trim().to_string();
        if id.is_empty() {
            return Err(ToolError::new(format!("todo #{} has an empty id", i + 1)));
        }
        if !seen.insert(id.clone()) {
            return Err(ToolError::new(format!(
                "the id `{id}` is used by more than one todo; give each todo its own id"
            )));
        }
        todos.push(Todo {
            id,
            content: item.content.trim().to_string(),
            status: item.status.into(),
        });
    }
    Ok(todos)
}

/// The list as the model sees it back: one `[x] id. content` line per item
/// and the counts.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "Todo list cleared.".to_string();
    }
    let count = |s: TodoStatus| todos.iter().filter(|t| t.status == s).count();
    let (done, doing, pending, cancelled) = (
        count(TodoStatus::Completed),
        count(TodoStatus::InProgress),
        count(TodoStatus::Pending),
        count(TodoStatus::Cancelled),
    );
    let mut out = format!(
        "Todo list updated ({} item{}: {done} completed, {doing} in progress, {pending} pending, \
         {cancelled} cancelled):",
        todos.len(),
        if todos.len() == 1 { "" } else { "s" }
    );
    for t in todos {
        out.push_str(&format!("\n{} {}. {}", t.status.mark(), t.id, t.content));
    }
    if doing > 1 {
        out.push_str(&format!(
            "\nNote: {doing} items are in progress; working on one at a time is clearer."
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn item(id: &str, status: StatusArg) -> TodoArg {
        TodoArg {
            id: id.into(),
            content: format!("task {id}"),
            status,
        }
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let e = to_todos(vec![
            item("1", StatusArg::Pending),
            item("1", StatusArg::Completed),
        ])
        .unwrap_err();
        assert!(
            e.to_string().contains("`1` is used by more than one todo"),
            "{e}"
        );
    }

    #[test]
    fn rendering_marks_each_status_and_counts_them() {
        let todos = to_todos(vec![
            item("1", StatusArg::Completed),
            item("2", StatusArg::InProgress),
            item("3", StatusArg::Pending),
            item("4", StatusArg::Cancelled),
        ])
        .unwrap();
        assert_eq!(
            render(&todos),
            "Todo list updated (4 items: 1 completed, 1 in progress, 1 pending, 1 cancelled):\n\
             [x] 1. task 1\n[~] 2. task 2\n[ ] 3. task 3\n[-] 4. task 4"
        );
    }

    #[test]
    fn several_in_progress_is_only_a_note() {
        let todos = to_todos(vec![
            item("a", StatusArg::InProgress),
            item("b", StatusArg::InProgress),
        ])
        .unwrap();
        assert!(render(&todos).contains("Note: 2 items are in progress"));
    }
}
