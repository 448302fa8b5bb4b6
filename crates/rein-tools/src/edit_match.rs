//! Finding `old_string` in a file for `edit_file`, from strict to lenient,
//! and building the replaced text.

use rein_core::text::preview;
use similar::TextDiff;

mod gap;

/// How leniently the text was matched, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Byte for byte.
    Exact,
    /// After converting old_string's line endings (CRLF/LF) to the file's.
    LineEndings,
    /// Line by line, ignoring whitespace at the end of each line.
    TrimmedLines,
    /// Line by line, ignoring whitespace at both ends of each line; the
    /// replacement is re-indented to where the match was found.
    Indentation,
    /// Line by line (trailing whitespace ignored) in one region of the
    /// file, with a few lines of it old_string left out kept as they were.
    KeptLines,
}

impl Level {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Level::Exact => "exact",
            Level::LineEndings => "after normalising line endings (CRLF/LF)",
            Level::TrimmedLines => "whitespace-trimmed (trailing whitespace on lines ignored)",
            Level::Indentation => "indentation-insensitive (new_string was re-indented to match)",
            Level::KeptLines => {
                "with the lines of the file it left out (between its own) kept as they were"
            }
        }
    }
}

/// The edited text.
#[derive(Debug)]
pub(crate) struct Plan {
    pub text: String,
    pub level: Level,
    pub replacements: usize,
}

/// Why no edit could be made.
#[derive(Debug, PartialEq)]
pub(crate) enum MatchError {
    /// Nothing matched; the hint names the closest candidates.
    NotFound {
        hint: String,
        /// The file's exact text of the region old_string seems to mean,
        /// when it only left out a few lines: the old_string to use.
        region: Option<String>,
    },
    /// Several places matched and `replace_all` was not set.
    Ambiguous { level: Level, lines: Vec<usize> },
}

/// One place to replace: a byte range of the file and what goes there.
struct Found {
    start: usize,
    end: usize,
    replacement: String,
}

/// A line of the file: content `start..end`, terminator up to `next`.
struct Line {
    start: usize,
    end: usize,
    next: usize,
}

/// Replace `old` by `new` in `text`, trying each [`Level`] in turn. A level
/// must find exactly one match, or any number with `replace_all`.
pub(crate) fn apply(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Plan, MatchError> {
    let eol = line_ending(text);
    let new_conv = to_eol(new, eol);

    let mut levels: Vec<(Level, Vec<Found>)> = Vec::new();
    levels.push((Level::Exact, find_exact(text, old, &new_conv)));
    let old_conv = to_eol(old, eol);
    if old_conv != old {
        levels.push((Level::LineEndings, find_exact(text, &old_conv, &new_conv)));
    }
    for (level, found) in levels {
        if let Some(plan) = decide(text, level, found, replace_all)? {
            return Ok(plan);
        }
    }

    let lines = split_lines(text);
    for level in [Level::TrimmedLines, Level::Indentation] {
        let found = find_lines(text, &lines, old, new, eol, level);
        if let Some(plan) = decide(text, level, found, replace_all)? {
            return Ok(plan);
        }
    }
    // Last, an old_string that left out a few lines of one region: edited
    // with those lines kept, or handed the region to copy.
    match gap::find(text, &lines, old, new, eol) {
        gap::Gap::Apply(found) => {
            if let Some(plan) = decide(text, Level::KeptLines, vec![found], false)? {
                return Ok(plan);
            }
        }
        gap::Gap::Show { hint, region } => {
            return Err(MatchError::NotFound {
                hint,
                region: Some(region),
            });
        }
        gap::Gap::None => {}
    }
    Err(MatchError::NotFound {
        hint: closest(text, &lines, old),
        region: None,
    })
}

/// `Ok(None)`: nothing found at this level, try the next one.
fn decide(
    text: &str,
    level: Level,
    found: Vec<Found>,
    replace_all: bool,
) -> Result<Option<Plan>, MatchError> {
    match found.len() {
        0 => Ok(None),
        1 => Ok(Some(splice(text, level, found))),
        _ if replace_all => Ok(Some(splice(text, level, found))),
        _ => Err(MatchError::Ambiguous {
            level,
            lines: line_numbers(text, found.iter().map(|f| f.start)),
        }),
    }
}

fn splice(text: &str, level: Level, found: Vec<Found>) -> Plan {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
        out.push_str(&text[at..f.start]);
        out.push_str(&f.replacement);
        at = f.end;
    }
    out.push_str(&text[at..]);
    Plan {
        text: out,
        level,
        replacements: found.len(),
    }
}

/// `"\r\n"` when most of the file's line ends are CRLF, else `"\n"`.
pub(crate) fn line_ending(text: &str) -> &'static str {
    let crlf = text.matches("\r\n").count();
    let all = text.matches('\n').count();
    if crlf > 0 && crlf * 2 >= all {
        "\r\n"
    } else {
        "\n"
    }
}

/// `text` with every line ending made `eol`.
pub(crate) fn to_eol(text: &str, eol: &str) -> String {
    let lf = text.replace("\r\n", "\n");
    if eol == "\n" {
        lf
    } else {
        lf.replace('\n', eol)
    }
}

