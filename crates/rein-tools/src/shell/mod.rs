//! Shell command analysis for the permission system.
//!
//! [`parse`] turns a command line into the simple commands it would run
//! (wherever they hide: pipelines, lists, subshells, command and process
//! substitutions, compound commands, function bodies), with quotes removed,
//! so permission rules match the parsed command rather than its raw text.
//! [`classify`] looks at the parsed command and flags the dangerous ones
//! (recursive deletes outside the workspace, device writes, `curl | sh`,
//! history-rewriting git commands, privilege escalation, ...).
//!
//! The parsing itself is done by `brush-parser`, a POSIX/bash parser; this
//! module walks its syntax tree.

use std::fmt;
use std::ops::Range;
use std::path::Path;

mod bounded;
mod classify;
mod git;
mod parse;
mod paths;
mod reach;
mod rules;
mod subjects;
mod words;
mod wrappers;

#[cfg(test)]
mod tests;

pub use paths::expand_home;
pub use reach::may_reach;

/// One simple command found anywhere in a command line: in pipelines, lists
/// (`&&`, `||`, `;`, `&`), subshells `( )`, brace groups `{ }`, command
/// substitutions `$(…)` and `` `…` `` (also those inside double-quoted words
/// and inside assignments), process substitutions `<(…)`, if/while/for/case
/// bodies, function bodies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleCommand {
    /// Words after quote removal: `git "sta"tus` -> `["git", "status"]`.
    /// Leading variable assignments (`FOO=1`) are not in argv (see
    /// `assignments`). Words containing expansions that cannot be known
    /// statically (`$VAR`, `$(…)`, globs) are kept as written (with the
    /// quotes removed) and `dynamic` is set.
    pub argv: Vec<String>,
    /// Leading assignments, `NAME=value` with the quotes removed.
    pub assignments: Vec<String>,
    /// Redirections, in order. Those of an enclosing compound command
    /// (`{ a; b; } > f`) are added to each command inside it.
    pub redirects: Vec<Redirect>,
    /// Some word (in argv or a redirect target) depends on a runtime
    /// expansion.
    pub dynamic: bool,
}

impl SimpleCommand {
    /// argv joined by single spaces (assignments not included): what
    /// permission rules like `bash(git status*)` are matched against.
    pub fn text(&self) -> String {
        self.argv.join(" ")
    }
}

/// One redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub op: RedirectOp,
    /// The file name (quotes removed); for [`RedirectOp::DupFd`] the file
    /// descriptor (`1` in `2>&1`, or `-` to close); for
    /// [`RedirectOp::HereDoc`] the document body; for
    /// [`RedirectOp::HereString`] the string.
    pub target: String,
}

/// The kind of a redirection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirectOp {
    /// `< file`
    Read,
    /// `> file`, `>| file`, `&> file`, `>& file` (a file name, not a number)
    Write,
    /// `>> file`, `&>> file`
    Append,
    /// `<> file`
    ReadWrite,
    /// `2>&1`, `<&3`, `>&-`
    DupFd,
    /// `<< DELIM` / `<<- DELIM`
    HereDoc,
    /// `<<< word`
    HereString,
}

impl RedirectOp {
    /// Whether the redirection may write to its target file.
    pub fn writes(self) -> bool {
        matches!(self, Self::Write | Self::Append | Self::ReadWrite)
    }
}

/// A command line, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParsedCommand {
    /// Every simple command, in the order found. Commands substituted into
    /// another command's words come right after it.
    pub commands: Vec<SimpleCommand>,
    /// The command line defines functions, uses `eval`, `source`/`.`,
    /// `exec`, `trap`, a command name only known at run time, or otherwise
    /// runs code rein cannot see statically.
    pub opaque: bool,
    /// The pipe structure: for each pipeline (also those of a single
    /// stage), the indexes into `commands` of its stages in order. A stage
    /// that is a compound command (`( … )`, `{ … }`, `while …`) is given by
    /// the first simple command inside it; a stage without any (`(( i++ ))`)
    /// is left out.
    pub pipelines: Vec<Vec<usize>>,
    /// Per command, what the classifier needs beyond the public fields.
    pub(crate) meta: Vec<CommandMeta>,
    /// Parallel to `pipelines`: for each stage, every command index inside
    /// it (a compound stage holds several).
    pub(crate) stages: Vec<Vec<Range<usize>>>,
    /// Functions defined by the command line.
    pub(crate) functions: Vec<FunctionDef>,
    /// Some word could not be analysed (it may hide a substitution).
    pub(crate) unanalysed: bool,
}

