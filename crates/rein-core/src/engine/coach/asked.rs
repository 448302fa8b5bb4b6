//! Whether the change a request asked for was made: the workspace as a
//! [`Snapshot`] (did anything change?), the files the request names
//! that the workspace lacked when the run began ([`missing_names`]: was
//! the file it asked for made where it asked?), and for a rename, where
//! the old name is still used ([`Rename::leftovers`]).
//!
//! Measured on the public suite with the 1.5B model: asked to "write a
//! bash script count.sh that prints the number of lines", it ran `wc -l`
//! and answered the number; asked for a `.gitignore`, it wrote
//! `project/.gitignore`. Told only that no file changed, it edited
//! `input.txt`; the nudge that names the missing file says what to make.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Folders running a project's code makes (Python's bytecode cache):
/// what appears in them is no change the task asked for.
const GENERATED: &[&str] = &["__pycache__"];

/// Most files a [`Snapshot`] records.
const SNAPSHOT_FILES: usize = 2_000;

/// The workspace's files two levels deep, each with its size and
/// modification time: enough to tell that a run changed nothing. Hidden
/// folders (`.git`, `.venv`) are skipped, hidden files are not (a
/// `.gitignore` or `.env` may be what was asked for). Bounded, and
/// symlinks are not followed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Snapshot(Vec<(PathBuf, u64, Option<SystemTime>)>);

impl Snapshot {
    pub fn take(workspace: &Path) -> Snapshot {
        let mut files = Vec::new();
        let mut dirs = vec![(workspace.to_path_buf(), 0)];
        while let Some((dir, depth)) = dirs.pop() {
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in read.flatten() {
                if files.len() >= SNAPSHOT_FILES {
                    break;
                }
                let name = entry.file_name();
                let hidden = name.as_encoded_bytes().starts_with(b".");
                // `DirEntry::metadata` does not follow a symlink.
                let Ok(meta) = entry.metadata() else { continue };
                if GENERATED.iter().any(|g| name == *g) {
                    continue;
                }
                if meta.is_dir() && depth < 1 && !hidden {
                    dirs.push((entry.path(), depth + 1));
                } else if meta.is_file() {
                    files.push((entry.path(), meta.len(), meta.modified().ok()));
                }
            }
        }
        files.sort();
        Snapshot(files)
    }
}

/// Endings of the file names a request may ask for: code, scripts,
/// data and configuration. A word with another ending (`example.com`,
/// `1.3.0`, `e.g.`) is not taken for a file.
const FILE_ENDINGS: &[&str] = &[
    "c", "cfg", "conf", "cpp", "css", "csv", "go", "h", "html", "ini", "java", "js", "json", "md",
    "mjs", "py", "rb", "rs", "sh", "sql", "toml", "ts", "tsx", "txt", "xml", "yaml", "yml",
];

/// Hidden files a request may ask for by name.
const DOT_FILES: &[&str] = &[
    ".dockerignore",
    ".editorconfig",
    ".env",
    ".env.example",
    ".gitattributes",
    ".gitignore",
    ".npmrc",
    ".prettierrc",
];

/// Most names of a request looked at.
const MAX_NAMES: usize = 8;

/// The files `prompt` names (a relative path with a known ending, or a
/// known hidden file) that the workspace has nowhere, under any folder:
/// the ones a request for a change asks to be made (a name the workspace
/// has in some folder is a file to change, wherever the request thinks it
/// is). The prompt is the user's, but its names are only ever looked up
/// beneath the workspace (never absolute, never through `..`).
pub(crate) fn missing_names(prompt: &str, workspace: &Path) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut present: Option<Vec<std::ffi::OsString>> = None;
    let words = prompt
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ','))
        .map(|w| w.trim_end_matches([':', ';', '.', '!', '?']))
        .filter(|w| is_file_name(w));
    for word in words {
        if found.len() >= MAX_NAMES {
            break;
        }
        let name = std::ffi::OsStr::new(word.rsplit('/').next().unwrap_or(word));
        let exists = std::fs::symlink_metadata(workspace.join(word)).is_ok()
            || present
                .get_or_insert_with(|| file_names(workspace))
                .iter()
                .any(|n| n == name);
        if !exists && !found.iter().any(|f| f == word) {
            found.push(word.to_string());
        }
    }
    found
}

/// Most entries [`file_names`] looks at, and how deep.
const NAMES_SEEN: usize = 5_000;
const NAMES_DEPTH: usize = 4;

