//! Running `git` on the shadow repository, safely.
//!
//! Every command gets `GIT_DIR` (the shadow repository) and, except
//! `init`, `GIT_WORK_TREE` (the workspace); every other `GIT_*` variable of
//! the parent is removed, the system and global configuration are not
//! read, and the settings that could run a program or change file bytes
//! (hooks, fsmonitor, signing, line-ending conversion, user-level ignore
//! and attribute files) are pinned with `-c`. The user's own `.git` is
//! never read: git only knows the shadow repository. Programs are started
//! directly, never through a shell.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::CheckpointError;

/// Settings given to every command with `-c`, over anything in a config
/// file.
const PINNED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.bare=false",
    "core.sparseCheckout=false",
    "core.quotePath=false",
    "core.logAllRefUpdates=false",
    "core.excludesFile=/dev/null",
    "core.attributesFile=/dev/null",
    "core.pager=cat",
    "commit.gpgsign=false",
    "gc.auto=0",
    "gc.autoDetach=false",
    "maintenance.auto=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.renames=false",
    "color.ui=false",
    "user.name=rein",
    "user.email=rein@localhost",
    "init.defaultBranch=rein",
];

/// One shadow repository (`dir`) over one workspace (`work`).
#[derive(Debug, Clone)]
pub(super) struct Git {
    pub(super) dir: PathBuf,
    pub(super) work: PathBuf,
}

/// What a finished command printed.
pub(super) struct Output {
    pub(super) stdout: Vec<u8>,
}

impl Git {
    /// A `git` command with the environment and settings described above.
    fn command<I, S>(&self, args: I, with_work_tree: bool) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("GIT_DIR", &self.dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("LC_ALL", "C");
        if with_work_tree {
            cmd.env("GIT_WORK_TREE", &self.work).current_dir(&self.work);
        }
        for setting in PINNED {
            cmd.arg("-c").arg(setting);
        }
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// `git init` of the shadow repository (no work tree, no templates).
    pub(super) fn init(&self) -> Result<(), CheckpointError> {
        let cmd = self.command(["init", "--bare", "-q", "--template="], false);
        finish("init", cmd, None).map(drop)
    }

    /// Run `git <args>` in the workspace and return its output.
    pub(super) fn run<I, S>(&self, args: I) -> Result<Output, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.exec(args, &[], None)
    }

    /// Run `git <args>` with `input` on its standard input.
    pub(super) fn run_with_input<I, S>(
        &self,
        args: I,
        input: &[u8],
    ) -> Result<Output, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.exec(args, &[], Some(input))
    }

    /// Run `git <args>` with extra environment variables and, optionally,
    /// `input` on its standard input.
    pub(super) fn exec<I, S>(
        &self,
        args: I,
        env: &[(&str, String)],
        input: Option<&[u8]>,
    ) -> Result<Output, CheckpointError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let name = describe(&args);
        let mut cmd = self.command(&args, true);
        for (key, value) in env {
            cmd.env(key, value);
        }
        finish(&name, cmd, input)
    }

    /// A `git cat-file --batch` process to read many blobs with one start.
    pub(super) fn blob_reader(&self) -> Result<BlobReader, CheckpointError> {
        let mut cmd = self.command(["cat-file", "--batch"], true);
        cmd.stdin(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CheckpointError::Parse(
                "git cat-file started without pipes".into(),
            ));
        };
        Ok(BlobReader {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
        })
    }
}

/// `git` plus its first argument, for error messages.
fn describe(args: &[OsString]) -> String {
    args.iter()
        .find(|a| !a.to_string_lossy().starts_with('-'))
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn spawn_error(e: std::io::Error) -> CheckpointError {
    if e.kind() == std::io::ErrorKind::NotFound {
        CheckpointError::GitMissing(e)
    } else {
        CheckpointError::Io {
            path: PathBuf::from("git"),
            source: e,
        }
    }
}

/// Start `cmd`, feed it `input` (from a second thread, so a full output
/// pipe cannot block the writer), and wait for it.
fn finish(name: &str, mut cmd: Command, input: Option<&[u8]>) -> Result<Output, CheckpointError> {
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let output = std::thread::scope(|scope| {
        if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
            // A command that exits early closes the pipe: its status says why.
            scope.spawn(move || {
                let _ = stdin.write_all(bytes);
            });
        }
        child.wait_with_output()
    })
    .map_err(spawn_error)?;
    if output.status.success() {
        return Ok(Output {
            stdout: output.stdout,
        });
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if stderr.contains(".lock': File exists") {
        return Err(CheckpointError::Busy(stderr));
    }
    Err(CheckpointError::Git {
        command: name.to_string(),
        status: output.status.to_string(),
        stderr,
    })
}

/// Reads blobs from one `git cat-file --batch`, one object at a time.
pub(super) struct BlobReader {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl BlobReader {
    /// The bytes of blob `sha`.
    pub(super) fn read(&mut self, sha: &str) -> Result<Vec<u8>, CheckpointError> {
        let broken = |what: &str| CheckpointError::Parse(format!("git cat-file: {what} ({sha})"));
        let stdin = self.stdin.as_mut().ok_or_else(|| broken("closed"))?;
        stdin
            .write_all(format!("{sha}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|_| broken("the process ended"))?;
        let mut header = String::new();
        self.stdout
            .read_line(&mut header)
            .map_err(|_| broken("unreadable answer"))?;
        // "<sha> blob <size>" or "<sha> missing".
        let mut parts = header.split_whitespace();
        let (_, kind, size) = (parts.next(), parts.next(), parts.next());
        if kind != Some("blob") {
            return Err(broken(&format!("not a blob: {}", header.trim())));
        }
        let size: usize = size
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| broken("no size"))?;
        let mut bytes = vec![0; size];
        self.stdout
            .read_exact(&mut bytes)
            .map_err(|_| broken("short read"))?;
        let mut newline = [0u8; 1];
        self.stdout
            .read_exact(&mut newline)
            .map_err(|_| broken("short read"))?;
        Ok(bytes)
    }
}

impl Drop for BlobReader {
    fn drop(&mut self) {
        // Closing its input ends cat-file; reap it so no zombie is left.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The relative path git printed (bytes), as a path.
#[cfg(unix)]
pub(super) fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
pub(super) fn path_of(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// The bytes git expects for a relative path (always `/`-separated).
#[cfg(unix)]
pub(super) fn bytes_of(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
pub(super) fn bytes_of(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

/// NUL-separated records of a `-z` output, without empty ones.
pub(super) fn records(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|&b| b == 0).filter(|r| !r.is_empty())
}

/// The first line of an output, trimmed (an object name).
pub(super) fn first_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A full object name: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
/// Checked before a caller-given name reaches a command line.
pub(super) fn is_object_name(name: &str) -> bool {
    matches!(name.len(), 40 | 64) && name.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn only_full_hex_names_are_object_names() {
        assert!(is_object_name(&"a".repeat(40)));
        assert!(is_object_name(&"0".repeat(64)));
        assert!(!is_object_name("--output=/tmp/x"));
        assert!(!is_object_name(&"g".repeat(40)));
        assert!(!is_object_name("HEAD"));
    }

    #[test]
    fn records_split_on_nul_and_drop_empty_ones() {
        let got: Vec<&[u8]> = records(b"a\0b c\0\0").collect();
        assert_eq!(got, [&b"a"[..], &b"b c"[..]]);
    }
}