/// How a word depends on run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Dyn {
    /// Known as written (a leading `~`, `$HOME`, `${HOME}` counts as known).
    #[default]
    Static,
    /// Contains a glob (`*`, `?`, `[…]`): the matches stay in the directory
    /// the pattern names.
    Glob,
    /// Contains a parameter, command or arithmetic expansion, a brace
    /// expansion or a process substitution: anything.
    Runtime,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct CommandMeta {
    /// Per argv word.
    pub(crate) argv_dyn: Vec<Dyn>,
    /// Per redirect.
    pub(crate) redirect_dyn: Vec<Dyn>,
    /// The command whose word, assignment or redirect this one was
    /// substituted into (`$(…)`, `` `…` ``, `<(…)`).
    pub(crate) parent: Option<usize>,
    /// Runs in the background (`&`).
    pub(crate) background: bool,
    /// Is a stage of a pipeline of two or more stages.
    pub(crate) piped: bool,
    /// Runs in a subshell (`( )`, a substitution, a pipeline stage, the
    /// background, a function body): a `cd` there does not last.
    pub(crate) subshell: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FunctionDef {
    pub(crate) name: String,
    /// The commands of its body.
    pub(crate) body: Range<usize>,
}

/// Why a command line could not be parsed. Displays as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellParseError {
    /// The text is not valid shell syntax (`unterminated quote`, ...).
    Syntax(String),
    /// Constructs are nested deeper than the analyser follows.
    TooDeep,
    /// The command line is too large to analyse.
    TooLarge,
}

impl fmt::Display for ShellParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax(m) => f.write_str(m),
            Self::TooDeep => f.write_str("the command is nested too deeply to analyse"),
            Self::TooLarge => f.write_str("the command is too large to analyse"),
        }
    }
}

impl std::error::Error for ShellParseError {}

/// Parse a shell command line (bash syntax).
pub fn parse(command: &str) -> Result<ParsedCommand, ShellParseError> {
    bounded::parse(command)
}

/// How dangerous a command line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum Risk {
    #[default]
    Low,
    High,
}

/// The verdict of [`classify`]: the highest risk found and why.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Danger {
    pub risk: Risk,
    /// Short human phrases, e.g. "recursive delete outside the workspace:
    /// /home/u". Empty when the risk is low.
    pub reasons: Vec<String>,
}

/// What permission rules are matched against for `parsed`: the text of
/// every simple command (argv joined by spaces, as [`SimpleCommand::text`]),
/// and with each, the commands it runs through wrappers and shell code
/// given as text, as the classifier sees them: `sudo`, `env`, `nice`,
/// `nohup`, `timeout`, `time`, `command`, `builtin`, `exec`, `xargs` (its
/// input words shown as `…`), `busybox`, `watch`, `find -exec`, `sh -c`,
/// `bash -c`, `eval`, `trap`, `su -c`, a shell fed a here-document. A
/// program named by a path out of the current folder (`/bin/rm x`,
/// `../bin/rm x`, or any path after the line changes folders) is also given
/// by its base name (`rm x`). Shell code that does not parse is given as its
/// text. No duplicates; in the order found.
///
/// So a deny or ask rule `bash(rm *)` sees `env rm x`, `sh -c 'rm x'` and
/// `/bin/rm x`, and an allow rule must cover every subject (`bash(env *)`
/// alone no longer allows `env rm x`).
pub fn rule_subjects(parsed: &ParsedCommand) -> Vec<String> {
    subjects::rule_subjects(parsed)
}

/// Flag the dangerous commands of `parsed`.
///
/// `workspace` is canonical; `cwd` the directory the command starts in
/// (canonical). Paths in rm/mv/dd/... arguments are resolved against cwd
/// (following `cd DIR` earlier in the same command line), with symlinks
/// resolved where the path exists, and compared against the workspace.
pub fn classify(parsed: &ParsedCommand, workspace: &Path, cwd: &Path) -> Danger {
    classify::classify(parsed, workspace, cwd)
}
