//! What the model is told besides the conversation: the system prompt, built
//! fresh for every run and never stored, and token estimates.

use std::path::Path;

use crate::schema::ToolSpec;

/// Facts the system prompt is built from.
#[derive(Debug, Clone)]
pub struct PromptFacts<'a> {
    pub workspace: &'a Path,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    pub os: &'a str,
    pub tools: &'a [ToolSpec],
    pub plan: bool,
    /// The project's instructions (see [`crate::instructions`]), if any.
    pub agents_md: Option<&'a str>,
    /// The small profile's short instructions (see [`crate::Profile`]):
    /// the tools are not listed again (their specs name them).
    pub lean: bool,
    /// The workspace's files (see [`list_files`]), shown in a lean prompt.
    pub files: Option<&'a str>,
}

/// Most entries of [`list_files`].
const LISTED_FILES: usize = 40;
/// Longest file name listed, in bytes; longer ones are left out.
const LISTED_NAME: usize = 80;

/// The workspace's files, for a small model that otherwise guesses which
/// file to open: the top folder and one level below, as relative paths
/// (folders end in `/`), sorted, hidden entries skipped, at most
/// [`LISTED_FILES`] (then "and N more"). Names are data written by
/// whoever made the repository: one with a control character, or longer
/// than [`LISTED_NAME`], is left out. None for an empty workspace.
pub fn list_files(workspace: &Path) -> Option<String> {
    let mut entries: Vec<String> = Vec::new();
    let mut more = 0usize;
    let names = |dir: &Path| -> Vec<(String, bool)> {
        let Ok(read) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut found: Vec<(String, bool)> = read
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let ok = !name.starts_with('.')
                    && name.len() <= LISTED_NAME
                    && !name.chars().any(char::is_control);
                ok.then(|| (name, e.file_type().is_ok_and(|t| t.is_dir())))
            })
            .collect();
        found.sort();
        found
    };
    for (name, is_dir) in names(workspace) {
        let mut add = |entry: String| {
            if entries.len() < LISTED_FILES {
                entries.push(entry);
            } else {
                more += 1;
            }
        };
        if is_dir {
            add(format!("{name}/"));
            for (inner, inner_dir) in names(&workspace.join(&name)) {
                add(format!(
                    "{name}/{inner}{}",
                    if inner_dir { "/" } else { "" }
                ));
            }
        } else {
            add(name);
        }
    }
    if entries.is_empty() {
        return None;
    }
    let mut text = entries.join(", ");
    if more > 0 {
        text.push_str(&format!(", and {more} more"));
    }
    Some(text)
}

/// The small profile's instructions: what small models get wrong first
/// (answering before looking, showing a change instead of making it),
/// said once, plainly.
const LEAN_INSTRUCTIONS: &str = "You are rein, a coding agent. You work in the user's project by calling \
     tools, one at a time. Never guess what a file holds: read it, search it or run a command \
     first. To change part of a file, call edit_file with the exact old text and the new text; \
     write_file is for a new file or rewriting a whole one. Do not just show code: make the change. \
     Run the tests when there are some. When the task is done, answer in one or two sentences.\n\n";

/// The system prompt for one run.
pub fn system_prompt(f: &PromptFacts<'_>) -> String {
    if f.lean {
        return lean_system_prompt(f);
    }
    let mut s = String::with_capacity(2048);
    s.push_str(
        "You are rein, a coding agent working in the user's project through tools.\n\
         Work step by step: inspect before you change, make focused edits, run the \
         project's tests or commands to check your work, and answer concisely when done.\n\
         Tool errors come back as observations: read them and adjust instead of repeating \
         the same call. Paths are relative to the working directory unless absolute; you \
         cannot reach files outside it.\n\n",
    );
    s.push_str("# Environment\n");
    s.push_str(&format!("- Working directory: {}\n", f.workspace.display()));
    s.push_str(&format!("- Operating system: {}\n", f.os));
    s.push_str(&format!("- Date: {}\n", f.date));
    if !f.tools.is_empty() {
        s.push_str("\n# Tools\n");
        for t in f.tools {
            let first_line = t.description.lines().next().unwrap_or("");
            s.push_str(&format!("- {}: {}\n", t.name, first_line));
        }
    }
    if f.plan {
        s.push_str(
            "\n# Plan mode\nYou are in plan mode: you can read and search but not change \
             anything. Investigate, then answer with a concrete, numbered plan.\n",
        );
    }
    if let Some(agents) = f.agents_md {
        s.push_str("\n# Project instructions (AGENTS.md)\n");
        s.push_str(agents.trim_end());
        s.push('\n');
    }
    s
}

/// The small profile's system prompt: instructions, where and when, plan
/// mode and the project's instructions.
fn lean_system_prompt(f: &PromptFacts<'_>) -> String {
    let mut s = String::with_capacity(1024);
    s.push_str(LEAN_INSTRUCTIONS);
    // No absolute path: small models rebuild one from it and drop a part
    // (`/tmp/x/work` + `config.ini` became `/tmp/x/config.ini`).
    s.push_str(&format!(
        "You are in the project's folder ({}, {}); write paths relative to it, as listed.\n",
        f.os, f.date
    ));
    if let Some(files) = f.files {
        s.push_str(&format!("Files: {files}\n"));
    }
    if f.plan {
        s.push_str("Plan mode: read and search only; answer with a numbered plan.\n");
    }
    if let Some(agents) = f.agents_md {
        s.push_str("\n# Project instructions (AGENTS.md)\n");
        s.push_str(agents.trim_end());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn system_prompt_names_workspace_date_tools_and_agents_md() {
        let tools = vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file.\nMore.".into(),
            parameters: json!({}),
        }];
        let p = system_prompt(&PromptFacts {
            workspace: Path::new("/w"),
            date: "2026-12-02",
            os: "linux",
            tools: &tools,
            plan: true,
            agents_md: Some("Use tabs."),
            lean: false,
            files: None,
        });
        assert!(p.contains("Working directory: /w"));
        assert!(p.contains("Date: 2026-12-02"));
        assert!(p.contains("- read_file: Read a file.\n"));
        assert!(p.contains("plan mode"));
        assert!(p.contains("Use tabs."));
    }

    #[test]
    fn the_file_list_shows_two_levels_skips_hidden_and_odd_names_and_is_capped() {
        let dir = std::env::temp_dir().join(format!("rein-list-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/deep/deeper")).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join("README.md"), "").unwrap();
        std::fs::write(dir.join("src/main.py"), "").unwrap();
        std::fs::write(dir.join(".env"), "").unwrap();
        std::fs::write(dir.join("bad\nname"), "").unwrap();
        std::fs::write(dir.join("x".repeat(100)), "").unwrap();
        assert_eq!(
            list_files(&dir).as_deref(),
            Some("README.md, src/, src/deep/, src/main.py")
        );
        for i in 0..50 {
            std::fs::write(dir.join(format!("f{i:02}.txt")), "").unwrap();
        }
        let listed = list_files(&dir).unwrap();
        assert!(listed.ends_with(", and 14 more"), "{listed}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(list_files(&dir), None);
    }
}
