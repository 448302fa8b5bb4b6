//! The nudges of the [`Coach`](super::Coach) (see [`crate::profile`]): a tool
//! call required on the first turn of a task in a workspace with files
//! (decided in the run), and a nudge when it answers right after a failed
//! call, or its answer shows a change it never made (for a file it never
//! read: read it first; for one it read: make the change) or talks about a
//! file it never opened, or ends a task that asked for a change while no
//! file changed, or ends it while a file it asked for by name is still
//! missing: each kind of nudge at most once per run, so a run gets
//! six at most (read with `rein eval`: a model nudged to apply a fix
//! it guessed fails the edit and answers again; told to read first, it
//! reads, then shows the right fix without making it).
//!
//! The nudges read only what the run already knows: the answer's text and
//! what earlier calls of the run asked for. The
//! answer's text is the model's, so file names found in it are only looked
//! up beneath the workspace (never absolute, never through `..`).

use std::path::{Component, Path};

use super::asked::{self, Rename, Snapshot};

/// What a run has done so far, as far as the nudges care.
#[derive(Debug, Default)]
pub(crate) struct Looked {
    /// Some call of the run changed files (an edit, a write, a command).
    pub wrote: bool,
    /// The arguments of the run's successful calls, joined (bounded): a
    /// file whose name appears here was read, searched or run on.
    seen: String,
    /// The paths a search's output listed (`path:line:text`, or a path a
    /// line): a file whose name appears here was found, which is where
    /// an answer to "which file" comes from, but not read.
    listed: String,
    /// The kinds of nudge the run got already.
    pub nudged: Vec<NudgeKind>,
    /// Every call of the latest round failed (none was refused).
    pub last_round_failed: bool,
    /// A call of the latest round was refused by the user's policy: an
    /// answer after it (saying it could not) is not nudged to retry.
    pub last_round_denied: bool,
    /// What the answer after a nudge must be.
    pub next: NextTurn,
    /// The request asks for a change: the workspace as it was when the
    /// run began, to tell whether anything changed since (a command may
    /// have written files no file tool reported).
    pub change_asked: Option<Snapshot>,
    /// The files a request for a change names that the workspace lacked
    /// when the run began (see [`asked::missing_names`]).
    pub asked_for: Vec<String>,
    /// The rename a request for a change asks for, and how many places
    /// still used the old name at its last nudge.
    pub rename: Option<Rename>,
    pub rename_left: Option<usize>,
}

/// Most nudges a run gets about a rename's leftovers: each must follow
/// some progress (fewer places left than at the one before).
const RENAME_NUDGES: usize = 3;

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

    /// Note the paths a successful call's output lists: the part of each
    /// line before its first `:`, when that is one word.
    pub fn listed(&mut self, output: &str) {
        for line in output.lines() {
            let path = line.split_once(':').map_or(line, |(p, _)| p);
            let word = !path.is_empty() && path.len() <= 200 && !path.contains(char::is_whitespace);
            if word && self.listed.len() + path.len() < SEEN_CAP {
                self.listed.push_str(path);
                self.listed.push('\n');
            }
        }
    }
}

/// What the turn after a nudge must answer with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum NextTurn {
    /// Whatever the model likes (no nudge came).
    #[default]
    Free,
    /// A tool call.
    Call,
    /// A call to a tool that changes a file (the only tools that turn is
    /// offered): the model was told to make a
    /// change to files it has read (measured on the demo: told to make it
    /// with any tool allowed, the 1.5B model read the file again and
    /// answered with the diagnosis, in two runs of six).
    Edit,
}

