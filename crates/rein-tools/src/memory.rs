//! `memory_write` and `memory_search`: the agent's long-term memory, kept
//! across sessions in a [`LongTermMemory`] (rein-store's SQLite file in
//! practice).
//!
//! Both tools are built with the memory handle and the project key (the
//! workspace path): new entries belong to the project unless marked global,
//! and searches see the project's entries plus the global ones. A memory
//! that is unavailable (another process holds its database) is an error
//! observation telling the model to go on without it, never the end of a run.
//!
//! The model writes this project's memories freely. A global memory enters
//! the prompt of every later project, so a call that adds, changes or
//! removes one (`global: true`) is marked [`Assessment::needs_user`]: the
//! gate asks the user in every mode, and a headless run refuses it. Changes
//! are checked against the entry's project ([`EditScope`]): a project never
//! touches another project's memories, and a global one only with
//! `global: true`. Each entry records who wrote it ([`MemoryOrigin`]).

use std::sync::Arc;

use async_trait::async_trait;
use rein_core::memory::{
    Denial, EditScope, LongTermMemory, MemoryChange, MemoryEntry, MemoryError, MemoryOrigin,
    NewMemory,
};
use rein_core::{
    Assessment, Risk, SubjectKind, Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec,
    memory::Added,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// Results a search returns unless asked for another number.
const DEFAULT_LIMIT: u32 = 5;
/// Most results a search returns.
const MAX_LIMIT: u32 = 20;

/// The memory tools for `project`, ready to hand to the engine beside
/// [`builtin_tools`](crate::builtin_tools).
pub fn memory_tools(
    memory: Arc<dyn LongTermMemory>,
    project: impl Into<String>,
) -> Vec<Arc<dyn Tool>> {
    let project = project.into();
    vec![
        Arc::new(MemoryWrite::new(Arc::clone(&memory), project.clone())),
        Arc::new(MemorySearch::new(memory, project)),
    ]
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Action {
    Add,
    Update,
    Remove,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// add a new memory, update one by id, or remove one by id.
    action: Action,
    /// The memory's id, e.g. "m12" (update and remove).
    #[serde(default)]
    id: Option<String>,
    /// A few words saying what it is about (add; optional for update).
    #[serde(default)]
    title: Option<String>,
    /// What to remember, complete enough to be useful in a later session
    /// without this conversation (add; optional for update).
    #[serde(default)]
    content: Option<String>,
    /// Optional keywords that help find it again.
    #[serde(default)]
    tags: Option<Vec<String>>,
    /// true when it holds in every project (a preference of the user's),
    /// or to update or remove a global memory; the user is asked to approve
    /// every such call. By default a memory belongs to this project only.
    #[serde(default)]
    global: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// Words to look for in titles, contents and tags (plain words; no
    /// search syntax).
    query: String,
    /// How many memories to return, best first (default 5, at most 20).
    #[serde(default)]
    limit: Option<u32>,
}

/// Saves, changes and removes long-term memories.
pub struct MemoryWrite {
    memory: Arc<dyn LongTermMemory>,
    project: String,
}

impl MemoryWrite {
    pub fn new(memory: Arc<dyn LongTermMemory>, project: impl Into<String>) -> Self {
        MemoryWrite {
            memory,
            project: project.into(),
        }
    }

    async fn write(&self, args: WriteArgs) -> Result<ToolOutput, ToolError> {
        // This call runs only once the gate has the user's say for a global
        // one (see `assess`).
        let global = args.global.unwrap_or(false);
        let (scope, origin) = if global {
            (
                EditScope::ProjectAndGlobal(self.project.clone()),
                MemoryOrigin::ModelApproved,
            )
        } else {
            (
                EditScope::Project(self.project.clone()),
                MemoryOrigin::Model,
            )
        };
        match args.action {
            Action::Add => {
                if args.id.is_some() {
                    return Err(ToolError::new(
                        "`id` is for update and remove; add gives the new memory its id",
                    ));
                }
                let (Some(title), Some(content)) = (args.title, args.content) else {
                    return Err(ToolError::new(
                        "add needs a `title` and a `content`: what the memory is about and \
                         what to remember",
                    ));
                };
                let new = NewMemory {
                    title,
                    content,
                    tags: args.tags.unwrap_or_default(),
                    project: (!global).then(|| self.project.clone()),
                    origin,
                };
                let added = self.memory.add(new).await.map_err(observation)?;
                Ok(ToolOutput::ok(match added {
                    Added::New(e) => {
                        format!("saved memory {} ({}): {}", e.id, where_kept(&e), e.title)
                    }
                    Added::Duplicate(e) => format!(
                        "nothing new saved: already known as {} \"{}\" (deduplicated: same \
                         content)",
                        e.id, e.title
                    ),
                }))
            }
            Action::Update => {
                let id = required_id(args.id, "update")?;
                let change = MemoryChange {
                    title: args.title,
                    content: args.content,
                    tags: args.tags,
                    origin: Some(origin),
                };
                let e = self
                    .memory
                    .update(&id, change, &scope)
                    .await
                    .map_err(observation)?;
                Ok(ToolOutput::ok(format!(
                    "updated memory {}: {}",
                    e.id, e.title
                )))
            }
            Action::Remove => {
                let id = required_id(args.id, "remove")?;
                let e = self.memory.remove(&id, &scope).await.map_err(observation)?;
                Ok(ToolOutput::ok(format!(
                    "removed memory {}: {}",
                    e.id, e.title
                )))
            }
        }
    }
}

fn required_id(id: Option<String>, action: &str) -> Result<String, ToolError> {
    match id {
        Some(id) if !id.trim().is_empty() => Ok(id),
        _ => Err(ToolError::new(format!(
            "{action} needs the `id` of the memory (e.g. \"m12\"; memory_search shows ids)"
        ))),
    }
}

/// "this project" or "every project".
fn where_kept(e: &MemoryEntry) -> &'static str {
    if e.project.is_some() {
        "this project"
    } else {
        "every project"
    }
}

/// What the model sees when the memory refuses or fails. An unreachable
/// database is said to be temporary so the model carries on without it.
fn observation(e: MemoryError) -> ToolError {
    match e {
        MemoryError::Locked(detail) => ToolError::new(format!(
            "memory is unavailable right now (database locked: {detail}); continue without it"
        )),
        MemoryError::Other(_) => ToolError::new(format!(
            "memory is unavailable right now ({e}); continue without it"
        )),
        MemoryError::NotFound(_) => ToolError::new(format!(
            "{e} in this project (memory_search shows the ids there are)"
        )),
        MemoryError::Invalid(_) => ToolError::new(e.to_string()),
        MemoryError::Denied {
            why: Denial::Global,
            ..
        } => ToolError::new(format!(
            "{e}. To change it, call again with `global: true`: the user is asked to approve."
        )),
        MemoryError::Denied { .. } => ToolError::new(format!("{e}. Leave it as it is.")),
    }
}

/// The permission side of a `memory_write` call: one touching a global
/// memory needs the user, in every mode.
fn assess_write(args: &Value) -> Assessment {
    let field = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("");
    let action = field("action");
    let summary = match action {
        "add" => format!(
            "{} memory: {}: {}",
            if args.get("global").and_then(Value::as_bool) == Some(true) {
                "add a global"
            } else {
                "add a project"
            },
            field("title"),
            rein_core::text::preview(field("content"), 3, 300)
        ),
        _ => format!("{action} memory {}", field("id")),
    };
    let mut a = Assessment {
        summary,
        ..Assessment::default()
    };
    if args.get("global").and_then(Value::as_bool) == Some(true) {
        a.subjects = vec![GLOBAL_SUBJECT.to_string()];
        a.kind = SubjectKind::Command;
        a.risk = Risk::High;
        a.needs_user = true;
        a.reasons = vec![
            "a global memory enters every later project's prompt, so only the user may write \
             one (`rein memory add --global`, `rein memory rm`)"
                .to_string(),
        ];
    }
    a
}

/// The rule subject of a call that touches a global memory: the rule
/// `memory_write(global)` lets the model do it without asking.
const GLOBAL_SUBJECT: &str = "global";

#[async_trait]
impl Tool for MemoryWrite {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "memory_write".into(),
            description: "Keep a note for later sessions: a fact about this project (how to \
                          build or test it, a convention, a pitfall) or a preference the user \
                          stated. action=add with a title and content; update or remove by \
                          id. Memories belong to this project; global=true (a preference \
                          that holds in every project, or to change a global memory) asks \
                          the user first. One fact per memory, stated so it is useful on its \
                          own; never secrets. The same content is never saved twice."
                .into(),
            parameters: crate::schema_of::<WriteArgs>(),
        }
    }

    /// It changes only rein's own memory database (like `todo_write` and the
    /// session store), nothing in the workspace, so it is a read as far as
    /// permissions go and stays available in plan mode: planning may well
    /// learn something worth keeping.
    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn assess(&self, args: &Value, _ctx: &ToolContext) -> Assessment {
        assess_write(args)
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.write(crate::parse_args("memory_write", args)?).await
    }
}

