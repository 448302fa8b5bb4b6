//! `rein memory list | show | add | rm`: the user's view of the long-term
//! memory ([`crate::memory`]).

use anyhow::anyhow;
use rein_core::memory::{Added, EditScope, MemoryEntry, MemoryError, MemoryOrigin, NewMemory};
use rein_store::SqliteOptions;

use crate::cli::MemoryCommand;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::memory::open;
use crate::output::{one_line, out};
use crate::setup::workspace::resolve_workspace;

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
