//! `rein rewind`: take a session back to a checkpoint. Checkpoint 0 is
//! the workspace before the first prompt, K the workspace before prompt
//! K+1 (and the state before each rewind is one too, so a rewind can be
//! undone). `--code` restores the files, `--conversation` cuts the
//! conversation there (into a new session; the cut part stays in the old
//! one), `--both` does both (the default).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use rein_core::{NewSession, SessionStore};
use rein_store::checkpoints::{CheckpointError, RestoreGuard, Restored};

use crate::config::Config;
use crate::exit::{COMPLETED, Failure};
use crate::output::out;

pub mod index;
mod outside;

pub use index::{EntryKind, SessionCheckpoints};

/// Arguments of `rein rewind`.
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// The session (id or unique prefix; default: the latest in this
    /// workspace).
    #[arg(long, conflicts_with = "last")]
    pub session: Option<String>,
    /// The latest session in this workspace (the default).
    #[arg(long)]
    pub last: bool,
    /// List the checkpoints.
    #[arg(long, conflicts_with = "to")]
    pub list: bool,
    /// Go back to checkpoint K.
    #[arg(long, value_name = "K")]
    pub to: Option<usize>,
    /// Restore the files only.
    #[arg(long, conflicts_with_all = ["conversation", "both"])]
    pub code: bool,
    /// Cut the conversation only.
    #[arg(long, conflicts_with = "both")]
    pub conversation: bool,
    /// Restore the files and cut the conversation (the default).
    #[arg(long)]
    pub both: bool,
    /// Rewind even if files changed outside rein (since its last
    /// checkpoint, or during a run that did not write them).
    #[arg(long)]
    pub force: bool,
    /// One JSON object per checkpoint (with --list) or for the result.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// What a rewind restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct What {
    pub code: bool,
    pub conversation: bool,
}

/// Why a rewind did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error("there is no checkpoint {k}: this session has {count} (rein rewind --list)")]
    NoCheckpoint { k: usize, count: usize },
    #[error(
        "these files changed outside rein (since its last checkpoint, or during a run that did \
         not write them): {}; rewinding would lose those changes (use --force to rewind anyway)",
        .0.join(", ")
    )]
    ChangedOutside(Vec<String>),
    #[error("{0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("{0}")]
    Store(#[from] rein_core::StoreError),
}

/// What a rewind did.
#[derive(Debug)]
pub struct Rewound {
    /// The files (when the code was restored).
    pub restored: Option<Restored>,
    /// The session the conversation continues in (when it was cut).
    pub forked: Option<String>,
}

/// Take `session` back to its listed checkpoint `k`.
pub async fn rewind_to(
    ck: &Arc<SessionCheckpoints>,
    store: &dyn SessionStore,
    session: &rein_core::SessionInfo,
    (k, what, force): (usize, What, bool),
) -> Result<Rewound, RewindError> {
    let listed = ck.listed(&session.id);
    let Some((_, entry)) = listed.get(k).cloned() else {
        return Err(RewindError::NoCheckpoint {
            k,
            count: listed.len(),
        });
    };
    let mut rewound = Rewound {
        restored: None,
        forked: None,
    };
    if what.code {
        let (c, id, commit) = (ck.clone(), session.id.clone(), entry.commit.clone());
        let count = session.message_count;
        let restored =
            tokio::task::spawn_blocking(move || restore_files(&c, &id, &commit, (k, count, force)))
                .await
                .map_err(|e| RewindError::Store(rein_core::StoreError::Other(e.to_string())))??;
        rewound.restored = Some(restored);
    }
    if what.conversation {
        rewound.forked = Some(fork(ck, store, session, (k, entry.seq)).await?);
    }
    Ok(rewound)
}

/// Restore the files of checkpoint `commit` (number `k`), refusing when
/// files changed outside rein unless `force`: since rein's latest
/// checkpoint, or during a later run that did not write them. The state
/// it replaces becomes a checkpoint of its own.
fn restore_files(
    ck: &SessionCheckpoints,
    session: &str,
    commit: &str,
    (k, messages, force): (usize, u64, bool),
) -> Result<Restored, RewindError> {
    let store = ck.store();
    let to = store.get(commit)?;
    let latest = match ck.entries(session).last() {
        Some(e) => Some(store.get(&e.commit)?),
        None => None,
    };
    let outside = ck.changed_outside_runs_after(session, k);
    let guard = RestoreGuard {
        unchanged_since: latest.as_ref(),
        changed_outside: &outside,
    };
    let restored = match store.restore_guarded(&to, guard, force) {
        Err(CheckpointError::ChangedOutside { files }) => {
            return Err(RewindError::ChangedOutside(
                files.iter().map(|f| f.display().to_string()).collect(),
            ));
        }
        other => other?,
    };
    let label = format!("before the rewind to {k}");
    ck.append(
        session,
        EntryKind::BeforeRewind,
        messages,
        &label,
        &restored.before,
    )?;
    ck.append(session, EntryKind::Restored, messages, &to.label, &to)?;
    Ok(restored)
}

