//! A hook for small models: `write_file` may not replace an existing file
//! the session has not looked at.
//!
//! Measured with `rein eval`: asked to change one constant, the 1.5B model
//! called `write_file` with a whole new file it made up (a one-line
//! `config.py`, a Kubernetes manifest for a compose file), destroying
//! what was there. Refused, with the way to do it right, it reads first.
//! A file counts as looked at once a `read_file` call, or a command,
//! named it. New files are never refused.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rein_core::{CallHook, HookVerdict, ToolCall};
use serde_json::Value;

/// Refuses `write_file` over an existing file no earlier call named.
#[derive(Debug)]
pub struct ReadBeforeOverwrite {
    workspace: PathBuf,
    seen: Mutex<HashSet<PathBuf>>,
}

impl ReadBeforeOverwrite {
    pub fn new(workspace: &Path) -> ReadBeforeOverwrite {
        ReadBeforeOverwrite {
            workspace: workspace.to_path_buf(),
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// `path` inside the workspace, lexically (`..` and `.` folded); None
    /// when it leaves it (the tool refuses those itself).
    fn inside(&self, path: &str) -> Option<PathBuf> {
        crate::workspace::lexical(&self.workspace, path).filter(|p| p.starts_with(&self.workspace))
    }

    fn note(&self, path: PathBuf) {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(path);
    }

    fn was_seen(&self, path: &Path) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(path)
    }
}

#[async_trait::async_trait]
impl CallHook for ReadBeforeOverwrite {
    async fn before_call(&self, call: &ToolCall, args: &Value) -> HookVerdict {
        let path = args.get("path").and_then(Value::as_str);
        match call.name.as_str() {
            "read_file" | "edit_file" | "grep" => {
                if let Some(p) = path.and_then(|p| self.inside(p)) {
                    self.note(p);
                }
            }
            "bash" => {
                let command = args.get("command").and_then(Value::as_str).unwrap_or("");
                for word in command.split(|c: char| c.is_whitespace() || "'\"<>|;&()".contains(c)) {
                    if let Some(p) = self.inside(word).filter(|p| p.is_file()) {
                        self.note(p);
                    }
                }
            }
            "write_file" => {
                let Some((shown, p)) = path.and_then(|s| Some((s, self.inside(s)?))) else {
                    return HookVerdict::Continue;
                };
                if p.is_file() && !self.was_seen(&p) {
                    return HookVerdict::Veto(format!(
                        "write_file would replace all of `{shown}`, which you have not read. \
                         Read it first (read_file), then change the part that needs changing \
                         with edit_file"
                    ));
                }
                self.note(p);
            }
            _ => {}
        }
        HookVerdict::Continue
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: String::new(),
        }
    }

    #[tokio::test]
    async fn an_existing_file_is_written_only_after_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.py"), "TIMEOUT = 30\n").unwrap();
        let hook = ReadBeforeOverwrite::new(dir.path());
        let write = json!({"path": "config.py", "content": "x"});
        let HookVerdict::Veto(why) = hook.before_call(&call("write_file"), &write).await else {
            panic!("not refused")
        };
        assert!(why.contains("which you have not read"), "{why}");
        hook.before_call(&call("read_file"), &json!({"path": "./config.py"}))
            .await;
        assert_eq!(
            hook.before_call(&call("write_file"), &write).await,
            HookVerdict::Continue
        );
    }

    #[tokio::test]
    async fn new_files_and_files_a_command_printed_may_be_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x").unwrap();
        let hook = ReadBeforeOverwrite::new(dir.path());
        let new = json!({"path": "sub/new.txt", "content": "x"});
        assert_eq!(
            hook.before_call(&call("write_file"), &new).await,
            HookVerdict::Continue
        );
        hook.before_call(&call("bash"), &json!({"command": "cat 'a.txt' | wc -l"}))
            .await;
        let over = json!({"path": "a.txt", "content": "y"});
        assert_eq!(
            hook.before_call(&call("write_file"), &over).await,
            HookVerdict::Continue
        );
    }
}
