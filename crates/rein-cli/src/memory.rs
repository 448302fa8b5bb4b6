//! `rein memory list | show | add | rm`, and the long-term memory a run gets.
//!
//! Memories live in `$REIN_HOME/memory.db`, one file for all projects;
//! each entry belongs to a project (the workspace path) or to every project.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use rein_core::Tool;
use rein_core::memory::{
    Added, EditScope, LongTermMemory, MemoryEntry, MemoryError, MemoryOrigin, NewMemory,
    prompt_section,
};
use rein_store::{SqliteMemory, SqliteOptions};

use crate::cli::MemoryCommand;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::{self, one_line, out};
use crate::setup::store::StoreChoice;
use crate::setup::workspace::resolve_workspace;

/// Bytes of the system prompt the most used memories may take (the
/// heading that says they are data takes about 250 of them).
pub const PROMPT_BUDGET: usize = 1536;

/// How long a run's memory waits for another process's write lock: memory
/// is an aid, and a run should not stall on it.
const RUN_BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// The memory database under the configured home.
pub fn memory_db(cfg: &Config) -> PathBuf {
    cfg.home.join("memory.db")
}

/// What a run gets from long-term memory: the two tools and the prompt
/// section (both empty when the memory cannot be opened).
#[derive(Default)]
pub struct RunMemory {
    pub tools: Vec<Arc<dyn Tool>>,
    /// The "# Memory" section for the system prompt; "" when there is none.
    pub note: String,
}

/// Open the memory for a run in `workspace`. A memory that cannot be opened
/// costs one `note:` line on stderr, never the run.
pub async fn for_run(cfg: &Config, workspace: &Path) -> RunMemory {
    let memory = match shared(cfg).await {
        Ok(m) => m,
        Err(e) => {
            output::err(&format!(
                "note: running without long-term memory: {}",
                one_line(&e.to_string(), 300)
            ));
            return RunMemory::default();
        }
    };
    let project = workspace.display().to_string();
    let note = match memory.top_for_prompt(Some(&project), PROMPT_BUDGET).await {
        Ok(top) => prompt_section(&top, PROMPT_BUDGET),
        Err(e) => {
            output::err(&format!(
                "note: no memories in the prompt this run: {}",
                one_line(&e.to_string(), 300)
            ));
            String::new()
        }
    };
    RunMemory {
        tools: rein_tools::memory_tools(memory, project),
        note,
    }
}

/// The memories this process opened for runs, by where they are: the
/// sessions of one server share one connection (or pool) instead of each
/// opening, checking and migrating its own.
static OPENED: tokio::sync::Mutex<Vec<(String, Arc<dyn LongTermMemory>)>> =
    tokio::sync::Mutex::const_new(Vec::new());

/// The memory for a run, opened once per place per process. A failure is
/// not remembered: the next run tries again.
async fn shared(cfg: &Config) -> Result<Arc<dyn LongTermMemory>, MemoryError> {
    let choice = choice(cfg)?;
    let place = match &choice {
        StoreChoice::Postgres(url) => url.clone(),
        StoreChoice::Sqlite => memory_db(cfg).display().to_string(),
    };
    // Held while opening, so concurrent first runs open it once.
    let mut opened = OPENED.lock().await;
    if let Some((_, memory)) = opened.iter().find(|(p, _)| *p == place) {
        return Ok(memory.clone());
    }
    let memory = open_at(&choice, cfg, RUN_BUSY_TIMEOUT).await?;
    opened.push((place, memory.clone()));
    Ok(memory)
}

/// Where the memory is: beside the sessions ([`StoreChoice`]).
fn choice(cfg: &Config) -> Result<StoreChoice, MemoryError> {
    StoreChoice::of(cfg).map_err(|e| MemoryError::Invalid(e.to_string()))
}

/// The memory `cfg` chooses, opened anew.
async fn open(
    cfg: &Config,
    busy_timeout: Duration,
) -> Result<Arc<dyn LongTermMemory>, MemoryError> {
    open_at(&choice(cfg)?, cfg, busy_timeout).await
}

/// The memory in the PostgreSQL database `choice` names, else the SQLite
/// file under the home.
async fn open_at(
    choice: &StoreChoice,
    cfg: &Config,
    busy_timeout: Duration,
) -> Result<Arc<dyn LongTermMemory>, MemoryError> {
    if let StoreChoice::Postgres(url) = choice {
        return Ok(Arc::new(rein_store::PgMemory::connect(url).await?));
    }
    let options = SqliteOptions { busy_timeout };
    Ok(Arc::new(SqliteMemory::open_with(&memory_db(cfg), options)?))
}

