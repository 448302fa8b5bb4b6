//! Checkpoints: snapshots of a whole workspace folder, for "rewind" (undo
//! any turn, edits made by shell commands included).
//!
//! Each workspace gets a private git repository of its own, the *shadow
//! repository*, at `<root>/<16 hex digits of the SHA-256 of the canonical
//! workspace path>.git` (folders `0700`). The `git` program does the work:
//! a snapshot stages what changed into the shadow index (only files whose
//! size or time changed are hashed again), writes the tree and records it
//! as a commit kept alive by the ref `refs/rein/cp/<commit>`. The
//! workspace's `.gitignore` files are read once, at its first snapshot,
//! and their rules kept (a `.gitignore` written later hides nothing; see
//! `ignore`); the user's own `.git` is
//! never read or written (git only ever sees the shadow repository, and
//! never stores a `.git` folder), so a workspace that is not a git
//! repository works the same.
//!
//! Nothing in the workspace can make git run a program: no hooks, no
//! fsmonitor, no filter or text conversion (the shadow repository's
//! `info/attributes` switches them off for every path, so files are stored
//! and restored byte for byte), no system, global or user configuration.
//!
//! Checkpoint commits have no parents: each one stands alone, so
//! [`Checkpoints::prune`] can free the snapshots nobody keeps (a chain
//! would keep every ancestor of a kept checkpoint alive). Git's object
//! store shares identical files and folders between them anyway.
//!
//! The API is blocking (it waits for `git`); async callers run it on a
//! blocking thread. One [`Checkpoints`] serialises its own operations;
//! two processes working on one workspace at the same moment get
//! [`CheckpointError::Busy`] from the one that loses the race.

mod git;
mod ignore;
mod restore;
mod shadow;
mod stage;
mod types;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use git::{Git, bytes_of, first_line, is_object_name, path_of};
use shadow::{create_shadow, write_excludes};
use stage::State;
pub use types::{
    ChangeKind, Checkpoint, CheckpointError, CheckpointOptions, DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_NEW_BYTES, DEFAULT_MAX_NEW_FILES, FileChange, FileMode, RestoreGuard, Restored,
};
use types::{RawChange, parse_checkpoint, parse_raw, public_change};

/// The file in the shadow repository naming the workspace it belongs to.
const WORKSPACE_FILE: &str = "rein-workspace";

/// Where each checkpoint's ref lives.
const REF_PREFIX: &str = "refs/rein/cp/";

/// A snapshot that staged more paths than this packs the new objects, so
/// a first snapshot of a big tree does not leave thousands of loose files.
const REPACK_AFTER: usize = 500;

/// The snapshots of one workspace. See the module documentation.
#[derive(Debug)]
pub struct Checkpoints {
    git: Git,
    options: CheckpointOptions,
    state: Mutex<State>,
}

impl Checkpoints {
    /// Open (creating on first use) the shadow repository of `workspace`
    /// under `root` (typically `$REIN_HOME/checkpoints`), with the default
    /// options.
    pub fn open(root: &Path, workspace: &Path) -> Result<Checkpoints, CheckpointError> {
        Checkpoints::open_with(root, workspace, CheckpointOptions::default())
    }

    /// [`Checkpoints::open`] with options. Fails with
    /// [`CheckpointError::WorkspaceMismatch`] when the shadow repository at
    /// the workspace's place records another workspace.
    pub fn open_with(
        root: &Path,
        workspace: &Path,
        options: CheckpointOptions,
    ) -> Result<Checkpoints, CheckpointError> {
        let work = std::fs::canonicalize(workspace).map_err(|e| io_error(workspace, e))?;
        rein_core::private_fs::create_private_dir(root).map_err(|e| io_error(root, e))?;
        let root = std::fs::canonicalize(root).map_err(|e| io_error(root, e))?;
        let digest = Sha256::digest(bytes_of(&work));
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let dir = root.join(format!("{}.git", &hex[..16]));
        let git = Git {
            dir: dir.clone(),
            work: work.clone(),
        };
        if !dir.join(WORKSPACE_FILE).exists() {
            create_shadow(&root, &git)?;
        }
        let found = std::fs::read(dir.join(WORKSPACE_FILE))
            .map_err(|e| io_error(&dir.join(WORKSPACE_FILE), e))?;
        if found != bytes_of(&work) {
            return Err(CheckpointError::WorkspaceMismatch {
                shadow: dir,
                expected: work,
                found: path_of(&found),
            });
        }
        let mut excluded = vec![root.clone()];
        excluded.extend(options.exclude.iter().map(|p| work.join(p)));
        write_excludes(&git, &excluded)?;
        Ok(Checkpoints {
            git,
            options,
            state: Mutex::new(State::default()),
        })
    }

    /// The workspace (canonical path) these checkpoints are of.
    pub fn workspace(&self) -> &Path {
        &self.git.work
    }

    /// The shadow repository's folder.
    pub fn shadow_dir(&self) -> &Path {
        &self.git.dir
    }