/// A new session holding `session`'s first `seq` messages (and its
/// checkpoints before `k`); the old one keeps everything.
async fn fork(
    ck: &SessionCheckpoints,
    store: &dyn SessionStore,
    session: &rein_core::SessionInfo,
    (k, seq): (usize, u64),
) -> Result<String, RewindError> {
    let messages = store.messages(&session.id).await?;
    let new = store
        .create_session(NewSession {
            workspace: session.workspace.clone(),
            title: format!("{} (rewound to {k})", session.title),
            model: session.model.clone(),
            parent_id: session.parent_id.clone(),
        })
        .await?;
    for m in messages.iter().take(seq as usize) {
        store.append_message(&new.id, m).await?;
    }
    ck.copy_index(&session.id, k, &new.id)?;
    Ok(new.id)
}

/// `rein rewind`.
pub async fn run(args: RewindArgs) -> Result<i32, Failure> {
    let workspace = crate::setup::workspace::resolve_workspace(args.workspace.as_deref())?;
    let trusted = crate::trust_cmd::trusted_for_run(&workspace, false)?;
    let (cfg, _) = Config::load(&workspace, trusted).map_err(Failure::usage)?;
    let (store, _) = crate::setup::store::open_store(&cfg, 2).await?;
    let session = match &args.session {
        Some(id) => store.get_session(id).await,
        None => latest(store.as_ref(), &workspace).await,
    }
    .map_err(Failure::usage)?;
    let ck = Arc::new(
        SessionCheckpoints::open(&cfg.home, std::path::Path::new(&session.workspace))
            .map_err(Failure::harness)?,
    );
    let Some(k) = args.to else {
        list(&ck, &session, args.json).map_err(Failure::harness)?;
        return Ok(COMPLETED);
    };
    let what = What {
        code: !args.conversation,
        conversation: !args.code,
    };
    let done = rewind_to(&ck, store.as_ref(), &session, (k, what, args.force))
        .await
        .map_err(Failure::usage)?;
    report(&done, &session.id, k, args.json);
    Ok(COMPLETED)
}

/// The latest session of `workspace`.
async fn latest(
    store: &dyn SessionStore,
    workspace: &std::path::Path,
) -> Result<rein_core::SessionInfo, rein_core::StoreError> {
    let ws = workspace.display().to_string();
    let list = store.list_sessions(Some(&ws), 1).await?;
    list.into_iter()
        .next()
        .ok_or_else(|| rein_core::StoreError::NotFound(format!("(no session in {ws})")))
}

/// Each checkpoint of `session`, with the files changed since.
fn list(
    ck: &SessionCheckpoints,
    session: &rein_core::SessionInfo,
    json: bool,
) -> Result<(), CheckpointError> {
    let (_, listed) = ck.overview(&session.id)?;
    if listed.is_empty() && !json {
        out("no checkpoints in this session yet");
    }
    for l in listed {
        let changed: Vec<String> = l
            .changed
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let when = rein_core::time::format_datetime(l.entry.at as i64);
        if json {
            out(&serde_json::json!({
                "checkpoint": l.k, "kind": l.entry.kind, "label": l.entry.label, "at": when,
                "messages": l.entry.seq, "changed_since": changed,
            })
            .to_string());
            continue;
        }
        out(&rein_tui::cells::sanitize(&format!(
            "{:>3}  {when}  {}  ({} file(s) changed since)",
            l.k,
            rein_core::text::one_line(&l.entry.title(), 60),
            changed.len()
        )));
    }
    Ok(())
}

fn report(done: &Rewound, session: &str, k: usize, json: bool) {
    if json {
        out(&serde_json::json!({
            "checkpoint": k,
            "written": done.restored.as_ref().map(|r| &r.written),
            "deleted": done.restored.as_ref().map(|r| &r.deleted),
            "left_alone": done.restored.as_ref().map(|r| &r.left_alone),
            "session": done.forked,
            "previous_session": session,
        })
        .to_string());
        return;
    }
    if let Some(r) = &done.restored {
        let names = |v: &[PathBuf]| -> String {
            v.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        out(&format!(
            "files restored to checkpoint {k}: {} written{}, {} deleted{}",
            r.written.len(),
            if r.written.is_empty() {
                String::new()
            } else {
                format!(" ({})", names(&r.written))
            },
            r.deleted.len(),
            if r.deleted.is_empty() {
                String::new()
            } else {
                format!(" ({})", names(&r.deleted))
            },
        ));
        if !r.left_alone.is_empty() {
            out(&format!("left alone: {}", names(&r.left_alone)));
        }
    }
    if let Some(new) = &done.forked {
        out(&format!(
            "the conversation continues from checkpoint {k} in session {new} (rein --resume {new}); \
             the later part stays in {session}"
        ));
    }
}
