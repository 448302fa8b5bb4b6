//! Skills in the Agent Skills format: a folder with a `SKILL.md` (YAML
//! frontmatter `name`, the folder's own name, and `description`; optional
//! `license`, `metadata`, `allowed-tools`) and optional `scripts/`,
//! `references/`, `assets/`.
//!
//! Found in `.agents/skills/` of every folder from the workspace up to the
//! project's root (nearest first), the workspace's `.rein/skills/` and
//! `.claude/skills/`, then the user's `$REIN_HOME/skills/`; the first skill
//! of a name wins. Only names and descriptions go into the prompt, within a
//! budget; what does not fit is listed by name, and a note says so. The
//! model loads a skill's instructions with the `skill` tool, and reads its
//! files or runs its scripts through the normal tools and the normal gate;
//! the user attaches one to a message with `$name`. A project's skills in
//! a folder that is not trusted are offered, but a command that names one
//! of their folders is asked about in every mode ([`UntrustedScripts`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use rein_core::frontmatter;
use rein_core::{Tool, ToolAccess, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};

/// Largest SKILL.md read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Longest description kept (the format's own limit).
const MAX_DESCRIPTION: usize = 1024;
/// Most file names listed with a loaded skill.
const LISTED_FILES: usize = 50;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub allowed_tools: Vec<String>,
    /// Its folder.
    pub dir: PathBuf,
    /// The instructions after the frontmatter.
    pub body: String,
    /// The user's own, or a trusted project's: its scripts are asked about
    /// like any command, not in every mode.
    pub trusted: bool,
}

/// The skills of a run, and a line for each SKILL.md that was skipped.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    pub skills: Vec<Skill>,
    pub warnings: Vec<String>,
}

impl Skills {
    /// The skills of `workspace` (trusted or not) and of the user
    /// (`user_dir`, `$REIN_HOME/skills`).
    pub fn discover(workspace: &Path, user_dir: Option<&Path>, trusted: bool) -> Skills {
        let mut found = Skills::default();
        let mut chain = rein_core::instructions::chain(workspace);
        chain.reverse();
        let project = chain
            .iter()
            .map(|d| d.join(".agents/skills"))
            .chain([".rein/skills", ".claude/skills"].map(|d| workspace.join(d)));
        for dir in project {
            found.read_dir(&dir, trusted);
        }
        if let Some(dir) = user_dir {
            found.read_dir(dir, true);
        }
        found
    }

    /// The skills of one folder (a plugin's), trusted, which its caller
    /// names: its skill folders, or the folder itself when it holds a
    /// `SKILL.md`.
    pub fn read_folder(dir: &Path) -> Skills {
        let mut found = Skills::default();
        let file = dir.join("SKILL.md");
        match file.symlink_metadata() {
            Ok(_) => found.read_one(dir, &file, true),
            Err(_) => found.read_dir(dir, true),
        }
        found
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    fn read_dir(&mut self, dir: &Path, trusted: bool) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut folders: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        folders.sort();
        for folder in folders {
            let file = folder.join("SKILL.md");
            if file.symlink_metadata().is_err() {
                continue;
            }
            self.read_one(&folder, &file, trusted);
        }
    }

    fn read_one(&mut self, folder: &Path, file: &Path, trusted: bool) {
        match read_skill(folder, file, trusted) {
            Ok(skill) if self.get(&skill.name).is_none() => self.skills.push(skill),
            Ok(_) => {}
            Err(why) => self
                .warnings
                .push(format!("{}: {why}; skipped", file.display())),
        }
    }

