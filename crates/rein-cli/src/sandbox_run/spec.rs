//! The spec `rein acp` hands `rein sandbox-run`: one command and the whole
//! sandbox it runs in, as JSON in a file of rein's own.
//!
//! Where it lies: a fresh private (0700) folder of the temporary folder,
//! never in the workspace; the file is 0600 and holds no secret (the
//! environment in it is the allowlisted one). Why it can be trusted: the
//! wrapper opens it without following a symlink, refuses one that is not a
//! regular file owned by this user with mode 0600, and checks its SHA-256
//! against the digest rein put on the command line (which the editor gets
//! from rein, not from the disk): a command running at the same time, as
//! the same user, could otherwise replace the file with a weaker sandbox.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rein_core::SandboxPolicy;
use rein_tools::sandbox::SandboxKind;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The largest spec read (a script and an environment: far less).
const MAX_SPEC_BYTES: u64 = 4 << 20;

/// One command, and everything rein decided about how it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The sandbox mechanism, as rein chose it.
    pub sandbox: SandboxKind,
    pub policy: SandboxPolicy,
    pub workspace: PathBuf,
    /// The command line, run with `bash -c`.
    pub script: String,
    pub timeout_secs: u64,
    /// The command's whole environment, as rein's bash tool would hand it.
    pub env: Vec<(OsString, OsString)>,
    /// rein's `$XDG_RUNTIME_DIR`, which bubblewrap hides: set for the
    /// sandbox's setup only, not passed to the command.
    pub runtime_dir: Option<PathBuf>,
}