/// The names of the entries beneath `workspace` (hidden folders and
/// symlinks not entered), bounded.
fn file_names(workspace: &Path) -> Vec<std::ffi::OsString> {
    let mut names = Vec::new();
    let mut dirs = vec![(workspace.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            if names.len() >= NAMES_SEEN {
                return names;
            }
            let name = entry.file_name();
            let hidden = name.as_encoded_bytes().starts_with(b".");
            if !hidden && depth < NAMES_DEPTH && entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push((entry.path(), depth + 1));
            }
            names.push(name);
        }
    }
    names
}

/// Whether `word` reads as a relative file path with a known ending.
fn is_file_name(word: &str) -> bool {
    if word.is_empty() || word.len() > 200 || word.starts_with('/') {
        return false;
    }
    let plain = word.split('/').all(|part| {
        !part.is_empty()
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))
    });
    if !plain {
        return false;
    }
    let name = word.rsplit('/').next().unwrap_or(word);
    if DOT_FILES.contains(&name) {
        return true;
    }
    match name.rsplit_once('.') {
        Some((stem, ending)) => {
            !stem.is_empty() && !stem.ends_with('.') && FILE_ENDINGS.contains(&ending)
        }
        None => false,
    }
}

/// The first of `names` still missing beneath `workspace`.
pub(crate) fn still_missing<'a>(names: &'a [String], workspace: &Path) -> Option<&'a str> {
    names
        .iter()
        .find(|n| std::fs::symlink_metadata(workspace.join(n.as_str())).is_err())
        .map(String::as_str)
}

/// A request to rename an identifier: "Rename the class Usr to User in
/// every file", "rename the function calc_total to compute_total".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rename {
    pub old: String,
    pub new: String,
}

/// Most files, and most bytes a file, [`Rename::leftovers`] reads.
const RENAME_FILES: usize = 2_000;
const RENAME_FILE_BYTES: u64 = 256 * 1024;
/// Most places of the old name a nudge lists.
pub(crate) const LEFTOVERS_SHOWN: usize = 8;

impl Rename {
    /// The rename `prompt` asks for: after the word "rename", the word
    /// before the first "to" is the old name and the word after it the
    /// new one, both identifiers and different.
    pub fn of(prompt: &str) -> Option<Rename> {
        let words: Vec<&str> = prompt
            .split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | '.' | ';' | ':'))
            })
            .collect();
        let start = words
            .iter()
            .position(|w| w.eq_ignore_ascii_case("rename"))?;
        let to = start + words[start..].iter().position(|w| *w == "to")?;
        let (old, new) = (words.get(to.checked_sub(1)?)?, words.get(to + 1)?);
        let identifier = |w: &str| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && w.chars().all(|c| c.is_alphanumeric() || c == '_')
        };
        (to > start + 1 && identifier(old) && identifier(new) && old != new).then(|| Rename {
            old: old.to_string(),
            new: new.to_string(),
        })
    }

    /// The places (`file:line: text`) where the old name is still used as
    /// a whole word, the first [`LEFTOVERS_SHOWN`] of them, and how many
    /// there are. The files are read, never run; hidden folders, symlinks
    /// and large or binary files are left out, and the walk is bounded.
    pub fn leftovers(&self, workspace: &Path) -> (Vec<String>, usize) {
        let mut places: Vec<(String, usize, String)> = Vec::new();
        let mut total = 0;
        for (rel, text) in text_files(workspace) {
            for (i, line) in text.lines().enumerate() {
                if has_identifier(line, &self.old) {
                    total += 1;
                    let line: String = line.trim().chars().take(160).collect();
                    places.push((rel.clone(), i + 1, line));
                }
            }
        }
        places.sort();
        let shown = places
            .into_iter()
            .take(LEFTOVERS_SHOWN)
            .map(|(rel, n, line)| format!("{rel}:{n}: {line}"))
            .collect();
        (shown, total)
    }
}