    /// The prompt's list of skills: names and descriptions within `budget`
    /// bytes, the rest by name; and a note when some did not fit.
    pub fn prompt_section(&self, budget: usize) -> (String, Option<String>) {
        if self.skills.is_empty() {
            return (String::new(), None);
        }
        let mut text = String::from(
            "# Skills\nInstructions for particular tasks. When a task matches one, load it \
             with the skill tool first (`{\"name\": ...}`) and follow it.\n",
        );
        let mut left_out = Vec::new();
        for skill in &self.skills {
            let line = format!(
                "- {}: {}\n",
                skill.name,
                rein_core::text::one_line(&skill.description, usize::MAX)
            );
            if text.len() + line.len() <= budget {
                text.push_str(&line);
            } else {
                left_out.push(skill.name.as_str());
            }
        }
        if left_out.is_empty() {
            return (text, None);
        }
        text.push_str(&format!(
            "- Also available (no room for their descriptions): {}\n",
            left_out.join(", ")
        ));
        let note = format!(
            "{} of {} skills are listed by name only (their descriptions did not fit the \
             prompt's budget of {budget} bytes): {}",
            left_out.len(),
            self.skills.len(),
            left_out.join(", ")
        );
        (text, Some(note))
    }

    /// `message` with the skills it names as `$name` attached after it
    /// (what a mention is: [`rein_core::skill_mentions`]), and a note for
    /// each name that is no skill.
    pub fn attach_mentions(&self, message: &str) -> (String, Vec<String>) {
        let mut out = message.to_string();
        let mut notes = Vec::new();
        for name in rein_core::skill_mentions::mentions(message) {
            match self.get(name) {
                Some(skill) => {
                    out.push_str(&rein_core::skill_mentions::attached_header(name));
                    out.push_str(&loaded(skill));
                }
                None => notes.push(format!(
                    "no skill named `{name}`, so `${name}` attached nothing; {}",
                    self.known()
                )),
            }
        }
        (out, notes)
    }

    /// `the skills are: a, b` (or `none`), for a name that is no skill.
    fn known(&self) -> String {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        format!(
            "the skills are: {}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )
    }
}

/// Whether `name` is a skill name: lowercase letters, digits and single
/// hyphens inside, at most 64 characters.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// A skill's name: its folder's, which a `name` field must repeat when it
/// is a skill name. As Claude Code reads them, a missing `name`, or one
/// written for display (`Writing Rules`), leaves the folder's name; a
/// valid name that differs from the folder's is refused.
fn skill_name(field: Option<&frontmatter::Field>, folder_name: &str) -> Result<String, String> {
    if !valid_name(folder_name) {
        return Err(format!(
            "the folder's name `{folder_name}` is not lowercase letters, digits and hyphens \
             (at most 64)"
        ));
    }
    let Some(field) = field else {
        return Ok(folder_name.to_string());
    };
    let name = field.value.text();
    if valid_name(&name) && name != folder_name {
        return Err(format!(
            "line {}: the name `{name}` is not the folder's (`{folder_name}`)",
            field.line
        ));
    }
    Ok(folder_name.to_string())
}

/// Read and check one SKILL.md; the error names the line when it can.
fn read_skill(folder: &Path, file: &Path, trusted: bool) -> Result<Skill, String> {
    let text = frontmatter::read_file(file, MAX_SKILL_BYTES).map_err(|e| e.to_string())?;
    let (fields, body) = frontmatter::split(&text).map_err(|e| e.to_string())?;
    if fields.is_empty() {
        return Err("line 1: no frontmatter (`---`, `name:`, `description:`, `---`)".into());
    }
    let field = |key: &str| fields.iter().find(|f| f.key == key);
    let folder_name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name_text = skill_name(field("name"), folder_name)?;
    let description = field("description")
        .map(|f| f.value.text())
        .filter(|d| !d.trim().is_empty())
        .ok_or("no `description` in the frontmatter")?;
    let description: String = description.chars().take(MAX_DESCRIPTION).collect();
    Ok(Skill {
        name: name_text,
        description,
        license: field("license").map(|f| f.value.text()),
        allowed_tools: field("allowed-tools")
            .map(|f| f.value.list())
            .unwrap_or_default(),
        dir: folder.to_path_buf(),
        body: body.trim().to_string(),
        trusted,
    })
}

/// What the model gets when a skill is loaded: where it is, its
/// instructions, the files it comes with.
fn loaded(skill: &Skill) -> String {
    let mut files = Vec::new();
    for sub in ["scripts", "references", "assets"] {
        let Ok(entries) = std::fs::read_dir(skill.dir.join(sub)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.chars().any(char::is_control))
            .map(|n| format!("{sub}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    files.truncate(LISTED_FILES);
    let mut out = format!(
        "Skill `{}` (folder: {})\n\n{}",
        skill.name,
        skill.dir.display(),
        skill.body
    );
    if !files.is_empty() {
        out.push_str(&format!(
            "\n\nFiles of the skill (paths inside its folder; read them with read_file, run \
             scripts with bash): {}",
            files.join(", ")
        ));
    }
    out
}

/// The `skill` tool: a skill's instructions by name.
pub struct SkillTool {
    skills: Arc<Skills>,
}

impl SkillTool {
    pub fn new(skills: Arc<Skills>) -> SkillTool {
        SkillTool { skills }
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "skill".into(),
            description: "Load a skill's instructions (and the list of its files) by name, \
                          from the skills listed in the system prompt."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The skill's name"}},
                "required": ["name"],
                "additionalProperties": false,
            }),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = args["name"].as_str().unwrap_or("").trim();
        match self.skills.get(name) {
            Some(skill) => Ok(ToolOutput::ok(loaded(skill))),
            None => Err(ToolError::new(format!(
                "no skill named `{name}`; {}",
                self.skills.known()
            ))),
        }
    }
}

mod untrusted;
pub use untrusted::UntrustedScripts;

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        let dir = root.join(folder);
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
        std::fs::write(dir.join("scripts/run.py"), "print('hi')\n").unwrap();
    }

