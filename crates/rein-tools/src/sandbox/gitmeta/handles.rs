//! Reaching and changing paths of the workspace through folder handles
//! opened without following symlinks: a path too long for the kernel is
//! reached through its folder's handle, and the undo (remove, put back)
//! never follows a symlink a command planted.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::State;

/// Paths longer than this are reached through a folder handle instead
/// (the kernel refuses paths of `PATH_MAX`, 4096 bytes, and more: a command
/// must not hide metadata below that depth).
const LONG_PATH: usize = 3000;

/// A path the kernel accepts for `workspace/rel`: the path itself when it
/// is short, else `/proc/self/fd/N/<last part>` through a handle of its
/// folder, opened part by part without following symlinks (kept open here).
pub(super) struct Reach {
    pub(super) path: PathBuf,
    _folder: Option<OwnedFd>,
}

impl Reach {
    pub(super) fn new(workspace: &Path, rel: &Path) -> std::io::Result<Reach> {
        let path = workspace.join(rel);
        if path.as_os_str().len() < LONG_PATH {
            return Ok(Reach {
                path,
                _folder: None,
            });
        }
        let (folder, name) = open_parent(workspace, rel)?;
        Ok(Reach {
            path: PathBuf::from(format!("/proc/self/fd/{}", folder.as_raw_fd()))
                .join(OsStr::from_bytes(name.as_bytes())),
            _folder: Some(folder),
        })
    }
}

/// The folder holding `rel`, opened component by component without
/// following symlinks, and the last component's name.
fn open_parent(workspace: &Path, rel: &Path) -> std::io::Result<(OwnedFd, CString)> {
    let invalid = || std::io::Error::from_raw_os_error(libc::EINVAL);
    let root = File::open(workspace)?;
    let mut dir = OwnedFd::from(root);
    let parts: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(invalid()),
        })
        .collect::<Result<_, _>>()?;
    let (last, folders) = parts.split_last().ok_or_else(invalid)?;
    for part in folders {
        let name = CString::new(part.as_bytes()).map_err(|_| invalid())?;
        // SAFETY: openat reads the NUL-terminated name; the result is a new
        // descriptor owned below.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor nobody else owns.
        dir = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    let name = CString::new(last.as_bytes()).map_err(|_| invalid())?;
    Ok((dir, name))
}

fn check(ret: libc::c_int) -> std::io::Result<()> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

pub(super) fn remove(workspace: &Path, rel: &Path) -> std::io::Result<()> {
    let (dir, name) = open_parent(workspace, rel)?;
    // SAFETY: unlinkat on a folder handle and a NUL-terminated name.
    check(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })
}

/// Write `state` to a temporary name next to `rel`, then rename it over.
pub(super) fn put_back(workspace: &Path, rel: &Path, state: &State) -> std::io::Result<()> {
    let (dir, name) = open_parent(workspace, rel)?;
    let tmp = CString::new(format!(".rein-restore-{}", std::process::id()))
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let d = dir.as_raw_fd();
    // SAFETY: a leftover temporary of ours, if any; errors do not matter.
    unsafe { libc::unlinkat(d, tmp.as_ptr(), 0) };
    match state {
        State::File { content, mode } => {
            // SAFETY: openat with a NUL-terminated name; the descriptor is
            // owned by the File made from it.
            let fd = unsafe {
                libc::openat(
                    d,
                    tmp.as_ptr(),
                    libc::O_WRONLY
                        | libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    *mode as libc::c_uint,
                )
            };
            check(fd)?;
            // SAFETY: fd is fresh and owned by nobody else.
            let mut file = unsafe { File::from_raw_fd(fd) };
            std::io::Write::write_all(&mut file, content)?;
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(*mode))?;
        }
        State::Link(target) => {
            let target = CString::new(target.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
            // SAFETY: symlinkat with NUL-terminated strings.
            check(unsafe { libc::symlinkat(target.as_ptr(), d, tmp.as_ptr()) })?;
        }
        _ => return Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
    }
    // SAFETY: renameat within one folder handle, NUL-terminated names.
    let renamed = check(unsafe { libc::renameat(d, tmp.as_ptr(), d, name.as_ptr()) });
    if renamed.is_err() {
        // SAFETY: as above.
        unsafe { libc::unlinkat(d, tmp.as_ptr(), 0) };
    }
    renamed
}
