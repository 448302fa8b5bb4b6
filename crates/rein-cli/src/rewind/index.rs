//! A session's checkpoints: the workspace snapshots of
//! [`rein_store::checkpoints`] (one private shadow repository per
//! workspace under `$REIN_HOME/checkpoints/`), and for each session an
//! index file of the ones it took, in order
//! (`$REIN_HOME/checkpoints/sessions/ID.jsonl`): before each prompt, after
//! each round of calls that changed files, before each rewind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_store::checkpoints::{
    Checkpoint, CheckpointError, CheckpointOptions, Checkpoints, FileChange,
};
use serde::{Deserialize, Serialize};

/// Why an index entry was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// Before a prompt of the user: what `rein rewind --to K` goes back to.
    Prompt,
    /// After a round of calls that may have changed files: the workspace
    /// as rein left it.
    After,
    /// The workspace just before a rewind (listed too: a rewind can be
    /// undone).
    BeforeRewind,
    /// Right after a rewind restored a checkpoint.
    Restored,
}

/// One line of a session's index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub kind: EntryKind,
    /// The checkpoint's commit in the shadow repository.
    pub commit: String,
    /// How many messages the session had stored then.
    pub seq: u64,
    /// The prompt's first line (or what the entry is).
    pub label: String,
    /// Unix milliseconds.
    pub at: u64,
}

impl Entry {
    /// Whether `rein rewind` lists it (and can go back to it).
    pub fn listed(&self) -> bool {
        matches!(self.kind, EntryKind::Prompt | EntryKind::BeforeRewind)
    }

    /// How lists name it: "before: PROMPT", or "before the rewind to K".
    pub fn title(&self) -> String {
        match self.kind {
            EntryKind::BeforeRewind => self.label.clone(),
            _ => format!("before: {}", self.label),
        }
    }
}

/// A listed checkpoint and the files that differ between it and now.
#[derive(Debug)]
pub struct Listed {
    pub k: usize,
    pub entry: Entry,
    pub checkpoint: Checkpoint,
    pub changed: Vec<FileChange>,
}

/// The checkpoints of one workspace, and its sessions' indexes.
pub struct SessionCheckpoints {
    store: Checkpoints,
    sessions_dir: PathBuf,
}

impl SessionCheckpoints {
    /// Open the checkpoints of `workspace` (made on first use); `$REIN_HOME`
    /// is never snapshotted, even when it lies in the workspace.
    pub fn open(home: &Path, workspace: &Path) -> Result<SessionCheckpoints, CheckpointError> {
        SessionCheckpoints::open_with(home, workspace, CheckpointOptions::default())
    }

    fn open_with(
        home: &Path,
        workspace: &Path,
        mut options: CheckpointOptions,
    ) -> Result<SessionCheckpoints, CheckpointError> {
        let root = home.join("checkpoints");
        if let (Ok(h), Ok(w)) = (home.canonicalize(), workspace.canonicalize())
            && let Ok(rel) = h.strip_prefix(&w)
        {
            options.exclude.push(rel.to_path_buf());
        }
        Ok(SessionCheckpoints {
            store: Checkpoints::open_with(&root, workspace, options)?,
            sessions_dir: root.join("sessions"),
        })
    }

    pub fn store(&self) -> &Checkpoints {
        &self.store
    }

    fn index_path(&self, session: &str) -> PathBuf {
        // Session ids are hex; anything else cannot name a file here.
        let safe: String = session
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        self.sessions_dir.join(format!("{safe}.jsonl"))
    }

