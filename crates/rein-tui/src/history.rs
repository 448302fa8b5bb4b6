//! The history of submitted inputs, shared across sessions.
//!
//! Kept as JSON Lines, one `{"text": "..."}` object per line, so that
//! multi-line inputs round-trip and several rein processes can append to
//! the same file. Reading never fails: a missing file is an empty history
//! and lines that do not parse are skipped. Writing is best effort: a
//! failure is returned for the caller to log and otherwise ignored.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Entries kept in memory (the oldest are dropped first).
pub const MAX_ENTRIES: usize = 1000;

/// When the file holds more than this many lines at load time it is
/// rewritten with only the newest [`MAX_ENTRIES`].
const COMPACT_AT: usize = 2 * MAX_ENTRIES;

#[derive(Serialize, Deserialize)]
struct Entry {
    text: String,
}

#[derive(Debug, Clone)]
pub struct InputHistory {
    path: PathBuf,
    /// Oldest first.
    entries: Vec<String>,
    /// Index of the entry being shown while navigating.
    cursor: Option<usize>,
    /// What was in the input box when navigation started.
    draft: Option<String>,
}

impl InputHistory {
    /// Read the history at `path`. A missing or unreadable file gives an
    /// empty history; corrupt lines are skipped. A file that has grown far
    /// past [`MAX_ENTRIES`] is compacted (best effort).
    pub fn load(path: impl Into<PathBuf>) -> InputHistory {
        let path = path.into();
        let mut history = InputHistory {
            path,
            entries: Vec::new(),
            cursor: None,
            draft: None,
        };
        let Ok(bytes) = fs::read(&history.path) else {
            return history;
        };
        let raw = String::from_utf8_lossy(&bytes);
        let mut lines = 0usize;
        for line in raw.lines() {
            lines += 1;
            let Ok(entry) = serde_json::from_str::<Entry>(line) else {
                continue;
            };
            if entry.text.trim().is_empty() || history.entries.last() == Some(&entry.text) {
                continue;
            }
            history.entries.push(entry.text);
        }
        history.cap();
        if lines > COMPACT_AT {
            // Losing the compaction only means a bigger file next time.
            let _ = history.rewrite();
        }
        history
    }

