//! Holding a path still while another process opens it by name.
//!
//! An editor asked for a file (`fs/read_text_file` over ACP) opens it by
//! its name, following whatever symlink stands on the path at that moment;
//! rein cannot lend it a handle. A check by rein before the request and
//! another after it are not enough: a command swapping a folder for a
//! symlink and back in a loop can have the link in place only while the
//! editor opens the file.
//!
//! So a [`Watch`] sees every change to the path in between. It opens each
//! folder on the path beneath the root with no symlink followed, puts an
//! inotify watch on that very folder (through its handle, `/proc/self/fd`,
//! not by name), then checks that the path still runs through those
//! folders to the same file. From then on, any name on the path that is
//! renamed, replaced, removed or created in its folder is an event, and
//! [`Watch::unchanged`] refuses once there is one. It also opens the path
//! again (beneath the root, no symlink followed) and compares the file's
//! identity: the kernel queues a rename's event only after the rename, but
//! while still holding the folder's lock, so a swap whose event is not
//! queued yet is still in place and that open sees it.
//!
//! Linux only (inotify); elsewhere [`Dir::watch`] says it is unsupported
//! and callers read the file themselves instead.

use std::io;
use std::path::Path;

use super::{BeneathError, Dir};

/// A path below a [`Dir`] held still: see the module's text.
#[derive(Debug)]
pub struct Watch {
    #[cfg(target_os = "linux")]
    inner: linux::Held,
}

