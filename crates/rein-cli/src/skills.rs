//! The skills of a run (see [`rein_tools::skills`]): found in the project
//! and in `$REIN_HOME/skills/`, listed in the prompt within a budget.

use std::path::Path;
use std::sync::Arc;

use rein_tools::skills::Skills;

use crate::config::Config;

/// Context window assumed when the provider does not say.
const DEFAULT_WINDOW: u64 = 128_000;

/// The skills a run in `workspace` offers, then the enabled plugins'; a
/// project's are trusted as the folder is.
pub fn for_run(cfg: &Config, workspace: &Path) -> Arc<Skills> {
    let mut found = Skills::discover(workspace, Some(&cfg.home.join("skills")), cfg.trusted);
    crate::plugin::load::add_skills(&mut found, &cfg.home);
    Arc::new(found)
}

/// The prompt's list of skills, within a hundredth of the context window
/// (about four bytes a token; at least 2,000 bytes), and the note when
/// some are listed by name only.
pub fn prompt_section(skills: &Skills, window: Option<u64>) -> (String, Option<String>) {
    let budget = (window.unwrap_or(DEFAULT_WINDOW) * 4 / 100).max(2_000) as usize;
    skills.prompt_section(budget)
}
