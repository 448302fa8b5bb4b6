//! Project instructions: the `AGENTS.md` files a run follows (`CLAUDE.md`
//! where a folder has no AGENTS.md), one per folder.
//!
//! At the start of a run: the user's global file, then the project's from
//! its root (the nearest folder above the workspace holding `.git`, else
//! the workspace) down to the workspace, root first, so the nearer file has
//! the last word. A folder below the workspace adds its file the first time
//! the model works there (a call names a path in it): the file comes back
//! with that call's result.
//!
//! All of it within one cap (32 KiB by default); what does not fit is cut
//! with a note saying so, in the prompt and to the user, never silently.
//! The files are the repository's words: each is read only when it is a
//! regular file (never through a symlink, which could point at a secret
//! outside the project, nor a FIFO, which would block), and at most the cap.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The instruction file names, in the order they are looked for in a
/// folder: the first found is the folder's.
pub const FILE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Bytes of instructions a run takes in, all files together.
pub const DEFAULT_CAP: usize = 32 * 1024;

/// Where an instruction file comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The user's own, `$REIN_HOME/AGENTS.md`.
    Global,
    /// A folder from the project's root down to the workspace.
    Project,
    /// A folder below the workspace, added when the model worked there.
    Nested,
}

/// One file taken in (or cut, or left out).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InstructionFile {
    pub path: PathBuf,
    pub origin: Origin,
    /// Its size on disk.
    pub bytes: u64,
    /// How much of it the model got (less than `bytes` when cut).
    pub included: usize,
    /// Why it was not read, when it was not (a symlink, not a file).
    pub skipped: Option<String>,
}

/// The instructions of a run.
#[derive(Debug, Clone, Default)]
pub struct Instructions {
    pub files: Vec<InstructionFile>,
    /// What goes in the system prompt (each file under its path).
    pub text: String,
    /// Said to the user when something was cut or left out.
    pub notes: Vec<String>,
    /// Bytes of the cap left for nested files.
    pub left: usize,
}

impl Instructions {
    /// The global file and the project's, from its root down to
    /// `workspace`, within `cap` bytes.
    pub fn load(global: Option<&Path>, workspace: &Path, cap: usize) -> Instructions {
        let mut found = Instructions {
            left: cap,
            ..Instructions::default()
        };
        // The user's file, when there is one (its absence is no news).
        if let Some(global) = global.filter(|g| g.symlink_metadata().is_ok()) {
            found.take(global, Origin::Global, None);
        }
        for dir in chain(workspace) {
            if let Some(file) = folder_file(&dir) {
                found.take(&file, Origin::Project, Some(workspace));
            }
        }
        found
    }

    /// The files of the folders from `workspace` (exclusive) down to the
    /// folder of `path` that are not among `self.files` yet, as text to
    /// give the model with the call that worked there; `None` when there is
    /// none. `path` is where a call works (relative to the workspace, or
    /// absolute beneath it); anything else is ignored.
    pub fn nested(&mut self, workspace: &Path, path: &Path) -> Option<String> {
        let below = relative_below(workspace, path)?;
        let mut dir = workspace.to_path_buf();
        let mut added = String::new();
        let parts: Vec<_> = below.components().collect();
        // The last part may be a file: only folders are looked in.
        for part in parts {
            dir.push(part);
            if dir.is_symlink() || !dir.is_dir() {
                break;
            }
            let Some(file) = folder_file(&dir) else {
                continue;
            };
            if self.files.iter().any(|f| f.path == file) {
                continue;
            }
            let before = self.text.len();
            self.take(&file, Origin::Nested, Some(workspace));
            added.push_str(&self.text[before..]);
        }
        (!added.trim().is_empty()).then(|| {
            format!(
                "\n\n[rein] Project instructions for the folder you are working in \
                 (follow them there):\n{}",
                added.trim_end()
            )
        })
    }

