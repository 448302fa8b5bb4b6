//! The escalation for an untrusted project's skills: a shell command that
//! may reach one of their folders is asked about in every mode.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rein_core::{CallHook, HookVerdict, ToolCall};
use serde_json::Value;

use super::Skills;

/// A shell command that may reach the folder of a skill from a folder that
/// is not trusted is asked about in every mode: the repository wrote that
/// script. "May reach" is decided on the parsed command as it would run
/// ([`crate::shell::may_reach`]): however a path is spelled (quotes, `./`,
/// `//`, `..`, `$PWD`, a symlink, a glob, after a `cd`, inside `sh -c`),
/// a folder above the skill's (`.agents`), a copy of one of its files, and
/// anything only known when the command runs all count.
pub struct UntrustedScripts {
    /// Each untrusted skill's name and folder (as found and resolved).
    folders: Vec<(String, PathBuf)>,
    /// The workspace, resolved: it and the folders above it hold the
    /// skills' folders without naming them.
    workspace: PathBuf,
    /// Size and digest of each file in those folders (with its skill's
    /// name), to know a copy.
    files: Vec<(String, u64, [u8; 32])>,
}

/// Most files of untrusted skills whose content is remembered.
const MAX_REMEMBERED_FILES: usize = 4_096;
/// Largest file whose content is remembered.
const MAX_REMEMBERED_BYTES: u64 = 8 * 1024 * 1024;

impl UntrustedScripts {
    /// `None` when every skill is trusted.
    pub fn for_skills(skills: &Skills, workspace: &Path) -> Option<UntrustedScripts> {
        let mut folders: Vec<(String, PathBuf)> = Vec::new();
        for s in skills.skills.iter().filter(|s| !s.trusted) {
            folders.push((s.name.clone(), s.dir.clone()));
            if let Ok(real) = std::fs::canonicalize(&s.dir)
                && real != s.dir
            {
                folders.push((s.name.clone(), real));
            }
        }
        if folders.is_empty() {
            return None;
        }
        let mut files = Vec::new();
        for (name, dir) in &folders {
            let mut found = Vec::new();
            remember_files(dir, &mut found);
            files.extend(found.into_iter().map(|(size, d)| (name.clone(), size, d)));
        }
        Some(UntrustedScripts {
            folders,
            workspace: std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf()),
            files,
        })
    }

    /// The skill whose folder `path` (absolute) is in, is above (but not
    /// above the workspace), or holds a copy of `path`'s content.
    fn skill_at(&self, path: &Path) -> Option<&str> {
        let near = self.folders.iter().find(|(_, dir)| {
            path.starts_with(dir) || (dir.starts_with(path) && !self.workspace.starts_with(path))
        });
        if let Some((name, _)) = near {
            return Some(name);
        }
        let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
        let size = meta.len();
        if !self.files.iter().any(|(_, s, _)| *s == size) {
            return None;
        }
        let digest = digest_of(path)?;
        self.files
            .iter()
            .find(|(_, s, d)| *s == size && *d == digest)
            .map(|(name, _, _)| name.as_str())
    }
}

/// The size and digest of every non-empty regular file below `dir`, up
/// to the limits.
fn remember_files(dir: &Path, out: &mut Vec<(u64, [u8; 32])>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if out.len() >= MAX_REMEMBERED_FILES {
            return;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            remember_files(&path, out);
        } else if kind.is_file()
            && let Ok(meta) = entry.metadata()
            && (1..=MAX_REMEMBERED_BYTES).contains(&meta.len())
            && let Some(digest) = digest_of(&path)
        {
            out.push((meta.len(), digest));
        }
    }
}

fn digest_of(path: &Path) -> Option<[u8; 32]> {
    use sha2::Digest;
    let bytes = std::fs::read(path).ok()?;
    Some(sha2::Sha256::digest(&bytes).into())
}

