//! What the model is told besides the conversation: the system prompt, built
//! fresh for every run and never stored, and token estimates.

use std::path::Path;

use crate::schema::ToolSpec;

/// Largest AGENTS.md taken into the prompt, in bytes.
const AGENTS_MD_CAP: usize = 32 * 1024;

/// Facts the system prompt is built from.
#[derive(Debug, Clone)]
pub struct PromptFacts<'a> {
    pub workspace: &'a Path,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    pub os: &'a str,
    pub tools: &'a [ToolSpec],
    pub plan: bool,
    /// Contents of the workspace's AGENTS.md, if any.
    pub agents_md: Option<&'a str>,
    /// The small profile's short instructions (see [`crate::profile`]):
    /// the tools are not listed again (their specs name them).
    pub lean: bool,
}

/// Read AGENTS.md from the workspace root, capped; None when absent.
pub fn read_agents_md(workspace: &Path) -> Option<String> {
    let bytes = std::fs::read(workspace.join("AGENTS.md")).ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > AGENTS_MD_CAP {
        text.truncate(crate::text::floor_boundary(&text, AGENTS_MD_CAP));
        text.push_str("\n[AGENTS.md truncated]");
    }
    Some(text)
}

/// The small profile's instructions: what small models get wrong first
/// (answering before looking, showing a change instead of making it),
/// said once, plainly.
const LEAN_INSTRUCTIONS: &str = "You are rein, a coding agent. You work in the user's project by calling \
     tools. Never guess what a file holds: read it, search it or run a command first. To change a \
     file, call edit_file or write_file; do not just show the new code. Run the tests when there \
     are some. When the task is done, answer in one or two sentences.\n\n";

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
    s.push_str(&format!(
        "Working directory: {} ({}, {}).\n",
        f.workspace.display(),
        f.os,
        f.date
    ));
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
        });
        assert!(p.contains("Working directory: /w"));
        assert!(p.contains("Date: 2026-12-02"));
        assert!(p.contains("- read_file: Read a file.\n"));
        assert!(p.contains("plan mode"));
        assert!(p.contains("Use tabs."));
    }

    #[test]
    fn agents_md_is_read_from_the_workspace_root_and_capped() {
        let dir = std::env::temp_dir().join(format!("rein-agents-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(read_agents_md(&dir).is_none());
        std::fs::write(dir.join("AGENTS.md"), "é".repeat(AGENTS_MD_CAP)).unwrap();
        let text = read_agents_md(&dir).unwrap();
        assert!(text.ends_with("[AGENTS.md truncated]"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
