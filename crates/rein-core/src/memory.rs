//! Long-term memory: short notes the agent keeps across sessions (how this
//! project runs its tests, a user's preference), found again by search and
//! the most used of them shown in the system prompt.
//!
//! The [`LongTermMemory`] trait is what the memory tools and the front ends
//! use; rein-store keeps entries in SQLite. The pure helpers here (input
//! cleaning, ids, the prompt section) are shared by every implementation.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::text::floor_boundary;

/// One remembered note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// `m` and a number, e.g. `m12`; never reused after a removal.
    pub id: String,
    pub title: String,
    pub content: String,
    /// Lowercase words, no duplicates, in the order given.
    pub tags: Vec<String>,
    /// The project (workspace path) it belongs to; `None` for a note that
    /// holds in every project.
    pub project: Option<String>,
    /// How often it was found by a search or read by id.
    pub uses: u64,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds of the last change to title, content or tags.
    pub updated_at: i64,
}

/// What a new entry starts with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewMemory {
    pub title: String,
    pub content: String,
    pub tags: Vec<String>,
    /// `None` keeps it for every project.
    pub project: Option<String>,
}

/// A change to an entry; fields left `None` stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryChange {
    pub title: Option<String>,
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
}

/// What [`LongTermMemory::add`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// A new entry was saved.
    New(MemoryEntry),
    /// An entry with the same normalised content was already visible in
    /// that project; it is returned unchanged and nothing was saved.
    Duplicate(MemoryEntry),
}

impl Added {
    pub fn entry(&self) -> &MemoryEntry {
        match self {
            Added::New(e) | Added::Duplicate(e) => e,
        }
    }

    pub fn into_entry(self) -> MemoryEntry {
        match self {
            Added::New(e) | Added::Duplicate(e) => e,
        }
    }

    pub fn is_duplicate(&self) -> bool {
        matches!(self, Added::Duplicate(_))
    }
}

/// A memory failure; each displays as one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// Another process holds the database; the caller should go on without
    /// memory rather than fail.
    #[error("the memory database is locked: {}", flat(.0))]
    Locked(String),
    /// No entry with this id (in the scope asked for).
    #[error("memory {} not found", flat(.0))]
    NotFound(String),
    /// The request itself is wrong (empty title, bad id, too long, ...).
    #[error("{}", flat(.0))]
    Invalid(String),
    #[error("memory store error: {}", flat(.0))]
    Other(String),
}

fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Durable long-term memory. `scope` arguments name a project: `Some(p)`
/// means the entries of `p` plus the global ones, `None` means every entry.
#[async_trait]
pub trait LongTermMemory: Send + Sync {
    /// Save a note, unless one with the same normalised content
    /// ([`normalise_content`]) is already visible in its project: then that
    /// one is returned as [`Added::Duplicate`].
    async fn add(&self, new: NewMemory) -> Result<Added, MemoryError>;

    /// Change an entry in `scope`; returns it as it now is.
    async fn update(
        &self,
        id: &str,
        change: MemoryChange,
        scope: Option<&str>,
    ) -> Result<MemoryEntry, MemoryError>;

    /// Delete an entry in `scope`; returns what was deleted.
    async fn remove(&self, id: &str, scope: Option<&str>) -> Result<MemoryEntry, MemoryError>;

    /// One entry by id; counts as a use.
    async fn get(&self, id: &str) -> Result<MemoryEntry, MemoryError>;

