//! A strict reader of git config files, for one question: does this config
//! set anything outside the short list of keys that cannot make git run a
//! program (or point it somewhere else)?
//!
//! It reads the plain format git itself writes (`[section]`,
//! `[section "sub"]`, `key = value`, comments, quoted values). Anything it
//! does not understand makes the whole file unsafe: reading less than git
//! would is the safe side, reading differently is not possible when every
//! odd line is refused.

/// Keys that cannot make git run a program or reach outside: what `git
/// init`, `git clone`, `git remote add`, `git branch -u`, `git submodule
/// init` and `git config user.*` write. `*` stands for one subsection.
const SAFE: [&str; 30] = [
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "extensions.objectformat",
    "extensions.refstorage",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.mirror",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "submodule.*.url",
    "submodule.*.active",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "push.default",
];

/// One setting: `section[.subsection].key` (section and key lower-cased,
/// the subsection as written) and its value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub section: String,
    pub sub: Option<String>,
    pub key: String,
    pub value: String,
}

impl Entry {
    /// Whether this setting is on the safe list, with a value that cannot
    /// run anything (URLs: no `ext::` or `fd::` transport, no option).
    pub fn is_safe(&self) -> bool {
        let name = match &self.sub {
            Some(_) => format!("{}.*.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        };
        if !SAFE.contains(&name.as_str()) {
            return false;
        }
        if self.key == "url" || self.key == "pushurl" {
            let v = self.value.trim().to_ascii_lowercase();
            return !(v.starts_with("ext::") || v.starts_with("fd::") || v.starts_with('-'));
        }
        true
    }

    /// `section.sub.key=value`, for messages.
    pub fn name(&self) -> String {
        match &self.sub {
            Some(s) => format!("{}.{s}.{}", self.section, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// The settings of a config file's text, or `None` when any line is not
/// plainly understood.
pub fn parse(text: &str) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    for raw in text.split('\n') {
        let line = raw
            .strip_suffix('\r')
            .unwrap_or(raw)
            .trim_matches([' ', '\t']);
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            section = Some(header(rest)?);
            continue;
        }
        let (sec, sub) = section.clone()?;
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim_matches([' ', '\t']), value(v)?),
            // A bare key is boolean true.
            None => (line, "true".to_string()),
        };
        if !is_name(key) {
            return None;
        }
        entries.push(Entry {
            section: sec,
            sub,
            key: key.to_ascii_lowercase(),
            value,
        });
    }
    Some(entries)
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// `section]` or `section "sub"]` (the `[` already taken), nothing after.
fn header(rest: &str) -> Option<(String, Option<String>)> {
    let body = rest.strip_suffix(']')?;
    let (name, sub) = match body.split_once(' ') {
        None => (body, None),
        Some((name, quoted)) => {
            let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
            // Escapes and quotes inside a subsection: refused, not guessed.
            if inner.contains(['"', '\\', '\n']) {
                return None;
            }
            (name, Some(inner.to_string()))
        }
    };
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') || name.is_empty() {
        // `[section.sub]` (the old form) and anything stranger.
        return None;
    }
    Some((name.to_ascii_lowercase(), sub))
}

/// A value after `=`: plain text, or double-quoted parts with the escapes
/// git writes; a trailing comment ends it; a line continuation is refused.
fn value(v: &str) -> Option<String> {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = v.trim_start_matches([' ', '\t']).chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next()? {
                '"' => out.push('"'),
                '\\' => out.push('\\'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'b' => out.push('\u{8}'),
                _ => return None,
            },
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    if quoted {
        return None;
    }
    Some(out.trim_end_matches([' ', '\t']).to_string())
}

/// The settings of `new` that are not safe and were not already in `old`
/// (same name and value), by name; `None` when `new` cannot be read. A
/// config the user had with, say, an alias keeps working when a command
/// adds a remote; a command that adds `core.fsmonitor` does not.
pub fn unsafe_additions(old: Option<&str>, new: &str) -> Option<Vec<String>> {
    let new = parse(new)?;
    let old = old.and_then(parse).unwrap_or_default();
    let mut names: Vec<String> = new
        .iter()
        .filter(|e| !e.is_safe() && !old.contains(e))
        .map(Entry::name)
        .collect();
    names.dedup();
    Some(names)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const INIT: &str = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";

    #[test]
    fn what_git_init_and_remote_add_write_is_safe() {
        let text = format!(
            "{INIT}[remote \"origin\"]\n\turl = https://example.invalid/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
             [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = \"A \\\"B\\\" C\"\n\temail = a@b\n"
        );
        assert_eq!(unsafe_additions(None, &text), Some(vec![]));
        let e = parse(&text).unwrap();
        assert!(e.iter().any(|e| e.value == "A \"B\" C"), "{e:?}");
    }

    #[test]
    fn commands_hooks_and_odd_syntax_are_unsafe() {
        for (add, name) in [
            ("[core]\n\tfsmonitor = touch /pwned\n", "core.fsmonitor"),
            ("[core]\n\thooksPath = /tmp/h\n", "core.hookspath"),
            ("[CORE]\n\tPager = evil\n", "core.pager"),
            ("[alias]\n\tst = !sh -c x\n", "alias.st"),
            ("[remote \"o\"]\n\turl = ext::sh -c evil\n", "remote.o.url"),
            (
                "[remote \"o\"]\n\tuploadpack = evil\n",
                "remote.o.uploadpack",
            ),
            ("[include]\n\tpath = /tmp/x\n", "include.path"),
            ("[filter \"lfs\"]\n\tclean = evil\n", "filter.lfs.clean"),
            ("[core]\n\tfsmonitor\n", "core.fsmonitor"),
        ] {
            let text = format!("{INIT}{add}");
            assert_eq!(
                unsafe_additions(Some(INIT), &text),
                Some(vec![name.to_string()]),
                "{add}"
            );
        }
        for odd in [
            "[core] fsmonitor = x\n",
            "[core.x]\n\ta = b\n",
            "[core]\n\tfsmonitor = a\\\n b\n",
            "[remote \"a\\\"b\"]\n\turl = x\n",
            "key = before any section\n",
            "[core]\n\tfs.monitor = x\n",
            "[core]\n\ta = \"unclosed\n",
        ] {
            assert_eq!(unsafe_additions(None, odd), None, "{odd:?}");
        }
    }

    #[test]
    fn settings_the_user_already_had_stay_allowed() {
        let old = format!("{INIT}[alias]\n\tco = checkout\n");
        let new = format!("{old}[remote \"origin\"]\n\turl = /srv/repo\n");
        assert_eq!(unsafe_additions(Some(&old), &new), Some(vec![]));
        let changed = old.replace("checkout", "!evil");
        assert_eq!(
            unsafe_additions(Some(&old), &changed),
            Some(vec!["alias.co".to_string()])
        );
    }
}