impl Dir {
    /// Watch the regular file `rel` below this folder and every folder on
    /// the way to it. A path that is not a regular file now is an
    /// [`BeneathError::Io`] of kind `InvalidInput`; a symlink on it is
    /// [`BeneathError::Symlink`]; a change while the watch is being set up
    /// is [`BeneathError::Changed`].
    pub fn watch(&self, rel: &Path) -> Result<Watch, BeneathError> {
        #[cfg(target_os = "linux")]
        {
            Ok(Watch {
                inner: linux::Held::new(self, rel)?,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = rel;
            Err(BeneathError::Io(io::Error::new(
                io::ErrorKind::Unsupported,
                "watching a path needs inotify",
            )))
        }
    }
}

impl Watch {
    /// Nothing on the path changed since the watch began, and it still
    /// leads to the same file; else [`BeneathError::Changed`] (or
    /// [`BeneathError::Symlink`] when a symlink stands on it now).
    pub fn unchanged(&self) -> Result<(), BeneathError> {
        #[cfg(target_os = "linux")]
        {
            self.inner.unchanged()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(())
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{CString, OsStr, OsString};
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    /// What changes a name in a watched folder, or the folder itself.
    const MASK: u32 = libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_ONLYDIR;

    /// A folder's own end: it was removed or moved, or its watch dropped.
    const SELF_GONE: u32 = libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED;

    /// A file's identity.
    type Id = (u64, u64);

    #[derive(Debug)]
    pub(super) struct Held {
        inotify: OwnedFd,
        /// Each folder on the path: its watch and the name below it.
        links: Vec<(i32, OsString)>,
        root: Dir,
        names: Vec<OsString>,
        file: Id,
    }

    impl Held {
        pub fn new(root: &Dir, rel: &Path) -> Result<Held, BeneathError> {
            let names = names_of(rel)?;
            // SAFETY: no pointers; the result is checked.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            let inotify = super::super::owned(fd)?;
            let mut links = Vec::with_capacity(names.len());
            let mut folders = Vec::with_capacity(names.len());
            for (i, name) in names.iter().enumerate() {
                let folder = root.open_dir(&prefix(&names[..i]))?;
                let wd = add_watch(&inotify, &folder.fd)?;
                folders.push(identity(&folder.fd)?);
                links.push((wd, name.clone()));
            }
            let held = Held {
                inotify,
                links,
                root: root.open_dir(Path::new(""))?,
                names,
                file: (0, 0),
            };
            // The watches are on; the path must still run through the
            // folders they watch (one may have been swapped before its
            // watch was put on).
            for (i, id) in folders.iter().enumerate() {
                let now = held.root.open_dir(&prefix(&held.names[..i]))?;
                if identity(&now.fd)? != *id {
                    return Err(BeneathError::Changed);
                }
            }
            let file = held.open_file()?;
            // SAFETY: zeroed is a valid `stat`; the call fills it or fails.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: a valid descriptor and out pointer.
            if unsafe { libc::fstat(file.as_raw_fd(), &mut st) } != 0 {
                return Err(io::Error::last_os_error().into());
            }
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Err(BeneathError::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a regular file",
                )));
            }
            Ok(Held {
                file: (st.st_dev, st.st_ino),
                ..held
            })
        }

        pub fn unchanged(&self) -> Result<(), BeneathError> {
            if self.changed_events()? {
                return Err(BeneathError::Changed);
            }
            let file = match self.open_file() {
                Ok(f) => f,
                Err(BeneathError::Io(_)) => return Err(BeneathError::Changed),
                Err(e) => return Err(e),
            };
            if identity(&file)? != self.file {
                return Err(BeneathError::Changed);
            }
            Ok(())
        }

        /// The file, opened again beneath the root (not for reading).
        fn open_file(&self) -> Result<OwnedFd, BeneathError> {
            self.root
                .open_names(&self.names, libc::O_PATH | libc::O_CLOEXEC)
        }

        /// Whether an event since the watch began touched the path.
        fn changed_events(&self) -> Result<bool, BeneathError> {
            let mut buf = vec![0u8; 64 * 1024];
            let mut changed = false;
            loop {
                // SAFETY: a valid descriptor and a buffer of the length
                // passed.
                let n = unsafe {
                    libc::read(self.inotify.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
                };
                if n < 0 {
                    let e = io::Error::last_os_error();
                    return match e.kind() {
                        io::ErrorKind::WouldBlock => Ok(changed),
                        io::ErrorKind::Interrupted => continue,
                        _ => Err(e.into()),
                    };
                }
                if n == 0 {
                    return Ok(changed);
                }
                let read = usize::try_from(n).unwrap_or(0);
                changed |= self.touches_path(&buf[..read]);
            }
        }

        /// Whether any of these raw inotify events touches the path.
        fn touches_path(&self, mut events: &[u8]) -> bool {
            const HEADER: usize = 16;
            let mut touched = false;
            while events.len() >= HEADER {
                let word = |at: usize| {
                    let mut b = [0u8; 4];
                    b.copy_from_slice(&events[at..at + 4]);
                    b
                };
                let wd = i32::from_ne_bytes(word(0));
                let mask = u32::from_ne_bytes(word(4));
                let len = u32::from_ne_bytes(word(12)) as usize;
                let end = (HEADER + len).min(events.len());
                let raw = &events[HEADER..end];
                let name = &raw[..raw.iter().position(|b| *b == 0).unwrap_or(raw.len())];
                if mask & libc::IN_Q_OVERFLOW != 0 {
                    touched = true;
                }
                if let Some((_, below)) = self.links.iter().find(|(w, _)| *w == wd)
                    && (mask & SELF_GONE != 0 || name == below.as_bytes())
                {
                    touched = true;
                }
                events = &events[end..];
            }
            touched
        }
    }

    /// The names of a plain relative path; at least one.
    fn names_of(rel: &Path) -> Result<Vec<OsString>, BeneathError> {
        let names = super::super::plain(rel)?;
        if names.is_empty() {
            return Err(BeneathError::NotPlain(rel.to_path_buf()));
        }
        Ok(names)
    }

    /// The folder path of the first names.
    fn prefix(names: &[OsString]) -> std::path::PathBuf {
        names.iter().collect()
    }

    /// Watch the folder open as `fd` itself (through /proc, not its name).
    fn add_watch(inotify: &OwnedFd, fd: &OwnedFd) -> Result<i32, BeneathError> {
        let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
        let c = CString::new(OsStr::new(&link).as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))?;
        // SAFETY: a valid descriptor and NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), c.as_ptr(), MASK) };
        if wd < 0 {
            return Err(io::Error::last_os_error().into());
        }
        Ok(wd)
    }

    fn identity(fd: &OwnedFd) -> Result<Id, BeneathError> {
        // SAFETY: zeroed is a valid `stat`; the call fills it or fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and out pointer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(io::Error::last_os_error().into());
        }
        Ok((st.st_dev, st.st_ino))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    /// A workspace with `sub/a.txt` and a folder outside it with an
    /// `a.txt` of its own.
    fn layout() -> (tempfile::TempDir, tempfile::TempDir, Dir) {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        std::fs::write(ws.path().join("sub/a.txt"), "inside").unwrap();
        std::fs::write(outside.path().join("a.txt"), "SECRET").unwrap();
        let root = Dir::open_root(ws.path()).unwrap();
        (ws, outside, root)
    }

    #[test]
    fn a_folder_swapped_for_a_symlink_and_back_while_held_is_seen() {
        let (ws, outside, root) = layout();
        let held = root.watch(Path::new("sub/a.txt")).unwrap();
        assert!(held.unchanged().is_ok());
        // Swapped in, then back: the path looks as it did.
        std::fs::rename(ws.path().join("sub"), ws.path().join("real")).unwrap();
        symlink(outside.path(), ws.path().join("sub")).unwrap();
        std::fs::remove_file(ws.path().join("sub")).unwrap();
        std::fs::rename(ws.path().join("real"), ws.path().join("sub")).unwrap();
        assert!(matches!(held.unchanged(), Err(BeneathError::Changed)));
    }

    #[test]
    fn a_swap_still_in_place_or_a_replaced_file_is_seen() {
        let (ws, outside, root) = layout();
        let held = root.watch(Path::new("sub/a.txt")).unwrap();
        std::fs::rename(ws.path().join("sub"), ws.path().join("real")).unwrap();
        symlink(outside.path(), ws.path().join("sub")).unwrap();
        assert!(held.unchanged().is_err());
        let (ws, _outside, root) = layout();
        let held = root.watch(Path::new("sub/a.txt")).unwrap();
        std::fs::write(ws.path().join("sub/new.txt"), "x").unwrap();
        std::fs::rename(ws.path().join("sub/new.txt"), ws.path().join("sub/a.txt")).unwrap();
        assert!(matches!(held.unchanged(), Err(BeneathError::Changed)));
    }

    #[test]
    fn changes_beside_the_path_leave_a_held_file_alone() {
        let (ws, _outside, root) = layout();
        let held = root.watch(Path::new("sub/a.txt")).unwrap();
        std::fs::write(ws.path().join("other.txt"), "x").unwrap();
        std::fs::create_dir(ws.path().join("sub/more")).unwrap();
        std::fs::rename(ws.path().join("other.txt"), ws.path().join("sub/b.txt")).unwrap();
        // Its content may change: the text is what the path names.
        std::fs::write(ws.path().join("sub/a.txt"), "edited").unwrap();
        assert!(held.unchanged().is_ok());
    }

    #[test]
    fn only_a_regular_file_below_plain_folders_is_held() {
        let (ws, outside, root) = layout();
        assert!(matches!(
            root.watch(Path::new("sub")),
            Err(BeneathError::Io(e)) if e.kind() == io::ErrorKind::InvalidInput
        ));
        symlink(outside.path(), ws.path().join("link")).unwrap();
        assert!(matches!(
            root.watch(Path::new("link/a.txt")),
            Err(BeneathError::Symlink)
        ));
    }
}
