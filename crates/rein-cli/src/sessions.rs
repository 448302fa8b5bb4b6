//! `rein sessions list | show | delete`.

use std::path::PathBuf;

use anyhow::anyhow;
use rein_core::{ContentPart, Message, SessionStore, StoreError};

use crate::cli::SessionsCommand;
use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::{one_line, out};
use crate::setup::workspace::resolve_workspace;

fn store_failure(e: StoreError) -> Failure {
    match e {
        StoreError::NotFound(_) | StoreError::Ambiguous { .. } => Failure::usage(anyhow!("{e}")),
        other => Failure::harness(anyhow!("{other}")),
    }
}

pub async fn run(cmd: SessionsCommand) -> Result<i32, Failure> {
    let cwd = resolve_workspace(None)?;
    // Only the home matters here: the project's settings are not used.
    let (cfg, _) = Config::load(&cwd, false).map_err(Failure::usage)?;
    let (store, _) = crate::setup::store::open_store(&cfg, 2).await?;
    match cmd {
        SessionsCommand::List {
            workspace,
            limit,
            json,
        } => list(store.as_ref(), workspace, limit, json).await?,
        SessionsCommand::Show { id, json, all } => show(store.as_ref(), &id, json, all).await?,
        SessionsCommand::Delete { id } => {
            let info = store.get_session(&id).await.map_err(store_failure)?;
            store
                .delete_session(&info.id)
                .await
                .map_err(store_failure)?;
            forget_files(&cfg.home, &info);
            out(&format!("deleted session {} ({})", info.id, info.title));
        }
    }
    Ok(COMPLETED)
}

/// `rein sessions list`.
async fn list(
    store: &dyn SessionStore,
    workspace: Option<PathBuf>,
    limit: usize,
    json: bool,
) -> Result<(), Failure> {
    let ws = match workspace {
        Some(dir) => Some(resolve_workspace(Some(&dir))?.display().to_string()),
        None => None,
    };
    let list = store
        .list_sessions(ws.as_deref(), limit)
        .await
        .map_err(store_failure)?;
    if json {
        for s in &list {
            out(&serde_json::to_string(s).map_err(Failure::harness)?);
        }
    } else if list.is_empty() {
        out("no sessions yet");
    } else {
        out(&format!(
            "{:<16}  {:<16}  {:<24}  {:>5}  {:<12}  {:<14}  {:<32}  WORKSPACE",
            "ID", "UPDATED (UTC)", "MODEL", "TURNS", "COST", "LAST RUN", "TITLE"
        ));
        for s in &list {
            // The ledger says how many turns and what they cost; a session
            // whose ledger cannot be read shows dashes.
            let (turns, cost) = match store.ledger(&s.id).await {
                Ok((entries, _)) => (
                    entries
                        .iter()
                        .filter(|e| e.kind == rein_core::CallKind::Turn)
                        .count()
                        .to_string(),
                    rein_core::LedgerTotals::of(&entries).cost_text(),
                ),
                Err(_) => ("-".to_string(), "-".to_string()),
            };
            out(&format!(
                "{:<16}  {:<16}  {:<24}  {:>5}  {:<12}  {:<14}  {:<32}  {}",
                s.id,
                rein_core::time::format_datetime(s.updated_at),
                one_line(&s.model, 24),
                turns,
                cost,
                s.last_stop.map_or("-", |r| r.as_str()),
                // A sub-agent's session is marked as one.
                match &s.parent_id {
                    Some(_) => format!("↳ {}", one_line(&s.title, 30)),
                    None => one_line(&s.title, 32),
                },
                s.workspace
            ));
        }
    }
    Ok(())
}

/// What rein kept of a deleted session besides the store: the transcript
/// written for its hooks, and its checkpoints (those other sessions use
/// stay). For `rein sessions delete` and `rein serve`'s delete alike.
pub fn forget_files(home: &std::path::Path, info: &rein_core::SessionInfo) {
    if let Some(file) = rein_tools::user_hooks::Transcripts::file(home, &info.id) {
        let _ = std::fs::remove_file(file);
    }
    let index = home.join(format!("checkpoints/sessions/{}.jsonl", info.id));
    if index.exists()
        && let Ok(ck) =
            crate::rewind::SessionCheckpoints::open(home, std::path::Path::new(&info.workspace))
    {
        let _ = ck.forget(&info.id);
    }
}

