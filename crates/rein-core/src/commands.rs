//! Custom commands: a Markdown file whose text becomes the user's message
//! (`/NAME args` in the app, `rein exec --command NAME args`), in the
//! layout users already have: `.rein/commands/NAME.md` and
//! `.claude/commands/NAME.md` in the project, `$REIN_HOME/commands/NAME.md`
//! for the user's own. A project's command of the same name wins over the
//! user's (it is the project's word for that project); rein's own slash
//! commands win over both.
//!
//! The file may start with a frontmatter block (`---` lines) of
//! `description`, `argument-hint`, `model` and `allowed-tools`. In the
//! body, `$ARGUMENTS` becomes everything after the name and `$1`…`$9` the
//! words. `allowed-tools` only ever narrows what the model is offered for
//! that message; it never grants an approval.

use std::path::{Path, PathBuf};

/// Folders of a project that hold commands, in the order they win.
pub const PROJECT_DIRS: [&str; 2] = [".rein/commands", ".claude/commands"];

/// Largest command file read.
const MAX_BYTES: u64 = 64 * 1024;

/// One command.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CustomCommand {
    /// `NAME`, from the file's name.
    pub name: String,
    pub path: PathBuf,
    pub description: Option<String>,
    pub argument_hint: Option<String>,
    /// The model to run the message on (`rein exec` when none is chosen).
    pub model: Option<String>,
    /// The tools the model is offered for it (empty: all).
    pub allowed_tools: Vec<String>,
    /// The text, before arguments are put in.
    pub body: String,
}

/// What was found: the commands, and a line for each file that could not
/// be used (file and line named).
#[derive(Debug, Clone, Default)]
pub struct Commands {
    pub commands: Vec<CustomCommand>,
    pub warnings: Vec<String>,
}

impl Commands {
    /// The commands of `workspace` and of the user (`user_dir`), project
    /// ones first; `reserved` names (rein's own) are skipped with a
    /// warning.
    pub fn discover(workspace: &Path, user_dir: Option<&Path>, reserved: &[&str]) -> Commands {
        let mut found = Commands::default();
        let dirs = PROJECT_DIRS
            .iter()
            .map(|d| workspace.join(d))
            .chain(user_dir.map(Path::to_path_buf));
        for dir in dirs {
            found.read_dir(&dir, reserved);
        }
        found
    }

    pub fn get(&self, name: &str) -> Option<&CustomCommand> {
        self.commands.iter().find(|c| c.name == name)
    }