    /// Read `file` into the text, within what is left of the cap.
    fn take(&mut self, file: &Path, origin: Origin, workspace: Option<&Path>) {
        let shown = workspace
            .and_then(|w| file.strip_prefix(w).ok())
            .filter(|r| !r.as_os_str().is_empty())
            .unwrap_or(file)
            .display()
            .to_string();
        let mut entry = InstructionFile {
            path: file.to_path_buf(),
            origin,
            bytes: 0,
            included: 0,
            skipped: None,
        };
        match read_regular(file, self.left) {
            Err(why) => {
                self.notes
                    .push(format!("instructions {shown} not read: {why}"));
                entry.skipped = Some(why);
            }
            Ok((text, size)) => {
                entry.bytes = size;
                entry.included = text.len();
                self.left = self.left.saturating_sub(text.len());
                self.text
                    .push_str(&format!("## {shown}\n{}\n\n", text.trim_end()));
                if (text.len() as u64) < size {
                    let note = format!(
                        "instructions {shown} cut: {} of its {size} bytes did not fit the \
                         instructions cap",
                        size - text.len() as u64
                    );
                    self.text.push_str(&format!("[{note}]\n\n"));
                    self.notes.push(note);
                }
            }
        }
        self.files.push(entry);
    }
}

impl Instructions {
    /// One line per file, for people (`rein context`, `/context`): where it
    /// comes from, its path, how much of it the model gets.
    pub fn lines(&self) -> Vec<String> {
        self.files
            .iter()
            .map(|f| {
                let origin = match f.origin {
                    Origin::Global => "yours",
                    Origin::Project => "project",
                    Origin::Nested => "folder",
                };
                let state = match &f.skipped {
                    Some(why) => format!("not read: {why}"),
                    None if (f.included as u64) < f.bytes => {
                        format!("{} of {} bytes (cut at the cap)", f.included, f.bytes)
                    }
                    None => format!("{} bytes", f.bytes),
                };
                format!("{origin:<8} {}  {state}", f.path.display())
            })
            .collect()
    }
}

/// The folders from the project's root down to `workspace`, root first.
/// The root is the nearest folder at or above the workspace holding
/// `.git`; without one, the workspace alone.
pub fn chain(workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in workspace.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            dirs.reverse();
            return dirs;
        }
    }
    vec![workspace.to_path_buf()]
}

/// The instruction file of `dir`: its AGENTS.md, else its CLAUDE.md (by
/// name only: whether it can be read is decided when it is read).
pub fn folder_file(dir: &Path) -> Option<PathBuf> {
    FILE_NAMES
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.symlink_metadata().is_ok())
}

/// `path` relative to `workspace` when it is beneath it, with no `..`.
fn relative_below(workspace: &Path, p: &Path) -> Option<PathBuf> {
    let rel = if p.is_absolute() {
        p.strip_prefix(workspace).ok()?.to_path_buf()
    } else {
        p.to_path_buf()
    };
    let plain = rel.components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    (plain && !rel.as_os_str().is_empty()).then_some(rel)
}

