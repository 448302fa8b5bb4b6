//! The long-term memory a run gets (`rein memory` is [`crate::memory_cmd`]).
//!
//! Memories live in `$REIN_HOME/memory.db`, one file for all projects;
//! each entry belongs to a project (the workspace path) or to every project.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rein_core::Tool;
use rein_core::memory::{LongTermMemory, MemoryError, prompt_section};
use rein_store::{SqliteMemory, SqliteOptions};

use crate::config::Config;
use crate::config::StoreChoice;
use crate::output::{self, one_line};

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
pub(crate) async fn open(
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
