//! Answers from evidence (the `evidence` lever of [`crate::profile`]): an
//! answer to a question must come from what the run's tools showed.
//!
//! Steps:
//! 1. At the start, [`Question::of`] tells whether the request is a
//!    question (and whether it asks for a count); a request for a change
//!    is none.
//! 2. As calls finish, [`Evidence::saw`] keeps their outputs (bounded):
//!    what commands printed apart, as that is where a count a tool made
//!    shows (`grep -c`, `wc -l`); a file's listing only shows lines the
//!    model would count itself.
//! 3. When the answer would end the run, [`Evidence::unsupported`] finds
//!    the values it claims (numbers, file names, quoted or upper-case
//!    words); when there are some and none of them is in the evidence
//!    (for a count: its number in what a command printed; for a fact
//!    that names a number, that number), the run gets one nudge to look
//!    it up with a tool and quote the line.
//!
//! The outputs are the tools' and the answer is the model's: both are
//! only searched, never run or opened.

/// Most bytes of tool output kept, each kind.
const KEPT: usize = 64 * 1024;

/// Words that open a question.
const QUESTION_WORDS: &[&str] = &[
    "how", "what", "which", "where", "who", "when", "why", "is", "are", "does", "do", "tell",
    "find", "count", "list",
];

/// What sort of question a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Question {
    /// How many, count, number of: the answer is a number a tool counts.
    Count,
    /// Which file, what value, where: the answer is in some output.
    Fact,
}

impl Question {
    /// The question `prompt` asks, if it asks one (`asks_change`: it asks
    /// for a change, which makes it no question).
    pub fn of(prompt: &str, asks_change: bool) -> Option<Question> {
        if asks_change {
            return None;
        }
        let lower = prompt.to_lowercase();
        if ["how many", "count ", "number of"]
            .iter()
            .any(|w| lower.contains(w))
        {
            return Some(Question::Count);
        }
        let first = lower.split_whitespace().next().unwrap_or("");
        (lower.contains('?') || QUESTION_WORDS.contains(&first)).then_some(Question::Fact)
    }
}

/// The run's tool outputs, for a question's answer.
#[derive(Debug)]
pub(crate) struct Evidence {
    pub question: Question,
    /// What commands printed.
    printed: String,
    /// What every other tool showed (file listings without their line
    /// numbers).
    shown: String,
    /// The run had its nudge.
    pub nudged: bool,
}

impl Evidence {
    pub fn new(question: Question) -> Evidence {
        Evidence {
            question,
            printed: String::new(),
            shown: String::new(),
            nudged: false,
        }
    }

    /// Keep a successful call's output (`command`: a shell command printed
    /// it).
    pub fn saw(&mut self, command: bool, output: &str) {
        let keep = |kept: &mut String, text: &str| {
            if kept.len() + text.len() <= KEPT {
                kept.push_str(text);
                kept.push('\n');
            }
        };
        if command {
            keep(&mut self.printed, output);
            return;
        }
        keep(&mut self.shown, &without_line_numbers(output));
        // A count the tool made itself ("6 file names match it", "[6
        // matching lines: 1 in docs/, 5 in src/]") is as good as one a
        // command printed.
        keep(&mut self.printed, &tool_notes(output));
    }

    /// The nudge for `answer` when none of the values it claims comes
    /// from the run's tools (once a run).
    pub fn unsupported(&mut self, answer: &str) -> Option<String> {
        if self.nudged {
            return None;
        }
        let claims = specific(claims(answer));
        let backed = |c: &String| match self.question {
            Question::Count => has_word(&self.printed, c),
            Question::Fact => has_word(&self.printed, c) || has_word(&self.shown, c),
        };
        // A count is its number; a fact that names a number (a line, a
        // port, a version) stands on that number, the names around it
        // (the file, the function asked about) are in the output anyway.
        let numbers: Vec<String> = claims.iter().filter(|c| is_number(c)).cloned().collect();
        let claims = match self.question {
            Question::Count => numbers,
            Question::Fact if !numbers.is_empty() => numbers,
            Question::Fact => claims,
        };
        if claims.is_empty() || claims.iter().any(backed) {
            return None;
        }
        self.nudged = true;
        Some(match self.question {
            Question::Count => format!(
                "[rein] No command of this run printed {}. Count with a command instead of by \
                 eye (grep -c PATTERN FILE, or wc -l < FILE), then answer with the number it \
                 prints.",
                claims[0]
            ),
            // A number is not what to search for: the model greps for
            // its own wrong line number.
            Question::Fact if is_number(&claims[0]) => format!(
                "[rein] No tool output of this run shows {0}. Search with grep for what the \
                 question asks about (not for {0}): each match is printed with its line number. \
                 Then answer from that and quote the line.",
                claims[0]
            ),
            // Nor is the value it guessed: told to look it up, the model
            // searched for `MIT` again, found nothing, and answered MIT.
            Question::Fact => format!(
                "[rein] {0} is in no tool output of this run. Search with grep for what the \
                 question asks about (not for {0}), then answer from what it finds and quote \
                 the line.",
                claims[0]
            ),
        })
    }
}