    #[test]
    fn skills_are_found_in_every_layout_nearest_first_and_bad_ones_named() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        let ws = root.path().join("app");
        std::fs::create_dir_all(&ws).unwrap();
        let home = root.path().join("home-skills");
        skill(
            &root.path().join(".agents/skills"),
            "pdf",
            "---\nname: pdf\ndescription: root pdf\n---\nRoot.",
        );
        skill(
            &ws.join(".agents/skills"),
            "pdf",
            "---\nname: pdf\ndescription: near pdf\n---\nNear.",
        );
        skill(
            &ws.join(".claude/skills"),
            "review",
            "---\nname: review\ndescription: >\n  Review code\n  carefully.\nallowed-tools: [Read, Grep]\n---\nSteps.",
        );
        skill(
            &home,
            "notes",
            "---\nname: notes\ndescription: mine\n---\nMine.",
        );
        skill(
            &ws.join(".rein/skills"),
            "wrong-name",
            "---\nname: other\ndescription: x\n---\n",
        );
        skill(
            &ws.join(".rein/skills"),
            "no-desc",
            "---\nname: no-desc\n---\n",
        );
        skill(
            &ws.join(".rein/skills"),
            "bad-yaml",
            "---\nname: bad-yaml\n  stray\n---\n",
        );
        skill(
            &ws.join(".rein/skills"),
            "Upper",
            "---\nname: Upper\ndescription: x\n---\n",
        );
        let found = Skills::discover(&ws, Some(&home), false);
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pdf", "review", "notes"]);
        assert_eq!(found.get("pdf").unwrap().body, "Near.");
        assert_eq!(
            found.get("review").unwrap().description,
            "Review code carefully."
        );
        assert_eq!(found.get("review").unwrap().allowed_tools, ["Read", "Grep"]);
        assert!(!found.get("pdf").unwrap().trusted && found.get("notes").unwrap().trusted);
        assert_eq!(found.warnings.len(), 4, "{:?}", found.warnings);
        let all = found.warnings.join("\n");
        assert!(
            all.contains("wrong-name/SKILL.md: line 2: the name `other` is not the folder's"),
            "{all}"
        );
        assert!(all.contains("no-desc/SKILL.md: no `description`"), "{all}");
        assert!(all.contains("bad-yaml/SKILL.md: line 3:"), "{all}");
        assert!(
            all.contains("Upper/SKILL.md: the folder's name `Upper` is not lowercase"),
            "{all}"
        );
    }

    /// As Claude Code reads them (its own published plugins rely on it): a
    /// `name` written for display, or none, leaves the folder's name.
    #[test]
    fn a_display_name_or_no_name_leaves_the_folders_name() {
        let dir = tempfile::tempdir().unwrap();
        skill(
            dir.path(),
            "writing-rules",
            "---\nname: Writing Hookify Rules\ndescription: Rules.\n---\nWrite rules.\n",
        );
        skill(
            dir.path(),
            "unnamed",
            "---\ndescription: No name.\n---\nBody.\n",
        );
        let found = Skills::read_folder(dir.path());
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["unnamed", "writing-rules"], "{:?}", found.warnings);
        assert!(found.warnings.is_empty(), "{:?}", found.warnings);
    }

    #[test]
    fn descriptions_over_the_budget_are_listed_by_name_with_a_note() {
        let mut skills = Skills::default();
        for i in 0..5 {
            skills.skills.push(Skill {
                name: format!("skill-{i}"),
                description: "d".repeat(100),
                license: None,
                allowed_tools: Vec::new(),
                dir: PathBuf::from("/s"),
                body: String::new(),
                trusted: true,
            });
        }
        let (text, note) = skills.prompt_section(400);
        assert!(text.contains("- skill-0: ddd"), "{text}");
        assert!(
            text.contains(
                "Also available (no room for their descriptions): skill-2, skill-3, skill-4"
            ),
            "{text}"
        );
        assert!(
            note.unwrap()
                .starts_with("3 of 5 skills are listed by name only")
        );
        let (_, note) = skills.prompt_section(100_000);
        assert!(note.is_none());
    }

    #[tokio::test]
    async fn the_tool_loads_a_skill_and_mentions_attach_one() {
        let root = tempfile::tempdir().unwrap();
        skill(
            &root.path().join(".rein/skills"),
            "pdf",
            "---\nname: pdf\ndescription: PDFs\n---\nUse scripts/run.py.",
        );
        let skills = Arc::new(Skills::discover(root.path(), None, true));
        let tool = SkillTool::new(skills.clone());
        let ctx = ToolContext {
            workspace: root.path().to_path_buf(),
            session_id: "s".into(),
            call_id: "c".into(),
            cancel: rein_core::CancellationToken::new(),
            session: rein_core::SessionHandle::new(
                Arc::new(rein_core::InMemorySessionStore::new()),
                "s",
            ),
            sandbox: rein_core::SandboxPolicy::default(),
            read_roots: Vec::new(),
            events: None,
        };
        let out = tool
            .call(json!({"name": "pdf"}), ctx.clone())
            .await
            .unwrap();
        assert!(
            out.content.contains("Use scripts/run.py."),
            "{}",
            out.content
        );
        assert!(out.content.contains("scripts/run.py"), "{}", out.content);
        let err = tool.call(json!({"name": "nope"}), ctx).await.unwrap_err();
        assert!(err.to_string().contains("the skills are: pdf"), "{err}");
        let (message, notes) = skills.attach_mentions("Fill the form with $pdf, please.");
        assert!(
            message.starts_with(
                "Fill the form with $pdf, please.\n\n[skill `pdf`, attached by the user]"
            ),
            "{message}"
        );
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            skills.attach_mentions("costs $5, see $HOME and `$x`"),
            ("costs $5, see $HOME and `$x`".to_string(), Vec::new())
        );
    }

    #[test]
    fn an_unknown_skill_mention_is_named_in_a_note_with_the_skills_there_are() {
        let root = tempfile::tempdir().unwrap();
        skill(
            &root.path().join(".rein/skills"),
            "pdf",
            "---\nname: pdf\ndescription: PDFs\n---\nBody.",
        );
        let skills = Skills::discover(root.path(), None, true);
        let (message, notes) = skills.attach_mentions("use $pfd and $pdf");
        assert!(message.contains("[skill `pdf`, attached by the user]"));
        assert_eq!(
            notes,
            ["no skill named `pfd`, so `$pfd` attached nothing; the skills are: pdf"]
        );
        let (_, notes) = Skills::default().attach_mentions("use $greeter");
        assert_eq!(
            notes,
            ["no skill named `greeter`, so `$greeter` attached nothing; the skills are: none"]
        );
    }
}