fn memory_failure(e: MemoryError) -> Failure {
    match e {
        MemoryError::NotFound(_) | MemoryError::Invalid(_) | MemoryError::Denied { .. } => {
            Failure::usage(anyhow!("{e}"))
        }
        other => Failure::harness(anyhow!("{other}")),
    }
}

pub async fn run(cmd: MemoryCommand) -> Result<i32, Failure> {
    let cwd = resolve_workspace(None)?;
    // Only the home matters here: the project's settings are not used.
    let (cfg, _) = Config::load(&cwd, false).map_err(Failure::usage)?;
    let memory = open(&cfg, SqliteOptions::default().busy_timeout)
        .await
        .map_err(memory_failure)?;
    match cmd {
        MemoryCommand::List {
            all,
            json,
            limit,
            workspace,
        } => {
            let project = match (all, workspace) {
                (true, _) => None,
                (false, Some(dir)) => Some(resolve_workspace(Some(&dir))?),
                (false, None) => Some(cwd),
            }
            .map(|p| p.display().to_string());
            let list = memory
                .list(project.as_deref(), limit)
                .await
                .map_err(memory_failure)?;
            if json {
                for e in &list {
                    out(&serde_json::to_string(e).map_err(Failure::harness)?);
                }
            } else if list.is_empty() {
                out(match project {
                    Some(_) => "no memories for this project yet (--all shows every project's)",
                    None => "no memories yet",
                });
            } else {
                print_table(&list, project.is_none());
            }
        }
        MemoryCommand::Show { id, json } => {
            let e = memory.get(&id).await.map_err(memory_failure)?;
            if json {
                out(&serde_json::to_string(&e).map_err(Failure::harness)?);
                return Ok(COMPLETED);
            }
            out(&format!("memory    {}", e.id));
            out(&format!("title     {}", e.title));
            out(&format!("project   {}", project_name(&e)));
            out(&format!("origin    {}", e.origin.describe()));
            if !e.tags.is_empty() {
                out(&format!("tags      {}", e.tags.join(", ")));
            }
            out(&format!(
                "created   {} UTC · updated {} UTC · used {} times",
                rein_core::time::format_datetime(e.created_at),
                rein_core::time::format_datetime(e.updated_at),
                e.uses
            ));
            out("");
            out(&e.content);
        }
        MemoryCommand::Rm { id } => {
            let e = memory
                .remove(&id, &EditScope::All)
                .await
                .map_err(memory_failure)?;
            out(&format!("removed memory {} ({})", e.id, e.title));
        }
        MemoryCommand::Add {
            title,
            content,
            global,
            tags,
            workspace,
        } => {
            let project = match (global, workspace) {
                (true, _) => None,
                (false, Some(dir)) => Some(resolve_workspace(Some(&dir))?),
                (false, None) => Some(cwd),
            };
            let new = NewMemory {
                title,
                content,
                tags,
                project: project.map(|p| p.display().to_string()),
                origin: MemoryOrigin::User,
            };
            match memory.add(new).await.map_err(memory_failure)? {
                Added::New(e) => out(&format!(
                    "saved memory {} ({}): {}",
                    e.id,
                    if e.project.is_some() {
                        "this project"
                    } else {
                        "every project"
                    },
                    e.title
                )),
                Added::Duplicate(e) => out(&format!(
                    "nothing new saved: already known as {} ({})",
                    e.id, e.title
                )),
            }
        }
    }
    Ok(COMPLETED)
}

fn project_name(e: &MemoryEntry) -> &str {
    e.project.as_deref().unwrap_or("(every project)")
}

fn print_table(list: &[MemoryEntry], with_project: bool) {
    let project_head = if with_project { "  PROJECT" } else { "" };
    out(&format!(
        "{:<7}  {:<16}  {:>4}  {:<40}  CONTENT{project_head}",
        "ID", "UPDATED (UTC)", "USES", "TITLE"
    ));
    for e in list {
        let project = if with_project {
            format!("  {}", project_name(e))
        } else {
            String::new()
        };
        let line = format!(
            "{:<7}  {:<16}  {:>4}  {:<40}  {:<50}{project}",
            e.id,
            rein_core::time::format_datetime(e.updated_at),
            e.uses,
            one_line(&e.title, 40),
            one_line(&e.content, 50)
        );
        out(line.trim_end());
    }
}
