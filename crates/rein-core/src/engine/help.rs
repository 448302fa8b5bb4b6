//! The harness help a small model gets (see [`crate::profile`]): a tool
//! call required on the first turn of a task in a workspace with files
//! (decided in the run), and a nudge when it answers right after a failed
//! call, or its answer shows a change it never made (for a file it never
//! read: read it first; for one it read: make the change) or talks about a
//! file it never opened: each kind of nudge at most once per run, so a run
//! gets four at most (read with `rein eval`: a model nudged to apply a fix
//! it guessed fails the edit and answers again; told to read first, it
//! reads, then shows the right fix without making it).
//!
//! The nudges read only what the run already knows: the answer's text and
//! what earlier calls of the run asked for. The
//! answer's text is the model's, so file names found in it are only looked
//! up beneath the workspace (never absolute, never through `..`).

use std::path::{Component, Path};

/// What a run has done so far, as far as the nudges care.
#[derive(Debug, Default)]
pub(crate) struct Looked {
    /// Some call of the run changed files (an edit, a write, a command).
    pub wrote: bool,
    /// The arguments of the run's successful calls, joined (bounded): a
    /// file whose name appears here was read, searched or run on.
    seen: String,
    /// The kinds of nudge the run got already.
    pub nudged: Vec<NudgeKind>,
    /// Every call of the latest round failed.
    pub last_round_failed: bool,
    /// The next answer must call a tool (the one after a nudge).
    pub act_next: bool,
}

/// Most bytes of call arguments kept in [`Looked::seen`].
const SEEN_CAP: usize = 64 * 1024;

impl Looked {
    /// Note the arguments of a call that succeeded.
    pub fn saw(&mut self, arguments: &str) {
        if self.seen.len() + arguments.len() <= SEEN_CAP {
            self.seen.push_str(arguments);
            self.seen.push('\n');
        }
    }
}

/// What a nudge is about; a run gets each kind once at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NudgeKind {
    /// The answer came right after a round whose calls all failed.
    FailedCall,
    /// The answer shows code for a file it never read, while nothing was
    /// changed: read it first.
    GuessedChange,
    /// The answer shows code for a file it read, while nothing was
    /// changed: make the change.
    UnappliedChange,
    /// The answer names a file no call of the run ever named.
    UnreadFile,
}

