//! An eval task: files, a prompt, checks and limits, in one TOML file.
//!
//! ```toml
//! kind = "count"                      # what sort of task (free text; reports group by it)
//! group = "user-phrased"              # optional (default "original"): reports total each group
//! prompt = "How many data rows does data.csv have? Answer with the number."
//! checks = ['grep -qw 3 "$ANSWER_FILE"']   # each must exit 0; run in the workspace
//! max_turns = 10                      # optional (default 10)
//! timeout_secs = 300                  # optional (default 300): the run's wall time
//! files_dir = "projects/calc"         # optional: a folder copied first (inside this file's folder)
//!
//! [files]                             # optional: files written after it (relative paths)
//! "data.csv" = "name\nann\nbob\ncid\n"
//!
//! [replay]                            # optional: a scripted solution (the replay provider's
//! [[replay.turns]]                    # script format), played by `--provider replay`
//! tool_calls = [{ name = "read_file", arguments = { path = "data.csv" } }]
//! [[replay.turns]]
//! text = "3"
//! ```
//!
//! The task's name is its file name without `.toml`. A suite is a folder:
//! every `*.toml` directly in it, by name.
//!
//! A suite may come from anywhere (a cloned repository), so every path it
//! names stays inside it: `files_dir` is a folder inside the task file's
//! own folder (no absolute path, no `..`, no symlink leading out, checked
//! on the resolved path), and `[files]` are relative paths inside the
//! workspace.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// Turns a task may take unless it says otherwise.
pub const DEFAULT_MAX_TURNS: u32 = 10;
/// The group of a task that names none: the suite's first tasks.
pub const DEFAULT_GROUP: &str = "original";
/// Wall time of a task's run unless it says otherwise.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// A task as written in its file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    kind: String,
    group: Option<String>,
    prompt: String,
    checks: Vec<String>,
    max_turns: Option<u32>,
    timeout_secs: Option<u64>,
    files_dir: Option<PathBuf>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    replay: Option<toml::Value>,
}

/// A task ready to run.
#[derive(Debug, Clone)]
pub struct Task {
    pub name: String,
    pub kind: String,
    /// The set of tasks it belongs to ([`DEFAULT_GROUP`] unless it says),
    /// reported apart: tasks written later stay comparable with the first.
    pub group: String,
    pub prompt: String,
    pub checks: Vec<String>,
    pub max_turns: u32,
    pub timeout_secs: u64,
    /// A folder copied into the workspace first.
    pub files_dir: Option<PathBuf>,
    /// Files written into the workspace (relative path, contents).
    pub files: Vec<(PathBuf, String)>,
    /// The scripted solution, as a replay script (JSON).
    pub replay: Option<serde_json::Value>,
}

/// Why a task file or suite cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("{0}: no tasks (*.toml) there")]
    Empty(PathBuf),
}

fn invalid(path: &Path, message: impl Into<String>) -> TaskError {
    TaskError::Invalid {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

impl Task {
    /// Read and check one task file.
    pub fn load(path: &Path) -> Result<Task, TaskError> {
        let text = std::fs::read_to_string(path).map_err(|source| TaskError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let file: TaskFile =
            toml::from_str(&text).map_err(|e| invalid(path, e.message().to_string()))?;
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| invalid(path, "the file name is not valid UTF-8"))?
            .to_string();
        if file.prompt.trim().is_empty() {
            return Err(invalid(path, "the prompt is empty"));
        }
        if file.checks.is_empty() || file.checks.iter().any(|c| c.trim().is_empty()) {
            return Err(invalid(path, "a task needs at least one non-empty check"));
        }
        let mut files = Vec::new();
        for (rel, body) in file.files {
            files.push((relative(path, &rel)?, body));
        }
        let files_dir = file
            .files_dir
            .map(|dir| files_dir(path, &dir))
            .transpose()?;
        let replay = file
            .replay
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| invalid(path, format!("replay: {e}")))?;
        Ok(Task {
            name,
            kind: file.kind,
            group: match file.group.as_deref().map(str::trim) {
                Some("") => return Err(invalid(path, "the group is empty")),
                Some(g) => g.to_string(),
                None => DEFAULT_GROUP.to_string(),
            },
            prompt: file.prompt,
            checks: file.checks,
            max_turns: file.max_turns.unwrap_or(DEFAULT_MAX_TURNS).max(1),
            timeout_secs: file.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1),
            files_dir,
            files,
            replay,
        })
    }
}

/// The task's `files_dir`, resolved: a folder inside the task file's own
/// folder, however it is spelled and wherever its links point.
fn files_dir(task: &Path, dir: &Path) -> Result<PathBuf, TaskError> {
    let outside = || {
        invalid(
            task,
            format!(
                "files_dir `{}` must be a folder inside the task's own folder (no absolute \
                 path, no `..`, no link out of it)",
                dir.display()
            ),
        )
    };
    let plain = dir
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return Err(outside());
    }
    let parent = match task.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let suite = std::fs::canonicalize(parent).map_err(|source| TaskError::Read {
        path: parent.to_path_buf(),
        source,
    })?;
    let joined = parent.join(dir);
    let resolved = std::fs::canonicalize(&joined).map_err(|_| {
        invalid(
            task,
            format!("files_dir {} is not a folder", joined.display()),
        )
    })?;
    if !resolved.starts_with(&suite) {
        return Err(outside());
    }
    if !resolved.is_dir() {
        return Err(invalid(
            task,
            format!("files_dir {} is not a folder", joined.display()),
        ));
    }
    Ok(resolved)
}

/// A path inside the workspace: relative, without `..`.
fn relative(task: &Path, rel: &str) -> Result<PathBuf, TaskError> {
    let path = PathBuf::from(rel);
    let plain = !rel.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if plain {
        Ok(path)
    } else {
        Err(invalid(
            task,
            format!("file `{rel}` must be a relative path inside the workspace"),
        ))
    }
}

/// The tasks of `paths` (task files, or folders of them), by name; a task
/// named twice is loaded once.
pub fn load_suite(paths: &[PathBuf]) -> Result<Vec<Task>, TaskError> {
    let mut files: Vec<PathBuf> = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| TaskError::Read {
                path: path.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
                .collect();
            if found.is_empty() {
                return Err(TaskError::Empty(path.clone()));
            }
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    let mut tasks: Vec<Task> = Vec::new();
    for file in files {
        let task = Task::load(&file)?;
        if !tasks.iter().any(|t| t.name == task.name) {
            tasks.push(task);
        }
    }
    Ok(tasks)
}

/// Copy `task`'s files into `workspace` (an empty folder): its folder
/// first (regular files and folders only; links are skipped), then the
/// inline files.
pub fn materialize(task: &Task, workspace: &Path) -> std::io::Result<()> {
    if let Some(dir) = &task.files_dir {
        copy_tree(dir, workspace)?;
    }
    for (rel, body) in &task.files {
        let dest = workspace.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(dest, body)?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&dest)?;
            copy_tree(&entry.path(), &dest)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &dest)?;
        }
    }
    Ok(())
}