/// The workspace's text files (path relative to it, text), for a
/// search the harness makes: hidden folders, generated ones and symlinks
/// left out, large or binary files skipped, at most [`RENAME_FILES`]
/// looked at, [`NAMES_DEPTH`] folders deep.
fn text_files(workspace: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut seen = 0;
    let mut dirs = vec![(workspace.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name.as_encoded_bytes().starts_with(b".") || GENERATED.iter().any(|g| name == *g) {
                continue;
            }
            if kind.is_dir() && depth < NAMES_DEPTH {
                dirs.push((entry.path(), depth + 1));
                continue;
            }
            seen += 1;
            if !kind.is_file() || seen > RENAME_FILES {
                continue;
            }
            let small = entry.metadata().is_ok_and(|m| m.len() <= RENAME_FILE_BYTES);
            let Some(bytes) = small.then(|| std::fs::read(entry.path()).ok()).flatten() else {
                continue;
            };
            if bytes.contains(&0) {
                continue;
            }
            let path = entry.path();
            let rel = path
                .strip_prefix(workspace)
                .unwrap_or(&path)
                .display()
                .to_string();
            found.push((rel, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    found
}

/// Whether `line` has `name` as a whole identifier (not inside a longer
/// one: `max_conn` is not in `max_connections`).
fn has_identifier(line: &str, name: &str) -> bool {
    let inner = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(inner)
            && !line[i + name.len()..].chars().next().is_some_and(inner)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_names_a_request_gives_that_the_workspace_lacks_are_found() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("input.txt"), "x\n").unwrap();
        std::fs::write(ws.path().join(".env"), "A=1\n").unwrap();
        std::fs::create_dir(ws.path().join("lib")).unwrap();
        std::fs::write(ws.path().join("lib/parser.py"), "").unwrap();
        let names = |p: &str| missing_names(p, ws.path());
        assert_eq!(
            names("Write a bash script count.sh that prints the number of lines in input.txt."),
            ["count.sh"]
        );
        assert_eq!(
            names("Create a .gitignore that ignores __pycache__ folders and .env files."),
            [".gitignore"]
        );
        assert_eq!(
            names("Put it in `src/util/slug.py`, then run tests."),
            ["src/util/slug.py"]
        );
        // Versions, hosts, abbreviations, absolute paths and climbs out.
        for prompt in [
            "Set the version to 1.3.0 and the host to example.com, e.g. like this.",
            "Write /etc/cron.d/job.sh and ../outside.py.",
            "Fix the bug.",
            // There, in another folder than the request says.
            "Fix parse in src/parser.py.",
        ] {
            assert!(names(prompt).is_empty(), "{prompt}: {:?}", names(prompt));
        }
    }

    #[test]
    fn a_rename_is_read_from_the_request_and_its_leftovers_found_as_whole_words() {
        assert_eq!(
            Rename::of("Rename the class Usr to User in every file that uses it."),
            Some(Rename {
                old: "Usr".into(),
                new: "User".into()
            })
        );
        assert_eq!(
            Rename::of("Rename the setting `max_conn` to `max_connections` in settings.ini."),
            Some(Rename {
                old: "max_conn".into(),
                new: "max_connections".into()
            })
        );
        for prompt in [
            "Move the function to text.py.",
            "Rename to User.",
            "Rename helper.py to utils.py.",
            "Rename x to x.",
        ] {
            assert_eq!(Rename::of(prompt), None, "{prompt}");
        }
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            ws.path().join("pool.py"),
            "a = cfg['max_conn']\nb = 'max_connections'\n",
        )
        .unwrap();
        std::fs::write(ws.path().join("settings.ini"), "max_connections = 25\n").unwrap();
        std::fs::create_dir(ws.path().join(".git")).unwrap();
        std::fs::write(ws.path().join(".git/COMMIT"), "max_conn\n").unwrap();
        std::fs::write(ws.path().join("blob.bin"), b"max_conn\0").unwrap();
        // A link to a file outside the workspace is not followed.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.py"), "max_conn = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.py"), ws.path().join("link.py"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("linked_dir")).unwrap();
        let rename = Rename::of("rename max_conn to max_connections").unwrap();
        assert_eq!(
            rename.leftovers(ws.path()),
            (vec!["pool.py:1: a = cfg['max_conn']".to_string()], 1)
        );
    }

    #[test]
    fn a_hidden_file_made_is_a_change_a_hidden_folder_is_not() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("main.py"), "print(1)\n").unwrap();
        let before = Snapshot::take(ws.path());
        std::fs::create_dir(ws.path().join(".git")).unwrap();
        std::fs::write(ws.path().join(".git/index"), "x").unwrap();
        assert_eq!(before, Snapshot::take(ws.path()));
        std::fs::write(ws.path().join(".gitignore"), "__pycache__/\n").unwrap();
        assert_ne!(before, Snapshot::take(ws.path()));
        let names = vec![".gitignore".to_string(), "count.sh".to_string()];
        assert_eq!(still_missing(&names, ws.path()), Some("count.sh"));
    }
}
