//! A session's checkpoints: the workspace snapshots of
//! [`rein_store::checkpoints`] (one private shadow repository per
//! workspace under `$REIN_HOME/checkpoints/`), and for each session an
//! index file of the ones it took, in order
//! (`$REIN_HOME/checkpoints/sessions/ID.jsonl`): before each prompt, after
//! each run whose calls changed files (with the files someone else changed
//! meanwhile, see [`outside`](super::outside)), before each rewind.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rein_core::rewind::RunWrites;
use rein_store::checkpoints::{
    Checkpoint, CheckpointError, CheckpointOptions, Checkpoints, FileChange,
};
use serde::{Deserialize, Serialize};

use super::outside;

/// Why an index entry was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// Before a prompt of the user: what `rein rewind --to K` goes back to.
    Prompt,
    /// After a run whose calls may have changed files: the workspace as
    /// rein left it.
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
    /// After a run: the files that changed during it (since the entry
    /// before) that it did not write, relative to the workspace. A rewind
    /// past this entry counts them as changed outside rein.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<String>,
}

impl Entry {
    /// The entry of `checkpoint`, taken as `kind` after `seq` messages.
    fn of(kind: EntryKind, seq: u64, label: &str, checkpoint: &Checkpoint) -> Entry {
        Entry {
            kind,
            commit: checkpoint.id.clone(),
            seq,
            label: rein_core::text::one_line(label, 200),
            at: checkpoint.at_millis,
            outside: Vec::new(),
        }
    }

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

    /// Snapshot the workspace at the end of a run that wrote `writes`,
    /// and add it to `session`'s index with the files that changed since
    /// the entry before but that the run did not write.
    pub fn take_after_run(
        &self,
        session: &str,
        label: &str,
        writes: &RunWrites,
    ) -> Result<Checkpoint, CheckpointError> {
        let before = self.entries(session).last().map(|e| e.commit.clone());
        let checkpoint = self.store.snapshot(label)?;
        let outside = match &before {
            Some(before) => {
                let changed = self.store.diff_from_commit(before, &checkpoint)?;
                outside::not_written(self.store.workspace(), &changed, writes)
            }
            None => Vec::new(),
        };
        let mut entry = Entry::of(EntryKind::After, 0, label, &checkpoint);
        entry.outside = outside;
        self.write(session, &entry)?;
        Ok(checkpoint)
    }

    /// The files runs after `session`'s listed checkpoint `k` did not
    /// write though they changed during them: what a rewind to `k` must
    /// ask about before it overwrites them.
    pub fn changed_outside_runs_after(&self, session: &str, k: usize) -> Vec<PathBuf> {
        let mut listed = 0usize;
        let mut past_k = false;
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in self.entries(session) {
            if past_k {
                files.extend(entry.outside.iter().map(PathBuf::from));
            } else if entry.listed() {
                past_k = listed == k;
                listed += 1;
            }
        }
        files.sort();
        files.dedup();
        files
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
        self.write(session, &Entry::of(kind, seq, label, checkpoint))
    }

    /// Add `entry` to `session`'s index.
    fn write(&self, session: &str, entry: &Entry) -> Result<(), CheckpointError> {
        let io = |source| CheckpointError::Io {
            path: self.sessions_dir.clone(),
            source,
        };
        rein_core::private_fs::create_private_dir(&self.sessions_dir).map_err(io)?;
        let line = serde_json::to_string(entry).unwrap_or_default();
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
            // Only entries whose checkpoint is still there are copied.
            self.store.get(&entry.commit)?;
            self.write(into, &entry)?;
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

    /// Take one with `take`, unless the workspace proved too big.
    async fn take(
        &self,
        take: impl FnOnce(&SessionCheckpoints) -> Result<Checkpoint, CheckpointError> + Send + 'static,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        use std::sync::atomic::Ordering;
        if self.too_big.load(Ordering::Relaxed) {
            return Ok(());
        }
        let c = self.checkpoints.clone();
        let too_big = self.too_big.clone();
        blocking(move || {
            let taken = take(&c);
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
        let (session, prompt) = (session_id.to_string(), prompt.to_string());
        self.take(move |c| c.take(&session, EntryKind::Prompt, seq, &prompt))
            .await
    }

    async fn after_changes(
        &self,
        session_id: &str,
        writes: RunWrites,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        let session = session_id.to_string();
        self.take(move |c| c.take_after_run(&session, "after a run", &writes))
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
        assert!(c.after_changes("s1", RunWrites::default()).await.is_ok());
        assert!(c.checkpoints.entries("s1").is_empty());
    }

    #[tokio::test]
    async fn each_prompt_and_each_run_end_is_an_entry_of_the_session() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(ws.path().join("a"), "x").unwrap();
        let c = Checkpointer::new(SessionCheckpoints::open(home.path(), ws.path()).unwrap());
        c.before_prompt("s1", 0, "first\nmore").await.unwrap();
        c.after_changes("s1", RunWrites::default()).await.unwrap();
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

    #[tokio::test]
    async fn files_changed_during_a_run_that_it_did_not_write_are_kept_as_changed_outside() {
        let (home, ws) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(ws.path().join("code.rs"), "v1").unwrap();
        std::fs::write(ws.path().join("notes.txt"), "v1").unwrap();
        let c = Checkpointer::new(SessionCheckpoints::open(home.path(), ws.path()).unwrap());
        c.before_prompt("s1", 0, "first").await.unwrap();
        // The run writes code.rs; meanwhile the user edits notes.txt.
        std::fs::write(ws.path().join("code.rs"), "v2 by rein").unwrap();
        std::fs::write(ws.path().join("notes.txt"), "v2 by the user").unwrap();
        let writes = RunWrites {
            paths: vec![ws.path().join("code.rs")],
            exec_windows: Vec::new(),
        };
        c.after_changes("s1", writes).await.unwrap();
        c.before_prompt("s1", 4, "second").await.unwrap();
        let entries = c.checkpoints.entries("s1");
        let kinds: Vec<(EntryKind, Vec<String>)> = entries
            .iter()
            .map(|e| (e.kind, e.outside.clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                (EntryKind::Prompt, vec![]),
                (EntryKind::After, vec!["notes.txt".to_string()]),
                (EntryKind::Prompt, vec![]),
            ]
        );
        // A rewind to before the run must ask about it; one to after it
        // has nothing to ask.
        let ck = &c.checkpoints;
        assert_eq!(
            ck.changed_outside_runs_after("s1", 0),
            [PathBuf::from("notes.txt")]
        );
        assert!(ck.changed_outside_runs_after("s1", 1).is_empty());
        // A session forked at checkpoint 1 keeps what the run's entry says.
        ck.copy_index("s1", 1, "f1").unwrap();
        assert_eq!(ck.entries("f1"), entries[..2]);
    }
}
