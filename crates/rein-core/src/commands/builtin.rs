//! The commands rein brings itself: `/init` (write or update AGENTS.md)
//! and `/review` (review the current changes, findings by severity). Each
//! is an ordinary command file's text, so a user's or a project's
//! `init.md` / `review.md` (or a plugin's command of that name) replaces
//! it; they are added only where no command has the name.

use std::path::PathBuf;

use super::Commands;

/// `/init`.
const INIT: &str = "---
description: Write or update AGENTS.md, the project's instructions for coding agents
argument-hint: [what to stress]
allowed-tools: Read, Grep, Glob, Bash(ls:*), Bash(git ls-files:*), Bash(git log:*), Write(AGENTS.md), Edit(AGENTS.md)
---
Read this project and write AGENTS.md at its root: what a coding agent needs to know before it changes anything here. If AGENTS.md exists, update it: keep what is still true, correct what is not, add what is missing.

Find out by reading the files (the README, build files, CI configuration, the test folders), not by guessing:
- what the project is, in two or three sentences;
- its layout: the main folders and what each holds;
- how to build it, run it and test it, with the exact commands, and how to run a single test;
- the conventions its code keeps (formatting and lint commands, naming, error handling, where tests go);
- what an agent must not do, or must be careful with.

Keep it short (under 150 lines), concrete and true: only commands and paths that exist. $ARGUMENTS
";

/// `/review`.
const REVIEW: &str = "---
description: Review the current changes (or this branch against a base) and list findings by severity
argument-hint: [base ref]
allowed-tools: Read, Grep, Glob, Bash(git diff:*), Bash(git log:*), Bash(git show:*), Bash(git status:*)
---
Review the changes in this repository as a careful senior engineer would. Only read: change nothing.

The base to compare with: `$ARGUMENTS` (when that is empty, review the uncommitted changes: `git status`, `git diff HEAD`). With a base, review `git diff BASE...HEAD` and the uncommitted changes too. Read the changed files around each change until you understand it.

Look for bugs and wrong behaviour, security problems (injection, secrets, unchecked input), lost data, races, missing error handling, and missing or wrong tests. Do not report what a formatter would fix.

Answer with one line per finding, most severe first, exactly in this form:

P1 path/to/file.ext:42 - one-line reason

P0 is critical (it breaks things, or a security hole), P1 a real bug, P2 a problem worth fixing, P3 minor. Then a short paragraph that sums up the changes and your verdict. With nothing to report, write `No findings.` and the paragraph.
";

/// The built-in commands, by name.
const BUILT_IN: [(&str, &str); 2] = [("init", INIT), ("review", REVIEW)];

/// Where a built-in command's path says it comes from.
const BUILT_IN_DIR: &str = "(built in)";

/// The built-in commands whose pre-approved writes ask first where a
/// person can answer: `/init` in the app shows its AGENTS.md before it is
/// written, whatever the mode (headless, `rein init` writes it).
const SHOWN_BEFORE_WRITING: [&str; 1] = ["init"];

impl super::CustomCommand {
    /// Whether its pre-approved writes ask first where a person can
    /// answer ([`SHOWN_BEFORE_WRITING`]).
    pub fn shows_writes_first(&self) -> bool {
        self.path.starts_with(BUILT_IN_DIR) && SHOWN_BEFORE_WRITING.contains(&self.name.as_str())
    }
}

impl Commands {
    /// Add each built-in command no command found so far is named after.
    pub fn add_built_in(&mut self) {
        for (name, text) in BUILT_IN {
            if self.get(name).is_some() {
                continue;
            }
            // The texts above are rein's own: they parse.
            if let Ok(mut command) = super::parse_command_text(name, text) {
                command.path = PathBuf::from(BUILT_IN_DIR).join(format!("{name}.md"));
                self.commands.push(command);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::CustomCommand;
    use super::*;

    #[test]
    fn the_built_in_commands_parse_and_a_found_one_of_the_same_name_wins() {
        for (name, text) in BUILT_IN {
            let c = super::super::parse_command_text(name, text).unwrap();
            assert!(
                c.description.is_some() && !c.allowed_tools.is_empty(),
                "{name}"
            );
        }
        let mut found = Commands::default();
        found.commands.push(CustomCommand {
            name: "review".into(),
            path: PathBuf::from("/p/.rein/commands/review.md"),
            description: None,
            argument_hint: None,
            model: None,
            allowed_tools: Vec::new(),
            body: "mine".into(),
            trusted: true,
        });
        found.add_built_in();
        assert_eq!(found.get("review").unwrap().body, "mine");
        assert!(found.get("init").unwrap().body.contains("AGENTS.md"));
        assert_eq!(found.commands.len(), 2);
    }
}
