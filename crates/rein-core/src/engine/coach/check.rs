//! Check after change (the `check` lever of [`crate::profile`]): when the
//! task or the project names a way to check a change, the coach runs it
//! once the model has changed files and would end its run, and hands a
//! failure's output back to the model.
//!
//! Steps:
//! 1. At the start, [`named_check`] looks for the check: a command in the
//!    request (`run python3 test_calc.py`, `` `cargo test` ``), a test
//!    command in AGENTS.md, or a test file the request names (or the only
//!    one at the workspace's top). Later, a failing test command the model
//!    runs itself becomes the check when none was named ([`Check::saw_run`]).
//! 2. When an answer would end a run whose files changed since the last
//!    check (or a run asked for a change whose check never ran: the model
//!    may call unchanged code correct), the run executes the command as a `bash` call through the
//!    gate, so its mode, rules, hooks and sandbox apply (see
//!    `engine/run/check.rs`); a refused call ends checking for the run and
//!    says so.
//! 3. A failure's output goes back to the model ([`feedback`]), at most
//!    [`MAX_FAILURES`] times a run; the command runs with a bounded timeout.
//!
//! The command comes from the request or the repository, which may be
//! an attacker's: nothing here runs it, and the gate treats it as any call.

use std::path::Path;

/// Most failures handed back to the model in one run.
pub(crate) const MAX_FAILURES: u32 = 2;
/// Most times a run executes its check.
pub(crate) const MAX_RUNS: u32 = 3;
/// The check's own timeout, in seconds (the bash tool's `timeout_secs`).
pub(crate) const TIMEOUT_SECS: u64 = 60;
/// Longest command taken from a request or AGENTS.md.
const MAX_COMMAND: usize = 200;
/// Bytes of a failure's output handed back (its end, where the error is).
const FEEDBACK_BYTES: usize = 1500;

/// Programs a check command may start with.
const PROGRAMS: &[&str] = &[
    "python3", "python", "pytest", "cargo", "npm", "node", "go", "make", "sh", "bash", "ruby",
    "tox",
];

/// Words after the program that belong to a command (subcommands), beside
/// file names and flags.
const SUBCOMMANDS: &[&str] = &["test", "tests", "check", "run", "pytest", "unittest", "-m"];

/// Words of a request that say something fails.
const FAILING: &[&str] = &["fail", "crash", "error", "broken", "exception", "traceback"];

/// The run's check: what to run, and how far the run has got with it.
#[derive(Debug, Default)]
pub(crate) struct Check {
    /// The command; None until one is known.
    pub command: Option<String>,
    /// Files changed since the check last ran (or since the start).
    pub dirty: bool,
    /// Times it ran.
    pub runs: u32,
    /// Failures handed back to the model.
    pub failures: u32,
    /// The gate refused it: no more tries this run.
    pub refused: bool,
    /// The request asks for a change: an answer that would end the run
    /// is checked even when no file changed (measured: the 1.5B model
    /// ran the failing test, then answered that the code was correct).
    pub change_asked: bool,
    /// The candidates lever is on: one more run after the last failure
    /// handed back, whose failure goes to the candidates, not the model.
    pub candidates: bool,
    /// The last run failed; its output, for the candidates.
    pub last_failure: Option<String>,
    /// The candidates were tried this run (once a run).
    pub candidates_tried: bool,
}

impl Check {
    /// The command to run now, if the run should check: one is known,
    /// files changed since it last ran (or, for a request for a change,
    /// it never ran), and the run has tries left.
    pub fn due(&self) -> Option<&str> {
        let left = self.runs < MAX_RUNS && self.failures < self.max_failures();
        let fresh = self.dirty || (self.change_asked && self.runs == 0);
        match (fresh && left && !self.refused, &self.command) {
            (true, Some(c)) => Some(c),
            _ => None,
        }
    }

    /// Failures a run may have: those handed back, and with candidates
    /// one more that starts them.
    fn max_failures(&self) -> u32 {
        MAX_FAILURES + u32::from(self.candidates)
    }

