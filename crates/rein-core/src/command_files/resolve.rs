//! Which workspace files the words of one command name: plain words,
//! `--flag=VALUE` values, and what `python -m`, `make`, the node package
//! managers and `sh -c` read besides their arguments.

use std::path::{Component, Path, PathBuf};

use super::{MAX_FILES, MAX_LINE, MAX_WORDS, words};

/// How deep `sh -c` inside `sh -c` (or a package script) is followed.
const MAX_DEPTH: usize = 3;
/// Most bytes of a `package.json` read for its scripts.
const MAX_PACKAGE_JSON: u64 = 1024 * 1024;
/// Most parts of a dotted module name.
const MAX_MODULE_PARTS: usize = 16;

/// Wrappers that run the rest of their words as a command.
const WRAPPERS: [&str; 6] = ["exec", "command", "nohup", "env", "time", "nice"];

pub(super) struct Resolver<'a> {
    workspace: &'a Path,
    project: String,
    files: Vec<PathBuf>,
    pub(super) complete: bool,
}

impl<'a> Resolver<'a> {
    pub(super) fn new(workspace: &'a Path) -> Resolver<'a> {
        Resolver {
            workspace,
            project: workspace.to_string_lossy().into_owned(),
            files: Vec::new(),
            complete: true,
        }
    }

    pub(super) fn finish(self) -> super::NamedFiles {
        super::NamedFiles {
            files: self.files,
            complete: self.complete,
        }
    }

    /// Every simple command of a shell line, a `cd` moving where the later
    /// ones look.
    pub(super) fn shell(&mut self, line: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.complete = false;
            return;
        }
        let text = match line.char_indices().nth(MAX_LINE) {
            Some((cut, _)) => {
                self.complete = false;
                &line[..cut]
            }
            None => line,
        };
        let (commands, cut) = words::split(text, &self.project, MAX_WORDS);
        self.complete &= !cut;
        let mut base = self.workspace.to_path_buf();
        for words in commands {
            if words.first().map(String::as_str) == Some("cd") {
                base = match words.get(1) {
                    Some(dir) => self.inside(&base.join(dir)).unwrap_or(base),
                    None => self.workspace.to_path_buf(),
                };
                continue;
            }
            self.command_in(&words, &base, depth);
        }
    }

    /// One command given as its words, looked up from the workspace.
    pub(super) fn command(&mut self, words: &[String], depth: usize) {
        let base = self.workspace.to_path_buf();
        self.command_in(words, &base, depth);
    }

    fn command_in(&mut self, words: &[String], base: &Path, depth: usize) {
        for word in words {
            self.word(word, base);
        }
        // The program: past `VAR=value` assignments and wrappers.
        let mut rest = words;
        while let Some((first, tail)) = rest.split_first() {
            let name = program_name(first);
            if is_assignment(first) || WRAPPERS.contains(&name) || name.starts_with('-') {
                rest = tail;
            } else {
                break;
            }
        }
        let Some((program, args)) = rest.split_first() else {
            return;
        };
        let name = program_name(program);
        if name.starts_with("python") || name.starts_with("pypy") {
            self.python(args, base);
        } else if name == "make" || name == "gmake" {
            self.make(args, base);
        } else if matches!(name, "npm" | "yarn" | "pnpm") {
            self.package_manager(name, args, base, depth);
        } else if matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh")
            && let Some(at) = args.iter().position(|a| a == "-c" || is_short_with(a, 'c'))
            && let Some(line) = args.get(at + 1)
        {
            self.shell(line, depth + 1);
        }
    }

    /// A word and, for `--flag=VALUE` or `NAME=VALUE`, its value.
    fn word(&mut self, word: &str, base: &Path) {
        self.file(word, base);
        if let Some((_, value)) = word.split_once('=') {
            self.file(value, base);
        }
        // A folder run as a program (`python3 pkg`) runs its `__main__.py`.
        if let Some(dir) = self.inside(&base.join(word))
            && dir.is_dir()
        {
            self.file("__main__.py", &dir);
        }
    }