    /// An empty history that writes to `path` (nothing is read).
    pub fn empty(path: impl Into<PathBuf>) -> InputHistory {
        InputHistory {
            path: path.into(),
            entries: Vec::new(),
            cursor: None,
            draft: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Record a submitted input and append it to the file (creating its
    /// directory). Blank inputs and repeats of the newest entry are
    /// skipped. Navigation is reset. The entry is kept in memory even when
    /// the write fails; the error is returned for the caller to log.
    pub fn push(&mut self, text: &str) -> io::Result<()> {
        self.reset_navigation();
        if text.trim().is_empty() || self.entries.last().map(String::as_str) == Some(text) {
            return Ok(());
        }
        self.entries.push(text.to_string());
        self.cap();
        self.append(text)
    }

    fn cap(&mut self) {
        if self.entries.len() > MAX_ENTRIES {
            let excess = self.entries.len() - MAX_ENTRIES;
            self.entries.drain(..excess);
        }
    }

    fn open_options() -> OpenOptions {
        let mut opts = OpenOptions::new();
        #[cfg(unix)]
        {
            // Inputs may hold secrets: readable by the owner only.
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        opts
    }

    fn line_for(text: &str) -> io::Result<String> {
        let mut line = serde_json::to_string(&Entry {
            text: text.to_string(),
        })?;
        line.push('\n');
        Ok(line)
    }

    fn append(&self, text: &str) -> io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            rein_core::private_fs::create_private_dir(dir)?;
        }
        // A file an older rein left readable by others is tightened.
        rein_core::private_fs::tighten_file(&self.path)?;
        let line = Self::line_for(text)?;
        let mut file = Self::open_options()
            .create(true)
            .append(true)
            .open(&self.path)?;
        // One write per entry, so appends from other sessions don't
        // interleave within a line.
        file.write_all(line.as_bytes())
    }

    /// Replace the file with the entries in memory (write aside, rename).
    fn rewrite(&self) -> io::Result<()> {
        let mut body = String::new();
        for text in &self.entries {
            body.push_str(&Self::line_for(text)?);
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut file = Self::open_options()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(body.as_bytes())?;
        drop(file);
        fs::rename(&tmp, &self.path)
    }

    /// Step to the next older entry. The first call saves `current` (the
    /// input box's text) as the draft that [`InputHistory::next`] brings
    /// back. `None` when there is nothing older.
    pub fn prev(&mut self, current: &str) -> Option<&str> {
        if self.entries.is_empty() {
            return None;
        }
        let i = match self.cursor {
            None => {
                self.draft = Some(current.to_string());
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.cursor = Some(i);
        self.entries.get(i).map(String::as_str)
    }

    /// Step to the next newer entry; past the newest, the saved draft is
    /// returned and navigation ends. `None` when not navigating.
    // Named for the Down key, paired with `prev`; not an iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<&str> {
        let i = self.cursor?;
        if i + 1 < self.entries.len() {
            self.cursor = Some(i + 1);
            return self.entries.get(i + 1).map(String::as_str);
        }
        self.cursor = None;
        Some(self.draft.as_deref().unwrap_or(""))
    }

    /// Whether [`InputHistory::prev`] has been called since the last reset.
    pub fn is_navigating(&self) -> bool {
        self.cursor.is_some()
    }

    /// Forget the navigation position and the draft.
    pub fn reset_navigation(&mut self) {
        self.cursor = None;
        self.draft = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("tempdir: {e}"),
        }
    }

    #[test]
    fn missing_file_is_an_empty_history() {
        let dir = temp();
        let h = InputHistory::load(dir.path().join("nope/history.jsonl"));
        assert!(h.is_empty());
    }

    #[test]
    fn push_appends_and_load_reads_back_multiline_entries() {
        let dir = temp();
        let path = dir.path().join("deep/er/history.jsonl");
        let mut h = InputHistory::load(&path);
        h.push("first").unwrap();
        h.push("second\nwith \"quotes\"\tand tab\n").unwrap();
        h.push("ünïcödé 👍🏽").unwrap();
        let raw = std::fs::read_to_string(&path).unwrap();
        assert_eq!(raw.lines().count(), 3);
        assert_eq!(raw.lines().next(), Some(r#"{"text":"first"}"#));
        let again = InputHistory::load(&path);
        assert_eq!(
            again.entries(),
            &["first", "second\nwith \"quotes\"\tand tab\n", "ünïcödé 👍🏽"]
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_history_and_its_folder_are_private_and_an_old_loose_file_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = temp();
        let path = dir.path().join("home/history.jsonl");
        let mut h = InputHistory::load(&path);
        h.push("my secret token is x").unwrap();
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        h.push("another").unwrap();
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn push_skips_blank_and_consecutive_duplicates() {
        let dir = temp();
        let path = dir.path().join("h.jsonl");
        let mut h = InputHistory::load(&path);
        h.push("").unwrap();
        h.push("  \n ").unwrap();
        h.push("a").unwrap();
        h.push("a").unwrap();
        h.push("b").unwrap();
        h.push("a").unwrap();
        assert_eq!(h.entries(), &["a", "b", "a"]);
        assert_eq!(InputHistory::load(&path).entries(), &["a", "b", "a"]);
    }

    #[test]
    fn corrupt_lines_are_skipped() {
        let dir = temp();
        let path = dir.path().join("h.jsonl");
        let mut body =
            b"{\"text\":\"ok1\"}\nnot json\n{\"other\":1}\n\xff\xfe\n{\"text\":".to_vec();
        body.extend_from_slice(b"\n{\"text\":\"ok2\"}\n{\"text\":\"\"}\n");
        std::fs::write(&path, body).unwrap();
        let h = InputHistory::load(&path);
        assert_eq!(h.entries(), &["ok1", "ok2"]);
    }

    #[test]
    fn a_directory_in_the_way_is_not_fatal() {
        let dir = temp();
        // The path is a directory: loading gives nothing, pushing reports.
        let mut h = InputHistory::load(dir.path());
        assert!(h.is_empty());
        assert!(h.push("x").is_err());
        assert_eq!(h.entries(), &["x"]);
    }

    #[test]
    fn memory_is_capped_and_big_files_are_compacted() {
        let dir = temp();
        let path = dir.path().join("h.jsonl");
        let body: String = (0..2500)
            .map(|i| format!("{{\"text\":\"e{i}\"}}\n"))
            .collect();
        std::fs::write(&path, body).unwrap();
        let mut h = InputHistory::load(&path);
        assert_eq!(h.len(), MAX_ENTRIES);
        assert_eq!(h.entries()[0], "e1500");
        assert_eq!(h.entries()[MAX_ENTRIES - 1], "e2499");
        let raw = std::fs::read_to_string(&path).unwrap();
        assert_eq!(raw.lines().count(), MAX_ENTRIES);
        h.push("new").unwrap();
        assert_eq!(h.len(), MAX_ENTRIES);
        assert_eq!(h.entries()[0], "e1501");
    }

    #[test]
    fn prev_and_next_walk_the_history_and_restore_the_draft() {
        let dir = temp();
        let mut h = InputHistory::load(dir.path().join("h.jsonl"));
        assert_eq!(h.prev("draft"), None);
        assert_eq!(h.next(), None);
        for t in ["one", "two", "three"] {
            h.push(t).unwrap();
        }
        assert_eq!(h.prev("my draft"), Some("three"));
        assert!(h.is_navigating());
        assert_eq!(h.prev("ignored"), Some("two"));
        assert_eq!(h.prev(""), Some("one"));
        assert_eq!(h.prev(""), None, "nothing older");
        assert_eq!(h.next(), Some("two"));
        assert_eq!(h.next(), Some("three"));
        assert_eq!(h.next(), Some("my draft"));
        assert!(!h.is_navigating());
        assert_eq!(h.next(), None);
        // A new walk saves a new draft.
        assert_eq!(h.prev("other"), Some("three"));
        h.reset_navigation();
        assert_eq!(h.next(), None);
        assert_eq!(h.prev("x"), Some("three"));
        h.push("four").unwrap();
        assert!(!h.is_navigating());
        assert_eq!(h.prev(""), Some("four"));
    }
}