/// `output` without the spans in backticks that only echo the call's own
/// arguments (`arguments`, its JSON): grep's "No matches for `MIT`" is no
/// evidence that the project says MIT (the 1.5B model searched for the
/// licence it guessed and answered with it), nor is "Lines with `MIT` or
/// `license`".
pub(crate) fn without_echo(output: &str, arguments: &str) -> String {
    let values: Vec<String> = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(map)) => map
            .values()
            .filter_map(|v| v.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    };
    let spans: Vec<&str> = output.split('`').collect();
    if values.is_empty() || spans.len().is_multiple_of(2) {
        // Nothing asked in words, or a backtick left open: as it is.
        return output.to_string();
    }
    let mut out = String::with_capacity(output.len());
    for (i, span) in spans.iter().enumerate() {
        let echo = i % 2 == 1 && !span.is_empty() && values.iter().any(|v| v.contains(span));
        match (i % 2 == 1, echo) {
            (_, true) => out.push_str("``"),
            (true, false) => {
                out.push('`');
                out.push_str(span);
                out.push('`');
            }
            (false, _) => out.push_str(span),
        }
    }
    out
}

/// `output` of a file listing without the line numbers `read_file` puts
/// before each line (`     3\ttext`).
fn without_line_numbers(output: &str) -> String {
    output
        .lines()
        .map(|l| match l.split_once('\t') {
            Some((n, rest))
                if !n.trim().is_empty() && n.trim().bytes().all(|b| b.is_ascii_digit()) =>
            {
                rest
            }
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of a tool's output in the tool's own words: neither a line
/// of a file as `read_file` lists it (`     3\ttext`) nor a match as
/// grep lists it (`path:3:text`).
fn tool_notes(output: &str) -> String {
    let numbered = |n: &str| !n.trim().is_empty() && n.trim().bytes().all(|b| b.is_ascii_digit());
    output
        .lines()
        .filter(|l| !l.split_once('\t').is_some_and(|(n, _)| numbered(n)))
        .filter(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, n, rest) = (parts.next(), parts.next(), parts.next());
            !(rest.is_some() && n.is_some_and(numbered))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_number(word: &str) -> bool {
    !word.is_empty()
        && word.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && word.bytes().any(|b| b.is_ascii_digit())
}

/// The values an answer claims: numbers, file names and paths, quoted or
/// backticked spans, and upper-case words (`MIT`, `TIMEOUT`).
pub(crate) fn claims(answer: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |c: &str| {
        let c = c.trim();
        if !c.is_empty() && c.len() <= 120 && !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    };
    for quote in ['`', '"'] {
        for span in answer.split(quote).skip(1).step_by(2) {
            push(span);
        }
    }
    for raw in answer.split_whitespace() {
        let word = raw
            .trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
            .trim_end_matches('.');
        let upper = word.len() >= 2
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            && word.chars().any(|c| c.is_ascii_uppercase());
        let named = word.contains('.') || word.contains('/') || word.contains('_');
        if is_number(word) || upper || (named && word.len() >= 3) {
            push(word);
        }
    }
    out
}

/// The claims not contained in a longer one: in "the environment
/// variable `DATABASE_URL`" the value is `DATABASE_URL`, not the `URL`
/// that any README mentions (the 1.5B model's answer passed on it).
fn specific(claims: Vec<String>) -> Vec<String> {
    claims
        .iter()
        .filter(|c| {
            !claims
                .iter()
                .any(|o| o.len() > c.len() && o.contains(c.as_str()))
        })
        .cloned()
        .collect()
}

/// Whether `word` is in `text` standing alone (not inside a longer word
/// or number).
fn has_word(text: &str, word: &str) -> bool {
    let inner = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(inner) && !after.is_some_and(inner)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_told_from_requests_for_a_change() {
        assert_eq!(
            Question::of("How many rows does data.csv have?", false),
            Some(Question::Count)
        );
        assert_eq!(
            Question::of("Which file defines Parser?", false),
            Some(Question::Fact)
        );
        assert_eq!(
            Question::of("Where is the database URL set?", false),
            Some(Question::Fact)
        );
        assert_eq!(Question::of("Fix the bug in calc.py.", true), None);
        assert_eq!(Question::of("Create hello.py printing hi.", false), None);
    }

    #[test]
    fn an_answer_claims_numbers_names_quotes_and_upper_case_words() {
        assert_eq!(
            claims("It is set in storage/config.py (line 2), as `DB_URL`; the license is MIT."),
            vec!["DB_URL", "storage/config.py", "2", "MIT"]
        );
        assert!(claims("It listens on a port.").is_empty());
    }

    #[test]
    fn a_count_must_be_printed_by_a_command_not_read_off_a_listing() {
        let mut ev = Evidence::new(Question::Count);
        // The listing's line numbers hold every small number.
        ev.saw(false, "     1\tada\n     2\tbrian\n     3\tcleo");
        let nudge = ev.unsupported("There are 3 names.").expect("a nudge");
        assert!(nudge.contains("grep -c"), "{nudge}");
        assert_eq!(
            ev.unsupported("There are 3 names."),
            None,
            "one nudge a run"
        );

        let mut ev = Evidence::new(Question::Count);
        ev.saw(true, "3 names.txt\n[exit code: 0]");
        assert_eq!(ev.unsupported("There are 3 names."), None);
        // 13 printed is no evidence for 3.
        let mut ev = Evidence::new(Question::Count);
        ev.saw(true, "13\n[exit code: 0]");
        assert!(ev.unsupported("3").is_some());
    }

    /// grep's own count ("6 file names match it") backs a count; the line
    /// numbers of its matches do not.
    #[test]
    fn a_count_a_tool_made_in_its_own_words_backs_a_count_its_matches_do_not() {
        let mut ev = Evidence::new(Question::Count);
        ev.saw(
            false,
            "No matches for `py$` in `.`.\nNo file contains `py$`, but 6 file names match it:\n\
             main.py\npkg/core.py",
        );
        assert_eq!(ev.unsupported("There are 6 Python files."), None);
        let mut ev = Evidence::new(Question::Count);
        ev.saw(false, "src/a.py:5:# TODO\nsrc/b.py:7:# TODO");
        assert!(ev.unsupported("There are 5 TODO comments.").is_some());
        let mut ev = Evidence::new(Question::Count);
        ev.saw(
            false,
            "src/a.py:5:# TODO\ndocs/n.md:1:TODO\n[2 matching lines: 1 in docs/, 1 in src/]",
        );
        assert_eq!(ev.unsupported("There is 1 in src."), None);
    }

    #[test]
    fn a_value_stands_on_itself_not_on_a_word_inside_it() {
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, "README.md:3:Set the database URL before running.");
        let nudge = ev
            .unsupported("It reads it from the environment variable `DATABASE_URL`.")
            .expect("a nudge");
        assert!(
            nudge.contains("DATABASE_URL is in no tool output"),
            "{nudge}"
        );
    }

    #[test]
    fn what_a_search_echoes_of_its_own_pattern_is_no_evidence() {
        let args = r#"{"pattern":"MIT license"}"#;
        let output = "No matches for `MIT license` in `.`.\nLines with `MIT` or `license` in any \
                      case:\nREADME.md:3:Released under the Apache License; see `LICENSE`.";
        let kept = without_echo(output, args);
        assert!(!kept.contains("MIT"), "{kept}");
        assert!(kept.contains("`.`") && kept.contains("`LICENSE`"), "{kept}");
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, &kept);
        assert!(ev.unsupported("It is under the MIT license.").is_some());
        // A match of the pattern in a file is evidence.
        let found = without_echo("LICENSE:1:MIT License", r#"{"pattern":"MIT"}"#);
        assert_eq!(found, "LICENSE:1:MIT License");
    }

    #[test]
    fn a_fact_must_be_in_some_output_and_an_answer_without_values_is_let_be() {
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, "     1\tPORT = 8080\n     2\tHOST = \"x\"");
        assert_eq!(ev.unsupported("The port is 8080."), None);
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, "     1\tPORT = 8080");
        let nudge = ev.unsupported("It listens on 9090.").expect("a nudge");
        assert!(
            nudge.contains("No tool output of this run shows 9090"),
            "{nudge}"
        );
        let mut ev = Evidence::new(Question::Fact);
        assert_eq!(ev.unsupported("I could not tell."), None);
        // The line number of a listing is no evidence for a value.
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, "     2\tx = 1");
        assert!(ev.unsupported("It is 2.").is_some());
    }

    #[test]
    fn a_fact_that_names_a_number_stands_on_the_number_not_the_names_around_it() {
        // read_file showed parse_header on line 15; the model said 16.
        let listing = "    15\tdef parse_header(line):\n    16\t    m = HEADER.match(line)";
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, listing);
        let nudge = ev
            .unsupported("`parse_header` is defined on line 16 of `parser.py`.")
            .expect("a nudge");
        assert!(nudge.contains("(not for 16)"), "{nudge}");
        // grep -n printed the line number: backed.
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(true, "15:def parse_header(line):\n[exit code: 0]");
        assert_eq!(
            ev.unsupported("It is defined on line 15 of parser.py."),
            None
        );
        // A number in the file's text backs itself.
        let mut ev = Evidence::new(Question::Fact);
        ev.saw(false, "     3\tport = 8731");
        assert_eq!(ev.unsupported("config.ini sets port 8731."), None);
    }
}
