//! Permission rules: `Tool` or `Tool(pattern)`, parsed, printed and
//! matched against a call's subjects.

use std::fmt;
use std::str::FromStr;

use super::SubjectKind;
use crate::glob::{GlobKind, glob_escape, glob_match};

/// A rule: `Tool` or `Tool(pattern)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rule {
    pub tool: String,
    pub pattern: Option<String>,
}

impl Rule {
    pub fn new(tool: impl Into<String>, pattern: Option<String>) -> Rule {
        Rule {
            tool: tool.into(),
            pattern,
        }
    }

    /// The most precise rule for one subject: it matches that subject only.
    pub fn exact(tool: &str, subject: &str) -> Rule {
        Rule::new(tool, Some(glob_escape(subject)))
    }

    /// The rule's tool part names `tool`: the same name, `*`, or a prefix
    /// ending in `*` (`mcp__github__*`: every tool of that MCP server).
    pub(super) fn matches_tool(&self, tool: &str) -> bool {
        match self.tool.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => self.tool == tool,
        }
    }

    pub(super) fn matches(&self, tool: &str, subject: &str, kind: SubjectKind) -> bool {
        if !self.matches_tool(tool) {
            return false;
        }
        match &self.pattern {
            None => true,
            Some(p) => {
                let kind = match kind {
                    SubjectKind::Command => GlobKind::Command,
                    SubjectKind::Path => GlobKind::Path,
                };
                glob_match(p, subject, kind)
            }
        }
    }
}

/// A rule compares equal to its text as written in a rules file.
impl PartialEq<&str> for Rule {
    fn eq(&self, other: &&str) -> bool {
        other.parse::<Rule>().is_ok_and(|r| r == *self)
    }
}

/// Written as its text (`bash(cargo test)`), as rules files and the JSON
/// output show it.
impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rule, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            Some(p) => write!(f, "{}({p})", self.tool),
            None => f.write_str(&self.tool),
        }
    }
}

/// A rule that does not parse: the text, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad permission rule `{given}`: {problem}")]
pub struct ParseRuleError {
    /// The rule as it was written.
    pub given: String,
    pub problem: RuleProblem,
}

/// What is wrong with a rule that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RuleProblem {
    #[error("expected `Tool(pattern)` with a closing `)`")]
    Unclosed,
    #[error("the pattern inside `( )` is empty; write just the tool name to match every call")]
    EmptyPattern,
    #[error("missing tool name")]
    NoTool,
    #[error("a tool name has only letters, digits, `_`, `-`, `.` and `:`, and may end in `*`")]
    BadToolName,
}

impl FromStr for Rule {
    type Err = ParseRuleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let bad = |problem: RuleProblem| ParseRuleError {
            given: s.to_string(),
            problem,
        };
        let (tool, pattern) = match text.find('(') {
            None => (text, None),
            Some(open) => {
                let Some(inner) = text[open + 1..].strip_suffix(')') else {
                    return Err(bad(RuleProblem::Unclosed));
                };
                if inner.trim().is_empty() {
                    return Err(bad(RuleProblem::EmptyPattern));
                }
                (&text[..open], Some(inner.to_string()))
            }
        };
        if tool.is_empty() {
            return Err(bad(RuleProblem::NoTool));
        }
        // A name, `*`, or a name's start followed by `*` (`mcp__github__*`).
        let name = tool.strip_suffix('*').unwrap_or(tool);
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        {
            return Err(bad(RuleProblem::BadToolName));
        }
        Ok(Rule::new(tool, pattern))
    }
}

/// Allow, ask and deny lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
}

impl Rules {
    /// Append another set (a later layer of configuration).
    pub fn extend(&mut self, other: Rules) {
        self.allow.extend(other.allow);
        self.ask.extend(other.ask);
        self.deny.extend(other.deny);
    }
}
