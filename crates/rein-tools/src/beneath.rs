//! Race-free file access beneath a directory handle.
//!
//! [`crate::workspace`] turns what the model wrote into a canonical path by
//! name (following symlinks, so that a symlink inside the workspace to
//! another place inside it keeps working). Between that check and the
//! moment a tool opens the file, a command running at the same time can
//! swap a folder for a symlink to somewhere else (`renameat2` with
//! `RENAME_EXCHANGE` in a loop). Opening the checked path again by name
//! would then follow the new symlink out of the workspace.
//!
//! So the open itself never goes by name from `/`: a [`Dir`] is a handle
//! (file descriptor) of the workspace root (or of a read root), and every
//! path below it is opened relative to that handle with **no symlink
//! followed at all**: the path was canonical when it was checked, so a
//! symlink found on it now means someone changed it in between, and the
//! open fails instead. Where the kernel has it (Linux 5.6+), this is one
//! `openat2` call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS`; elsewhere it is a walk of `openat` calls, one
//! component at a time, each with `O_NOFOLLOW`.
//!
//! Writes never go through an existing file: [`Dir::replace_file`] writes
//! a new file beside it (`O_CREAT | O_EXCL | O_NOFOLLOW`) and renames it
//! over the old one, so a hard link from the workspace to a file outside
//! it is replaced, not written through.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod watch;

pub use watch::Watch;

/// Why a path could not be opened beneath its root.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    /// A symlink (or a magic link such as `/proc/self/root`) is on the path:
    /// the path changed after it was checked.
    #[error("a symlink appeared on the path after it was checked")]
    Symlink,
    /// The kernel saw the path leave the root (`..` or a rename racing the
    /// lookup).
    #[error("the path leads outside its root")]
    Escape,
    /// The relative path has `..`, a root or is empty where a name is
    /// needed; callers pass canonical paths, so this is a bug or a race.
    #[error("`{0}` is not a plain path below the root")]
    NotPlain(PathBuf),
    /// The path changed while it was held ([`Watch`]): a name on it was
    /// renamed, replaced or removed, or it leads to another file now.
    #[error("the path changed while it was held")]
    Changed,
    /// Any other error of the system calls (not found, permission denied,
    /// not a directory, ...).
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl BeneathError {
    /// The kind of the underlying I/O error, if it is one.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            BeneathError::Io(e) => Some(e.kind()),
            _ => None,
        }
    }
}

/// How paths are resolved below a handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// One `openat2` call with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`.
    Openat2,
    /// One `openat(O_NOFOLLOW)` per component.
    Walk,
}

impl Resolver {
    /// The best resolver this kernel offers (probed once).
    pub fn best() -> Resolver {
        static BEST: std::sync::OnceLock<Resolver> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            if openat2_works() {
                Resolver::Openat2
            } else {
                Resolver::Walk
            }
        })
    }
}

/// What kind of thing a name in a folder is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symlink (not followed).
    Symlink,
    /// A device, socket or pipe.
    Other,
}

/// The facts of an existing entry that a write keeps or reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: Kind,
    /// Size in bytes.
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
}

/// A directory handle that paths are opened beneath.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    resolver: Resolver,
}

#[cfg(target_os = "linux")]
const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// Flags of a file opened for reading: no blocking on a FIFO (the caller
/// checks it is a regular file before reading).
const READ_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC;

impl Dir {
    /// Open `root` itself (symlinks in `root` are followed: the root is
    /// trusted, only what lies below it is not).
    pub fn open_root(root: &Path) -> io::Result<Dir> {
        let c = cstring(root.as_os_str())?;
        // SAFETY: `c` is a valid NUL-terminated string; the result is checked.
        let fd = unsafe { libc::open(c.as_ptr(), DIR_FLAGS) };
        Ok(Dir {
            fd: owned(fd)?,
            resolver: Resolver::best(),
        })
    }