/// The nudge for an answer that ends the run, if it needs one of a kind
/// the run has not had: the last round failed, a change shown in a code
/// block while no call of the run changed anything, or an answer naming a
/// workspace file no call of the run ever named.
pub(crate) fn nudge(
    answer: &str,
    looked: &Looked,
    workspace: &Path,
) -> Option<(NudgeKind, String)> {
    let fresh = |kind| !looked.nudged.contains(&kind);
    if looked.last_round_failed && fresh(NudgeKind::FailedCall) {
        return Some((
            NudgeKind::FailedCall,
            "[rein] Your last tool call failed, so that answer is not based on the files. Read \
             the error, fix the call (paths are relative to the project folder), and try again."
                .to_string(),
        ));
    }
    let files = mentioned_files(answer, workspace);
    let unread = files
        .iter()
        .find(|f| !names_file(&looked.seen, file_name(f)));
    if !looked.wrote
        && shows_code(answer)
        && let Some(file) = files.first()
    {
        // A change guessed for a file never read fails as an edit: the
        // model is told to read it first; once it has, to make the change.
        if unread == Some(file) && fresh(NudgeKind::GuessedChange) {
            return Some((
                NudgeKind::GuessedChange,
                format!(
                    "[rein] Your answer shows code for {file} but the file was not changed, and \
                     you have not read it. If the task asks for a change, read {file} first, \
                     then make the change with edit_file, then answer in a sentence."
                ),
            ));
        }
        if unread != Some(file) && fresh(NudgeKind::UnappliedChange) {
            return Some((
                NudgeKind::UnappliedChange,
                format!(
                    "[rein] Your answer shows code for {file} but the file was not changed. If \
                     the task asks for a change, make it now with edit_file (or write_file), then \
                     answer in a sentence."
                ),
            ));
        }
    }
    let unread = unread.filter(|_| fresh(NudgeKind::UnreadFile))?;
    Some((
        NudgeKind::UnreadFile,
        format!(
            "[rein] You answered about {unread} without opening it. Read it first (read_file, or \
             a command that prints it), then answer from what it holds."
        ),
    ))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether `text` names the file `name` as a whole name: `calc.py` in
/// `{"path":"src/calc.py"}` or `cat calc.py`, not in `test_calc.py`.
fn names_file(text: &str, name: &str) -> bool {
    let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.');
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(part_of_name) && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// A fenced block of at least two lines (the text between the first and
/// second fence, the third and fourth, …; the info string's line skipped).
fn shows_code(answer: &str) -> bool {
    answer.split("```").skip(1).step_by(2).any(|inside| {
        let body = inside.split_once('\n').map_or("", |(_, b)| b);
        body.lines().filter(|l| !l.trim().is_empty()).count() >= 2
    })
}

/// Most words of an answer looked up as file names.
const MAX_LOOKUPS: usize = 40;

/// Relative paths in `answer` (words with a dot, quotes and punctuation
/// around them trimmed) that name a file in the workspace, in order of
/// first mention.
fn mentioned_files(answer: &str, workspace: &Path) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let words = answer
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | ','))
        .map(|w| w.trim_end_matches([':', ';', '.', '!', '?']))
        .filter(|w| w.contains('.') && w.len() <= 200)
        .take(MAX_LOOKUPS);
    for word in words {
        let path = Path::new(word);
        let plain = path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        // Not through a symlink: the answer may name one leading outside.
        let is_file = std::fs::symlink_metadata(workspace.join(path)).is_ok_and(|m| m.is_file());
        if plain && is_file && !found.iter().any(|f| f == word) {
            found.push(word.to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.csv"), "a\n1\n").unwrap();
        std::fs::write(dir.path().join("calc.py"), "def f(): pass\n").unwrap();
        dir
    }

    #[test]
    fn an_answer_about_a_file_never_opened_is_nudged_once() {
        let ws = workspace();
        let mut looked = Looked::default();
        let answer = "data.csv has 3 rows.";
        let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
        assert!(n.contains("data.csv without opening it"), "{n}");
        looked.nudged.push(kind);
        assert_eq!(nudge(answer, &looked, ws.path()), None);
    }

    /// A file is named by a call only as a whole name: running
    /// `test_calc.py` did not open `calc.py`.
    #[test]
    fn a_file_named_only_inside_another_name_was_not_read() {
        let ws = workspace();
        let mut looked = Looked::default();
        looked.saw(r#"{"command":"python3 test_calc.py"}"#);
        let (kind, _) = nudge("The bug is in calc.py.", &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::UnreadFile);
        looked.saw(r#"{"path":"./calc.py"}"#);
        assert_eq!(nudge("The bug is in calc.py.", &looked, ws.path()), None);
        assert!(names_file("cat calc.py.", "calc.py"));
        assert!(!names_file("mycalc.py", "calc.py"));
        assert!(!names_file("calc.pyc", "calc.py"));
    }

    #[test]
    fn an_answer_about_a_file_that_was_read_is_left_alone() {
        let ws = workspace();
        let mut looked = Looked::default();
        looked.saw(r#"{"path":"data.csv"}"#);
        assert_eq!(nudge("`data.csv` has 1 row.", &looked, ws.path()), None);
    }

    #[test]
    fn code_shown_for_a_file_that_was_not_changed_is_nudged_to_be_applied() {
        let ws = workspace();
        let mut looked = Looked::default();
        looked.saw(r#"{"path":"calc.py"}"#);
        let answer = "Fix calc.py like this:\n```python\ndef f():\n    return 1\n```";
        let (_, n) = nudge(answer, &looked, ws.path()).unwrap();
        assert!(n.contains("shows code for calc.py"), "{n}");
        assert!(!n.contains("not read"), "{n}");
        looked.wrote = true;
        assert_eq!(nudge(answer, &looked, ws.path()), None);
    }

    #[test]
    fn an_answer_right_after_a_failed_call_is_nudged_to_try_again() {
        let ws = workspace();
        let looked = Looked {
            last_round_failed: true,
            ..Looked::default()
        };
        let (_, n) = nudge("It is MIT.", &looked, ws.path()).unwrap();
        assert!(n.contains("last tool call failed"), "{n}");
    }

    /// A fix guessed for a file never read: read it first. Then, after
    /// the edit fails, the failed call gets its own nudge: each kind once.
    #[test]
    fn each_kind_of_nudge_comes_once_and_a_guessed_fix_is_told_to_read_first() {
        let ws = workspace();
        let mut looked = Looked::default();
        let answer = "The bug is in calc.py:\n```python\ndef f():\n    return 1\n```";
        let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::GuessedChange);
        assert!(
            n.contains("you have not read it") && n.contains("read calc.py first"),
            "{n}"
        );
        looked.nudged.push(kind);
        looked.last_round_failed = true;
        let (kind, _) = nudge("The edit failed.", &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::FailedCall);
        looked.nudged.push(kind);
        // The same answer again: its kinds are spent, only the unread
        // file is left to say.
        looked.last_round_failed = false;
        let (kind, _) = nudge(answer, &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::UnreadFile);
        looked.nudged.push(kind);
        assert_eq!(nudge(answer, &looked, ws.path()), None);
        // Once it has read the file, the same code gets the other nudge:
        // make the change.
        looked.saw(r#"{"path":"calc.py"}"#);
        let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::UnappliedChange);
        assert!(n.contains("make it now"), "{n}");
        looked.nudged.push(kind);
        assert_eq!(nudge(answer, &looked, ws.path()), None);
    }

    #[test]
    fn names_outside_the_workspace_or_missing_are_never_looked_up() {
        let ws = workspace();
        let looked = Looked::default();
        for answer in [
            "See /etc/passwd.",
            "See ../data.csv and ../../etc/hosts.",
            "See missing.txt.",
            "No files here.",
        ] {
            assert_eq!(nudge(answer, &looked, ws.path()), None, "{answer}");
        }
    }
}
