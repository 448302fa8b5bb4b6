//! Opening and replacing the files the file tools were asked for: the
//! canonical path [`crate::workspace`] resolved is opened beneath a handle
//! of the root it lies in ([`crate::beneath`]), so that nothing swapped in
//! after the check can lead outside. Also the size caps of what the tools
//! write and edit, and the last check of a write against protected paths.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};

use rein_core::{ToolContext, ToolError};

use crate::beneath::{BeneathError, Dir, Entry, Kind, Watch};
use crate::workspace;

/// Largest `content` of write_file, `new_string`/`old_string` of edit_file,
/// and file edit_file reads, in bytes (16 MiB).
pub const MAX_WRITE_BYTES: usize = 16 * 1024 * 1024;

/// Refuse an argument bigger than [`MAX_WRITE_BYTES`].
pub fn check_size(what: &str, len: usize) -> Result<(), ToolError> {
    if len > MAX_WRITE_BYTES {
        return Err(ToolError::new(format!(
            "{what} is {len} bytes, more than the {} MiB a file tool writes in one call; \
             write the file in smaller pieces (write_file a first part, then edit_file to add more) \
             or produce it with a command",
            MAX_WRITE_BYTES / (1024 * 1024)
        )));
    }
    Ok(())
}

/// A canonical path split at the root it lies in.
pub(crate) struct Anchor {
    /// A handle of the root.
    pub dir: Dir,
    /// The root's canonical path.
    pub root: PathBuf,
    /// The path relative to the root.
    pub rel: PathBuf,
}

/// The root `path` lies in, opened as a handle, and `path` relative to it.
/// Reads may use the context's read roots; writes only the workspace.
pub(crate) fn anchor(ctx: &ToolContext, path: &Path, write: bool) -> Result<Anchor, ToolError> {
    let ws = workspace::canonical_workspace(&ctx.workspace);
    let mut roots = vec![ws.clone()];
    if !write {
        roots.extend(
            ctx.read_roots
                .iter()
                .filter(|r| r.is_absolute())
                .filter_map(|r| std::fs::canonicalize(r).ok()),
        );
    }
    for root in roots {
        if let Ok(rel) = path.strip_prefix(&root) {
            let dir = Dir::open_root(&root).map_err(|e| {
                ToolError::new(format!("cannot open the folder {}: {e}", root.display()))
            })?;
            return Ok(Anchor {
                dir,
                rel: rel.to_path_buf(),
                root,
            });
        }
    }
    Err(ToolError::new(format!(
        "{} is outside the workspace {}; only paths inside the workspace can be used",
        path.display(),
        ws.display()
    )))
}

/// The message for an open beneath a root that failed; `None` for plain
/// I/O errors, which each tool words itself.
pub(crate) fn race_error(shown: &str, e: &BeneathError) -> Option<ToolError> {
    match e {
        BeneathError::NotPlain(p) => Some(ToolError::new(format!(
            "cannot open `{shown}`: {} is not a plain path below its root",
            p.display()
        ))),
        BeneathError::Symlink => Some(ToolError::new(format!(
            "`{shown}` changed while it was being opened: a symlink appeared on its path \
             (which could lead outside the workspace), so nothing was done; try again"
        ))),
        BeneathError::Escape => Some(ToolError::new(format!(
            "`{shown}` leads outside the workspace while it is being opened; only paths inside \
             the workspace can be used"
        ))),
        BeneathError::Changed => Some(ToolError::new(format!(
            "`{shown}` changed while it was being read (a name on its path was renamed, replaced \
             or removed, which could lead outside the workspace), so what was read was dropped; \
             try again"
        ))),
        BeneathError::Io(_) => None,
    }
}

/// Open the file at canonical `path` (inside the workspace or a read root)
/// for reading. The outer error is the tool's answer (outside, or changed
/// while opening); the inner one a plain I/O error (not found, permission
/// denied) that the caller words itself.
pub(crate) fn open_read(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
) -> Result<Result<File, std::io::Error>, ToolError> {
    let a = anchor(ctx, path, false)?;
    match a.dir.open_read(&a.rel) {
        Ok(f) => Ok(Ok(f)),
        Err(BeneathError::Io(e)) => Ok(Err(e)),
        Err(e) => Err(race_error(shown, &e).unwrap_or_else(|| ToolError::new(e.to_string()))),
    }
}

/// A workspace file held still while another process (an editor) reads
/// it by name: see [`Watch`].
pub struct HeldFile {
    watch: Watch,
    shown: String,
}

impl HeldFile {
    /// Hold the regular file at canonical workspace `path`. `Ok(None)`
    /// when it cannot be held here (no inotify, not a regular file, out of
    /// watches): the caller reads it through its handle instead.
    pub fn hold(
        ctx: &ToolContext,
        path: &Path,
        shown: &str,
    ) -> Result<Option<HeldFile>, ToolError> {
        let a = anchor(ctx, path, true)?;
        match a.dir.watch(&a.rel) {
            Ok(watch) => Ok(Some(HeldFile {
                watch,
                shown: shown.to_string(),
            })),
            Err(BeneathError::Io(_)) => Ok(None),
            Err(e) => Err(race_error(shown, &e).unwrap_or_else(|| ToolError::new(e.to_string()))),
        }
    }