    /// The same handle with a chosen resolver (tests use the walk on
    /// kernels that have `openat2`).
    pub fn with_resolver(mut self, resolver: Resolver) -> Dir {
        self.resolver = resolver;
        self
    }

    /// The folder `rel` below this one (`rel` empty: this folder again).
    pub fn open_dir(&self, rel: &Path) -> Result<Dir, BeneathError> {
        let names = plain(rel)?;
        if names.is_empty() {
            return Ok(Dir {
                fd: dup(&self.fd)?,
                resolver: self.resolver,
            });
        }
        let fd = self.open_names(&names, DIR_FLAGS)?;
        Ok(Dir {
            fd,
            resolver: self.resolver,
        })
    }

    /// The folder `rel` below this one, creating every missing folder on
    /// the way (`mkdirat` on the handle of its parent, mode 0777 less the
    /// umask), never through a symlink.
    pub fn create_dirs(&self, rel: &Path) -> Result<Dir, BeneathError> {
        let names = plain(rel)?;
        let mut cur = Dir {
            fd: dup(&self.fd)?,
            resolver: self.resolver,
        };
        for name in names {
            let c = cstring(&name)?;
            let next = match cur.open_names(std::slice::from_ref(&name), DIR_FLAGS) {
                Ok(fd) => fd,
                Err(BeneathError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                    // SAFETY: a valid handle and NUL-terminated name.
                    let rc = unsafe { libc::mkdirat(cur.fd.as_raw_fd(), c.as_ptr(), 0o777) };
                    if rc != 0 {
                        let e = io::Error::last_os_error();
                        if e.kind() != io::ErrorKind::AlreadyExists {
                            return Err(e.into());
                        }
                    }
                    cur.open_names(std::slice::from_ref(&name), DIR_FLAGS)?
                }
                Err(e) => return Err(e),
            };
            cur = Dir {
                fd: next,
                resolver: self.resolver,
            };
        }
        Ok(cur)
    }

    /// Open the file `rel` below this folder for reading. Anything that is
    /// not a regular file is still opened (without blocking) so that the
    /// caller can say what it is; see [`stat_file`].
    pub fn open_read(&self, rel: &Path) -> Result<File, BeneathError> {
        let names = plain(rel)?;
        if names.is_empty() {
            return Err(BeneathError::NotPlain(rel.to_path_buf()));
        }
        let fd = self.open_names(&names, READ_FLAGS)?;
        Ok(File::from(fd))
    }

    /// What `name` (one name in this folder) is, without following a
    /// symlink; `None` when it does not exist.
    pub fn entry(&self, name: &OsStr) -> io::Result<Option<Entry>> {
        let c = cstring(name)?;
        // SAFETY: zeroed is a valid `stat`; the call fills it or fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid handle, NUL-terminated name and out pointer.
        let rc = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::NotFound {
                return Ok(None);
            }
            return Err(e);
        }
        Ok(Some(entry_of(&st)))
    }

    /// Replace (or create) the file `name` in this folder with `content`:
    /// written to a new temporary file beside it, then renamed over it. The
    /// new file gets `mode` (the old file's permission bits), or 0666 less
    /// the umask for a new file. A hard link or symlink that `name` was is
    /// replaced, never written through.
    pub fn replace_file(
        &self,
        name: &OsStr,
        content: &[u8],
        mode: Option<u32>,
    ) -> Result<(), BeneathError> {
        let target = one_name(name)?;
        let (tmp_name, file) = self.create_temp(name)?;
        let written = write_all_with_mode(file, content, mode);
        let renamed = written.and_then(|()| {
            // SAFETY: valid handles and NUL-terminated names.
            let rc = unsafe {
                libc::renameat(
                    self.fd.as_raw_fd(),
                    tmp_name.as_ptr(),
                    self.fd.as_raw_fd(),
                    target.as_ptr(),
                )
            };
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        });
        if let Err(e) = renamed {
            // SAFETY: a valid handle and NUL-terminated name.
            unsafe { libc::unlinkat(self.fd.as_raw_fd(), tmp_name.as_ptr(), 0) };
            return Err(e.into());
        }
        Ok(())
    }

    /// Where this folder is now, as the kernel names it (Linux, with /proc
    /// mounted); `None` when that cannot be told.
    pub fn current_path(&self) -> Option<PathBuf> {
        let link = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        let p = std::fs::read_link(link).ok()?;
        p.is_absolute().then_some(p)
    }

    /// A new empty file beside `name`, created exclusively.
    fn create_temp(&self, name: &OsStr) -> Result<(CString, File), BeneathError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let mut stem = name.as_bytes().to_vec();
        stem.truncate(180);
        for _ in 0..100 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let mut tmp = b".".to_vec();
            tmp.extend_from_slice(&stem);
            tmp.extend_from_slice(format!(".rein-{}-{n}.tmp", std::process::id()).as_bytes());
            let c = cstring(OsStr::from_bytes(&tmp))?;
            let flags =
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
            // SAFETY: a valid handle and NUL-terminated name.
            let fd = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, 0o666) };
            match owned(fd) {
                Ok(fd) => return Ok((c, File::from(fd))),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("could not create a temporary file").into())
    }

    /// Open the plain names below this folder with `flags`, no symlink
    /// followed.
    fn open_names(&self, names: &[OsString], flags: libc::c_int) -> Result<OwnedFd, BeneathError> {
        match self.resolver {
            Resolver::Openat2 => openat2_beneath(self.fd.as_raw_fd(), names, flags),
            Resolver::Walk => walk_beneath(self.fd.as_raw_fd(), names, flags),
        }
    }
}

