//! `grep`: search file contents with a regular expression.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::GlobSet;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use rein_core::{
    Assessment, CancellationToken, ReadFence, Tool, ToolAccess, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::beneath::{self, Dir, Kind};
use crate::{fileio, workspace};

mod hints;

/// Most matching lines listed by one call.
pub const MAX_MATCHES: usize = 200;
/// Longest matching line shown, in characters.
pub const MAX_LINE_CHARS: usize = 300;
/// Longest line searched, in bytes (4 MiB): a file with a longer line is
/// skipped with a note, so that one huge line cannot make the search
/// buffer grow without bound.
pub const MAX_SEARCH_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Files named in the note about skipped files.
const MAX_SKIPPED_NAMED: usize = 5;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Regular expression (Rust regex syntax, like ripgrep), matched within single lines.
    pattern: String,
    /// File or folder to search, relative to the workspace. Defaults to the workspace root.
    path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`. A glob without `/` is matched against file names.
    glob: Option<String>,
    /// Ignore letter case. Defaults to false.
    case_insensitive: Option<bool>,
}

/// Searches file contents.
#[derive(Debug, Clone, Copy, Default)]
pub struct Grep {
    /// Say more than the matches (the small profile's grep): see
    /// [`hints`].
    hints: bool,
}

impl Grep {
    /// The grep of the small profile: a search that finds nothing says
    /// which file names match the pattern and which lines hold its words
    /// in any case, and matches across folders are counted per folder
    /// (see [`hints`]).
    pub fn with_hints() -> Grep {
        Grep { hints: true }
    }
}

#[async_trait]
impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: format!(
                "Search file contents with a regular expression (ripgrep syntax) and list \
                 matching lines as `path:line:text`, files in path order. Hidden, ignored \
                 (.gitignore/.ignore) and binary files are skipped, and so are files with a line \
                 longer than {} MiB (named in a note). At most {MAX_MATCHES} matching lines are \
                 listed and lines are cut at {MAX_LINE_CHARS} characters.",
                MAX_SEARCH_LINE_BYTES / (1024 * 1024)
            ),
            parameters: crate::schema_of::<Args>(),
        }
    }

    fn access(&self) -> ToolAccess {
        ToolAccess::Read
    }

    fn touches(&self, args: &Value) -> Vec<std::path::PathBuf> {
        crate::path_arg(args, "path")
    }

    fn assess(&self, args: &Value, ctx: &ToolContext) -> Assessment {
        crate::path_assessment(
            args,
            ctx,
            "path",
            false,
            format!("grep {}", crate::str_arg(args, "pattern")),
        )
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut args: Args = crate::parse_args("grep", args)?;
        let dropped_newline = drop_trailing_newline(&mut args.pattern);
        let matcher = build_matcher(&args.pattern, args.case_insensitive.unwrap_or(false))?;
        let root = workspace::resolve_or_root_for_read(&ctx, args.path.as_deref())?;
        let shown_root = workspace::display(&ctx.workspace, &root);
        let meta = std::fs::metadata(&root)
            .map_err(|_| ToolError::new(format!("`{shown_root}` does not exist")))?;
        // Every file is opened beneath the handle of the root the search
        // lies in, never by name: a folder swapped for a symlink while the
        // walk runs cannot make it read outside.
        let base = fileio::anchor(&ctx, &root, false)?;
        let filter = match args.glob.as_deref().map(str::trim) {
            Some(g) if !g.is_empty() => Some(crate::glob::build_globset(g)?),
            _ => None,
        };
        let single_file = meta.is_file();
        let job = Job {
            workspace: ctx.workspace.clone(),
            base: base.dir,
            base_path: base.root,
            root,
            single_file,
            filter,
            matcher,
            cancel: ctx.cancel.clone(),
            fence: ReadFence::new(&ctx.sandbox, &ctx.workspace, &ctx.read_roots),
        };
        let (hints, pattern) = (self.hints, args.pattern.clone());
        let case_insensitive = args.case_insensitive.unwrap_or(false);
        let (report, near) = tokio::task::spawn_blocking(move || {
            let report = job.search(&job.matcher);
            let near = (hints && report.total == 0 && !job.single_file)
                .then(|| job.near_misses(&pattern, case_insensitive));
            (report, near)
        })
        .await
        .map_err(|e| ToolError::new(format!("the search failed: {e}")))?;
        let found_none = report.total == 0;
        let per_folder = match hints {
            true => hints::per_folder(&report.lines, report.total),
            false => None,
        };
        let mut out = report.render(&args.pattern, &shown_root);
        match near.filter(|n| !n.is_empty()) {
            Some(near) => out.push_str(&near.render(&args.pattern)),
            // A small model greps for `py$` to find Python files, finds
            // nothing and answers that there are none.
            None if found_none && !single_file => {
                out.push_str(" grep searches what files contain; glob finds files by name.")
            }
            None => {}
        }
        out.extend(per_folder);
        if dropped_newline {
            out.push_str(
                "\n[The pattern's trailing \\n was dropped: lines are matched one at a time.]",
            );
        }
        Ok(ToolOutput::ok(out))
    }
}

/// The lines of the workspace's files (a folder search, as grep makes
/// one) that hold `word` in any case, at most `most`: for a hint in
/// another tool's error.
pub(crate) async fn lines_holding(ctx: &ToolContext, word: &str, most: usize) -> Vec<String> {
    let root = ctx.workspace.clone();
    let (Ok(base), Ok(matcher)) = (
        fileio::anchor(ctx, &root, false),
        build_matcher(&regex::escape(word), true),
    ) else {
        return Vec::new();
    };
    let job = Job {
        workspace: ctx.workspace.clone(),
        base: base.dir,
        base_path: base.root,
        root,
        single_file: false,
        filter: None,
        matcher,
        cancel: ctx.cancel.clone(),
        fence: ReadFence::new(&ctx.sandbox, &ctx.workspace, &ctx.read_roots),
    };
    let found = tokio::task::spawn_blocking(move || job.search(&job.matcher).lines).await;
    found.unwrap_or_default().into_iter().take(most).collect()
}

/// Drop a newline ending `pattern` (`\n` written out, or the
/// character; `\r\n` too), which a search matched within single lines
/// refuses: small models end their strings with one out of habit, and
/// the line's end is not what they meant (`TODO\n` for the lines with a
/// TODO). Whether there was one.
fn drop_trailing_newline(pattern: &mut String) -> bool {
    let given = pattern.clone();
    let escaped = |p: &str, what: &str| p.ends_with(what) && !p.ends_with(&format!("\\{what}"));
    let cut = if escaped(pattern, "\\n") {
        2
    } else if pattern.ends_with('\n') {
        1
    } else {
        return false;
    };
    pattern.truncate(pattern.len() - cut);
    if escaped(pattern, "\\r") {
        pattern.truncate(pattern.len() - 2);
    } else if pattern.ends_with('\r') {
        pattern.pop();
    }
    if pattern.is_empty() {
        // Only a newline: nothing left to search for; refused as before.
        *pattern = given;
        return false;
    }
    true
}

fn build_matcher(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, ToolError> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            let msg = e.to_string();
            let msg = msg.trim();
            ToolError::new(format!("invalid regex `{pattern}`: {msg}"))
        })
}

struct Job {
    workspace: PathBuf,
    /// The handle of the workspace (or read root) the search lies in, and
    /// its path.
    base: Dir,
    base_path: PathBuf,
    root: PathBuf,
    single_file: bool,
    filter: Option<GlobSet>,
    matcher: RegexMatcher,
    cancel: CancellationToken,
    /// What the walk never enters.
    fence: ReadFence,
}

#[derive(Debug, Default)]
struct Report {
    lines: Vec<String>,
    total: usize,
    files: usize,
    /// Files with matches beyond those listed.
    files_not_listed: usize,
    /// Files not searched (a line too long, a read error), shown paths.
    skipped: Vec<String>,
}

impl Job {
    /// The lines `matcher` matches in the files of the search.
    fn search(&self, matcher: &RegexMatcher) -> Report {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .heap_limit(Some(MAX_SEARCH_LINE_BYTES))
            .build();
        let mut report = Report::default();
        if self.single_file {
            self.search_file(&mut searcher, matcher, &self.root, &mut report);
            return report;
        }
        for path in self.files() {
            self.search_file(&mut searcher, matcher, &path, &mut report);
        }
        report
    }

    /// The files of a folder search, in path order: not hidden, ignored
    /// or fenced off, and matching the glob if one was given.
    fn files(&self) -> impl Iterator<Item = PathBuf> + '_ {
        crate::walk::walker(&self.root, self.fence.clone())
            .take_while(|_| !self.cancel.is_cancelled())
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter(|entry| {
                let rel = entry
                    .path()
                    .strip_prefix(&self.root)
                    .unwrap_or(entry.path());
                self.filter.as_ref().is_none_or(|f| f.is_match(rel))
            })
            .map(ignore::DirEntry::into_path)
    }

    fn search_file(
        &self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        path: &Path,
        report: &mut Report,
    ) {
        let shown = workspace::display(&self.workspace, path);
        let Ok(rel) = path.strip_prefix(&self.base_path) else {
            return;
        };
        // Gone, unreadable, or a symlink swapped in on its path: skipped
        // without a word, since the name itself may come from outside (the
        // walk lists folders by name).
        let Ok(file) = self.base.open_read(rel) else {
            return;
        };
        if beneath::stat_file(&file).map_or(true, |m| m.kind != Kind::File) {
            return;
        }
        let mut in_file = 0usize;
        let mut listed_here = 0usize;
        let mut lines = Vec::new();
        let sink = Lossy(|number, line: &str| {
            in_file += 1;
            if report.lines.len() + lines.len() < MAX_MATCHES {
                let line = line.trim_end_matches(['\n', '\r']);
                lines.push(format!("{shown}:{number}:{}", cut_line(line)));
                listed_here += 1;
            }
            Ok(true)
        });
        if searcher.search_file(matcher, &file, sink).is_err() {
            // A line longer than the search buffer may grow to, or a read
            // error: the file is skipped, with a note, like ripgrep warns.
            report.skipped.push(shown);
            return;
        }
        report.lines.extend(lines);
        if in_file > 0 {
            report.total += in_file;
            report.files += 1;
            if listed_here < in_file {
                report.files_not_listed += 1;
            }
        }
    }
}

impl Report {
    fn render(self, pattern: &str, shown_root: &str) -> String {
        let note = self.skipped_note();
        if self.total == 0 {
            return format!("No matches for `{pattern}` in `{shown_root}`.{note}");
        }
        let mut out = self.lines.join("\n");
        if self.total > self.lines.len() {
            out.push_str(&format!(
                "\n[{} of {} matching lines shown; {} more in {} file{}. Narrow the pattern, \
                 path or glob to see them.]",
                self.lines.len(),
                self.total,
                self.total - self.lines.len(),
                self.files_not_listed,
                if self.files_not_listed == 1 { "" } else { "s" }
            ));
        }
        out.push_str(&note);
        out
    }

    /// A line naming the files that were not searched, if any.
    fn skipped_note(&self) -> String {
        if self.skipped.is_empty() {
            return String::new();
        }
        let n = self.skipped.len();
        let mut names: Vec<&str> = self
            .skipped
            .iter()
            .take(MAX_SKIPPED_NAMED)
            .map(String::as_str)
            .collect();
        if n > MAX_SKIPPED_NAMED {
            names.push("…");
        }
        format!(
            "\n[{n} file{} not searched (a line longer than {} MiB, or a read error): {}]",
            if n == 1 { "" } else { "s" },
            MAX_SEARCH_LINE_BYTES / (1024 * 1024),
            names.join(", ")
        )
    }
}

fn cut_line(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((i, _)) => format!("{}… [line cut]", &line[..i]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newline_ending_a_pattern_is_dropped() {
        for (given, read, rewritten) in [
            ("TODO\\n", "TODO", true),
            ("TODO\n", "TODO", true),
            ("x\\r\\n", "x", true),
            ("\\n", "\\n", false),
            ("\r\n", "\r\n", false),
            ("a\\\\n", "a\\\\n", false), // a backslash, then n
            ("a\\nb", "a\\nb", false),
            ("TODO", "TODO", false),
        ] {
            let mut p = given.to_string();
            assert_eq!(drop_trailing_newline(&mut p), rewritten, "{given}");
            assert_eq!(p, read, "{given}");
        }
    }

    #[test]
    fn invalid_regex_error_carries_the_regex_message() {
        let Err(e) = build_matcher("foo(", false) else {
            panic!("expected an error");
        };
        assert!(e.to_string().starts_with("invalid regex `foo(`:"), "{e}");
        assert!(e.to_string().contains("unclosed group"), "{e}");
    }

    #[test]
    fn long_lines_are_cut() {
        let line = "x".repeat(MAX_LINE_CHARS + 5);
        assert!(cut_line(&line).ends_with("… [line cut]"));
        assert_eq!(cut_line("short"), "short");
    }
}
