//! Matchers: which tools (or sources, triggers, agent types) a hook takes.

use crate::claude_names::claude_name;

/// Which tools a matcher takes.
pub(crate) enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

impl Matcher {
    pub(crate) fn new(text: &str) -> Result<Matcher, regex::Error> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher::All);
        }
        if t.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            return Ok(Matcher::Names(t.split('|').map(str::to_string).collect()));
        }
        regex::Regex::new(&format!("^(?:{t})$")).map(Matcher::Pattern)
    }

    /// Whether the tool `name` (rein's name, or its Claude name) matches.
    pub(crate) fn takes(&self, name: &str) -> bool {
        let names = [name, claude_name(name)];
        match self {
            Matcher::All => true,
            Matcher::Names(list) => list.iter().any(|n| names.contains(&n.as_str())),
            Matcher::Pattern(re) => names.iter().any(|n| re.is_match(n)),
        }
    }
}