/// What the open file `file` is (kind, size, mode, owner).
pub fn stat_file(file: &File) -> io::Result<Entry> {
    // SAFETY: zeroed is a valid `stat`; the call fills it or fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid open descriptor and out pointer.
    if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(entry_of(&st))
}

fn entry_of(st: &libc::stat) -> Entry {
    let kind = match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => Kind::File,
        libc::S_IFDIR => Kind::Dir,
        libc::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    };
    Entry {
        kind,
        size: u64::try_from(st.st_size).unwrap_or(0),
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
    }
}

fn write_all_with_mode(mut file: File, content: &[u8], mode: Option<u32>) -> io::Result<()> {
    file.write_all(content)?;
    if let Some(mode) = mode {
        // Permission bits only: set-user-id and set-group-id are dropped.
        let bits = (mode & 0o1777) as libc::mode_t;
        // SAFETY: a valid open descriptor.
        if unsafe { libc::fchmod(file.as_raw_fd(), bits) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    file.flush()
}

/// The normal components of `rel`; `.` is skipped, anything else refused.
fn plain(rel: &Path) -> Result<Vec<OsString>, BeneathError> {
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => names.push(n.to_os_string()),
            Component::CurDir => {}
            _ => return Err(BeneathError::NotPlain(rel.to_path_buf())),
        }
    }
    Ok(names)
}

fn one_name(name: &OsStr) -> Result<CString, BeneathError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(BeneathError::NotPlain(PathBuf::from(name)));
    }
    Ok(cstring(name)?)
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))
}

fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned open by the kernel and is owned by no
    // one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn dup(fd: &OwnedFd) -> io::Result<OwnedFd> {
    fd.try_clone()
}

/// Map the errors of an open that must not follow symlinks.
fn open_error(e: io::Error) -> BeneathError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => BeneathError::Symlink,
        Some(libc::EXDEV) => BeneathError::Escape,
        _ => BeneathError::Io(e),
    }
}

