//! Files and folders private to the user: rein's state (`$REIN_HOME`, the
//! session and memory databases, spilled outputs, input history, logs)
//! holds transcripts, command output and whatever the user typed, so no
//! other account may read it.
//!
//! Modes are set explicitly, whatever the process umask: folders `0700`,
//! files `0600`. Existing ones that are looser are tightened when this
//! account owns them (`chmod` fails otherwise, and the caller is told).

use std::io;
use std::path::Path;

/// Mode of private folders.
pub const DIR_MODE: u32 = 0o700;
/// Mode of private files.
pub const FILE_MODE: u32 = 0o600;

/// What [`secure_dir`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirState {
    /// The folder did not exist and was created private.
    Created,
    /// It existed and was already private.
    Private,
    /// It existed with this looser mode and is now private.
    Tightened { was: u32 },
    /// It is looser than private (this mode) and could not be changed: it
    /// belongs to another account, or the filesystem keeps no modes.
    Loose { mode: u32 },
}

/// Create `dir` (and missing parents) with mode `0700`.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder.create(dir)
}

/// Write `bytes` to `path` whole and readable by its owner only: into a
/// new 0600 file beside it (never through a link planted there), synced,
/// then renamed over it; the folder is created 0700 when missing.
#[cfg(unix)]
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(
        ".{name}.{}.{:x}.tmp",
        std::process::id(),
        fastrand::u64(..)
    ));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Make `dir` a private folder: create it `0700`, or tighten an existing
/// one that others can enter. A path that exists but is not a folder is an
/// error.
pub fn secure_dir(dir: &Path) -> io::Result<DirState> {
    match std::fs::metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            create_private_dir(dir)?;
            Ok(DirState::Created)
        }
        Err(e) => Err(e),
        Ok(meta) if !meta.is_dir() => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("{} exists and is not a folder", dir.display()),
        )),
        Ok(meta) => Ok(tighten(dir, &meta, DIR_MODE)),
    }
}

/// Create `path` empty with mode `0600` when it does not exist (never
/// truncating one that does), and tighten it to `0600` when it is looser.
/// For files another library opens by name afterwards (SQLite): they are
/// then born private whatever the umask.
pub fn ensure_private_file(path: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    match tighten(path, &meta, FILE_MODE) {
        DirState::Loose { mode } => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} has mode {mode:o} and cannot be made private (0600)",
                path.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// Tighten an existing file to `0600` if it is looser; a missing file is
/// fine (nothing to protect).
pub fn tighten_file(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(meta) if !meta.is_file() => Ok(()),
        Ok(meta) => match tighten(path, &meta, FILE_MODE) {
            DirState::Loose { mode } => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} has mode {mode:o} and cannot be made private (0600)",
                    path.display()
                ),
            )),
            _ => Ok(()),
        },
    }
}

/// Set `want` when `meta` shows bits for group or others.
#[cfg(unix)]
fn tighten(path: &Path, meta: &std::fs::Metadata, want: u32) -> DirState {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return DirState::Private;
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(want)) {
        Ok(()) => DirState::Tightened { was: mode },
        Err(_) => DirState::Loose { mode },
    }
}

#[cfg(not(unix))]
fn tighten(_path: &Path, _meta: &std::fs::Metadata, _want: u32) -> DirState {
    DirState::Private
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    fn tempdir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "rein-private-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_new_folder_is_created_0700_with_its_parents() {
        let base = tempdir();
        let dir = base.join("a/b");
        assert_eq!(secure_dir(&dir).unwrap(), DirState::Created);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&base.join("a")), 0o700);
        assert_eq!(secure_dir(&dir).unwrap(), DirState::Private);
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_loose_folder_is_tightened_and_says_what_it_was() {
        let base = tempdir();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            secure_dir(&base).unwrap(),
            DirState::Tightened { was: 0o755 }
        );
        assert_eq!(mode(&base), 0o700);
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn a_file_where_the_folder_should_be_is_an_error() {
        let base = tempdir();
        let file = base.join("f");
        std::fs::write(&file, "x").unwrap();
        let e = secure_dir(&file).unwrap_err();
        assert!(e.to_string().contains("is not a folder"), "{e}");
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn files_are_born_0600_and_existing_ones_keep_their_bytes_but_lose_loose_bits() {
        let base = tempdir();
        let new = base.join("new.db");
        ensure_private_file(&new).unwrap();
        assert_eq!(mode(&new), 0o600);
        assert_eq!(std::fs::metadata(&new).unwrap().len(), 0);
        let old = base.join("old.db");
        std::fs::write(&old, "kept").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        ensure_private_file(&old).unwrap();
        assert_eq!(mode(&old), 0o600);
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "kept");
        let wal = base.join("old.db-wal");
        tighten_file(&wal).unwrap();
        assert!(!wal.exists(), "a missing file is not created");
        std::fs::write(&wal, "w").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o664)).unwrap();
        tighten_file(&wal).unwrap();
        assert_eq!(mode(&wal), 0o600);
        std::fs::remove_dir_all(base).unwrap();
    }
}