    /// `python [-I ...] -m NAME`: the module's files and its packages'
    /// `__init__.py`, looked up in `base` (the working folder, the first
    /// place Python looks).
    fn python(&mut self, args: &[String], base: &Path) {
        let mut module = None;
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "-m" {
                module = it.next().cloned();
                break;
            }
            if let Some(m) = a.strip_prefix("-m").filter(|m| !m.is_empty()) {
                module = Some(m.to_string());
                break;
            }
            if a == "-c" || !a.starts_with('-') {
                // Code or a script: what follows are its arguments.
                break;
            }
        }
        let Some(module) = module else { return };
        let parts: Vec<&str> = module.split('.').collect();
        if parts.len() > MAX_MODULE_PARTS
            || parts
                .iter()
                .any(|p| p.is_empty() || !p.chars().all(|c| c.is_alphanumeric() || c == '_'))
        {
            return;
        }
        let mut dir = base.to_path_buf();
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if !last {
                dir.push(part);
                self.file("__init__.py", &dir);
                continue;
            }
            for name in [format!("{part}.py"), format!("{part}.pyc")] {
                self.file(&name, &dir);
            }
            let pkg = dir.join(part);
            self.file("__init__.py", &pkg);
            self.file("__main__.py", &pkg);
        }
    }

    /// `make [-C DIR]... [-f FILE]...`: the makefiles it reads.
    fn make(&mut self, args: &[String], base: &Path) {
        let mut dir = base.to_path_buf();
        let mut named = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let value = |flag: &str, long: &[&str], it: &mut std::slice::Iter<'_, String>| {
                if a == flag || long.contains(&a.as_str()) {
                    return it.next().cloned();
                }
                if let Some(v) = a.strip_prefix(flag).filter(|v| !v.is_empty()) {
                    return Some(v.to_string());
                }
                long.iter()
                    .find_map(|l| a.strip_prefix(&format!("{l}=")).map(str::to_string))
            };
            if let Some(d) = value("-C", &["--directory"], &mut it) {
                dir = dir.join(d);
            } else if let Some(f) = value("-f", &["--file", "--makefile"], &mut it) {
                named.push(f);
            }
        }
        if named.is_empty() {
            for name in ["GNUmakefile", "makefile", "Makefile"] {
                self.file(name, &dir);
            }
        }
        for f in named {
            self.file(&f, &dir);
        }
    }

    /// `npm run NAME` / `npm start` / `yarn NAME` / `pnpm NAME`: the
    /// `package.json` of the project folder (`--prefix`, `-C`, `--dir`,
    /// `--cwd`) and what the script it runs names.
    fn package_manager(&mut self, tool: &str, args: &[String], base: &Path, depth: usize) {
        let mut dir = base.to_path_buf();
        let mut positional = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if matches!(a.as_str(), "--prefix" | "-C" | "--dir" | "--cwd") {
                if let Some(d) = it.next() {
                    dir = dir.join(d);
                }
            } else if let Some((flag, d)) = a.split_once('=')
                && matches!(flag, "--prefix" | "--dir" | "--cwd")
            {
                dir = dir.join(d);
            } else if !a.starts_with('-') {
                positional.push(a.as_str());
            }
        }
        let Some(manifest) = self.file("package.json", &dir) else {
            return;
        };
        let script = match positional.as_slice() {
            ["run" | "run-script", name, ..] => Some(*name),
            [verb @ ("start" | "test" | "stop" | "restart"), ..] => Some(*verb),
            [name, ..] if tool != "npm" && !matches!(*name, "exec" | "dlx" | "install") => {
                Some(*name)
            }
            _ => None,
        };
        let Some(script) = script else { return };
        let Some(scripts) = read_scripts(&manifest) else {
            return;
        };
        for name in [
            format!("pre{script}"),
            script.to_string(),
            format!("post{script}"),
        ] {
            if let Some(line) = scripts.get(&name).and_then(|v| v.as_str()) {
                // Scripts run in the package's folder.
                let line = format!("cd {} && {line}", shell_quote(&dir));
                self.shell(&line, depth + 1);
            }
        }
    }

    /// Add `word` (relative to `base`) when it is a regular file inside the
    /// workspace; the file's canonical path.
    fn file(&mut self, word: &str, base: &Path) -> Option<PathBuf> {
        if word.is_empty() || word.len() > 4096 || word.contains('\0') {
            return None;
        }
        let real = self.inside(&base.join(word))?;
        if !std::fs::metadata(&real).is_ok_and(|m| m.is_file()) {
            return None;
        }
        if !self.files.contains(&real) {
            if self.files.len() >= MAX_FILES {
                self.complete = false;
                return None;
            }
            self.files.push(real.clone());
        }
        Some(real)
    }

    /// `path` with symlinks resolved, when it exists inside the workspace.
    fn inside(&self, path: &Path) -> Option<PathBuf> {
        // Cheap lexical screen first: most words are not paths at all.
        if path
            .components()
            .any(|c| matches!(c, Component::Normal(n) if n.len() > 255))
        {
            return None;
        }
        std::fs::symlink_metadata(path).ok()?;
        let real = std::fs::canonicalize(path).ok()?;
        real.starts_with(self.workspace).then_some(real)
    }
}

/// The `scripts` object of a `package.json`, read bounded.
fn read_scripts(path: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_PACKAGE_JSON).read_to_string(&mut text).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    match value.get("scripts")? {
        serde_json::Value::Object(map) => Some(map.clone()),
        _ => None,
    }
}

/// `path` quoted for the splitter.
fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', "'\\''"))
}

/// The last part of a program's path (`/usr/bin/python3` → `python3`).
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `NAME=value`, as the shell reads it before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `-xc`: a cluster of short options that includes `letter`.
fn is_short_with(word: &str, letter: char) -> bool {
    word.strip_prefix('-').is_some_and(|rest| {
        !rest.starts_with('-')
            && !rest.is_empty()
            && rest.chars().all(|c| c.is_ascii_alphabetic())
            && rest.contains(letter)
    })
}
