//! A small, quoting-aware splitter of `sh -c` lines into simple commands
//! and their words, enough to find the files a hook's command names. It
//! runs nothing and expands only the project-folder variables; anything
//! it does not understand (`$(...)`, globs, other variables) is kept as
//! written, so such a word names no file. Never fails: an unterminated
//! quote ends at the end of the line.

/// The variables a hook (and an MCP server's arguments) may use for the
/// project folder.
const PROJECT_VARS: [&str; 2] = ["REIN_PROJECT_DIR", "CLAUDE_PROJECT_DIR"];

/// `word` with `$REIN_PROJECT_DIR`, `${REIN_PROJECT_DIR}` (and the
/// `CLAUDE_` spellings) replaced by `project`; other text as written.
pub fn expand_project_vars(word: &str, project: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match project_var_len(after) {
            Some(len) => {
                out.push_str(project);
                rest = &after[len..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// How many bytes after a `$` spell a project variable (`NAME` not
/// followed by a name character, or `{NAME}`), if they do.
fn project_var_len(after: &str) -> Option<usize> {
    for name in PROJECT_VARS {
        if let Some(rest) = after.strip_prefix('{')
            && rest.strip_prefix(name).is_some_and(|r| r.starts_with('}'))
        {
            return Some(name.len() + 2);
        }
        if let Some(r) = after.strip_prefix(name)
            && !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            return Some(name.len());
        }
    }
    None
}

/// The simple commands of `line` (split at `;`, `&`, `|`, newlines and
/// parentheses), each as its words with quotes removed and the project
/// variables expanded; redirection targets of `>` are left out (what a
/// command writes is not what it runs), those of `<` kept. At most
/// `max_words` words in all; the second value says whether the line was
/// cut short.
pub fn split(line: &str, project: &str, max_words: usize) -> (Vec<Vec<String>>, bool) {
    let mut s = Splitter {
        commands: Vec::new(),
        current: Vec::new(),
        word: String::new(),
        in_word: false,
        skip_next: false,
        words: 0,
        max_words,
        cut: false,
    };
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if s.cut {
            break;
        }
        match c {
            '\'' => {
                s.in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    s.word.push(q);
                }
            }
            '"' => {
                s.in_word = true;
                let mut raw = String::new();
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => {
                                raw.push_str(if e == '$' { "\u{0}" } else { "" });
                                if e != '$' {
                                    raw.push(e);
                                }
                            }
                            Some('\n') => {}
                            Some(e) => {
                                raw.push('\\');
                                raw.push(e);
                            }
                            None => raw.push('\\'),
                        },
                        other => raw.push(other),
                    }
                }
                // An escaped `$` (held as NUL) is not a variable.
                let expanded = expand_project_vars(&raw, project).replace('\u{0}', "$");
                s.word.push_str(&expanded);
            }
            '\\' => {
                s.in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(e) => s.word.push(e),
                }
            }
            '$' => {
                s.in_word = true;
                let rest: String = chars.clone().take(24).collect();
                match project_var_len(&rest) {
                    Some(len) => {
                        s.word.push_str(project);
                        for _ in 0..len {
                            chars.next();
                        }
                    }
                    None => s.word.push('$'),
                }
            }
            '#' if !s.in_word => {
                // A comment, to the end of the line.
                for q in chars.by_ref() {
                    if q == '\n' {
                        break;
                    }
                }
                s.end_command();
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                if c == '&' && s.word.is_empty() && s.redirect_pending() {
                    // `>&2`: the target follows.
                    continue;
                }
                s.end_command();
            }
            '>' => {
                // `2>file`: the digits were the descriptor, not a word.
                if s.in_word && !s.word.is_empty() && s.word.chars().all(|d| d.is_ascii_digit()) {
                    s.word.clear();
                    s.in_word = false;
                }
                s.end_word();
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                s.skip_next = true;
            }
            '<' => s.end_word(),
            c if c.is_whitespace() => s.end_word(),
            other => {
                s.in_word = true;
                s.word.push(other);
            }
        }
    }
    s.end_command();
    (s.commands, s.cut)
}

struct Splitter {
    commands: Vec<Vec<String>>,
    current: Vec<String>,
    word: String,
    in_word: bool,
    /// The next word is a `>` target.
    skip_next: bool,
    words: usize,
    max_words: usize,
    cut: bool,
}

impl Splitter {
    fn redirect_pending(&self) -> bool {
        self.skip_next
    }

    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.word);
        self.in_word = false;
        if std::mem::take(&mut self.skip_next) {
            return;
        }
        if self.words >= self.max_words {
            self.cut = true;
            return;
        }
        self.words += 1;
        self.current.push(word);
    }

    fn end_command(&mut self) {
        self.end_word();
        self.skip_next = false;
        if !self.current.is_empty() {
            self.commands.push(std::mem::take(&mut self.current));
        }
    }
}