    fn read_dir(&mut self, dir: &Path, reserved: &[&str]) {
        for path in crate::frontmatter::markdown_files(dir) {
            let Some(name) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
            else {
                continue;
            };
            if !valid_name(&name) {
                self.warnings.push(format!(
                    "{}: `{name}` is not a command name (letters, digits, `-`, `_`, `:`)",
                    path.display()
                ));
                continue;
            }
            if reserved.contains(&name.as_str()) {
                self.warnings.push(format!(
                    "{}: `/{name}` is one of rein's own commands; the file is not used",
                    path.display()
                ));
                continue;
            }
            if self.get(&name).is_some() {
                continue;
            }
            match read(&path, &name) {
                Ok(command) => self.commands.push(command),
                Err(why) => self.warnings.push(format!("{}: {why}", path.display())),
            }
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
}

/// Read one command file: a regular file (no symlink), bounded.
fn read(path: &Path, name: &str) -> Result<CustomCommand, String> {
    let text = crate::frontmatter::read_file(path, MAX_BYTES)?;
    let (fields, body) = crate::frontmatter::split(&text)?;
    let mut command = CustomCommand {
        name: name.to_string(),
        path: path.to_path_buf(),
        description: None,
        argument_hint: None,
        model: None,
        allowed_tools: Vec::new(),
        body: body.trim().to_string(),
    };
    for field in fields {
        match field.key.as_str() {
            "description" => command.description = Some(field.value.text()),
            "argument-hint" => command.argument_hint = Some(field.value.text()),
            "model" => command.model = Some(field.value.text()),
            "allowed-tools" => command.allowed_tools = field.value.list(),
            _ => {}
        }
    }
    Ok(command)
}

impl CustomCommand {
    /// The message for `args` (what followed the name): `$ARGUMENTS` is
    /// all of it, `$1`…`$9` its words (missing ones empty). A body that
    /// uses neither gets the arguments after it, so none are lost.
    pub fn expand(&self, args: &str) -> String {
        let args = args.trim();
        let words: Vec<&str> = args.split_whitespace().collect();
        let uses_args = self.body.contains("$ARGUMENTS")
            || (1..=9).any(|i| self.body.contains(&format!("${i}")));
        let mut text = self.body.replace("$ARGUMENTS", args);
        // $9 first, so `$1` does not eat the start of `$10`-like text.
        for i in (1..=9).rev() {
            let value = words.get(i - 1).copied().unwrap_or("");
            text = text.replace(&format!("${i}"), value);
        }
        if !uses_args && !args.is_empty() {
            text.push_str("\n\n");
            text.push_str(args);
        }
        text
    }

    /// The built-in tool names `allowed-tools` allows (Claude's names are
    /// read as rein's; a `Bash(git:*)` pattern as the whole tool).
    pub fn allowed_tool_names(&self) -> Vec<String> {
        self.allowed_tools
            .iter()
            .map(|t| rein_tool_name(t))
            .collect()
    }
}

/// rein's name for a tool named the Claude Code way (`Bash`, `Read`...;
/// a pattern like `Bash(git:*)` names the whole tool); other names as
/// they are.
pub fn rein_tool_name(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name).trim();
    match base {
        "Bash" => "bash",
        "Read" => "read_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Write" => "write_file",
        "Grep" => "grep",
        "Glob" | "LS" => "glob",
        other => other,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn commands_come_from_the_projects_folders_and_the_users_project_first() {
        let ws = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        write(
            &ws.path().join(".claude/commands/review.md"),
            "---\ndescription: Review a file\nargument-hint: <file>\nallowed-tools: [Read, \"Bash(git diff:*)\"]\n---\nReview $1 carefully. Focus: $ARGUMENTS\n",
        );
        write(
            &ws.path().join(".rein/commands/fix.md"),
            "Fix the failing test.",
        );
        write(&home.path().join("fix.md"), "the user's fix: not used here");
        write(&home.path().join("mine.md"), "Say hello.");
        write(&home.path().join("help.md"), "shadows /help");
        let found = Commands::discover(ws.path(), Some(home.path()), &["help"]);
        let names: Vec<&str> = found.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["fix", "review", "mine"]);
        assert_eq!(found.get("fix").unwrap().body, "Fix the failing test.");
        let review = found.get("review").unwrap();
        assert_eq!(review.description.as_deref(), Some("Review a file"));
        assert_eq!(review.argument_hint.as_deref(), Some("<file>"));
        assert_eq!(review.allowed_tool_names(), ["read_file", "bash"]);
        assert_eq!(
            review.expand("src/a.rs  speed"),
            "Review src/a.rs carefully. Focus: src/a.rs  speed"
        );
        assert!(found.warnings[0].contains("`/help` is one of rein's own commands"));
    }

    #[test]
    fn arguments_are_never_lost_and_missing_words_are_empty() {
        let c = CustomCommand {
            name: "x".into(),
            path: PathBuf::new(),
            description: None,
            argument_hint: None,
            model: None,
            allowed_tools: Vec::new(),
            body: "Do the thing.".into(),
        };
        assert_eq!(c.expand("now please"), "Do the thing.\n\nnow please");
        assert_eq!(c.expand(""), "Do the thing.");
        let c = CustomCommand {
            body: "a=$1 b=$2".into(),
            ..c
        };
        assert_eq!(c.expand("one"), "a=one b=");
    }

    #[test]
    fn a_broken_frontmatter_is_one_warning_naming_file_and_line() {
        let ws = tempfile::tempdir().unwrap();
        write(
            &ws.path().join(".rein/commands/bad.md"),
            "---\ndescription: fine\nthis line has no colon\n---\nbody",
        );
        write(
            &ws.path().join(".rein/commands/open.md"),
            "---\ndescription: never closed\n",
        );
        let found = Commands::discover(ws.path(), None, &[]);
        assert!(found.commands.is_empty(), "{:?}", found.commands);
        assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
        assert!(
            found.warnings[0].contains("bad.md: line 3:"),
            "{:?}",
            found.warnings
        );
        assert!(
            found.warnings[1].contains("open.md: the frontmatter"),
            "{:?}",
            found.warnings
        );
    }
}