    /// Every entry of `session`, oldest first (unreadable lines skipped).
    pub fn entries(&self, session: &str) -> Vec<Entry> {
        let Ok(text) = std::fs::read_to_string(self.index_path(session)) else {
            return Vec::new();
        };
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The entries `rein rewind` lists, numbered from 0.
    pub fn listed(&self, session: &str) -> Vec<(usize, Entry)> {
        self.entries(session)
            .into_iter()
            .filter(Entry::listed)
            .enumerate()
            .collect()
    }

    /// The workspace now, as a checkpoint: rein's latest one of `session`
    /// when nothing changed since (the usual case), else a new snapshot
    /// (in no index: pruning frees it).
    pub fn now(&self, session: &str) -> Result<Checkpoint, CheckpointError> {
        if let Some(e) = self.entries(session).last() {
            let latest = self.store.get(&e.commit)?;
            if self.store.changed_since(&latest)?.is_empty() {
                return Ok(latest);
            }
        }
        self.store
            .snapshot("the workspace when the checkpoints were listed")
    }

    /// `session`'s listed checkpoints with the files changed since each
    /// (the workspace is looked at once), and the workspace now; nothing
    /// (and no look at the workspace) when it has none.
    pub fn overview(
        &self,
        session: &str,
    ) -> Result<(Option<Checkpoint>, Vec<Listed>), CheckpointError> {
        let listed = self.listed(session);
        if listed.is_empty() {
            return Ok((None, Vec::new()));
        }
        let now = self.now(session)?;
        let mut out = Vec::with_capacity(listed.len());
        for (k, entry) in listed {
            let checkpoint = self.store.get(&entry.commit)?;
            let changed = self.store.diff(&checkpoint, &now)?;
            out.push(Listed {
                k,
                entry,
                checkpoint,
                changed,
            });
        }
        Ok((Some(now), out))
    }

    /// Snapshot the workspace and add it to `session`'s index.
    pub fn take(
        &self,
        session: &str,
        kind: EntryKind,
        seq: u64,
        label: &str,
    ) -> Result<Checkpoint, CheckpointError> {
        let checkpoint = self.store.snapshot(label)?;
        self.append(session, kind, seq, label, &checkpoint)?;
        Ok(checkpoint)
    }

    /// Add `checkpoint` to `session`'s index.
    pub fn append(
        &self,
        session: &str,
        kind: EntryKind,
        seq: u64,
        label: &str,
        checkpoint: &Checkpoint,
    ) -> Result<(), CheckpointError> {
        let io = |source| CheckpointError::Io {
            path: self.sessions_dir.clone(),
            source,
        };
        rein_core::private_fs::create_private_dir(&self.sessions_dir).map_err(io)?;
        let entry = Entry {
            kind,
            commit: checkpoint.id.clone(),
            seq,
            label: rein_core::text::one_line(label, 200),
            at: checkpoint.at_millis,
        };
        let line = serde_json::to_string(&entry).unwrap_or_default();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.index_path(session))
            .map_err(io)?;
        writeln!(file, "{line}").map_err(io)
    }

    /// Copy `session`'s entries from before its listed checkpoint `k` to
    /// `into` (a session forked from it at `k`).
    pub fn copy_index(&self, session: &str, k: usize, into: &str) -> Result<(), CheckpointError> {
        let mut listed = 0usize;
        for entry in self.entries(session) {
            if entry.listed() {
                if listed == k {
                    break;
                }
                listed += 1;
            }
            let checkpoint = self.store.get(&entry.commit)?;
            self.append(into, entry.kind, entry.seq, &entry.label, &checkpoint)?;
        }
        Ok(())
    }

    /// Forget `session`'s checkpoints, and free what only they used.
    pub fn forget(&self, session: &str) -> Result<usize, CheckpointError> {
        let _ = std::fs::remove_file(self.index_path(session));
        let mut keep = Vec::new();
        if let Ok(dir) = std::fs::read_dir(&self.sessions_dir) {
            for file in dir.flatten() {
                let Some(other) = file
                    .path()
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .map(String::from)
                else {
                    continue;
                };
                for e in self.entries(&other) {
                    if let Ok(c) = self.store.get(&e.commit) {
                        keep.push(c);
                    }
                }
            }
        }
        self.store.prune(&keep)
    }
}

