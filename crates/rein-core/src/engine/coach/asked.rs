//! Whether the change a request asked for was made: the workspace as a
//! [`Snapshot`] (did anything change?) and the files the request names
//! that the workspace lacked when the run began ([`missing_names`]: was
//! the file it asked for made where it asked?).
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
