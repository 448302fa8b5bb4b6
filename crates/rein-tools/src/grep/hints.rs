//! What the small profile's grep says beyond the matches.
//!
//! Measured on the public suite with the 1.5B model: it searched the
//! contents for `py$` to count Python files, `DATABASE_URL=.*` for a
//! variable named `ORDERS_DB_URL`, and `MIT license` in a project under
//! the Apache license; each found nothing and the model answered that
//! there was none. A search that finds nothing therefore says which file
//! names the pattern matches, and which lines hold the pattern's words in
//! any case ([`Job::near_misses`]). It searched `TODO` in the whole
//! project when asked about the `src` folder and answered the total: a
//! search whose matches lie in several folders counts them per folder
//! ([`per_folder`]).

use grep_matcher::Matcher;
use grep_regex::RegexMatcherBuilder;

use super::Job;
use crate::workspace;

/// Most names, and most lines, a near miss lists.
const SHOWN: usize = 10;
/// Shortest word of a pattern searched on its own, in characters.
const SHORTEST_WORD: usize = 3;
/// A pattern with more words than this is a sentence, not a search: its
/// words are not searched on their own.
const MOST_WORDS: usize = 4;

/// What a search that found nothing may have meant.
#[derive(Debug, Default)]
pub(super) struct NearMisses {
    /// Files whose path the pattern matches (at most [`SHOWN`]), and how
    /// many there are.
    names: Vec<String>,
    names_total: usize,
    /// The pattern's words, and the lines that hold one of them in any
    /// case (at most [`SHOWN`]), and how many there are.
    words: Vec<String>,
    lines: Vec<String>,
    lines_total: usize,
}

impl NearMisses {
    pub fn is_empty(&self) -> bool {
        self.names_total == 0 && self.lines_total == 0
    }

    /// The lines added after "No matches for …".
    pub fn render(&self, pattern: &str) -> String {
        let mut out = String::new();
        if self.names_total > 0 {
            out.push_str(&format!(
                "\nNo file contains `{pattern}`, but {} file name{} match{} it (grep searches \
                 what files contain; glob finds files by name):\n{}",
                self.names_total,
                plural(self.names_total),
                if self.names_total == 1 { "es" } else { "" },
                self.names.join("\n")
            ));
            out.push_str(&more(self.names_total, self.names.len()));
        }
        if self.lines_total > 0 {
            let words: Vec<String> = self.words.iter().map(|w| format!("`{w}`")).collect();
            out.push_str(&format!(
                "\nLines with {} in any case (near what was searched, not a match):\n{}",
                words.join(" or "),
                self.lines.join("\n")
            ));
            out.push_str(&more(self.lines_total, self.lines.len()));
        }
        out
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn more(total: usize, shown: usize) -> String {
    match total > shown {
        true => format!("\n[and {} more]", total - shown),
        false => String::new(),
    }
}

impl Job {
    /// The file names `pattern` matches, and the lines that hold its
    /// words in any case, for a folder search that found nothing.
    pub(super) fn near_misses(&self, pattern: &str, case_insensitive: bool) -> NearMisses {
        let mut near = NearMisses::default();
        for path in self.files() {
            let shown = workspace::display(&self.workspace, &path);
            if self.matcher.is_match(shown.as_bytes()).unwrap_or(false) {
                near.names_total += 1;
                if near.names.len() < SHOWN {
                    near.names.push(shown);
                }
            }
        }
        let words = words_of(pattern);
        let already_tried =
            case_insensitive && words.len() == 1 && words[0].eq_ignore_ascii_case(pattern);
        if words.is_empty() || words.len() > MOST_WORDS || already_tried {
            return near;
        }
        let alternatives: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
        let Ok(loose) = RegexMatcherBuilder::new()
            .case_insensitive(true)
            .line_terminator(Some(b'\n'))
            .build(&alternatives.join("|"))
        else {
            return near;
        };
        let report = self.search(&loose);
        near.lines = report.lines.into_iter().take(SHOWN).collect();
        near.lines_total = report.total;
        near.words = words;
        near
    }
}

/// The words of a regular expression: its runs of letters and digits
/// (an escape such as `\s` or `\d` is no word), of at least
/// [`SHORTEST_WORD`] characters, each once whatever its case, in order.
fn words_of(pattern: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut chars = pattern.chars();
    let mut keep = |word: &mut String| {
        let taken = std::mem::take(word);
        if taken.chars().count() >= SHORTEST_WORD
            && !words
                .iter()
                .any(|w| w.to_lowercase() == taken.to_lowercase())
        {
            words.push(taken);
        }
    };
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            word.push(c);
            continue;
        }
        keep(&mut word);
        if c == '\\' {
            chars.next();
        }
    }
    keep(&mut word);
    words
}

/// For matches that lie in more than one top folder, all of them listed:
/// how many are in each (`[6 matching lines: 1 in docs/, 5 in src/]`),
/// files at the top counted as "the top folder".
pub(super) fn per_folder(lines: &[String], total: usize) -> Option<String> {
    if total < 2 || total != lines.len() {
        return None;
    }
    let mut groups: Vec<(String, usize)> = Vec::new();
    for line in lines {
        let path = line.split_once(':').map_or(line.as_str(), |(p, _)| p);
        let folder = match path.split_once('/') {
            Some((top, _)) => format!("{top}/"),
            None => "the top folder".to_string(),
        };
        match groups.iter_mut().find(|(f, _)| *f == folder) {
            Some((_, n)) => *n += 1,
            None => groups.push((folder, 1)),
        }
    }
    if groups.len() < 2 {
        return None;
    }
    let parts: Vec<String> = groups.iter().map(|(f, n)| format!("{n} in {f}")).collect();
    Some(format!("\n[{total} matching lines: {}]", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_of_a_pattern_leave_out_escapes_short_runs_and_repeats() {
        assert_eq!(words_of("DATABASE_URL=.*"), ["DATABASE", "URL"]);
        assert_eq!(words_of(r"def\s+\w+\(\)"), ["def"]);
        assert_eq!(words_of("py$"), Vec::<String>::new());
        assert_eq!(words_of("MIT License|license"), ["MIT", "License"]);
    }

    #[test]
    fn matches_in_several_folders_are_counted_per_folder() {
        let lines: Vec<String> = [
            "docs/notes.md:1:TODO",
            "main.py:3:# TODO",
            "src/app.py:1:# TODO",
            "src/web/routes.py:2:# TODO",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            per_folder(&lines, 4).as_deref(),
            Some("\n[4 matching lines: 1 in docs/, 1 in the top folder, 2 in src/]")
        );
        // One folder, or some lines not listed: nothing to add.
        assert_eq!(per_folder(&lines[2..], 2), None);
        assert_eq!(per_folder(&lines, 300), None);
    }
}