    /// Nothing on the path changed since it was held and it leads to the
    /// same file; else the refusal the model gets (and what was read by
    /// name in between must be dropped).
    pub fn unchanged(&self) -> Result<(), ToolError> {
        self.watch.unchanged().map_err(|e| {
            race_error(&self.shown, &e).unwrap_or_else(|| {
                ToolError::new(format!("cannot check `{}` again: {e}", self.shown))
            })
        })
    }
}

/// A file about to be replaced: the handle of its folder and its name.
pub struct Target {
    pub dir: Dir,
    pub name: OsString,
    /// What is there now, if anything.
    pub existing: Option<Entry>,
    shown: String,
}

impl Target {
    /// The file at canonical workspace `path`; its missing parent folders
    /// are created when `create_parents`.
    pub fn open(
        ctx: &ToolContext,
        path: &Path,
        shown: &str,
        create_parents: bool,
    ) -> Result<Target, ToolError> {
        let Anchor { dir: root, rel, .. } = anchor(ctx, path, true)?;
        let (Some(name), Some(parent)) = (rel.file_name(), rel.parent()) else {
            return Err(ToolError::new(format!(
                "`{shown}` is a directory; give the path of a file inside it"
            )));
        };
        let opened = if create_parents {
            root.create_dirs(parent)
        } else {
            root.open_dir(parent)
        };
        let dir = opened.map_err(|e| {
            race_error(shown, &e).unwrap_or_else(|| {
                let folder = path.parent().unwrap_or(path);
                let shown_parent = workspace::display(&ctx.workspace, folder);
                if e.io_kind() == Some(std::io::ErrorKind::NotFound) && !create_parents {
                    ToolError::new(format!(
                        "`{shown}` does not exist; use write_file to create it"
                    ))
                } else {
                    ToolError::new(format!("cannot create the folder `{shown_parent}`: {e}"))
                }
            })
        })?;
        // A real folder renamed into place between the check and the open
        // is caught here (where /proc tells where the handle is).
        if let (Some(now), Some(expected)) = (dir.current_path(), path.parent())
            && now != expected
        {
            return Err(ToolError::new(format!(
                "`{shown}` moved while it was being opened (its folder is now {}); nothing was \
                 done; try again",
                now.display()
            )));
        }
        let existing = dir
            .entry(name)
            .map_err(|e| ToolError::new(format!("cannot look at `{shown}`: {e}")))?;
        let target = Target {
            dir,
            name: name.to_os_string(),
            existing,
            shown: shown.to_string(),
        };
        if existing.is_some_and(|e| e.kind == Kind::Symlink) {
            return Err(race_error(shown, &BeneathError::Symlink)
                .unwrap_or_else(|| ToolError::new("a symlink appeared")));
        }
        Ok(target)
    }

    /// Refuse a file the user cannot write (its owner is us and it has no
    /// owner write bit): replacing it by rename would otherwise succeed.
    pub fn check_writable(&self) -> Result<(), ToolError> {
        if let Some(e) = self.existing
            // SAFETY: geteuid has no preconditions.
            && e.uid == unsafe { libc::geteuid() }
            && e.mode & 0o200 == 0
        {
            return Err(ToolError::new(format!(
                "cannot write `{}`: permission denied (the file is read-only)",
                self.shown
            )));
        }
        Ok(())
    }

    /// Open the existing file for reading (no symlink followed).
    pub fn open_read(&self) -> Result<File, ToolError> {
        self.dir
            .open_read(Path::new(&self.name))
            .map_err(|e| match race_error(&self.shown, &e) {
                Some(t) => t,
                None => ToolError::new(format!("cannot read `{}`: {e}", self.shown)),
            })
    }

    /// Replace the file's content by writing a new file and renaming it
    /// over the old one (keeping the old permission bits).
    pub fn replace(&self, content: &[u8]) -> Result<(), ToolError> {
        let mode = self.existing.map(|e| e.mode);
        self.dir
            .replace_file(&self.name, content, mode)
            .map_err(|e| match race_error(&self.shown, &e) {
                Some(t) => t,
                None => ToolError::new(format!("cannot write `{}`: {e}", self.shown)),
            })
    }
}

/// The last check of a write: when the path the tool is about to write is
/// protected (git metadata, rein's settings and state, credentials, files
/// hooks and approved servers run) but is
/// not what the model named (a symlink led there, perhaps one swapped in
/// after the gate checked the path), refuse. What the model named itself
/// was checked by the gate, which may allow it by a precise rule.
pub fn check_protected(ctx: &ToolContext, user_path: &str, path: &Path) -> Result<(), ToolError> {
    let ws = workspace::canonical_workspace(&ctx.workspace);
    if workspace::lexical(&ws, user_path).as_deref() == Some(path) {
        return Ok(());
    }
    let state = ctx.sandbox.read_only.iter().any(|r| {
        path.starts_with(r) || std::fs::canonicalize(r).is_ok_and(|c| path.starts_with(c))
    });
    let why = if state {
        Some("rein's own state, or a file a hook or an approved MCP server runs")
    } else {
        rein_core::protected_write(path, &ws)
    };
    match why {
        Some(why) => Err(ToolError::new(format!(
            "`{user_path}` leads through a symlink to {}, which is protected ({why}); name a path \
             directly if you mean it",
            workspace::display(&ctx.workspace, path)
        ))),
        None => Ok(()),
    }
}