/// Finds long-term memories by their words.
pub struct MemorySearch {
    memory: Arc<dyn LongTermMemory>,
    project: String,
}

impl MemorySearch {
    pub fn new(memory: Arc<dyn LongTermMemory>, project: impl Into<String>) -> Self {
        MemorySearch {
            memory,
            project: project.into(),
        }
    }

    async fn search(&self, args: SearchArgs) -> Result<ToolOutput, ToolError> {
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::new(
                "the query is empty: give a few words to look for",
            ));
        }
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) as usize;
        let found = self
            .memory
            .search(query, Some(&self.project), limit)
            .await
            .map_err(observation)?;
        Ok(ToolOutput::ok(render_hits(query, &found)))
    }
}

/// The hits as the model sees them: best first, each with its id.
fn render_hits(query: &str, found: &[MemoryEntry]) -> String {
    if found.is_empty() {
        return format!("no memories match \"{query}\"");
    }
    let n = found.len();
    let mut out = if n == 1 {
        format!("1 memory matches \"{query}\":")
    } else {
        format!("{n} memories match \"{query}\", best first:")
    };
    for e in found {
        let tags = if e.tags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", e.tags.join(", "))
        };
        out.push_str(&format!(
            "\n\n{} · {}{tags} ({}, {}, used {} time{})",
            e.id,
            e.title,
            where_kept(e),
            e.origin.describe(),
            e.uses,
            if e.uses == 1 { "" } else { "s" }
        ));
        for line in e.content.lines() {
            out.push_str("\n  ");
            out.push_str(line);
        }
    }
    out
}

#[async_trait]
impl Tool for MemorySearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "memory_search".into(),
            description: "Search the notes kept in earlier sessions (this project's and the \
                          global ones) by words; returns the best matches with their ids. \
                          Look here before working out again how this project builds, tests \
                          or is laid out."
                .into(),
            parameters: crate::schema_of::<SearchArgs>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        self.search(crate::parse_args("memory_search", args)?).await
    }
}

#[cfg(test)]
mod tests;
