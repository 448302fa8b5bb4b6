//! Staging: bringing the shadow index up to date with the workspace, and
//! recording a staged tree as a checkpoint commit.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::git::{first_line, is_object_name, path_of, records};
use super::ignore;
use super::types::{META_KEY, Meta, lossy};
use super::{Checkpoint, CheckpointError, Checkpoints, REF_PREFIX};

/// What staging the workspace found.
pub(super) struct Staged {
    pub(super) tree: String,
    pub(super) skipped: Vec<PathBuf>,
    pub(super) count: usize,
}

/// Mutable state behind the lock.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Tracked files that are excluded now were dropped from the index once.
    ignored_dropped: bool,
}

impl Checkpoints {
    /// Bring the shadow index up to date with the workspace and write its
    /// tree. Only paths git reports as changed (by size, time or mode) or
    /// new are staged; a file that vanishes meanwhile is retried once.
    pub(super) fn stage(&self, state: &mut State) -> Result<Staged, CheckpointError> {
        match self.stage_once(state) {
            Err(CheckpointError::Git { stderr, .. }) if stderr.contains("did not match") => {
                self.stage_once(state)
            }
            other => other,
        }
    }

    fn stage_once(&self, state: &mut State) -> Result<Staged, CheckpointError> {
        let [rules, own] = ignore::exclude_options(&self.git)?;
        // "C path": tracked and changed (or deleted); "? path": new.
        let out = self
            .git
            .run(["ls-files", "-z", "-t", "-m", "-o", &rules, &own])?;
        let mut add: Vec<&[u8]> = Vec::new();
        let mut untrack: Vec<Vec<u8>> = Vec::new();
        let mut skipped = Vec::new();
        let mut new_bytes = 0u64;
        for record in records(&out.stdout) {
            let (tag, path) = match record {
                [tag, b' ', path @ ..] if !path.is_empty() => (*tag, path),
                _ => return Err(CheckpointError::Parse(lossy(record))),
            };
            if let Some(nested) = path.strip_suffix(b"/") {
                // A git repository inside the workspace: git will not look in.
                skipped.push(path_of(nested));
                continue;
            }
            let rel = path_of(path);
            let tracked = tag == b'C';
            // Behind a link to a folder git does not look: for git it is gone.
            if behind_symlink(&self.git.work, &rel) {
                if tracked {
                    untrack.push(path.to_vec());
                }
                continue;
            }
            match std::fs::symlink_metadata(self.git.work.join(&rel)) {
                Err(_) if tracked => {
                    untrack.push(path.to_vec());
                    continue;
                }
                Ok(meta) if meta.is_file() && meta.len() > self.options.max_file_bytes => {
                    skipped.push(rel);
                    if tracked {
                        untrack.push(path.to_vec());
                    }
                    continue;
                }
                Ok(meta) if !(meta.is_file() || meta.is_symlink() || meta.is_dir()) => {
                    continue;
                }
                Ok(meta) => new_bytes = new_bytes.saturating_add(meta.len()),
                _ => {}
            }
            add.push(path);
        }
        add.sort_unstable();
        add.dedup();
        let (max_files, max_bytes) = (self.options.max_new_files, self.options.max_new_bytes);
        if add.len() > max_files || new_bytes > max_bytes {
            return Err(CheckpointError::TooBig {
                files: add.len(),
                bytes: new_bytes,
                max_files,
                max_bytes,
            });
        }
        // A shadow repository without an index yet tracks nothing.
        if !state.ignored_dropped && self.git.dir.join("index").exists() {
            // Tracked files that the rules cover leave the index: rein's
            // own exclusions may have grown since the last process.
            let ignored = self.git.run(["ls-files", "-z", "-c", "-i", &rules, &own])?;
            untrack.extend(records(&ignored.stdout).map(<[u8]>::to_vec));
        }
        state.ignored_dropped = true;
        if !untrack.is_empty() {
            self.git.run_with_input(
                ["update-index", "-z", "--force-remove", "--stdin"],
                &nul_joined(untrack.iter().map(Vec::as_slice)),
            )?;
        }
        if !add.is_empty() {
            self.git.run_with_input(
                // Forced: what the listing above chose is added whatever
                // `.gitignore` files the workspace holds now.
                [
                    "--literal-pathspecs",
                    "add",
                    "-A",
                    "-f",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                &nul_joined(add.iter().copied()),
            )?;
        }
        let tree = first_line(&self.git.run(["write-tree"])?);
        if !is_object_name(&tree) {
            return Err(CheckpointError::Parse(format!(
                "write-tree printed {tree:?}"
            )));
        }
        Ok(Staged {
            tree,
            skipped,
            count: add.len(),
        })
    }

    /// Record `tree` as a checkpoint commit and give it its ref.
    pub(super) fn commit(
        &self,
        tree: &str,
        label: &str,
        skipped: Vec<PathBuf>,
    ) -> Result<Checkpoint, CheckpointError> {
        let at_millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        let meta = Meta {
            label: label.to_string(),
            at_millis,
            skipped: skipped
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect(),
        };
        let json =
            serde_json::to_string(&meta).map_err(|e| CheckpointError::Parse(e.to_string()))?;
        let subject: String = label
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let message = format!("{}\n\n{META_KEY}{json}\n", subject.trim());
        let date = format!("@{} +0000", at_millis / 1000);
        let out = self.git.exec(
            ["commit-tree", tree, "-F", "-"],
            &[
                ("GIT_AUTHOR_DATE", date.clone()),
                ("GIT_COMMITTER_DATE", date),
            ],
            Some(message.as_bytes()),
        )?;
        let id = first_line(&out);
        if !is_object_name(&id) {
            return Err(CheckpointError::Parse(format!(
                "commit-tree printed {id:?}"
            )));
        }
        self.set_ref(&id)?;
        Ok(Checkpoint {
            id,
            tree: tree.to_string(),
            at_millis,
            label: label.to_string(),
            skipped,
        })
    }
}

impl Checkpoints {
    /// Give the commit `id` its ref, which keeps it from being collected.
    /// In the usual store of refs (one file each) the file is written
    /// directly, as `git update-ref` would (a `.lock` beside it, then
    /// renamed): one process fewer a checkpoint. Otherwise, or when the
    /// lock is taken, `git update-ref` does it.
    fn set_ref(&self, id: &str) -> Result<(), CheckpointError> {
        let name = format!("{REF_PREFIX}{id}");
        if !self.git.dir.join("reftable").exists() && write_loose_ref(&self.git.dir, &name, id) {
            return Ok(());
        }
        self.git.run(["update-ref", &name, id])?;
        Ok(())
    }
}

/// Write the loose ref `name` (under `dir`) holding `id`; false when it
/// could not (the caller falls back to git).
fn write_loose_ref(dir: &Path, name: &str, id: &str) -> bool {
    use std::io::Write;
    let path = dir.join(name);
    let Some(folder) = path.parent() else {
        return false;
    };
    let lock = path.with_extension("lock");
    let written = std::fs::create_dir_all(folder).is_ok()
        && std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
            .and_then(|mut f| f.write_all(format!("{id}\n").as_bytes()))
            .is_ok();
    if written && std::fs::rename(&lock, &path).is_ok() {
        return true;
    }
    if written {
        let _ = std::fs::remove_file(&lock);
    }
    false
}

/// Whether a folder on the way to `rel` (inside `work`) is a symbolic link.
fn behind_symlink(work: &Path, rel: &Path) -> bool {
    let mut dir = work.to_path_buf();
    let Some(parent) = rel.parent() else {
        return false;
    };
    parent.components().any(|part| {
        dir.push(part);
        std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_symlink())
    })
}

fn nul_joined<'a>(items: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        out.extend_from_slice(item);
        out.push(0);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_loose_ref_is_written_whole_and_a_taken_lock_is_left_to_git() {
        let dir = tempfile::tempdir().unwrap();
        let id = "a".repeat(40);
        assert!(write_loose_ref(dir.path(), "refs/rein/cp/x", &id));
        let read = std::fs::read_to_string(dir.path().join("refs/rein/cp/x")).unwrap();
        assert_eq!(read, format!("{id}\n"));
        // Someone holds the lock: nothing is written, the lock is theirs.
        std::fs::write(dir.path().join("refs/rein/cp/y.lock"), "theirs").unwrap();
        assert!(!write_loose_ref(dir.path(), "refs/rein/cp/y", &id));
        assert!(!dir.path().join("refs/rein/cp/y").exists());
        let lock = std::fs::read_to_string(dir.path().join("refs/rein/cp/y.lock")).unwrap();
        assert_eq!(lock, "theirs");
    }
}
