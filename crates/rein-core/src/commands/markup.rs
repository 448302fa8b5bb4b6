//! The live parts of a command's text, as Claude Code writes them:
//! `` !`cmd` `` context lines (a program's output goes in their place) and
//! `@path` file references (the file goes with the message). Only found
//! here; running and reading them is the front end's, through the gate.

/// One part of a command's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text as it is.
    Text(&'a str),
    /// `` !`cmd` ``: the command between the backquotes.
    Shell(&'a str),
}

/// `text` cut into plain text and `` !`cmd` `` context lines. A `!`
/// starts one only at the start of a word (so `Hello!` followed by code
/// is not one) and its command ends at the next backquote on the same
/// line; an empty or unclosed one is plain text.
pub fn parts(text: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut plain_from = 0;
    let mut at = 0;
    while let Some(found) = text[at..].find("!`") {
        let start = at + found;
        let cmd_from = start + 2;
        let word_start = text[..start]
            .chars()
            .last()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '[' | '"' | '\'' | ':'));
        let end = text[cmd_from..]
            .find(['`', '\n'])
            .map(|i| cmd_from + i)
            .filter(|&e| text[e..].starts_with('`'));
        match end {
            Some(end) if word_start && !text[cmd_from..end].trim().is_empty() => {
                if plain_from < start {
                    parts.push(Part::Text(&text[plain_from..start]));
                }
                parts.push(Part::Shell(text[cmd_from..end].trim()));
                plain_from = end + 1;
                at = end + 1;
            }
            _ => at = cmd_from,
        }
    }
    if plain_from < text.len() {
        parts.push(Part::Text(&text[plain_from..]));
    }
    parts
}

/// The `@path` file references of `text`, each once, in order: an `@` at
/// the start of a word, not escaped, followed by a path with no `:` (an
/// `@server:uri` names an MCP resource) and without the punctuation that
/// ends a sentence.
pub fn file_references(text: &str) -> Vec<&str> {
    let mut found: Vec<&str> = Vec::new();
    for (i, _) in text.match_indices('@') {
        let before = text[..i].chars().last();
        if before.is_some_and(|c| !(c.is_whitespace() || matches!(c, '(' | '[' | '"' | '\''))) {
            continue;
        }
        let rest = &text[i + 1..];
        let word = rest.split(char::is_whitespace).next().unwrap_or("");
        let path = word.trim_end_matches(['.', ',', ';', ')', ']', '"', '\'', '!', '?']);
        if path.is_empty() || path.contains(':') || found.contains(&path) {
            continue;
        }
        found.push(path);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_lines_are_cut_out_of_the_text_and_lookalikes_stay_text() {
        assert_eq!(
            parts("Status: !`git status --short`\nBranch:!`git branch` done"),
            [
                Part::Text("Status: "),
                Part::Shell("git status --short"),
                Part::Text("\nBranch:"),
                Part::Shell("git branch"),
                Part::Text(" done"),
            ]
        );
        // Not at a word's start, empty, or never closed on its line.
        for text in ["Hello!`x`", "empty !`` here", "open !`ls\n`"] {
            assert_eq!(parts(text), [Part::Text(text)], "{text}");
        }
    }

    #[test]
    fn file_references_are_words_starting_with_at_and_resources_are_not_files() {
        assert_eq!(
            file_references(
                "Review @src/a.rs, then (@docs/b.md). Mail a@b.com; see @fs:x and @src/a.rs"
            ),
            ["src/a.rs", "docs/b.md"]
        );
        assert!(file_references("nothing @ here").is_empty());
    }
}