/// What the turn after a nudge of `kind` for `answer` must do: make the
/// change when the nudge asks for one and every file the answer names was
/// read; otherwise call some tool.
pub(crate) fn next_turn(
    kind: NudgeKind,
    answer: &str,
    looked: &Looked,
    workspace: &Path,
) -> NextTurn {
    let read_all = || {
        let files = mentioned_files(answer, workspace);
        !files.is_empty() && files.iter().all(|f| names_file(&looked.seen, file_name(f)))
    };
    match kind {
        NudgeKind::UnappliedChange | NudgeKind::MissingFile | NudgeKind::RenameLeftovers => {
            NextTurn::Edit
        }
        NudgeKind::UnmadeChange if read_all() => NextTurn::Edit,
        _ => NextTurn::Call,
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
    /// The request asks for a change and no file changed.
    UnmadeChange,
    /// The request asks for a change naming a file the workspace lacked,
    /// and it still lacks it.
    MissingFile,
    /// The request asks for a rename and the old name is still used
    /// (given up to [`RENAME_NUDGES`] times while the places left drop).
    RenameLeftovers,
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
    if looked.last_round_denied {
        return None;
    }
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
    // A file a search found is where a "which file" answer comes from.
    let unread = unread.filter(|f| !names_file(&looked.listed, file_name(f)));
    if let Some(unread) = unread.filter(|_| fresh(NudgeKind::UnreadFile)) {
        return Some((
            NudgeKind::UnreadFile,
            format!(
                "[rein] You answered about {unread} without opening it. Read it first \
                 (read_file, or a command that prints it), then answer from what it holds."
            ),
        ));
    }
    if let Some(nudge) = rename_leftovers(looked, workspace) {
        return Some(nudge);
    }
    if looked.change_asked.is_some()
        && fresh(NudgeKind::MissingFile)
        && let Some(name) = asked::still_missing(&looked.asked_for, workspace)
    {
        return Some((
            NudgeKind::MissingFile,
            format!(
                "[rein] The task asks for {name}, but the project folder has no {name}. Make it \
                 now with write_file at the path `{name}`, then answer in a sentence."
            ),
        ));
    }
    // Read from the files themselves, not from what the calls were: a
    // command that only ran the tests counts as no change.
    let unchanged = looked
        .change_asked
        .as_ref()
        .is_some_and(|before| *before == Snapshot::take(workspace));
    (unchanged && fresh(NudgeKind::UnmadeChange)).then(|| {
        (
            NudgeKind::UnmadeChange,
            "[rein] The task asks for a change, but no file has changed. Make the change now \
             with edit_file or write_file (read the file first if you have not), then answer in \
             a sentence. If nothing needs to change, say why."
                .to_string(),
        )
    })
}

/// The nudge listing where a rename's old name is still used, if it is
/// and the run may have another (see [`RENAME_NUDGES`]).
fn rename_leftovers(looked: &Looked, workspace: &Path) -> Option<(NudgeKind, String)> {
    let rename = looked
        .rename
        .as_ref()
        .filter(|_| looked.change_asked.is_some())?;
    let given = looked
        .nudged
        .iter()
        .filter(|k| **k == NudgeKind::RenameLeftovers)
        .count();
    if given >= RENAME_NUDGES {
        return None;
    }
    let (places, total) = rename.leftovers(workspace);
    if total == 0 || looked.rename_left.is_some_and(|before| total >= before) {
        return None;
    }
    let more = match total > places.len() {
        true => format!("\n(and {} more)", total - places.len()),
        false => String::new(),
    };
    Some((
        NudgeKind::RenameLeftovers,
        format!(
            "[rein] `{0}` is still used in {total} place{1}. Rename it there too: edit_file \
             with old_string `{0}`, new_string `{2}` and replace_all true, one file at a time, \
             then answer:\n{3}{more}",
            rename.old,
            if total == 1 { "" } else { "s" },
            rename.new,
            places.join("\n")
        ),
    ))
}

/// Verbs that, as a sentence's command, ask for files to change.
const CHANGE_VERBS: &[&str] = &[
    "add",
    "append",
    "bump",
    "change",
    "correct",
    "create",
    "decrease",
    "delete",
    "edit",
    "fix",
    "implement",
    "increase",
    "insert",
    "lower",
    "make",
    "move",
    "put",
    "raise",
    "refactor",
    "remove",
    "rename",
    "replace",
    "rewrite",
    "save",
    "set",
    "update",
    "write",
];

/// Whether `prompt` asks for a change: some sentence not ending in a
/// question mark has a change verb as its command (first, or after "and",
/// "then", "please", "also" or a comma), as in "Find and fix the bug" or
/// "run the test, then fix calc.py"; "What is the timeout set to?" does
/// not.
pub(crate) fn asks_for_change(prompt: &str) -> bool {
    prompt
        .split_inclusive(['.', '!', '?', '\n', ';', ':'])
        .filter(|sentence| !sentence.trim_end().ends_with('?'))
        .any(|sentence| {
            let mut command_next = true;
            sentence.split_whitespace().any(|raw| {
                let word = raw
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase();
                let is_command = command_next && CHANGE_VERBS.contains(&word.as_str());
                command_next = matches!(word.as_str(), "and" | "then" | "please" | "also")
                    || raw.ends_with(',');
                is_command
            })
        })
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

    /// grep listed `billing/builder.py:1:class InvoiceBuilder:` and the
    /// model answered with that path: no nudge to open it (told to, the
    /// 1.5B model read it and answered with what the class does).
    #[test]
    fn an_answer_naming_a_file_a_search_listed_is_left_alone() {
        let ws = workspace();
        let mut looked = Looked::default();
        looked.saw(r#"{"pattern":"def f"}"#);
        looked.listed("calc.py:1:def f(): pass\n[1 matching line]");
        assert_eq!(nudge("f is defined in calc.py.", &looked, ws.path()), None);
        // Code shown for it is still a guess: read it first.
        let answer = "Fix calc.py like this:\n```python\ndef f():\n    return 1\n```";
        let (kind, _) = nudge(answer, &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::GuessedChange);
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
    fn an_answer_right_after_a_refused_call_is_not_nudged_to_retry_it() {
        let ws = workspace();
        let looked = Looked {
            last_round_denied: true,
            ..Default::default()
        };
        // Not even for the code it shows: the change was refused.
        let answer = "I could not edit calc.py: ```py\nreturn 1\n```";
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
    fn requests_for_a_change_are_told_from_questions() {
        for asked in [
            "Fix calc.py.",
            "The test suite fails: run python3 test_calc.py, find the bug and fix it.",
            "Run the tests, then update the README",
            "Please rename Usr to User.",
            "Add up the numbers and write the total to total.txt.",
        ] {
            assert!(asks_for_change(asked), "{asked}");
        }
        for question in [
            "What is the timeout set to?",
            "How many rows does data.csv have? Answer with the number.",
            "Which file defines the class that makes invoices?",
            "Read secret.txt and tell me the code word.",
        ] {
            assert!(!asks_for_change(question), "{question}");
        }
    }

    /// Asked for a change, the model read the file and explained the fix
    /// in words: it is told once to make it. A file written by a command
    /// counts as a change, so no nudge then.
    #[test]
    fn a_change_asked_for_and_never_made_is_nudged_once() {
        let ws = workspace();
        let mut looked = Looked {
            change_asked: Some(Snapshot::take(ws.path())),
            ..Looked::default()
        };
        looked.saw(r#"{"path":"calc.py"}"#);
        let answer = "The bug is in calc.py: f should return 1.";
        let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::UnmadeChange);
        assert!(n.contains("no file has changed"), "{n}");
        // calc.py was read: the next turn must change a file.
        assert_eq!(next_turn(kind, answer, &looked, ws.path()), NextTurn::Edit);
        let vague = "Nothing to do.";
        assert_eq!(next_turn(kind, vague, &looked, ws.path()), NextTurn::Call);
        looked.nudged.push(kind);
        assert_eq!(nudge(answer, &looked, ws.path()), None);

        // Running the tests is no change: a command ran, Python wrote its
        // bytecode cache, and the model answered with the fix undone (the
        // demo's failure on the 1.5B model).
        let ws = workspace();
        let mut looked = Looked {
            change_asked: Some(Snapshot::take(ws.path())),
            ..Looked::default()
        };
        looked.saw(r#"{"command":"python3 test_calc.py"}"#);
        looked.saw(r#"{"path":"calc.py"}"#);
        looked.wrote = true;
        std::fs::create_dir(ws.path().join("__pycache__")).unwrap();
        std::fs::write(ws.path().join("__pycache__/calc.cpython-311.pyc"), "x").unwrap();
        let (kind, _) = nudge("The mean divides by n - 1.", &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::UnmadeChange);

        let ws = workspace();
        let looked = Looked {
            change_asked: Some(Snapshot::take(ws.path())),
            ..Looked::default()
        };
        std::fs::write(ws.path().join("total.txt"), "3\n").unwrap();
        assert_eq!(nudge("The total is 3.", &looked, ws.path()), None);
    }

    /// Asked for `count.sh`, the model ran `wc -l` and answered with the
    /// number (the suite's create-line-count-script): it is told to make
    /// the file the request names, with only the tools that write.
    #[test]
    fn a_file_the_request_names_and_nobody_made_is_asked_for_by_name() {
        let ws = workspace();
        let prompt = "Write a bash script count.sh that prints the lines in data.csv.";
        let mut looked = Looked {
            change_asked: Some(Snapshot::take(ws.path())),
            asked_for: asked::missing_names(prompt, ws.path()),
            ..Looked::default()
        };
        looked.saw(r#"{"command":"wc -l < data.csv"}"#);
        looked.wrote = true;
        let answer = "data.csv has 2 lines.";
        let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::MissingFile);
        assert!(n.contains("write_file at the path `count.sh`"), "{n}");
        assert_eq!(next_turn(kind, answer, &looked, ws.path()), NextTurn::Edit);
        // Made somewhere else (`project/count.sh`) it is still missing;
        // made where asked, nothing more is said.
        std::fs::create_dir(ws.path().join("project")).unwrap();
        std::fs::write(ws.path().join("project/count.sh"), "wc -l < data.csv\n").unwrap();
        assert_eq!(
            nudge(answer, &looked, ws.path()).unwrap().0,
            NudgeKind::MissingFile
        );
        std::fs::write(ws.path().join("count.sh"), "wc -l < data.csv\n").unwrap();
        assert_eq!(nudge(answer, &looked, ws.path()), None);
    }

    /// A rename made in one file of three: the places left are listed,
    /// again while they drop, never when nothing moved.
    #[test]
    fn a_rename_with_the_old_name_still_used_is_nudged_while_it_makes_progress() {
        let ws = workspace();
        std::fs::write(ws.path().join("models.py"), "class User:\n    pass\n").unwrap();
        std::fs::write(
            ws.path().join("app.py"),
            "from models import Usr\nu = Usr()\n",
        )
        .unwrap();
        let prompt = "Rename the class Usr to User in every file that uses it.";
        let mut looked = Looked {
            change_asked: Some(Snapshot::take(ws.path())),
            rename: Rename::of(prompt),
            ..Looked::default()
        };
        let (kind, n) = nudge("Renamed.", &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::RenameLeftovers);
        assert!(
            n.contains("`Usr` is still used in 2 places")
                && n.contains("replace_all true")
                && n.contains("app.py:1: from models import Usr\napp.py:2: u = Usr()"),
            "{n}"
        );
        assert_eq!(
            next_turn(kind, "Renamed.", &looked, ws.path()),
            NextTurn::Edit
        );
        looked.nudged.push(kind);
        looked.rename_left = Some(2);
        // No progress: no second nudge of this kind.
        assert_ne!(
            nudge("Renamed.", &looked, ws.path()).map(|(k, _)| k),
            Some(NudgeKind::RenameLeftovers)
        );
        std::fs::write(
            ws.path().join("app.py"),
            "from models import User\nu = Usr()\n",
        )
        .unwrap();
        let (kind, n) = nudge("Renamed.", &looked, ws.path()).unwrap();
        assert_eq!(kind, NudgeKind::RenameLeftovers);
        assert!(n.contains("in 1 place."), "{n}");
        std::fs::write(
            ws.path().join("app.py"),
            "from models import User\nu = User()\n",
        )
        .unwrap();
        assert_eq!(nudge("Renamed.", &looked, ws.path()), None);
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