/// Why a spec could not be written or used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("cannot open the spec {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the spec {0} is not a regular file")]
    NotAFile(PathBuf),
    #[error("the spec {0} is not owned by you")]
    NotYours(PathBuf),
    #[error("the spec {path} has mode {mode:04o}; only 0600 is accepted")]
    Mode { path: PathBuf, mode: u32 },
    #[error("cannot read the spec {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the spec {0} is larger than {MAX_SPEC_BYTES} bytes")]
    TooLarge(PathBuf),
    #[error("the spec {0} is not the one rein wrote (its SHA-256 differs)")]
    Digest(PathBuf),
    #[error("the spec {path} is not valid: {source}")]
    Invalid {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("the spec {0} names an environment variable that cannot be set")]
    Env(PathBuf),
    #[error("no temporary folder outside the workspace for the command's spec")]
    NoPlace,
    #[error("cannot write the command's spec: {0}")]
    Write(#[from] std::io::Error),
    #[error("cannot write the command's spec: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A spec written for one command: its folder is removed when this is
/// dropped (the wrapper deletes the file itself when it reads it).
#[derive(Debug)]
pub struct Written {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
    /// The SHA-256 of the file, in hex, for `--sha256`.
    pub digest: String,
}

impl Spec {
    /// Write this spec into a new private folder of the temporary folder.
    pub fn write(&self) -> Result<Written, SpecError> {
        // 1. A folder of our own, outside the workspace.
        let parent = private_parent(&self.workspace).ok_or(SpecError::NoPlace)?;
        let dir = tempfile::Builder::new()
            .prefix("rein-run-")
            .tempdir_in(parent)?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        // 2. The file, new, 0600 whatever the umask.
        let text = serde_json::to_vec(self)?;
        let path = dir.path().join("spec.json");
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        file.write_all(&text)?;
        Ok(Written {
            _dir: dir,
            path,
            digest: hex_sha256(&text),
        })
    }

    /// Read the spec at `path` once: checked (see the module), deleted,
    /// then parsed.
    pub fn take(path: &Path, digest: &str) -> Result<Spec, SpecError> {
        // 1. Opened without following a symlink or waiting on a FIFO.
        let open_err = |source| SpecError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(open_err)?;
        // 2. What was opened is a private file of ours.
        check_private(&file, path)?;
        // 3. Used once: gone before the command starts.
        std::fs::remove_file(path).map_err(open_err)?;
        // 4. The text, exactly what rein wrote.
        let text = read_bounded(&mut file, path)?;
        if !hex_sha256(&text).eq_ignore_ascii_case(digest.trim()) {
            return Err(SpecError::Digest(path.to_path_buf()));
        }
        let spec: Spec = serde_json::from_slice(&text).map_err(|source| SpecError::Invalid {
            path: path.to_path_buf(),
            source,
        })?;
        // 5. Every variable can be set (setting a bad one would panic).
        if !spec.env.iter().all(|(name, value)| settable(name, value)) {
            return Err(SpecError::Env(path.to_path_buf()));
        }
        Ok(spec)
    }
}

/// A regular file owned by this user with mode 0600.
fn check_private(file: &File, path: &Path) -> Result<(), SpecError> {
    let meta = file.metadata().map_err(|source| SpecError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.file_type().is_file() {
        return Err(SpecError::NotAFile(path.to_path_buf()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if meta.uid() != unsafe { libc::geteuid() } {
        return Err(SpecError::NotYours(path.to_path_buf()));
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o600 {
        return Err(SpecError::Mode {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn read_bounded(file: &mut File, path: &Path) -> Result<Vec<u8>, SpecError> {
    let mut text = Vec::new();
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|source| SpecError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if text.len() as u64 > MAX_SPEC_BYTES {
        return Err(SpecError::TooLarge(path.to_path_buf()));
    }
    Ok(text)
}

/// Whether `name=value` can be put in an environment.
fn settable(name: &OsString, value: &OsString) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (name, value) = (name.as_bytes(), value.as_bytes());
    !name.is_empty() && !name.contains(&b'=') && !name.contains(&0) && !value.contains(&0)
}

/// The temporary folder (or `/tmp`) when it is not inside `workspace`.
fn private_parent(workspace: &Path) -> Option<PathBuf> {
    let ws = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    [std::env::temp_dir(), PathBuf::from("/tmp")]
        .into_iter()
        .filter_map(|d| std::fs::canonicalize(d).ok())
        .find(|d| !d.starts_with(&ws))
}

pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn spec(workspace: &Path) -> Spec {
        Spec {
            sandbox: SandboxKind::Landlock,
            policy: SandboxPolicy::default(),
            workspace: workspace.to_path_buf(),
            script: "echo hi".into(),
            timeout_secs: 5,
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            runtime_dir: None,
        }
    }

    #[test]
    fn a_written_spec_is_private_outside_the_workspace_and_read_once() {
        let ws = tempfile::tempdir().unwrap();
        let written = spec(ws.path()).write().unwrap();
        assert!(!written.path.starts_with(ws.path()));
        let dir = written.path.parent().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir), 0o700);
        assert_eq!(mode(&written.path), 0o600);
        let read = Spec::take(&written.path, &written.digest).unwrap();
        assert_eq!(read, spec(ws.path()));
        assert!(!written.path.exists(), "the spec was not deleted");
        assert!(Spec::take(&written.path, &written.digest).is_err());
    }

    #[test]
    fn a_changed_spec_or_a_symlink_to_one_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let written = spec(ws.path()).write().unwrap();
        let mut weaker = spec(ws.path());
        weaker.sandbox = SandboxKind::None;
        std::fs::write(&written.path, serde_json::to_vec(&weaker).unwrap()).unwrap();
        let e = Spec::take(&written.path, &written.digest).unwrap_err();
        assert!(matches!(e, SpecError::Digest(_)), "{e}");
        let other = spec(ws.path()).write().unwrap();
        let link = other.path.with_file_name("link.json");
        std::os::unix::fs::symlink(&other.path, &link).unwrap();
        let e = Spec::take(&link, &other.digest).unwrap_err();
        assert!(matches!(e, SpecError::Open { .. }), "{e}");
        assert!(other.path.exists(), "a refused spec's target was deleted");
    }

    #[test]
    fn a_variable_that_cannot_be_set_is_refused_not_a_panic() {
        let ws = tempfile::tempdir().unwrap();
        let mut bad = spec(ws.path());
        bad.env.push(("A=B".into(), "x".into()));
        let written = bad.write().unwrap();
        let e = Spec::take(&written.path, &written.digest).unwrap_err();
        assert!(matches!(e, SpecError::Env(_)), "{e}");
    }
}