/// One `openat(O_NOFOLLOW)` per component; folders on the way must be real
/// folders (a symlink gives `ELOOP` or `ENOTDIR`, told apart by `fstatat`).
fn walk_beneath(
    root: RawFd,
    names: &[OsString],
    flags: libc::c_int,
) -> Result<OwnedFd, BeneathError> {
    let mut held: Option<OwnedFd> = None;
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let c = cstring(name)?;
        let at = held.as_ref().map_or(root, AsRawFd::as_raw_fd);
        let f = if last { flags } else { DIR_FLAGS };
        // SAFETY: a valid handle and NUL-terminated name.
        let fd = unsafe { libc::openat(at, c.as_ptr(), f | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        match owned(fd) {
            Ok(fd) => {
                if f & libc::O_DIRECTORY == 0 && is_symlink_fd(&fd) {
                    // O_PATH | O_NOFOLLOW opens a symlink itself.
                    return Err(BeneathError::Symlink);
                }
                held = Some(fd);
            }
            Err(e) => {
                let symlink_here = matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
                    && is_symlink_at(at, &c);
                return Err(if symlink_here {
                    BeneathError::Symlink
                } else {
                    open_error(e)
                });
            }
        }
    }
    match held {
        Some(fd) => Ok(fd),
        None => Err(BeneathError::NotPlain(PathBuf::new())),
    }
}

fn is_symlink_at(dir: RawFd, name: &CString) -> bool {
    // SAFETY: zeroed is a valid `stat`; the call fills it or fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid handle, NUL-terminated name and out pointer.
    let rc = unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

fn is_symlink_fd(fd: &OwnedFd) -> bool {
    // SAFETY: zeroed is a valid `stat`; the call fills it or fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid open descriptor and out pointer.
    let rc = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    rc == 0 && st.st_mode & libc::S_IFMT == libc::S_IFLNK
}

/// The kernel's `struct open_how` (linux/openat2.h).
#[cfg(target_os = "linux")]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

#[cfg(target_os = "linux")]
impl OpenHow {
    /// `flags`, resolved beneath the handle with no symlink or magic link.
    fn beneath(flags: libc::c_int) -> OpenHow {
        OpenHow {
            flags: u64::try_from(flags).unwrap_or(0),
            mode: 0,
            resolve: libc::RESOLVE_BENEATH
                | libc::RESOLVE_NO_SYMLINKS
                | libc::RESOLVE_NO_MAGICLINKS,
        }
    }
}

#[cfg(target_os = "linux")]
fn openat2_beneath(
    root: RawFd,
    names: &[OsString],
    flags: libc::c_int,
) -> Result<OwnedFd, BeneathError> {
    let mut bytes = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(n.as_bytes());
    }
    let c = cstring(OsStr::from_bytes(&bytes))?;
    let how = OpenHow::beneath(flags | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    // The kernel asks callers to retry on EAGAIN (a rename raced a lookup).
    for _ in 0..16 {
        // SAFETY: a valid handle, NUL-terminated path and `open_how` of the
        // size passed.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root,
                c.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        let fd = RawFd::try_from(rc).unwrap_or(-1);
        match owned(fd) {
            Ok(fd) => {
                if flags & libc::O_DIRECTORY == 0 && is_symlink_fd(&fd) {
                    return Err(BeneathError::Symlink);
                }
                return Ok(fd);
            }
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
            // A symlink last, opened as a folder without following it, is
            // "not a directory": the walk tells which it is.
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                return walk_beneath(root, names, flags);
            }
            Err(e) => return Err(open_error(e)),
        }
    }
    Err(BeneathError::Escape)
}

#[cfg(not(target_os = "linux"))]
fn openat2_beneath(
    root: RawFd,
    names: &[OsString],
    flags: libc::c_int,
) -> Result<OwnedFd, BeneathError> {
    walk_beneath(root, names, flags)
}

/// Whether `openat2` with the resolve flags we need works here (a kernel
/// before 5.6, or a seccomp filter, says no).
#[cfg(target_os = "linux")]
fn openat2_works() -> bool {
    let how = OpenHow::beneath(DIR_FLAGS);
    let dot = c".";
    // SAFETY: a NUL-terminated path and an `open_how` of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            dot.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    let fd = RawFd::try_from(rc).unwrap_or(-1);
    owned(fd).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn openat2_works() -> bool {
    false
}

#[cfg(test)]
#[path = "beneath/tests.rs"]
mod tests;