    /// Record the workspace as it is now. A checkpoint is made even when
    /// nothing changed since the last one (same tree, new id), so every
    /// turn has one to return to.
    pub fn snapshot(&self, label: &str) -> Result<Checkpoint, CheckpointError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let staged = self.stage(&mut state)?;
        let checkpoint = self.commit(&staged.tree, label, staged.skipped)?;
        if staged.count > REPACK_AFTER {
            self.git.run(["repack", "-d", "-q"])?;
        }
        Ok(checkpoint)
    }

    /// What differs between `from` and the workspace now. The current
    /// state is staged into the shadow index (new content is hashed into
    /// the object store, kept only if a later snapshot uses it) but no
    /// checkpoint is made.
    pub fn changed_since(&self, from: &Checkpoint) -> Result<Vec<FileChange>, CheckpointError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let staged = self.stage(&mut state)?;
        let raw = self.raw_diff(&from.tree, &staged.tree)?;
        Ok(raw.iter().map(public_change).collect())
    }

    /// What differs between two checkpoints.
    pub fn diff(
        &self,
        from: &Checkpoint,
        to: &Checkpoint,
    ) -> Result<Vec<FileChange>, CheckpointError> {
        let raw = self.raw_diff(&from.tree, &to.tree)?;
        Ok(raw.iter().map(public_change).collect())
    }

    /// What differs between the checkpoint whose commit is `from` and
    /// `to`, without reading `from` back first.
    pub fn diff_from_commit(
        &self,
        from: &str,
        to: &Checkpoint,
    ) -> Result<Vec<FileChange>, CheckpointError> {
        // A commit names its tree for `diff-tree`.
        let raw = self.raw_diff(from, &to.tree)?;
        Ok(raw.iter().map(public_change).collect())
    }

    /// A unified diff from `from` to `to`, for a preview. Binary files are
    /// named ("Binary files a/x and b/x differ"), not printed.
    pub fn patch_text(
        &self,
        from: &Checkpoint,
        to: &Checkpoint,
    ) -> Result<String, CheckpointError> {
        check_names(&[&from.tree, &to.tree])?;
        let out = self
            .git
            .run([
                "diff-tree",
                "-r",
                "-p",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                &from.tree,
                &to.tree,
            ])
            .map_err(|e| unknown_object(e, &[&from.tree, &to.tree]))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Make the workspace's files (those not ignored) equal to `to`:
    /// files created since are deleted, changed ones rewritten (content and
    /// execute bit), deleted ones recreated, folders left empty by
    /// deletions removed. Ignored files and the user's `.git` are never
    /// touched, nor anything reached through a link to a folder.
    ///
    /// `only_if_unchanged_since` is the latest checkpoint rein took: when
    /// the workspace differs from it (something else changed files since),
    /// the restore is refused with [`CheckpointError::ChangedOutside`]
    /// unless `force`. The state before the restore is recorded first
    /// ([`Restored::before`]), so a restore can itself be undone.
    pub fn restore(
        &self,
        to: &Checkpoint,
        only_if_unchanged_since: Option<&Checkpoint>,
        force: bool,
    ) -> Result<Restored, CheckpointError> {
        let guard = RestoreGuard {
            unchanged_since: only_if_unchanged_since,
            changed_outside: &[],
        };
        self.restore_guarded(to, guard, force)
    }

    /// [`Checkpoints::restore`], refusing also (unless `force`) when it
    /// would change one of the files `guard` knows changed outside rein.
    pub fn restore_guarded(
        &self,
        to: &Checkpoint,
        guard: RestoreGuard<'_>,
        force: bool,
    ) -> Result<Restored, CheckpointError> {
        check_names(&[&to.tree])?;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // Check the target first: a bad one must not cost the workspace anything.
        let kind = self
            .git
            .run(["cat-file", "-t", &to.tree])
            .map_err(|e| unknown_object(e, &[&to.tree]))?;
        if first_line(&kind) != "tree" {
            return Err(CheckpointError::UnknownCheckpoint(to.tree.clone()));
        }
        let staged = self.stage(&mut state)?;
        let changes = self.raw_diff(&staged.tree, &to.tree)?;
        if !force {
            let outside = self.changed_outside(&staged.tree, &changes, guard)?;
            if !outside.is_empty() {
                return Err(CheckpointError::ChangedOutside { files: outside });
            }
        }
        let label = format!("before restoring {}", short(&to.id));
        let before = self.commit(&staged.tree, &label, staged.skipped)?;
        let applied = restore::apply(&self.git, &changes)?;
        Ok(Restored {
            written: applied.written,
            deleted: applied.deleted,
            left_alone: applied.left_alone,
            before,
        })
    }

    /// The files a restore (`changes`, from the workspace now, staged as
    /// `now`) must not overwrite unasked: those that differ from the
    /// guard's latest checkpoint, and those of its known ones it would
    /// change. Sorted.
    fn changed_outside(
        &self,
        now: &str,
        changes: &[RawChange],
        guard: RestoreGuard<'_>,
    ) -> Result<Vec<PathBuf>, CheckpointError> {
        let mut files = Vec::new();
        if let Some(latest) = guard.unchanged_since {
            let since = self.raw_diff(&latest.tree, now)?;
            files.extend(since.iter().map(|c| path_of(&c.path)));
        }
        if !guard.changed_outside.is_empty() {
            let known: HashSet<String> = guard
                .changed_outside
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            files.extend(
                changes
                    .iter()
                    .map(|c| path_of(&c.path))
                    .filter(|p| known.contains(p.to_string_lossy().as_ref())),
            );
        }
        files.sort();
        files.dedup();
        Ok(files)
    }

    /// The checkpoint `id` (a full commit name), read back from the store.
    pub fn get(&self, id: &str) -> Result<Checkpoint, CheckpointError> {
        check_names(&[id])?;
        let out = self
            .git
            .run(["cat-file", "commit", id])
            .map_err(|e| unknown_object(e, &[id]))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let tree = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("tree "))
            .unwrap_or_default()
            .to_string();
        let message = text.split_once("\n\n").map(|(_, m)| m).unwrap_or_default();
        parse_checkpoint(id, &tree, message)
    }

    /// Every checkpoint still kept, oldest first.
    pub fn list(&self) -> Result<Vec<Checkpoint>, CheckpointError> {
        let out = self.git.run([
            "for-each-ref",
            "--format=%(objectname)%00%(tree)%00%(contents)%00",
            REF_PREFIX,
        ])?;
        let text = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<&str> = text.split('\0').collect();
        let mut all = Vec::new();
        for chunk in fields.chunks_exact(3) {
            let id = chunk[0].trim();
            all.push(parse_checkpoint(id, chunk[1], chunk[2])?);
        }
        all.sort_by(|a, b| (a.at_millis, &a.id).cmp(&(b.at_millis, &b.id)));
        Ok(all)
    }

    /// Drop every checkpoint not in `keep` and free the space only they
    /// used (`git gc --prune=now`). Returns how many were dropped.
    pub fn prune(&self, keep: &[Checkpoint]) -> Result<usize, CheckpointError> {
        let _state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let kept: HashSet<&str> = keep.iter().map(|c| c.id.as_str()).collect();
        let out = self
            .git
            .run(["for-each-ref", "--format=%(refname)", REF_PREFIX])?;
        let mut commands = String::new();
        let mut dropped = 0;
        for name in String::from_utf8_lossy(&out.stdout).lines() {
            let id = name.strip_prefix(REF_PREFIX).unwrap_or_default();
            if !kept.contains(id) {
                commands.push_str(&format!("delete {name}\n"));
                dropped += 1;
            }
        }
        if dropped > 0 {
            self.git
                .run_with_input(["update-ref", "--stdin"], commands.as_bytes())?;
        }
        self.git.run(["gc", "-q", "--prune=now"])?;
        Ok(dropped)
    }

    /// Remove the whole shadow repository (every checkpoint of this
    /// workspace). The next [`Checkpoints::open`] starts afresh.
    pub fn delete_all(self) -> Result<(), CheckpointError> {
        let dir = self.git.dir.clone();
        std::fs::remove_dir_all(&dir).map_err(|e| io_error(&dir, e))
    }

    /// `git diff-tree --raw` between two trees, parsed.
    fn raw_diff(&self, from: &str, to: &str) -> Result<Vec<RawChange>, CheckpointError> {
        check_names(&[from, to])?;
        let out = self
            .git
            .run([
                "diff-tree",
                "-r",
                "-z",
                "--raw",
                "--no-renames",
                "--no-abbrev",
                from,
                to,
            ])
            .map_err(|e| unknown_object(e, &[from, to]))?;
        parse_raw(&out.stdout)
    }
}

fn io_error(path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Refuse a name that is not a full object name before it reaches git's
/// command line (where `--output=...` would be an option).
fn check_names(names: &[&str]) -> Result<(), CheckpointError> {
    match names.iter().find(|n| !is_object_name(n)) {
        Some(bad) => Err(CheckpointError::UnknownCheckpoint(bad.to_string())),
        None => Ok(()),
    }
}

/// What git says when an object is missing or of the wrong type.
const MISSING_OBJECT: &[&str] = &[
    "bad object",
    "bad file",
    "not a tree",
    "not a valid",
    "unable to read",
    "could not get object info",
];

/// A git failure about a missing object, as [`CheckpointError::UnknownCheckpoint`].
fn unknown_object(e: CheckpointError, names: &[&str]) -> CheckpointError {
    match &e {
        CheckpointError::Git { stderr, .. }
            if MISSING_OBJECT.iter().any(|m| stderr.contains(m)) =>
        {
            CheckpointError::UnknownCheckpoint(names.join(".."))
        }
        _ => e,
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}
