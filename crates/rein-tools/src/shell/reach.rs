//! Whether a command line may reach some paths: every word it holds
//! (arguments, assignments, redirections, the code it hands a shell),
//! resolved as the shell and the file system would resolve it (quotes,
//! `.`, `..`, `//`, `$PWD`, `~`, symlinks, earlier `cd`s, globs), is tested
//! against a predicate. What cannot be known before it runs (an expansion,
//! a command substitution, `eval`, `source`, the files `find -exec` or
//! `xargs` get, a glob with too many matches, code that does not parse)
//! is the safe answer: it may.

use std::path::{Component, Path, PathBuf};

use super::classify::{after_cd, cd_targets, chdir};
use super::paths::{self, real_path};
use super::wrappers::{self, CodeFrom, Invocation};
use super::{Dyn, ParsedCommand, RedirectOp};

/// How deep `sh -c '… sh -c "…"'` is followed.
const MAX_CODE_DEPTH: usize = 4;
/// Most paths a glob is expanded to before it counts as unknown.
const MAX_GLOB_MATCHES: usize = 2_000;

/// Whether running `command` in `cwd` may touch a path for which `hit`
/// is true (it gets absolute paths: as written with `.` and `..` applied,
/// and with symlinks resolved). `Some(why)` when it may.
pub fn may_reach(command: &str, cwd: &Path, hit: &dyn Fn(&Path) -> bool) -> Option<String> {
    let mut walk = Walk { hit, why: None };
    match super::parse(command) {
        Ok(parsed) => walk.line(&parsed, vec![Some(cwd.to_path_buf())], 0),
        Err(e) => walk.unknown(format!("the command cannot be analysed: {e}")),
    }
    walk.why
}

struct Walk<'a> {
    hit: &'a dyn Fn(&Path) -> bool,
    why: Option<String>,
}