    /// Entries matching the words of `query`, best first; each hit counts
    /// as a use. Any text is a valid query: search syntax is not exposed.
    async fn search(
        &self,
        query: &str,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError>;

    /// Entries most recently changed first.
    async fn list(
        &self,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError>;

    /// The entries [`prompt_section`] shows within `byte_budget`: most used
    /// first, then most recently changed. Not counted as uses (the prompt
    /// would otherwise keep its own entries on top forever).
    async fn top_for_prompt(
        &self,
        scope: Option<&str>,
        byte_budget: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError>;
}

/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 120;
/// Longest content, in bytes: a memory is a note, not a document.
pub const MAX_CONTENT_BYTES: usize = 4000;
/// Most tags on one entry.
pub const MAX_TAGS: usize = 12;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 40;

/// The form content is compared in for deduplication: trimmed, runs of
/// whitespace made one space, lowercase.
pub fn normalise_content(content: &str) -> String {
    flat(content).to_lowercase()
}

/// A title checked and trimmed.
pub fn clean_title(title: &str) -> Result<String, MemoryError> {
    let title = flat(title);
    if title.is_empty() {
        return Err(MemoryError::Invalid("a memory needs a title".into()));
    }
    let chars = title.chars().count();
    if chars > MAX_TITLE_CHARS {
        return Err(MemoryError::Invalid(format!(
            "the title is {chars} characters long; keep it under {MAX_TITLE_CHARS}"
        )));
    }
    Ok(title)
}

/// Content checked and trimmed (inner line breaks are kept).
pub fn clean_content(content: &str) -> Result<String, MemoryError> {
    let content = content.trim();
    if content.is_empty() {
        return Err(MemoryError::Invalid("a memory needs some content".into()));
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(MemoryError::Invalid(format!(
            "the content is {} bytes long; a memory holds at most {MAX_CONTENT_BYTES}: \
             keep only what is worth remembering",
            content.len()
        )));
    }
    Ok(content.to_string())
}

/// Tags trimmed, lowercased, inner spaces made dashes, empty ones dropped
/// and duplicates removed.
pub fn clean_tags(tags: &[String]) -> Result<Vec<String>, MemoryError> {
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        let tag = flat(tag).to_lowercase().replace(' ', "-");
        if tag.is_empty() || out.contains(&tag) {
            continue;
        }
        if tag.chars().count() > MAX_TAG_CHARS {
            return Err(MemoryError::Invalid(format!(
                "the tag `{tag}` is longer than {MAX_TAG_CHARS} characters"
            )));
        }
        out.push(tag);
    }
    if out.len() > MAX_TAGS {
        return Err(MemoryError::Invalid(format!(
            "{} tags given; a memory takes at most {MAX_TAGS}",
            out.len()
        )));
    }
    Ok(out)
}

impl NewMemory {
    /// The entry as it will be stored, or why it cannot be.
    pub fn cleaned(self) -> Result<NewMemory, MemoryError> {
        Ok(NewMemory {
            title: clean_title(&self.title)?,
            content: clean_content(&self.content)?,
            tags: clean_tags(&self.tags)?,
            project: self.project.filter(|p| !p.is_empty()),
        })
    }
}

impl MemoryChange {
    /// The change as it will be applied, or why it cannot be; a change of
    /// nothing is refused.
    pub fn cleaned(self) -> Result<MemoryChange, MemoryError> {
        if self.title.is_none() && self.content.is_none() && self.tags.is_none() {
            return Err(MemoryError::Invalid(
                "nothing to update: give a new title, content or tags".into(),
            ));
        }
        Ok(MemoryChange {
            title: self.title.as_deref().map(clean_title).transpose()?,
            content: self.content.as_deref().map(clean_content).transpose()?,
            tags: self.tags.as_deref().map(clean_tags).transpose()?,
        })
    }
}

/// The number in an id: `m12`, `M12` and `12` all give 12.
pub fn parse_id(id: &str) -> Result<u64, MemoryError> {
    let trimmed = id.trim();
    let digits = trimmed.strip_prefix(['m', 'M']).unwrap_or(trimmed);
    match digits.parse::<u64>() {
        Ok(n) if n > 0 && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(MemoryError::Invalid(format!(
            "`{}` is not a memory id (they look like m12)",
            flat(id)
        ))),
    }
}

/// The id shown for entry number `n`.
pub fn format_id(n: u64) -> String {
    format!("m{n}")
}

/// Whether an entry of `project` is visible in `scope` (see
/// [`LongTermMemory`]).
pub fn in_scope(project: Option<&str>, scope: Option<&str>) -> bool {
    match (project, scope) {
        (None, _) | (_, None) => true,
        (Some(p), Some(s)) => p == s,
    }
}

/// The heading of the prompt section.
pub const PROMPT_HEADING: &str = "# Memory\n";

/// A line cut to fit the budget must keep at least this many bytes, or it is
/// left out: a stub of a note says nothing.
const MIN_CUT_LINE: usize = 32;

/// How an entry reads in the prompt: one line, `- [m7] title: content`.
pub fn prompt_line(entry: &MemoryEntry) -> String {
    format!(
        "- [{}] {}: {}\n",
        entry.id,
        flat(&entry.title),
        flat(&entry.content)
    )
}

/// The "# Memory" section of the system prompt: one line per entry, in the
/// order given, never longer than `byte_budget` bytes. The last line that
/// does not fit whole is cut (ending in `…`) when enough room is left, and
/// the rest are dropped. Empty when nothing fits.
pub fn prompt_section(entries: &[MemoryEntry], byte_budget: usize) -> String {
    render(entries, byte_budget).0
}

/// How many of `entries` (from the first) [`prompt_section`] shows, whole
/// or cut.
pub fn prompt_fit(entries: &[MemoryEntry], byte_budget: usize) -> usize {
    render(entries, byte_budget).1
}

fn render(entries: &[MemoryEntry], byte_budget: usize) -> (String, usize) {
    let mut out = String::from(PROMPT_HEADING);
    let mut shown = 0;
    for entry in entries {
        let room = byte_budget.saturating_sub(out.len());
        let line = prompt_line(entry);
        if line.len() <= room {
            out.push_str(&line);
            shown += 1;
            continue;
        }
        const CUT_MARK: &str = "…\n";
        if room >= MIN_CUT_LINE {
            let keep = floor_boundary(&line, room - CUT_MARK.len());
            out.push_str(line[..keep].trim_end());
            out.push_str(CUT_MARK);
            shown += 1;
        }
        break;
    }
    if shown == 0 || out.len() > byte_budget {
        return (String::new(), 0);
    }
    (out, shown)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn entry(n: u64, title: &str, content: &str) -> MemoryEntry {
        MemoryEntry {
            id: format_id(n),
            title: title.into(),
            content: content.into(),
            tags: Vec::new(),
            project: None,
            uses: 0,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn normalised_content_ignores_spacing_and_case() {
        assert_eq!(
            normalise_content("  Run  the\tTests\n with   CARGO  "),
            "run the tests with cargo"
        );
        assert_eq!(
            normalise_content("run the tests with cargo"),
            normalise_content("RUN THE\n\nTESTS WITH CARGO")
        );
    }

    #[test]
    fn ids_parse_with_or_without_the_m() {
        assert_eq!(parse_id("m12").unwrap(), 12);
        assert_eq!(parse_id("M7").unwrap(), 7);
        assert_eq!(parse_id(" 3 ").unwrap(), 3);
        for bad in ["", "m", "m0", "x1", "m-1", "m+1", "m1.5", "12abc", "m 1"] {
            assert!(
                matches!(parse_id(bad), Err(MemoryError::Invalid(m)) if m.contains("m12")),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn new_entries_are_cleaned_or_refused_with_a_reason() {
        let cleaned = NewMemory {
            title: "  Tests \n".into(),
            content: "\n  cargo test  \n".into(),
            tags: vec![
                " Rust ".into(),
                "rust".into(),
                "".into(),
                "Fast Tests".into(),
            ],
            project: Some(String::new()),
        }
        .cleaned()
        .unwrap();
        assert_eq!(cleaned.title, "Tests");
        assert_eq!(cleaned.content, "cargo test");
        assert_eq!(cleaned.tags, ["rust", "fast-tests"]);
        assert_eq!(cleaned.project, None);

        let refused = |new: NewMemory| new.cleaned().unwrap_err().to_string();
        let ok = NewMemory {
            title: "t".into(),
            content: "c".into(),
            ..NewMemory::default()
        };
        assert!(
            refused(NewMemory {
                title: " ".into(),
                ..ok.clone()
            })
            .contains("needs a title")
        );
        assert!(
            refused(NewMemory {
                content: "\n".into(),
                ..ok.clone()
            })
            .contains("content")
        );
        assert!(
            refused(NewMemory {
                content: "x".repeat(MAX_CONTENT_BYTES + 1),
                ..ok.clone()
            })
            .contains("at most 4000")
        );
        assert!(
            refused(NewMemory {
                title: "t".repeat(MAX_TITLE_CHARS + 1),
                ..ok.clone()
            })
            .contains("under 120")
        );
        let many: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
        assert!(refused(NewMemory { tags: many, ..ok }).contains("at most 12"));
    }

    #[test]
    fn an_empty_change_is_refused() {
        let e = MemoryChange::default().cleaned().unwrap_err();
        assert!(e.to_string().contains("nothing to update"), "{e}");
    }

    #[test]
    fn errors_display_on_one_line() {
        let e = MemoryError::Other("disk\nfull\n  again".into());
        assert_eq!(e.to_string(), "memory store error: disk full again");
        assert_eq!(
            MemoryError::NotFound("m9".into()).to_string(),
            "memory m9 not found"
        );
    }

    #[test]
    fn scope_shows_the_project_and_global_entries() {
        assert!(in_scope(None, Some("/a")));
        assert!(in_scope(Some("/a"), Some("/a")));
        assert!(!in_scope(Some("/b"), Some("/a")));
        assert!(in_scope(Some("/b"), None));
    }

    #[test]
    fn the_section_lists_entries_in_order_on_one_line_each() {
        let entries = [
            entry(7, "Tests", "run  `cargo test`\nfrom the root"),
            entry(2, "Style", "no unwrap"),
        ];
        assert_eq!(
            prompt_section(&entries, 1024),
            "# Memory\n- [m7] Tests: run `cargo test` from the root\n- [m2] Style: no unwrap\n"
        );
        assert_eq!(prompt_fit(&entries, 1024), 2);
    }

    #[test]
    fn nothing_to_show_is_an_empty_section() {
        assert_eq!(prompt_section(&[], 1024), "");
        assert_eq!(prompt_section(&[entry(1, "t", "c")], 0), "");
        assert_eq!(
            prompt_section(&[entry(1, "t", "c")], PROMPT_HEADING.len()),
            ""
        );
    }

    #[test]
    fn the_line_that_does_not_fit_is_cut_and_the_rest_dropped() {
        let entries = [
            entry(1, "first", "short"),
            entry(2, "second", &"long words here ".repeat(20)),
            entry(3, "third", "never shown"),
        ];
        let section = prompt_section(&entries, 100);
        assert!(section.len() <= 100, "{}", section.len());
        assert!(section.contains("[m1] first: short\n"));
        assert!(section.contains("[m2] second: long"));
        assert!(section.ends_with("…\n"), "{section:?}");
        assert!(!section.contains("m3"));
        assert_eq!(prompt_fit(&entries, 100), 2);
        // Too little room for a useful stub: the line is left out whole.
        let tight = PROMPT_HEADING.len() + prompt_line(&entries[0]).len() + 10;
        assert_eq!(prompt_fit(&entries, tight), 1);
        assert!(!prompt_section(&entries, tight).contains("m2"));
    }

    #[test]
    fn the_budget_is_never_exceeded_whatever_the_text() {
        let entries: Vec<MemoryEntry> = (1..=30)
            .map(|i| {
                entry(
                    i,
                    &format!("tïtle {i} ✓"),
                    &"ünïcödé 🦀 text, ".repeat(usize::try_from(i).unwrap() * 3),
                )
            })
            .collect();
        for budget in 0..3000 {
            let section = prompt_section(&entries, budget);
            assert!(
                section.len() <= budget,
                "budget {budget}: {}",
                section.len()
            );
            let shown = prompt_fit(&entries, budget);
            assert_eq!(section.matches("- [m").count(), shown, "budget {budget}");
            if !section.is_empty() {
                assert!(section.starts_with(PROMPT_HEADING));
                assert!(section.ends_with('\n'));
            }
        }
    }
}
