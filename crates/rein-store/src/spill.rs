//! `FileSpill`: tool outputs too big for the context, saved as files so the
//! model can read them in pieces later.
//!
//! Layout: `<root>/sessions/<session id>/outputs/<call id>.txt`. Names are
//! made safe for a file name (only `A-Z a-z 0-9 _ -`, at most 64
//! characters); a name that had to change gets a short hash of the original
//! so two different ids never share a file. Each file is written to a
//! temporary name and renamed into place, so a reader never sees half an
//! output.

use std::io::Write;
use std::path::{Path, PathBuf};

use rein_core::{OutputSpill, SpillError};

/// Longest file-name stem used for an id.
const MAX_NAME: usize = 64;

/// Saves big tool outputs under `root` (rein's data directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpill {
    pub root: PathBuf,
    /// What the model is told to do with a saved output (see
    /// [`OutputSpill::reading_hint`]); None: the generic wording.
    pub reading_hint: Option<String>,
}

impl FileSpill {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FileSpill {
            root: root.into(),
            reading_hint: None,
        }
    }

    /// Name the tools that read a saved output.
    pub fn with_reading_hint(mut self, hint: impl Into<String>) -> Self {
        self.reading_hint = Some(hint.into());
        self
    }
}

impl OutputSpill for FileSpill {
    fn dir(&self, session_id: &str) -> PathBuf {
        self.root
            .join("sessions")
            .join(safe_name(session_id, "session"))
            .join("outputs")
    }

    fn reading_hint(&self) -> String {
        match &self.reading_hint {
            Some(hint) => hint.clone(),
            None => rein_core::GENERIC_READING_HINT.to_string(),
        }
    }

    fn save(&self, session_id: &str, call_id: &str, content: &str) -> Result<PathBuf, SpillError> {
        let dir = self.dir(session_id);
        create_private_dir(&dir).map_err(|source| SpillError::Folder {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(format!("{}.txt", safe_name(call_id, "output")));
        write_atomically(&path, content.as_bytes()).map_err(|source| SpillError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }
}

/// `id` as a file-name stem: characters other than `A-Z a-z 0-9 _ -`
/// become `_`, and the result is at most [`MAX_NAME`] characters. When
/// anything had to change, a hash of the original id ends the name, so
/// distinct ids keep distinct names. An empty id becomes `fallback`.
pub fn safe_name(id: &str, fallback: &str) -> String {
    if id.is_empty() {
        return fallback.to_string();
    }
    let clean: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean == id && clean.len() <= MAX_NAME {
        return clean;
    }
    let tag = format!("-{:08x}", fnv1a(id.as_bytes()) as u32);
    let keep = MAX_NAME - tag.len();
    // `clean` is ASCII, so any byte index is a character boundary.
    let head = &clean[..clean.len().min(keep)];
    format!("{head}{tag}")
}

/// 64-bit FNV-1a: a stable hash (unlike std's, which may change between
/// releases), enough to tell ids apart.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Create `dir` and its parents; the folders created are private to the
/// user (outputs may hold anything a command printed).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    rein_core::private_fs::create_private_dir(dir)
}

/// Write `bytes` to a temporary file beside `path`, then rename it over
/// `path`: the file is either the old one or the whole new one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        ".{name}.{}.{:08x}.tmp",
        std::process::id(),
        tmp_suffix()
    ));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A random number for temporary names, without a dependency: the clock's
/// nanoseconds mixed with a per-process counter.
fn tmp_suffix() -> u32 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    fnv1a(&[nanos.to_le_bytes(), n.to_le_bytes()].concat()) as u32
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn outputs_go_to_the_session_outputs_folder_as_call_id_txt() {
        let dir = tempfile::tempdir().unwrap();
        let spill = FileSpill::new(dir.path());
        let path = spill.save("0123abc", "call_1", "hello\nworld").unwrap();
        assert_eq!(path, dir.path().join("sessions/0123abc/outputs/call_1.txt"));
        assert_eq!(spill.dir("0123abc"), path.parent().unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld");
    }

    #[test]
    fn saving_again_replaces_the_file_and_leaves_no_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let spill = FileSpill::new(dir.path());
        spill.save("s", "c", &"x".repeat(100_000)).unwrap();
        let path = spill.save("s", "c", "short").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "short");
        let names: Vec<String> = std::fs::read_dir(spill.dir("s"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["c.txt"]);
    }

    #[test]
    fn ids_cannot_leave_the_outputs_folder() {
        let dir = tempfile::tempdir().unwrap();
        let spill = FileSpill::new(dir.path());
        for call in ["../../../etc/passwd", "/abs/path", "a/b", "..", ".", "c\0d"] {
            let path = spill.save("../up", call, "x").unwrap();
            let outputs = dir.path().join("sessions");
            assert!(path.starts_with(&outputs), "{call}: {}", path.display());
            assert_eq!(path.parent().unwrap().file_name().unwrap(), "outputs");
            let stem = path.file_stem().unwrap().to_str().unwrap();
            assert!(
                stem.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{stem}"
            );
        }
    }

    #[test]
    fn safe_names_keep_clean_ids_and_tell_changed_ones_apart() {
        assert_eq!(safe_name("call_AbC-9", "x"), "call_AbC-9");
        assert_eq!(safe_name("", "output"), "output");
        let a = safe_name("a.b", "x");
        let b = safe_name("a_b", "x");
        assert_ne!(a, b);
        assert!(a.starts_with("a_b-"), "{a}");
        let long = "y".repeat(200);
        let n = safe_name(&long, "x");
        assert_eq!(n.len(), MAX_NAME);
        assert_ne!(n, safe_name(&"y".repeat(201), "x"));
        // Exactly 64 clean characters stay as they are.
        let exact = "z".repeat(MAX_NAME);
        assert_eq!(safe_name(&exact, "x"), exact);
        assert_eq!(safe_name("é", "x").len(), 10);
    }

    #[cfg(unix)]
    #[test]
    fn saved_outputs_are_private_to_the_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let spill = FileSpill::new(dir.path());
        let path = spill.save("s", "c", "secret").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }

    #[test]
    fn the_reading_hint_is_the_one_given_else_the_generic_one() {
        let spill = FileSpill::new("/nowhere");
        assert_eq!(spill.reading_hint(), rein_core::GENERIC_READING_HINT);
        let named = spill.with_reading_hint("use read_file");
        assert_eq!(named.reading_hint(), "use read_file");
    }

    #[test]
    fn a_root_that_cannot_hold_folders_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        std::fs::write(&file, "x").unwrap();
        let spill = FileSpill::new(&file);
        let err = spill.save("s", "c", "x").unwrap_err();
        assert!(matches!(err, SpillError::Folder { .. }), "{err}");
        assert!(
            err.to_string().contains("cannot create the folder"),
            "{err}"
        );
    }
}