#[async_trait]
impl CallHook for UntrustedScripts {
    async fn before_call(&self, call: &ToolCall, args: &Value) -> HookVerdict {
        let Some(command) = args.get("command").and_then(Value::as_str) else {
            return HookVerdict::Continue;
        };
        let skill = std::cell::RefCell::new(None::<String>);
        let hit = |path: &Path| match self.skill_at(path) {
            Some(name) => {
                skill.borrow_mut().get_or_insert_with(|| name.to_string());
                true
            }
            None => false,
        };
        let Some(why) = crate::shell::may_reach(command, &self.workspace, &hit) else {
            return HookVerdict::Continue;
        };
        let what = match skill.into_inner() {
            Some(name) => format!("runs files of the skill `{name}` ({why})"),
            None => format!("may run files of a skill: {why}"),
        };
        HookVerdict::Escalate(format!(
            "`{}` {what}, from a folder you have not trusted",
            call.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace whose untrusted skill `x` has `scripts/a.sh`, and the
    /// hook for it.
    fn setup() -> (tempfile::TempDir, PathBuf, UntrustedScripts) {
        let root = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(root.path()).unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        let dir = ws.join(".agents/skills/x");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: x\ndescription: d\n---\nRun it.",
        )
        .unwrap();
        std::fs::write(dir.join("scripts/a.sh"), "echo pwned\n").unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        std::fs::write(ws.join("src/main.rs"), "fn main() {}\n").unwrap();
        let skills = Skills::discover(&ws, None, false);
        assert_eq!(skills.skills.len(), 1, "{:?}", skills.warnings);
        let hook = UntrustedScripts::for_skills(&skills, &ws).unwrap();
        (root, ws, hook)
    }

    async fn asks(hook: &UntrustedScripts, command: &str) -> bool {
        let call = ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: String::new(),
        };
        let args = serde_json::json!({ "command": command });
        matches!(
            hook.before_call(&call, &args).await,
            HookVerdict::Escalate(_)
        )
    }

    #[tokio::test]
    async fn respelling_the_path_of_an_untrusted_skills_script_still_asks() {
        let (_root, ws, hook) = setup();
        std::os::unix::fs::symlink(ws.join(".agents/skills/x/scripts"), ws.join("tools")).unwrap();
        std::os::unix::fs::symlink(ws.join(".agents"), ws.join("a")).unwrap();
        std::fs::copy(ws.join(".agents/skills/x/scripts/a.sh"), ws.join("copy.sh")).unwrap();
        let abs = ws
            .join(".agents/skills/x/scripts/a.sh")
            .display()
            .to_string();
        for command in [
            "sh .agents/skills/x/scripts/a.sh",
            "sh ./.agents//skills/x/../x/scripts/a.sh",
            "sh '.agents'/\"skills\"/x/scripts/a.sh",
            "sh .ag\\ents/skills/x/scripts/a.sh",
            "sh $PWD/.agents/skills/x/scripts/a.sh",
            "sh ${PWD}/.agents/skills/x/scripts/a.sh",
            &format!("sh {abs}"),
            "sh tools/a.sh",
            "sh a/skills/x/scripts/a.sh",
            "sh copy.sh",
            "sh -c 'sh .agents/skills/x/scripts/a.sh'",
            "bash -c \"cd .agents && sh skills/x/scripts/a.sh\"",
            "cd .agents && sh skills/x/scripts/a.sh",
            "cd .agents/skills/x/scripts; ./a.sh",
            "cd src && sh ../.agents/skills/x/scripts/a.sh",
            "sh .agent?/skills/*/scripts/a.sh",
            "sh .*/skills/x/scripts/*.sh",
            "cp -r .agents /tmp/y",
            "tar cf - .agents | tar xf - -C /tmp",
            "sh < .agents/skills/x/scripts/a.sh",
            "bash <<'EOF'\nsh .agents/skills/x/scripts/a.sh\nEOF",
            "python3 -c \"import subprocess; subprocess.run(['sh', '.agents/skills/x/scripts/a.sh'])\"",
            "env -C .agents/skills/x sh scripts/a.sh",
            "X=.agents/skills/x/scripts/a.sh; sh $X",
            "sh $(echo .agents)/skills/x/scripts/a.sh",
            "eval 'sh .agents/skills/x/scripts/a.sh'",
            "find . -name a.sh -exec sh {} \\;",
            "find . -name a.sh | xargs sh",
            "PATH=.agents/skills/x/scripts:/usr/bin a.sh",
            "sh --rcfile=.agents/skills/x/scripts/a.sh",
            "sh 'unterminated",
        ] {
            assert!(asks(&hook, command).await, "ran without asking: {command}");
        }
    }

    #[tokio::test]
    async fn commands_that_cannot_reach_an_untrusted_skill_run_as_usual() {
        let (_root, _ws, hook) = setup();
        for command in [
            "ls -la",
            "cargo test -q",
            "grep -rn main .",
            "cat src/main.rs | wc -l",
            "cd src && ls",
            "ls src/*.rs",
            "git status && git diff HEAD~1",
            "echo '.agents is a folder' > /dev/null",
            "sh -c 'ls src'",
            "ls ~",
        ] {
            assert!(!asks(&hook, command).await, "asked: {command}");
        }
    }
}