fn find_exact(text: &str, old: &str, new: &str) -> Vec<Found> {
    if old.is_empty() {
        return Vec::new();
    }
    text.match_indices(old)
        .map(|(i, m)| Found {
            start: i,
            end: i + m.len(),
            replacement: new.to_string(),
        })
        .collect()
}

fn split_lines(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let (end, next) = match text[start..].find('\n') {
            Some(i) => {
                let nl = start + i;
                let end = if nl > start && text.as_bytes()[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                };
                (end, nl + 1)
            }
            None => (text.len(), text.len()),
        };
        lines.push(Line { start, end, next });
        start = next;
    }
    lines
}

/// old_string's lines, and whether it ended with a line break.
fn old_lines(old: &str) -> (Vec<&str>, bool) {
    let ends_nl = old.ends_with('\n');
    let body = old.strip_suffix('\n').unwrap_or(old);
    let body = if ends_nl {
        body.strip_suffix('\r').unwrap_or(body)
    } else {
        body
    };
    let lines = body
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    (lines, ends_nl)
}

fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

fn find_lines(
    text: &str,
    lines: &[Line],
    old: &str,
    new: &str,
    eol: &str,
    level: Level,
) -> Vec<Found> {
    let (wanted, ends_nl) = old_lines(old);
    // Lenient matching of whitespace-only text would match any blank line.
    let Some(anchor) = wanted.iter().position(|l| !l.trim().is_empty()) else {
        return Vec::new();
    };
    let same = |a: &str, b: &str| match level {
        Level::Indentation => a.trim() == b.trim(),
        _ => a.trim_end() == b.trim_end(),
    };
    let content = |l: &Line| &text[l.start..l.end];
    let new_lf = new.replace("\r\n", "\n");
    let k = wanted.len();
    let mut found = Vec::new();
    let mut i = 0;
    while i + k <= lines.len() {
        if !(0..k).all(|j| same(content(&lines[i + j]), wanted[j])) {
            i += 1;
            continue;
        }
        let last = &lines[i + k - 1];
        let replacement = if level == Level::Indentation {
            let from = leading_ws(wanted[anchor]);
            let to = leading_ws(content(&lines[i + anchor]));
            reindent(&new_lf, from, to)
        } else {
            new_lf.clone()
        };
        found.push(Found {
            start: lines[i].start,
            end: if ends_nl { last.next } else { last.end },
            replacement: to_eol(&replacement, eol),
        });
        i += k;
    }
    found
}

/// Move every non-blank line of `text` from indentation `from` to `to`.
pub(crate) fn reindent(text: &str, from: &str, to: &str) -> String {
    if from == to {
        return text.to_string();
    }
    let shift = |line: &str| -> String {
        if line.trim().is_empty() {
            return line.to_string();
        }
        if let Some(rest) = line.strip_prefix(from) {
            return format!("{to}{rest}");
        }
        if let Some(extra) = to.strip_prefix(from) {
            return format!("{extra}{line}");
        }
        if from.starts_with(to) {
            // Less indented than old_string's anchor line: remove what we can.
            let remove = from.len() - to.len();
            let indent = leading_ws(line);
            let cut = indent
                .char_indices()
                .map(|(i, c)| i + c.len_utf8())
                .take_while(|&end| end <= remove)
                .last()
                .unwrap_or(0);
            return line[cut..].to_string();
        }
        line.to_string()
    };
    text.split('\n').map(shift).collect::<Vec<_>>().join("\n")
}

/// 1-based line numbers of byte offsets given in increasing order.
fn line_numbers(text: &str, starts: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut at = 0;
    for s in starts {
        line += text[at..s].matches('\n').count();
        at = s;
        out.push(line);
    }
    out
}

