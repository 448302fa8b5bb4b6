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
mod tests;