/// A regular file's text (at most `cap` bytes, cut at a character) and its
/// size; never through a symlink, never a FIFO or device.
fn read_regular(path: &Path, cap: usize) -> Result<(String, u64), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => "it is a symbolic link".to_string(),
            _ => e.to_string(),
        })?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    let mut bytes = Vec::new();
    file.take(cap as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&bytes);
    // A cut in the middle of a character leaves a replacement mark: drop it.
    let text = if bytes.len() as u64 >= meta.len() {
        text.into_owned()
    } else {
        let end = crate::text::floor_boundary(&text, text.len().min(cap));
        text[..end].trim_end_matches('\u{fffd}').to_string()
    };
    Ok((text, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A repository with instructions at its root, in the folder rein runs
    /// in (a CLAUDE.md where there is no AGENTS.md) and deeper down.
    fn repo() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        write(&root.path().join("AGENTS.md"), "Root: use tabs.");
        write(&root.path().join("app/CLAUDE.md"), "App: run make test.");
        write(&root.path().join("app/api/AGENTS.md"), "API: no panics.");
        write(
            &root.path().join("app/api/CLAUDE.md"),
            "ignored: AGENTS.md wins",
        );
        write(&root.path().join("app/api/handler.rs"), "fn main() {}");
        root
    }

    #[test]
    fn the_global_file_then_root_down_to_the_workspace_nearest_last() {
        let root = repo();
        let global = root.path().join("home/AGENTS.md");
        write(&global, "Mine: be brief.");
        let ws = root.path().join("app");
        let found = Instructions::load(Some(&global), &ws, DEFAULT_CAP);
        let order: Vec<Origin> = found.files.iter().map(|f| f.origin).collect();
        assert_eq!(order, [Origin::Global, Origin::Project, Origin::Project]);
        let (mine, root_at, app) = (
            found.text.find("Mine").unwrap(),
            found.text.find("Root").unwrap(),
            found.text.find("App").unwrap(),
        );
        assert!(mine < root_at && root_at < app, "{}", found.text);
        assert!(
            found.text.contains("## CLAUDE.md\nApp: run make test."),
            "{}",
            found.text
        );
        assert!(found.notes.is_empty());
        // No file of yours: nothing to say about it.
        let none = Instructions::load(Some(&root.path().join("none/AGENTS.md")), &ws, DEFAULT_CAP);
        assert!(
            none.notes.is_empty() && none.files.len() == 2,
            "{:?}",
            none.notes
        );
    }

    #[test]
    fn a_nested_folders_file_comes_once_when_the_model_works_there() {
        let root = repo();
        let ws = root.path().join("app");
        let mut found = Instructions::load(None, &ws, DEFAULT_CAP);
        let added = found.nested(&ws, Path::new("api/handler.rs")).unwrap();
        assert!(
            added.contains("## api/AGENTS.md\nAPI: no panics."),
            "{added}"
        );
        assert!(!added.contains("ignored"), "{added}");
        assert_eq!(
            found.nested(&ws, Path::new("api/handler.rs")),
            None,
            "only once"
        );
        assert_eq!(found.nested(&ws, Path::new("../outside.rs")), None);
        assert_eq!(found.nested(&ws, Path::new("/etc/passwd")), None);
        assert_eq!(found.files.last().unwrap().origin, Origin::Nested);
    }

    #[test]
    fn what_does_not_fit_the_cap_is_cut_with_a_note() {
        let root = repo();
        write(&root.path().join("AGENTS.md"), &"é".repeat(100));
        let found = Instructions::load(None, &root.path().join("app"), 51);
        assert_eq!(found.files[0].bytes, 200);
        assert_eq!(found.files[0].included, 50);
        assert!(
            found.text.contains("AGENTS.md cut: 150 of its 200 bytes"),
            "{}",
            found.text
        );
        // One byte was left for the next file: it is cut too, and said.
        assert_eq!(found.files[1].included, 1);
        assert_eq!(found.notes.len(), 2, "{:?}", found.notes);
        assert!(
            found.notes[1].contains("CLAUDE.md cut"),
            "{:?}",
            found.notes
        );
    }

    #[test]
    fn a_symlink_or_a_fifo_is_never_read() {
        let root = tempfile::tempdir().unwrap();
        let secret = root.path().join("secret.txt");
        std::fs::write(&secret, "TOKEN=hunter2").unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::os::unix::fs::symlink(&secret, ws.join("AGENTS.md")).unwrap();
        let found = Instructions::load(None, &ws, DEFAULT_CAP);
        assert!(!found.text.contains("hunter2"));
        assert_eq!(
            found.files[0].skipped.as_deref(),
            Some("it is a symbolic link")
        );
        assert!(found.notes[0].contains("not read: it is a symbolic link"));

        let ws2 = root.path().join("ws2");
        std::fs::create_dir(&ws2).unwrap();
        let fifo = std::ffi::CString::new(ws2.join("AGENTS.md").to_str().unwrap()).unwrap();
        // SAFETY: a valid C string and mode.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let found = Instructions::load(None, &ws2, DEFAULT_CAP);
        assert_eq!(
            found.files[0].skipped.as_deref(),
            Some("it is not a regular file")
        );
    }
}