    /// Whether a failure now goes back to the model (else to the
    /// candidates): it is within [`MAX_FAILURES`].
    pub fn hands_back(&self) -> bool {
        self.failures <= MAX_FAILURES
    }

    /// The check's command and its last failing output when the
    /// candidates are due: the lever is on, they were not tried this run,
    /// the check failed and will not run again (its rounds are spent, or
    /// the model stopped changing files), and the gate let it run.
    pub fn candidates_due(&self) -> Option<(&str, &str)> {
        let spent = self.due().is_none();
        let ready = self.candidates && !self.candidates_tried && !self.refused && spent;
        match (ready, &self.command, &self.last_failure) {
            (true, Some(c), Some(out)) => Some((c, out)),
            _ => None,
        }
    }

    /// Note a command the model ran itself and its output: the check
    /// itself, passing, needs no second run; a failing test command
    /// becomes the check when none is known.
    pub fn saw_run(&mut self, command: &str, output: &str) {
        let command = command.trim();
        let ok = passed(output);
        if self.command.as_deref() == Some(command) {
            if ok {
                self.dirty = false;
            }
            return;
        }
        if self.command.is_none()
            && !ok
            && exit_code(output).is_some()
            && command.len() <= MAX_COMMAND
            && command.contains("test")
        {
            self.command = Some(command.to_string());
        }
    }
}

/// The check the request, AGENTS.md (`agents`) or the workspace names,
/// if any.
pub(crate) fn named_check(prompt: &str, agents: &str, workspace: &Path) -> Option<String> {
    let failing = {
        let lower = prompt.to_lowercase();
        FAILING.iter().any(|w| lower.contains(w))
    };
    command_in(prompt)
        .filter(|c| failing || c.contains("test"))
        .or_else(|| agents_test_command(agents))
        .or_else(|| test_file(prompt, workspace).map(|f| format!("python3 {f}")))
}

/// A command written in `text`: a backticked span, or words starting with
/// one of [`PROGRAMS`], followed by the file names, flags and subcommands
/// after it ("run python3 test_calc.py, find…" gives `python3
/// test_calc.py`).
pub(crate) fn command_in(text: &str) -> Option<String> {
    let quoted = text
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .find(|span| starts_with_program(span));
    if let Some(span) = quoted {
        return Some(span.to_string()).filter(|c| c.len() <= MAX_COMMAND);
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let start = words.iter().position(|w| PROGRAMS.contains(w))?;
    let mut command = vec![words[start]];
    for raw in &words[start + 1..] {
        let word = raw.trim_end_matches([',', ':', ';', '.', ')', '?', '!']);
        let part = word.contains('.') || word.contains('/') || word.starts_with('-');
        if word.is_empty() || !(part || SUBCOMMANDS.contains(&word)) || !safe_word(word) {
            break;
        }
        command.push(word);
        if word.len() != raw.len() {
            break;
        }
    }
    let command = command.join(" ");
    (command.len() <= MAX_COMMAND && command.contains(' ')).then_some(command)
}

/// A word of a command found in prose: no shell syntax, so that what is
/// taken is a program and its arguments (the gate checks it anyway).
fn safe_word(word: &str) -> bool {
    word.chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '.' | '/' | '-' | '_' | '=' | ':'))
}

fn starts_with_program(span: &str) -> bool {
    span.split_whitespace()
        .next()
        .is_some_and(|p| PROGRAMS.contains(&p) || p.starts_with("./"))
}

/// The first backticked command on a line of AGENTS.md that talks about
/// tests.
pub(crate) fn agents_test_command(agents: &str) -> Option<String> {
    agents
        .lines()
        .filter(|l| l.to_lowercase().contains("test"))
        .find_map(|l| {
            l.split('`')
                .skip(1)
                .step_by(2)
                .map(str::trim)
                .find(|span| starts_with_program(span) && span.len() <= MAX_COMMAND)
                .map(String::from)
        })
}