/// The engine's checkpointer: takes a session's checkpoints off the
/// async threads (git runs as a child process). A workspace too big to
/// copy is said once, then left alone for the rest of the process.
pub struct Checkpointer {
    checkpoints: Arc<SessionCheckpoints>,
    too_big: Arc<std::sync::atomic::AtomicBool>,
}

impl Checkpointer {
    pub fn new(checkpoints: SessionCheckpoints) -> Checkpointer {
        Checkpointer {
            checkpoints: Arc::new(checkpoints),
            too_big: Arc::default(),
        }
    }

    /// Take one, unless the workspace proved too big.
    async fn take(
        &self,
        session_id: &str,
        (kind, seq, label): (EntryKind, u64, String),
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        use std::sync::atomic::Ordering;
        if self.too_big.load(Ordering::Relaxed) {
            return Ok(());
        }
        let (c, session) = (self.checkpoints.clone(), session_id.to_string());
        let too_big = self.too_big.clone();
        blocking(move || {
            let taken = c.take(&session, kind, seq, &label);
            if matches!(taken, Err(CheckpointError::TooBig { .. })) {
                too_big.store(true, Ordering::Relaxed);
            }
            taken
        })
        .await
    }
}

#[async_trait::async_trait]
impl rein_core::rewind::Checkpointer for Checkpointer {
    async fn before_prompt(
        &self,
        session_id: &str,
        seq: u64,
        prompt: &str,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        self.take(session_id, (EntryKind::Prompt, seq, prompt.to_string()))
            .await
    }

    async fn after_changes(
        &self,
        session_id: &str,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        self.take(session_id, (EntryKind::After, 0, "after a run".to_string()))
            .await
    }
}

async fn blocking(
    f: impl FnOnce() -> Result<Checkpoint, CheckpointError> + Send + 'static,
) -> Result<(), rein_core::rewind::CheckpointFailure> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(rein_core::rewind::CheckpointFailure(e.to_string())),
        Err(e) => Err(rein_core::rewind::CheckpointFailure(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_core::rewind::Checkpointer as _;

    #[tokio::test]
    async fn a_workspace_too_big_to_checkpoint_is_said_once_then_left_alone() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for i in 0..30 {
            std::fs::write(ws.path().join(format!("f{i}")), "x").unwrap();
        }
        let options = CheckpointOptions {
            max_new_files: 10,
            ..CheckpointOptions::default()
        };
        let c = Checkpointer::new(
            SessionCheckpoints::open_with(home.path(), ws.path(), options).unwrap(),
        );
        let first = c.before_prompt("s1", 0, "go").await.unwrap_err();
        assert!(first.0.contains("too big to checkpoint"), "{first}");
        // Said once: the next prompts do not walk the folder again.
        assert!(c.before_prompt("s1", 1, "again").await.is_ok());
        assert!(c.after_changes("s1").await.is_ok());
        assert!(c.checkpoints.entries("s1").is_empty());
    }

    #[tokio::test]
    async fn each_prompt_and_each_run_end_is_an_entry_of_the_session() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(ws.path().join("a"), "x").unwrap();
        let c = Checkpointer::new(SessionCheckpoints::open(home.path(), ws.path()).unwrap());
        c.before_prompt("s1", 0, "first\nmore").await.unwrap();
        c.after_changes("s1").await.unwrap();
        c.before_prompt("s1", 4, "second").await.unwrap();
        let listed = c.checkpoints.listed("s1");
        let labels: Vec<(usize, &str, u64)> = listed
            .iter()
            .map(|(k, e)| (*k, e.label.as_str(), e.seq))
            .collect();
        assert_eq!(labels, [(0, "first more", 0), (1, "second", 4)]);
        assert_eq!(c.checkpoints.entries("s1").len(), 3);
        // An id names a file in the index folder and nothing else: its
        // characters other than letters and digits are dropped.
        assert_eq!(
            c.checkpoints.index_path("../../s1"),
            c.checkpoints.index_path("s1")
        );
        assert!(c.checkpoints.entries("s2").is_empty());
    }
}