impl Walk<'_> {
    fn unknown(&mut self, why: String) {
        self.why.get_or_insert(why);
    }

    fn line(&mut self, parsed: &ParsedCommand, mut cwds: Vec<Option<PathBuf>>, depth: usize) {
        if parsed.opaque || parsed.unanalysed {
            self.unknown("it runs code only known when it runs (eval, source, exec…)".into());
        }
        for (cmd, meta) in parsed.commands.iter().zip(&parsed.meta) {
            if self.why.is_some() {
                return;
            }
            for assignment in &cmd.assignments {
                let value = assignment.split_once('=').map_or("", |(_, v)| v);
                let d = if value.contains(['$', '`']) {
                    Dyn::Runtime
                } else {
                    Dyn::Static
                };
                self.word(value, d, &cwds);
            }
            for inv in wrappers::unwrap(&cmd.argv, &meta.argv_dyn) {
                let inv_cwds = chdir(&inv, &cwds);
                self.invocation(&inv, cmd, &meta.redirect_dyn, &inv_cwds, depth);
                if let Some(new) = cd_targets(&inv, &cwds) {
                    cwds = after_cd(cwds, new, meta.subshell);
                }
            }
            for (r, d) in cmd.redirects.iter().zip(&meta.redirect_dyn) {
                match r.op {
                    RedirectOp::DupFd => {}
                    RedirectOp::HereDoc | RedirectOp::HereString => {
                        self.code("a here-document", &r.target, *d, &cwds, depth)
                    }
                    _ => self.word(&r.target, *d, &cwds),
                }
            }
        }
    }

    fn invocation(
        &mut self,
        inv: &Invocation,
        cmd: &super::SimpleCommand,
        redirect_dyn: &[Dyn],
        cwds: &[Option<PathBuf>],
        depth: usize,
    ) {
        if inv.input_args {
            self.unknown(format!(
                "`{}` takes its arguments from its input",
                inv.name()
            ));
        }
        for (i, word) in inv.argv.iter().enumerate() {
            if word == "{}" {
                self.unknown(format!("`{}` runs on files found when it runs", inv.name()));
            }
            self.word(word, inv.dyn_.get(i).copied().unwrap_or_default(), cwds);
        }
        let name = inv.name();
        match wrappers::code_from(inv) {
            Some(CodeFrom::Arg(code, d)) => self.code(name, &code, d, cwds, depth),
            Some(CodeFrom::Stdin) => {
                for (r, d) in cmd.redirects.iter().zip(redirect_dyn) {
                    if matches!(r.op, RedirectOp::HereDoc | RedirectOp::HereString) {
                        self.code(name, &r.target, *d, cwds, depth);
                    }
                }
            }
            _ => {}
        }
    }

    /// Code given as text: shell code is followed; any other language's
    /// (or code that does not parse) counts by the words in it.
    fn code(&mut self, what: &str, code: &str, d: Dyn, cwds: &[Option<PathBuf>], depth: usize) {
        if d == Dyn::Runtime {
            return self.unknown(format!("{what} gets code only known when it runs"));
        }
        if depth >= MAX_CODE_DEPTH {
            return self.unknown(format!("{what} code nested too deeply to analyse"));
        }
        match super::parse(code) {
            Ok(inner) if wrappers::is_shell(what) || what == "a here-document" => {
                self.line(&inner, cwds.to_vec(), depth + 1)
            }
            _ => {
                for token in code.split(|c: char| {
                    c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | ',' | ';')
                }) {
                    self.word(token, Dyn::Static, cwds);
                }
            }
        }
    }

    /// One word: the whole of it and each part after a `=` or `:`
    /// (`--file=PATH`, `PATH=a:b`).
    fn word(&mut self, word: &str, d: Dyn, cwds: &[Option<PathBuf>]) {
        if word.is_empty() {
            return;
        }
        let parts = std::iter::once(word).chain(word.split(['=', ':']).skip(1));
        for part in parts.filter(|p| !p.is_empty()) {
            for cwd in cwds {
                self.part(part, d, cwd.as_deref());
            }
        }
    }

    fn part(&mut self, part: &str, d: Dyn, cwd: Option<&Path>) {
        let (part, d) = match (cwd, pwd_rest(part)) {
            (Some(dir), Some(rest)) if !rest.contains(['$', '`']) => {
                let d = if super::words::has_glob(rest) {
                    Dyn::Glob
                } else {
                    Dyn::Static
                };
                (format!("{}{rest}", dir.display()), d)
            }
            _ => (part.to_string(), d),
        };
        match d {
            Dyn::Runtime => self.unknown(format!("`{part}` is only known when it runs")),
            Dyn::Glob => self.glob(&part, cwd),
            Dyn::Static => {
                let absolute = match paths::expand_home(&part) {
                    Some(p) => p,
                    None if part.starts_with('/') => PathBuf::from(&part),
                    None => match cwd {
                        Some(dir) => dir.join(&part),
                        None => {
                            return self.unknown(format!(
                                "`{part}` is in a folder only known when it runs"
                            ));
                        }
                    },
                };
                self.path(&absolute, &part);
            }
        }
    }

    /// A path, tested as written (`.` and `..` applied) and resolved.
    fn path(&mut self, absolute: &Path, shown: &str) {
        if self.why.is_some() {
            return;
        }
        if (self.hit)(&paths::lexical(absolute)) || (self.hit)(&real_path(absolute)) {
            self.why = Some(format!("`{shown}`"));
        }
    }

    /// A glob: each path it matches now.
    fn glob(&mut self, pattern: &str, cwd: Option<&Path>) {
        let absolute = match (paths::expand_home(pattern), cwd) {
            (Some(p), _) => p,
            (None, _) if pattern.starts_with('/') => PathBuf::from(pattern),
            (None, Some(dir)) => dir.join(pattern),
            (None, None) => {
                return self.unknown(format!(
                    "`{pattern}` is in a folder only known when it runs"
                ));
            }
        };
        match expand_glob(&absolute) {
            Some(matches) => {
                for m in matches {
                    self.path(&m, pattern);
                }
            }
            None => self.unknown(format!("`{pattern}` matches too many paths to check")),
        }
    }
}

/// What follows `$PWD` or `${PWD}` at the start of a word.
fn pwd_rest(word: &str) -> Option<&str> {
    ["${PWD}", "$PWD"]
        .iter()
        .find_map(|p| word.strip_prefix(p))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The paths `pattern` (absolute) matches, component by component as the
/// shell would (a leading `.` only matched by a pattern that starts with
/// one); `None` past [`MAX_GLOB_MATCHES`].
fn expand_glob(pattern: &Path) -> Option<Vec<PathBuf>> {
    let mut found = vec![PathBuf::from("/")];
    for comp in pattern.components() {
        let Component::Normal(name) = comp else {
            if comp == Component::ParentDir {
                found.iter_mut().for_each(|p| p.push(".."));
            }
            continue;
        };
        let name = name.to_string_lossy();
        if !super::words::has_glob(&name) {
            found.iter_mut().for_each(|p| p.push(name.as_ref()));
            continue;
        }
        let Ok(matcher) = globset::GlobBuilder::new(&name)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| g.compile_matcher())
        else {
            return None;
        };
        let mut next = Vec::new();
        for dir in &found {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let file = entry.file_name();
                let text = file.to_string_lossy();
                if text.starts_with('.') && !name.starts_with('.') {
                    continue;
                }
                if matcher.is_match(text.as_ref()) {
                    next.push(dir.join(&file));
                    if next.len() > MAX_GLOB_MATCHES {
                        return None;
                    }
                }
            }
        }
        found = next;
    }
    Some(found)
}
