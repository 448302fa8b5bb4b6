//! The workspace files a command names, and their digests: what an
//! approval of a project's MCP server or a trusted project's hook covers
//! besides the command line itself. A command line that stays the same can
//! run different code when the script it names is rewritten (by the model,
//! whose sandbox may write the workspace), so an approval records the
//! SHA-256 of each such file and holds only while they are unchanged.
//!
//! A file is named by a command when a word of it (or the value of a
//! `--flag=VALUE` word), relative to the workspace or absolute, is an
//! existing regular file inside the workspace; by `python -m NAME` (the
//! module's files, its packages' `__init__.py`); by `make` (its makefile,
//! with `-C` and `-f`); by `npm`/`yarn`/`pnpm` (`package.json`, and the
//! files its script names); by `sh -c LINE` (the files of `LINE`); and a
//! `cd DIR` moves where later relative words are looked up. The search is
//! bounded (words, files, bytes), follows no symlink out of the workspace,
//! opens nothing but regular files, and never fails: a command it cannot
//! read names fewer files.

mod resolve;
mod words;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use words::expand_project_vars;

/// Most words of a command looked at (a longer command is cut, and then
/// cannot be covered).
pub const MAX_WORDS: usize = 4096;
/// Most files one command may name and still be covered.
pub const MAX_FILES: usize = 64;
/// Most bytes of a file hashed; a longer file cannot be covered.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Most bytes of a command line looked at.
pub const MAX_LINE: usize = 64 * 1024;

/// The files a command names: canonical paths inside the workspace, in the
/// order first named, and whether the list is complete (a command past the
/// limits cannot be covered by an approval).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedFiles {
    pub files: Vec<PathBuf>,
    pub complete: bool,
}

/// The files an MCP server's command line (`command` then `args`) names
/// in `workspace` (canonical).
pub fn files_of_argv(argv: &[String], workspace: &Path) -> NamedFiles {
    let workspace = &canonical(workspace);
    let project = workspace.to_string_lossy().into_owned();
    let words: Vec<String> = argv
        .iter()
        .take(MAX_WORDS)
        .map(|w| words::expand_project_vars(w, &project))
        .collect();
    let mut r = resolve::Resolver::new(workspace);
    r.complete &=
        argv.len() <= MAX_WORDS && argv.iter().map(String::len).sum::<usize>() <= MAX_LINE;
    r.command(&words, 0);
    r.finish()
}

/// The files a hook's `sh -c` line names in `workspace` (canonical).
pub fn files_of_shell(line: &str, workspace: &Path) -> NamedFiles {
    let workspace = &canonical(workspace);
    let mut r = resolve::Resolver::new(workspace);
    r.shell(line, 0);
    r.finish()
}

/// What an approval records: each named file, relative to the workspace,
/// with the SHA-256 of its content (lowercase hex). A value that is not a
/// digest records why the file could not be read, and never matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FileDigests(pub BTreeMap<String, String>);

/// The key that stands for "more files than could be covered".
const INCOMPLETE: &str = "…";

impl FileDigests {
    /// The digests of `named` now.
    pub fn of(named: &NamedFiles, workspace: &Path) -> FileDigests {
        let workspace = &canonical(workspace);
        let mut map = BTreeMap::new();
        for file in &named.files {
            let rel = file
                .strip_prefix(workspace)
                .unwrap_or(file)
                .to_string_lossy()
                .into_owned();
            let digest = match digest_file(file) {
                Ok(d) => d,
                Err(why) => format!("!{why}"),
            };
            map.insert(rel, digest);
        }
        if !named.complete {
            map.insert(INCOMPLETE.to_string(), "!too many words or files".into());
        }
        FileDigests(map)
    }

    /// Whether nothing is named.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The files of `self`, relative to the workspace (for protecting them).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.0
            .keys()
            .map(String::as_str)
            .filter(|k| *k != INCOMPLETE)
    }

    /// The first difference between what was approved (`self`) and `now`,
    /// or `None` when the approval still holds.
    pub fn change_to(&self, now: &FileDigests) -> Option<FileChange> {
        if let Some((file, why)) = now.0.iter().find(|(_, d)| !is_digest(d)) {
            return Some(FileChange::Unverifiable {
                file: file.clone(),
                why: why.trim_start_matches('!').to_string(),
            });
        }
        for (file, digest) in &self.0 {
            match now.0.get(file) {
                None => return Some(FileChange::Gone(file.clone())),
                Some(d) if d != digest => return Some(FileChange::Changed(file.clone())),
                Some(_) => {}
            }
        }
        now.0
            .keys()
            .find(|f| !self.0.contains_key(*f))
            .map(|f| FileChange::New(f.clone()))
    }
}

/// Why an approval no longer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    /// The file's content is not what was approved.
    Changed(String),
    /// The file is no longer there (or no longer a regular file inside
    /// the workspace).
    Gone(String),
    /// The command now names a file it did not name when approved.
    New(String),
    /// A file that cannot be checked (too large, unreadable, too many).
    Unverifiable { file: String, why: String },
}

impl fmt::Display for FileChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |p: &str| crate::text::one_line(p, 200);
        match self {
            FileChange::Changed(p) => write!(f, "{} changed", shown(p)),
            FileChange::Gone(p) => write!(f, "{} is gone", shown(p)),
            FileChange::New(p) => write!(f, "it now also runs {}", shown(p)),
            FileChange::Unverifiable { file, why } if file == INCOMPLETE => {
                write!(f, "it names more than rein can check ({why})")
            }
            FileChange::Unverifiable { file, why } => {
                write!(f, "{} cannot be checked ({why})", shown(file))
            }
        }
    }
}

/// The workspace with symlinks resolved (named files are canonical).
fn canonical(workspace: &Path) -> PathBuf {
    std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

fn is_digest(d: &str) -> bool {
    d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit())
}

/// SHA-256 of a regular file's content, opened without following a final
/// symlink and without blocking on a FIFO; refused past [`MAX_FILE_BYTES`].
fn digest_file(path: &Path) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| format!("cannot open: {e}"))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut reader = file.take(MAX_FILE_BYTES + 1);
    let mut total = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| format!("cannot read: {e}"))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    if total > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