/// Lines of the file most like old_string, described for the model.
fn closest(text: &str, lines: &[Line], old: &str) -> String {
    const SHOWN: usize = 160;
    let (wanted, _) = old_lines(old);
    let Some(anchor) = wanted.iter().position(|l| !l.trim().is_empty()) else {
        return String::new();
    };
    let first = cut_chars(wanted[anchor].trim(), 300);
    let content = |i: usize| &text[lines[i].start..lines[i].end];
    let mut scored: Vec<(f32, usize)> = (0..lines.len())
        .filter_map(|i| {
            let line = content(i).trim();
            if line.is_empty() {
                return None;
            }
            let ratio = TextDiff::from_chars(first, cut_chars(line, 300)).ratio();
            (ratio >= 0.5).then_some((ratio, i))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(3);
    if scored.is_empty() {
        return "No line of the file resembles the first line of old_string; read the file \
                again to see its current content."
            .to_string();
    }
    let mut out = String::from("Closest candidates:");
    for (ratio, i) in scored {
        // Line number of old_string's first line if it were placed here.
        let Some(top) = i.checked_sub(anchor) else {
            out.push_str(&format!(
                "\n- line {} ({:.0}% similar): `{}`",
                i + 1,
                ratio * 100.0,
                preview(content(i), 1, SHOWN)
            ));
            continue;
        };
        let agree = (0..wanted.len())
            .take_while(|&j| top + j < lines.len() && content(top + j).trim() == wanted[j].trim())
            .count();
        if agree > 0 && agree < wanted.len() {
            let differs = top + agree;
            let file_line = if differs < lines.len() {
                format!("`{}`", preview(content(differs), 1, SHOWN))
            } else {
                "the end of the file".to_string()
            };
            out.push_str(&format!(
                "\n- lines {}-{} match the start of old_string, but line {} differs: the file \
                 has {file_line}, old_string has `{}`",
                top + 1,
                top + agree,
                differs + 1,
                preview(wanted[agree], 1, SHOWN)
            ));
        } else {
            out.push_str(&format!(
                "\n- line {} ({:.0}% similar to old_string's first line): `{}`",
                i + 1,
                ratio * 100.0,
                preview(content(i), 1, SHOWN)
            ));
        }
    }
    out
}

fn cut_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn exact_single_match_is_replaced() {
        let plan = apply("a b c", "b", "x", false).unwrap();
        assert_eq!(plan.text, "a x c");
        assert_eq!(plan.level, Level::Exact);
        assert_eq!(plan.replacements, 1);
    }

    #[test]
    fn ambiguous_exact_match_lists_every_line() {
        let err = apply("x\nfoo\ny\nfoo\n", "foo", "bar", false).unwrap_err();
        assert_eq!(
            err,
            MatchError::Ambiguous {
                level: Level::Exact,
                lines: vec![2, 4]
            }
        );
    }

    #[test]
    fn replace_all_replaces_every_match_of_the_first_level_that_finds_any() {
        let plan = apply("foo\nfoo \nfoo\n", "foo", "bar", true).unwrap();
        assert_eq!(plan.text, "bar\nbar \nbar\n");
        assert_eq!(plan.replacements, 3);
        assert_eq!(plan.level, Level::Exact);
    }

    #[test]
    fn crlf_file_matched_with_lf_old_string_stays_crlf() {
        let plan = apply("a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\nz\n", false).unwrap();
        assert_eq!(plan.text, "x\r\ny\r\nz\r\nc\r\n");
        assert_eq!(plan.level, Level::LineEndings);
    }

    #[test]
    fn trailing_whitespace_is_ignored_at_the_trimmed_level() {
        let plan = apply(
            "fn a() {   \n    x();\t\n}\n",
            "fn a() {\n    x();",
            "fn b() {\n    y();",
            false,
        )
        .unwrap();
        assert_eq!(plan.level, Level::TrimmedLines);
        assert_eq!(plan.text, "fn b() {\n    y();\n}\n");
    }

    #[test]
    fn indentation_insensitive_match_reindents_the_replacement() {
        let file = "impl A {\n        fn f() {\n            1\n        }\n}\n";
        let old = "fn f() {\n    1\n}";
        let new = "fn f() {\n    if x {\n        2\n    }\n}";
        let plan = apply(file, old, new, false).unwrap();
        assert_eq!(plan.level, Level::Indentation);
        assert_eq!(
            plan.text,
            "impl A {\n        fn f() {\n            if x {\n                2\n            }\n        }\n}\n"
        );
    }

    #[test]
    fn old_string_ending_in_newline_removes_whole_lines() {
        let plan = apply("a\nb\nc\n", "  b\n", "", false).unwrap();
        assert_eq!(plan.text, "a\nc\n");
    }

    #[test]
    fn reindent_removes_indentation_too() {
        assert_eq!(
            reindent("    a\n      b\n\n    c", "    ", "  "),
            "  a\n    b\n\n  c"
        );
        assert_eq!(reindent("a\n  b", "", "\t"), "\ta\n\t  b");
        assert_eq!(reindent("  a\nb", "    ", "  "), "a\nb");
    }

    #[test]
    fn not_found_names_the_closest_line() {
        let file = "fn main() {\n    let total = compute(1, 2);\n}\n";
        let MatchError::NotFound { hint, .. } =
            apply(file, "let totl = compute(1, 3);", "x", false).unwrap_err()
        else {
            panic!("expected not found");
        };
        assert!(hint.contains("line 2"), "{hint}");
        assert!(hint.contains("let total = compute(1, 2);"), "{hint}");
    }

    #[test]
    fn not_found_points_at_the_first_differing_line() {
        let file = "a();\nb();\nc();\n";
        let MatchError::NotFound { hint, .. } =
            apply(file, "a();\nb();\nd();", "x", false).unwrap_err()
        else {
            panic!("expected not found");
        };
        assert!(
            hint.contains("lines 1-2 match the start of old_string, but line 3 differs"),
            "{hint}"
        );
    }

    #[test]
    fn whitespace_only_old_string_never_matches_leniently() {
        assert!(matches!(
            apply("a\n\nb\n", "   ", "x", false),
            Err(MatchError::NotFound { .. })
        ));
    }

    #[test]
    fn line_ending_is_the_majority() {
        assert_eq!(line_ending("a\r\nb\r\nc\n"), "\r\n");
        assert_eq!(line_ending("a\nb\nc\r\n"), "\n");
        assert_eq!(line_ending("abc"), "\n");
    }
}