/// A Python test file the request names (`test_x.py`, `x_test.py`) that
/// exists in the workspace, else the only one at its top.
fn test_file(prompt: &str, workspace: &Path) -> Option<String> {
    let is_test = |name: &str| {
        name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
    };
    let named = prompt
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')))
        .map(|w| w.trim_end_matches('.'))
        .find(|w| is_test(w) && safe_word(w) && workspace.join(w).is_file());
    if let Some(name) = named {
        return Some(name.to_string());
    }
    let mut found = std::fs::read_dir(workspace)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_test(n) && safe_word(n));
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The exit code a bash tool's output ends with (`[exit code: N]`).
pub(crate) fn exit_code(output: &str) -> Option<i32> {
    let last = output.trim_end().lines().last()?;
    last.strip_prefix("[exit code: ")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Whether a bash tool's output says the command exited with 0.
pub(crate) fn passed(output: &str) -> bool {
    exit_code(output) == Some(0)
}

/// What the model is told when the check fails after its change: the
/// command and the end of its output.
pub(crate) fn feedback(command: &str, output: &str) -> String {
    let mut start = output.len().saturating_sub(FEEDBACK_BYTES);
    while !output.is_char_boundary(start) {
        start += 1;
    }
    format!(
        "[rein] The task is not done: I ran `{command}` and it still fails:\n{}\nRead the error, \
         fix the code it tests with edit_file (not the test), then answer in a sentence.",
        &output[start..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_in_a_request_is_cut_at_the_prose_around_it() {
        let found = |t: &str| command_in(t);
        assert_eq!(
            found("The test suite fails: run python3 test_calc.py, find the bug in calc.py."),
            Some("python3 test_calc.py".into())
        );
        assert_eq!(
            found("python3 test_pages.py fails. Fix the bug."),
            Some("python3 test_pages.py".into())
        );
        assert_eq!(
            found("Run python3 test_text.py: it fails."),
            Some("python3 test_text.py".into())
        );
        assert_eq!(
            found("my counter: python3 words.py notes.txt says 1"),
            Some("python3 words.py notes.txt".into())
        );
        assert_eq!(
            found("Please run `cargo test -p core` and fix it"),
            Some("cargo test -p core".into())
        );
        assert_eq!(found("What does python do here?"), None);
        assert_eq!(found("How many rows has data.csv?"), None);
    }

    #[test]
    fn shell_syntax_in_prose_ends_the_command() {
        assert_eq!(
            command_in("run python3 test.py; rm -rf ~ now"),
            Some("python3 test.py".into())
        );
        assert_eq!(command_in("run python3 test.py;rm -rf ~ now"), None);
        assert_eq!(command_in("run python3 $(curl evil) x.py"), None);
    }

    #[test]
    fn a_check_is_named_by_a_failing_request_a_test_agents_md_or_a_test_file() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        // A command that is no test, in a request that reports nothing
        // failing, is no check.
        assert_eq!(named_check("Run python3 app.py for me", "", ws), None);
        assert_eq!(
            named_check("python3 app.py crashes, fix it", "", ws),
            Some("python3 app.py".into())
        );
        let agents = "# Work\n\nRun the tests with `make test` before you finish.\n";
        assert_eq!(
            named_check("Fix the bug.", agents, ws),
            Some("make test".into())
        );
        std::fs::write(ws.join("test_numbers.py"), "").unwrap();
        assert_eq!(
            named_check("The tests fail. Fix the bug.", "", ws),
            Some("python3 test_numbers.py".into())
        );
        std::fs::write(ws.join("test_other.py"), "").unwrap();
        assert_eq!(named_check("Fix the bug.", "", ws), None);
        assert_eq!(
            named_check("The tests in test_numbers.py fail.", "", ws),
            Some("python3 test_numbers.py".into())
        );
    }

    #[test]
    fn a_check_is_due_after_a_change_and_bounded() {
        let mut check = Check {
            command: Some("python3 t.py".into()),
            ..Check::default()
        };
        assert_eq!(check.due(), None, "nothing changed yet");
        // A request for a change is checked once before any change.
        check.change_asked = true;
        assert_eq!(check.due(), Some("python3 t.py"));
        check.runs = 1;
        assert_eq!(check.due(), None, "then only after a change");
        check.runs = 0;
        check.change_asked = false;
        check.dirty = true;
        assert_eq!(check.due(), Some("python3 t.py"));
        check.failures = MAX_FAILURES;
        assert_eq!(check.due(), None, "failures handed back are bounded");
        check.failures = 0;
        check.runs = MAX_RUNS;
        assert_eq!(check.due(), None, "runs are bounded");
        check.runs = 0;
        check.refused = true;
        assert_eq!(check.due(), None, "a refused check is not tried again");
    }

    #[test]
    fn candidates_come_after_the_rounds_handed_back_and_once() {
        let mut check = Check {
            command: Some("python3 t.py".into()),
            candidates: true,
            dirty: true,
            ..Check::default()
        };
        // Two failures go back to the model, a third run starts candidates.
        for failures in 0..=MAX_FAILURES {
            check.failures = failures;
            check.runs = failures;
            assert_eq!(check.due(), Some("python3 t.py"), "run {}", failures + 1);
            assert_eq!(check.candidates_due(), None, "the check still runs");
        }
        check.failures = MAX_FAILURES + 1;
        check.runs = MAX_RUNS;
        assert!(!check.hands_back(), "the last failure is not handed back");
        assert_eq!(check.due(), None);
        assert_eq!(check.candidates_due(), None, "no failure noted");
        check.last_failure = Some("[exit code: 1]".into());
        assert_eq!(
            check.candidates_due(),
            Some(("python3 t.py", "[exit code: 1]"))
        );
        check.candidates_tried = true;
        assert_eq!(check.candidates_due(), None, "once a run");
        // A model that stops changing files after one failure gets them too.
        let mut gave_up = Check {
            command: Some("python3 t.py".into()),
            candidates: true,
            runs: 1,
            failures: 1,
            last_failure: Some("[exit code: 1]".into()),
            ..Check::default()
        };
        assert!(gave_up.candidates_due().is_some());
        gave_up.refused = true;
        assert_eq!(gave_up.candidates_due(), None, "a refused check gets none");
        // Without the lever, the rounds are as before.
        let off = Check {
            command: Some("python3 t.py".into()),
            dirty: true,
            failures: MAX_FAILURES,
            last_failure: Some("[exit code: 1]".into()),
            ..Check::default()
        };
        assert_eq!(off.due(), None);
        assert_eq!(off.candidates_due(), None);
    }

    #[test]
    fn the_models_own_runs_pass_the_check_or_name_one() {
        let mut check = Check {
            dirty: true,
            ..Check::default()
        };
        check.saw_run("ls", "a\n[exit code: 2]");
        assert_eq!(check.command, None, "only a test command becomes the check");
        check.saw_run("python3 test_x.py", "ok\n[exit code: 0]");
        assert_eq!(check.command, None, "a passing run names nothing");
        check.saw_run("python3 test_x.py", "AssertionError\n[exit code: 1]");
        assert_eq!(check.command.as_deref(), Some("python3 test_x.py"));
        assert!(check.dirty);
        check.saw_run("python3 test_x.py", "ok\n[exit code: 0]");
        assert!(!check.dirty, "the model's own passing run is the check");
    }

    #[test]
    fn exit_codes_are_read_from_the_last_line_only() {
        assert_eq!(exit_code("x\n[exit code: 1]\n"), Some(1));
        assert!(passed("[exit code: 0]"));
        assert!(!passed("[exit code: 0]\nmore"));
        assert!(!passed("(no output)\n[timed out after 60 s]"));
        let long = format!("{}\n[exit code: 1]", "é".repeat(2000));
        assert!(feedback("t", &long).contains("[exit code: 1]"));
    }
}
