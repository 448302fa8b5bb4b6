//! `Checkpoints` against real folders: snapshot, diff, restore, prune, and
//! the things a hostile or unusual workspace must not make it do. This
//! module holds the workspace the tests share; the tests are in:
//! - `round_trip`: what changed is seen and restored, every way a file
//!   can change;
//! - `hostile`: links, hostile git configuration, nested repositories and
//!   forged ids never make it write outside the workspace or run anything;
//! - `lifecycle`: opening, listing, pruning and deleting the store, and
//!   its limits;
//! - `ignore`: the ignore rules, read once and kept;
//! - `outside_edits`: files changed outside rein are never overwritten
//!   unasked.

mod hostile;
mod ignore;
mod lifecycle;
mod outside_edits;
mod round_trip;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rein_store::{ChangeKind, Checkpoints};
use tempfile::TempDir;

/// A workspace with a `.gitignore`, an ignored file and an ignored folder,
/// and a checkpoint root beside it (not inside).
struct Ws {
    tmp: TempDir,
    root: PathBuf,
    work: PathBuf,
}

impl Ws {
    fn new(user_repo: bool) -> Ws {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("home").join("checkpoints");
        let work = tmp.path().join("ws");
        std::fs::create_dir_all(&work).unwrap();
        if user_repo {
            user_git(&work, &["init", "-q", "."]);
        }
        let ws = Ws { tmp, root, work };
        ws.write(".gitignore", "*.log\nbuild/\n");
        ws.write("debug.log", "ignored before\n");
        ws.write("build/out.o", "ignored object\n");
        ws.write("src/main.rs", "fn main() {}\n");
        ws.write("README.md", "# readme\n");
        ws
    }

    fn open(&self) -> Checkpoints {
        Checkpoints::open(&self.root, &self.work).unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        self.write_bytes(rel, text.as_bytes());
    }

    fn write_bytes(&self, rel: &str, bytes: &[u8]) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        self.path(rel).symlink_metadata().is_ok()
    }

    fn mode(&self, rel: &str) -> u32 {
        std::fs::metadata(self.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    }

    fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A folder outside the workspace.
    fn outside(&self) -> PathBuf {
        let p = self.tmp.path().join("outside");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    /// Every file under the workspace with its bytes (links as "-> target").
    fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        collect(&self.work, &self.work, &mut out);
        out
    }

    /// [`Ws::files`] without the user's `.git`.
    fn files_without_git(&self) -> BTreeMap<String, Vec<u8>> {
        let mut all = self.files();
        all.retain(|k, _| !k.starts_with(".git/"));
        all
    }
}

fn collect(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(base)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.insert(rel, format!("-> {}", target.display()).into_bytes());
        } else if kind.is_dir() {
            collect(base, &path, out);
        } else {
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

/// The user's own git, isolated from the machine's configuration.
fn user_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "u")
        .env("GIT_AUTHOR_EMAIL", "u@x")
        .env("GIT_COMMITTER_NAME", "u")
        .env("GIT_COMMITTER_EMAIL", "u@x")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sh(dir: &Path, script: &str) {
    let status = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// Each change's path and kind, by path.
fn paths(changes: &[rein_store::FileChange]) -> Vec<(String, ChangeKind)> {
    let mut v: Vec<(String, ChangeKind)> = changes
        .iter()
        .map(|c| (c.path.to_string_lossy().into_owned(), c.kind))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn names(list: &[PathBuf]) -> Vec<String> {
    let mut v: Vec<String> = list
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The paths of a tree in the shadow repository, one a line.
fn shadow_files(cp: &Checkpoints, tree: &str) -> String {
    let out = Command::new("git")
        .args(["ls-tree", "-r", "--name-only", tree])
        .env("GIT_DIR", cp.shadow_dir())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