/// `rein sessions show`: the transcript (from the latest compaction on,
/// unless `all`), then the model calls and the todos.
async fn show(store: &dyn SessionStore, id: &str, json: bool, all: bool) -> Result<(), Failure> {
    let info = store.get_session(id).await.map_err(store_failure)?;
    let messages = store.messages(&info.id).await.map_err(store_failure)?;
    if json {
        for m in &messages {
            out(&serde_json::to_string(m).map_err(Failure::harness)?);
        }
        return Ok(());
    }
    out(&format!("session   {}", info.id));
    out(&format!("title     {}", info.title));
    out(&format!("workspace {}", info.workspace));
    out(&format!("model     {}", info.model));
    if let Some(parent) = &info.parent_id {
        out(&format!(
            "parent    {parent} (this is a sub-agent's session)"
        ));
    }
    out(&format!(
        "created   {} UTC · updated {} UTC · {} messages",
        rein_core::time::format_datetime(info.created_at),
        rein_core::time::format_datetime(info.updated_at),
        info.message_count
    ));
    let compactions = store.compactions(&info.id).await.map_err(store_failure)?;
    match compactions.last() {
        Some(last) if !all => {
            out(&format!(
                "\n── {} earlier messages compacted ({} compaction{}; `rein sessions show --all` shows them) ──",
                last.upto_seq,
                compactions.len(),
                if compactions.len() == 1 { "" } else { "s" }
            ));
            print_message(&last.summary);
            for m in messages.iter().skip(last.upto_seq as usize) {
                print_message(m);
            }
        }
        _ => {
            for (i, m) in messages.iter().enumerate() {
                print_message(m);
                let seq = i as u64 + 1;
                for c in compactions.iter().filter(|c| c.upto_seq == seq) {
                    let how = if c.summarized {
                        "summarized"
                    } else {
                        "dropped"
                    };
                    out(&format!(
                        "\n── compaction: messages 1–{seq} {how} for the model from here on ──"
                    ));
                }
            }
        }
    }
    let (ledger, unreadable) = store.ledger(&info.id).await.map_err(store_failure)?;
    if !ledger.is_empty() || unreadable > 0 {
        let t = rein_core::LedgerTotals::of(&ledger);
        out("\n── model calls ──");
        out(&format!(
            "{} call{} · {} input ({} cached) · {} output ({} reasoning) tokens · {}",
            t.calls,
            if t.calls == 1 { "" } else { "s" },
            t.input_tokens,
            t.cached_input_tokens,
            t.output_tokens,
            t.reasoning_tokens,
            t.cost_text()
        ));
        if unreadable > 0 {
            out(&format!(
                "note: {unreadable} ledger rows could not be read and are not counted"
            ));
        }
    }
    show_children(store, &info).await;
    let todos = store.todos(&info.id).await.map_err(store_failure)?;
    if !todos.is_empty() {
        out("\n── todos ──");
        for t in todos {
            out(&format!("{} {}. {}", t.status.mark(), t.id, t.content));
        }
    }
    Ok(())
}

fn print_message(m: &Message) {
    match m {
        Message::System { content } => {
            out("\n── system ──");
            out(content);
        }
        Message::User { content, images } => {
            out("\n── user ──");
            out(content);
            for image in images {
                out(&format!(
                    "[image: {}, {} bytes]",
                    image.media_type,
                    image.bytes()
                ));
            }
        }
        Message::Assistant(a) => {
            out("\n── assistant ──");
            for part in &a.content {
                match part {
                    ContentPart::Text { text } => out(text),
                    ContentPart::Reasoning(r) => {
                        if r.text.is_empty() {
                            out("(reasoning hidden by the provider)");
                        } else {
                            out(&format!("(reasoning) {}", r.text));
                        }
                    }
                    ContentPart::ToolCall(c) => {
                        out(&format!("→ {} {} [{}]", c.name, c.arguments, c.id))
                    }
                }
            }
        }
        Message::Tool(r) => {
            let status = if r.is_error { " · error" } else { "" };
            out(&format!("\n── tool {} [{}]{status} ──", r.name, r.call_id));
            out(&r.output);
        }
    }
}

/// The sessions of the sub-agents `info`'s session started.
async fn show_children(store: &dyn SessionStore, info: &rein_core::SessionInfo) {
    let Ok(all) = store.list_sessions(Some(&info.workspace), 10_000).await else {
        return;
    };
    let mut children: Vec<&rein_core::SessionInfo> = all
        .iter()
        .filter(|s| s.parent_id.as_deref() == Some(info.id.as_str()))
        .collect();
    if children.is_empty() {
        return;
    }
    children.sort_by_key(|s| s.created_at);
    out("\n── sub-agent sessions (rein sessions show ID) ──");
    for c in children {
        out(&format!(
            "{}  {}  {}",
            c.id,
            c.last_stop.map_or("-", |r| r.as_str()),
            one_line(&c.title, 60)
        ));
    }
}
