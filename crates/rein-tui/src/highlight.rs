//! Syntax highlighting for code blocks: a small lexer per language family,
//! chosen by the fence tag. It only tells keywords, strings, comments,
//! numbers, type names and function names apart; that is enough to make
//! code readable in a terminal, and it is fast and never fails: unknown
//! languages and odd input come out as plain code text.

use crate::theme::{Role, Theme};
use ratatui::text::{Line, Span};

mod html;
mod langs;

use html::{HState, html_line};
use langs::{Spec, Tick, spec_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    Python,
    Js,
    Ts,
    Go,
    C,
    Cpp,
    Java,
    Sh,
    Json,
    Toml,
    Yaml,
    Sql,
    Diff,
    Html,
}

fn lang_of(tag: &str) -> Option<Lang> {
    use Lang::*;
    Some(match tag.trim().to_ascii_lowercase().as_str() {
        "rust" | "rs" => Rust,
        "python" | "py" | "python3" => Python,
        "javascript" | "js" | "jsx" | "mjs" | "cjs" => Js,
        "typescript" | "ts" | "tsx" => Ts,
        "go" | "golang" => Go,
        "c" => C,
        "cpp" | "c++" | "cc" | "cxx" | "h" | "hpp" => Cpp,
        "java" => Java,
        "sh" | "bash" | "shell" | "zsh" | "console" => Sh,
        "json" | "jsonc" => Json,
        "toml" => Toml,
        "yaml" | "yml" => Yaml,
        "sql" => Sql,
        "diff" | "patch" => Diff,
        "html" | "htm" | "xml" | "svg" => Html,
        _ => return None,
    })
}

/// Whether `highlight` knows the language of this fence tag.
pub fn language_known(lang: &str) -> bool {
    lang_of(lang).is_some()
}

/// One source line made safe to draw: tabs become 4 spaces, other control
/// characters are dropped.
pub(crate) fn clean_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\t' {
            out.push_str("    ");
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// Highlights `code` as language `lang` (a fence tag): one line per source
/// line, tabs expanded.
pub fn highlight(code: &str, lang: &str, theme: &Theme) -> Vec<Line<'static>> {
    let lines: Vec<Vec<char>> = code
        .lines()
        .map(|l| clean_line(l).chars().collect())
        .collect();
    let spans: Vec<Vec<(Role, String)>> = match lang_of(lang) {
        None => lines
            .iter()
            .map(|l| vec![(Role::CodeBlock, l.iter().collect())])
            .collect(),
        Some(Lang::Diff) => {
            let roles = crate::diff::line_roles(code);
            lines
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    let role = match roles.get(i) {
                        Some(Role::Text) | None => Role::CodeBlock,
                        Some(r) => *r,
                    };
                    vec![(role, l.iter().collect())]
                })
                .collect()
        }
        Some(Lang::Html) => {
            let mut st = HState::Text;
            lines.iter().map(|l| html_line(l, &mut st)).collect()
        }
        Some(lang) => {
            let mut lx = Lexer {
                lang,
                spec: spec_of(lang),
                state: State::Normal,
                after_def: None,
                str_start: None,
            };
            lines.iter().map(|l| lx.line(l)).collect()
        }
    };
    spans.into_iter().map(|s| to_line(s, theme)).collect()
}

fn to_line(spans: Vec<(Role, String)>, theme: &Theme) -> Line<'static> {
    let mut merged: Vec<(Role, String)> = Vec::new();
    for (role, text) in spans {
        if text.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((r, t)) if *r == role => t.push_str(&text),
            _ => merged.push((role, text)),
        }
    }
    Line::from(
        merged
            .into_iter()
            .map(|(r, t)| Span::styled(t, theme.style(r)))
            .collect::<Vec<_>>(),
    )
}

#[derive(Default)]
struct Out {
    spans: Vec<(Role, String)>,
}

impl Out {
    fn push(&mut self, role: Role, chars: &[char]) {
        self.spans.push((role, chars.iter().collect()));
    }
}

fn starts(c: &[char], i: usize, pat: &str) -> bool {
    pat.chars()
        .enumerate()
        .all(|(k, p)| c.get(i + k) == Some(&p))
}

/// The end of the run of chars from `i` that satisfy `f`.
fn run(c: &[char], i: usize, f: impl Fn(char) -> bool) -> usize {
    let mut j = i;
    while j < c.len() && f(c[j]) {
        j += 1;
    }
    j
}

/// What carries over from one line to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Normal,
    Block(u32),
    Str {
        close: Vec<char>,
        escapes: bool,
        multiline: bool,
    },
}

/// Keywords that name what follows: a function or a type.
const DEF_WORDS: &str = "fn def func function";
const TYPE_WORDS: &str = "class struct enum trait interface type union";

struct Lexer {
    lang: Lang,
    spec: &'static Spec,
    state: State,
    /// The role of the name that follows the previous token (`fn x`).
    after_def: Option<Role>,
    /// Index in this line's output where the open string started.
    str_start: Option<usize>,
}

fn is_ident_start(c: char, lang: Lang) -> bool {
    c.is_alphabetic() || c == '_' || (c == '$' && matches!(lang, Lang::Js | Lang::Ts))
}

fn is_ident_char(c: char, lang: Lang) -> bool {
    c.is_alphanumeric() || c == '_' || (c == '$' && matches!(lang, Lang::Js | Lang::Ts))
}

impl Lexer {
    fn line(&mut self, c: &[char]) -> Vec<(Role, String)> {
        let mut out = Out::default();
        self.str_start = None;
        self.after_def = None;
        let mut i = 0;
        if self.state == State::Normal {
            i = self.line_start(c, &mut out);
        }
        while i < c.len() {
            let j = self.step(c, i, &mut out);
            i = if j > i {
                j
            } else {
                out.push(Role::CodeBlock, &c[i..i + 1]);
                i + 1
            };
        }
        if let State::Str {
            multiline: false, ..
        } = self.state
        {
            self.state = State::Normal;
        }
        out.spans
    }

    fn step(&mut self, c: &[char], i: usize, out: &mut Out) -> usize {
        match self.state.clone() {
            State::Normal => self.normal(c, i, out),
            State::Block(depth) => {
                let (open, close) = self.spec.block.unwrap_or(("/*", "*/"));
                let mut depth = depth;
                let mut j = i;
                while j < c.len() {
                    if starts(c, j, close) {
                        j += close.chars().count();
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    } else if self.spec.nested && starts(c, j, open) {
                        j += open.chars().count();
                        depth += 1;
                    } else {
                        j += 1;
                    }
                }
                let j = j.min(c.len());
                out.push(Role::Comment, &c[i..j]);
                self.state = if depth == 0 {
                    State::Normal
                } else {
                    State::Block(depth)
                };
                j
            }
            State::Str { close, escapes, .. } => {
                let mut j = i;
                let mut closed = false;
                while j < c.len() {
                    if escapes && c[j] == '\\' {
                        j += 2;
                    } else if !close.is_empty() && c[j..].starts_with(&close) {
                        j += close.len();
                        closed = true;
                        break;
                    } else {
                        j += 1;
                    }
                }
                let j = j.min(c.len());
                out.push(Role::StringLit, &c[i..j]);
                if closed {
                    self.state = State::Normal;
                    self.mark_key(c, j, out);
                }
                j
            }
        }
    }

    /// A JSON or YAML string followed by `:` is a key.
    fn mark_key(&mut self, c: &[char], j: usize, out: &mut Out) {
        if let Some(start) = self.str_start.take() {
            let k = run(c, j, char::is_whitespace);
            if matches!(self.lang, Lang::Json | Lang::Yaml) && c.get(k) == Some(&':') {
                for s in out.spans.iter_mut().skip(start) {
                    s.0 = Role::Function;
                }
            }
        }
    }

    fn open_string(
        &mut self,
        c: &[char],
        start: usize,
        q: usize,
        escapes: bool,
        out: &mut Out,
    ) -> usize {
        let qc = c[q];
        let triple = self.spec.triple && c.get(q + 1) == Some(&qc) && c.get(q + 2) == Some(&qc);
        let (close, multiline) = if triple {
            (vec![qc; 3], true)
        } else if qc == '`' {
            (vec![qc], true)
        } else {
            (vec![qc], self.spec.multiline_quotes)
        };
        let body = q + close.len();
        self.str_start = Some(out.spans.len());
        out.push(Role::StringLit, &c[start..body]);
        self.state = State::Str {
            close,
            escapes,
            multiline,
        };
        body
    }

    fn line_start(&mut self, c: &[char], out: &mut Out) -> usize {
        let k = run(c, 0, char::is_whitespace);
        match self.lang {
            Lang::C | Lang::Cpp if c.get(k) == Some(&'#') => {
                out.push(Role::CodeBlock, &c[..k]);
                let s = run(c, k + 1, char::is_whitespace);
                let e = run(c, s, |x| x.is_alphanumeric() || x == '_');
                out.push(Role::Keyword, &c[k..e]);
                let s2 = run(c, e, char::is_whitespace);
                if c.get(s2) == Some(&'<')
                    && let Some(p) = c[s2..].iter().position(|&x| x == '>')
                {
                    out.push(Role::CodeBlock, &c[e..s2]);
                    out.push(Role::StringLit, &c[s2..s2 + p + 1]);
                    return s2 + p + 1;
                }
                e
            }
            Lang::Toml if c.get(k) == Some(&'[') => {
                out.push(Role::CodeBlock, &c[..k]);
                let e = c[k..]
                    .iter()
                    .rposition(|&x| x == ']')
                    .map_or(c.len(), |p| k + p + 1);
                out.push(Role::TypeName, &c[k..e]);
                e
            }
            Lang::Toml => {
                let e = run(c, k, |x| x.is_alphanumeric() || "_-.".contains(x));
                let eq = run(c, e, char::is_whitespace);
                if e > k && c.get(eq) == Some(&'=') {
                    out.push(Role::CodeBlock, &c[..k]);
                    out.push(Role::Function, &c[k..e]);
                    return e;
                }
                0
            }
            Lang::Yaml => {
                let mut k = k;
                if starts(c, 0, "---") || starts(c, 0, "...") {
                    out.push(Role::Keyword, &c[..3]);
                    return 3;
                }
                out.push(Role::CodeBlock, &c[..k]);
                if c.get(k) == Some(&'-') && c.get(k + 1).is_none_or(|x| x.is_whitespace()) {
                    out.push(Role::Keyword, &c[k..k + 1]);
                    let s = run(c, k + 1, char::is_whitespace);
                    out.push(Role::CodeBlock, &c[k + 1..s]);
                    k = s;
                }
                if c.get(k).is_some_and(|x| !"\"'{[#&*!|>%@`".contains(*x)) {
                    let mut j = k;
                    while j < c.len() {
                        if c[j] == ':' && c.get(j + 1).is_none_or(|x| x.is_whitespace()) {
                            out.push(Role::Function, &c[k..j]);
                            return j;
                        }
                        if c[j] == '#' && c[j - 1].is_whitespace() {
                            break;
                        }
                        j += 1;
                    }
                }
                k
            }
            _ => 0,
        }
    }

    fn normal(&mut self, c: &[char], i: usize, out: &mut Out) -> usize {
        let n = c.len();
        let ch = c[i];
        let s = self.spec;
        let lang = self.lang;
        if ch.is_whitespace() {
            let j = run(c, i, char::is_whitespace);
            out.push(Role::CodeBlock, &c[i..j]);
            return j;
        }
        let after_def = std::mem::take(&mut self.after_def);
        for lc in s.line_comments {
            if starts(c, i, lc) && (!s.hash_word || i == 0 || c[i - 1].is_whitespace()) {
                out.push(Role::Comment, &c[i..]);
                return n;
            }
        }
        if let Some((open, _)) = s.block
            && starts(c, i, open)
        {
            let j = i + open.chars().count();
            out.push(Role::Comment, &c[i..j]);
            self.state = State::Block(1);
            return j;
        }
        if let Some(j) = self.string_prefix(c, i, out) {
            return j;
        }
        if s.quotes.contains(&ch) {
            let escapes = s.backslash && !(ch == '\'' && s.raw_single);
            return self.open_string(c, i, i, escapes, out);
        }
        if ch == '`' && s.backtick != Tick::No {
            return self.open_string(c, i, i, s.backtick == Tick::Escaped, out);
        }
        if lang == Lang::Rust && ch == '\'' {
            return rust_quote(c, i, i, out);
        }
        if ch.is_ascii_digit()
            || (ch == '.'
                && c.get(i + 1).is_some_and(char::is_ascii_digit)
                && (i == 0 || !is_ident_char(c[i - 1], lang)))
        {
            let j = number_end(c, i);
            out.push(Role::Number, &c[i..j]);
            return j;
        }
        if is_ident_start(ch, lang) {
            return self.ident(c, i, after_def, out);
        }
        if lang == Lang::Sh && ch == '$' {
            let j = match c.get(i + 1) {
                Some('{') => c[i..]
                    .iter()
                    .position(|&x| x == '}')
                    .map_or(n, |p| i + p + 1),
                Some(&x) if x.is_alphabetic() || x == '_' => {
                    run(c, i + 1, |y| is_ident_char(y, lang))
                }
                Some(&x) if x.is_ascii_digit() || "#?@*!$-".contains(x) => i + 2,
                _ => i + 1,
            };
            out.push(Role::TypeName, &c[i..j]);
            return j;
        }
        if ch == '@'
            && matches!(lang, Lang::Python | Lang::Java | Lang::Js | Lang::Ts)
            && c.get(i + 1).is_some_and(|&x| is_ident_start(x, lang))
        {
            let j = run(c, i + 1, |y| is_ident_char(y, lang) || y == '.');
            out.push(Role::Function, &c[i..j]);
            return j;
        }
        out.push(Role::CodeBlock, &c[i..i + 1]);
        i + 1
    }

    /// Prefixed strings: Rust `r#"…"#`, `b"…"`, `b'x'`; Python `f"…"`, `rb'…'`.
    fn string_prefix(&mut self, c: &[char], i: usize, out: &mut Out) -> Option<usize> {
        match self.lang {
            Lang::Rust => {
                let mut j = i;
                if matches!(c[j], 'b' | 'c') {
                    j += 1;
                }
                if c.get(j) == Some(&'r') {
                    let k = run(c, j + 1, |x| x == '#');
                    if c.get(k) == Some(&'"') {
                        let mut close = vec!['"'];
                        close.extend(std::iter::repeat_n('#', k - j - 1));
                        self.str_start = Some(out.spans.len());
                        out.push(Role::StringLit, &c[i..k + 1]);
                        self.state = State::Str {
                            close,
                            escapes: false,
                            multiline: true,
                        };
                        return Some(k + 1);
                    }
                } else if j > i && c.get(j) == Some(&'"') {
                    return Some(self.open_string(c, i, j, true, out));
                } else if j > i && c[i] == 'b' && c.get(j) == Some(&'\'') {
                    return Some(rust_quote(c, i, j, out));
                }
                None
            }
            Lang::Python => {
                let j = run(c, i, |x| "rRbBuUfF".contains(x));
                if j > i && j - i <= 2 && matches!(c.get(j), Some('"' | '\'')) {
                    let raw = c[i..j].iter().any(|x| *x == 'r' || *x == 'R');
                    return Some(self.open_string(c, i, j, !raw, out));
                }
                None
            }
            _ => None,
        }
    }

    fn ident(&mut self, c: &[char], i: usize, after_def: Option<Role>, out: &mut Out) -> usize {
        let s = self.spec;
        let j = run(c, i, |x| is_ident_char(x, self.lang));
        let word: String = c[i..j].iter().collect();
        if self.lang == Lang::Rust
            && c.get(j) == Some(&'!')
            && matches!(c.get(j + 1), Some('(' | '[' | '{'))
        {
            out.push(Role::Function, &c[i..j + 1]);
            return j + 1;
        }
        let listed = |list: &str| {
            list.split_ascii_whitespace()
                .any(|k| k == word || (s.nocase && k.eq_ignore_ascii_case(&word)))
        };
        let role = if listed(s.keywords) {
            let names = |l: &str| l.split(' ').any(|k| k == word);
            self.after_def = if names(DEF_WORDS) {
                Some(Role::Function)
            } else if names(TYPE_WORDS) {
                Some(Role::TypeName)
            } else {
                None
            };
            Role::Keyword
        } else if listed(s.types) {
            Role::TypeName
        } else if let Some(role) = after_def.filter(|_| s.functions) {
            role
        } else if self.lang == Lang::Go && c.get(j) == Some(&'(') {
            // Go's exported functions are capitalised too.
            Role::Function
        } else if s.cap_types
            && word.starts_with(|x: char| x.is_uppercase())
            && (word.chars().count() == 1 || word.chars().any(char::is_lowercase))
        {
            Role::TypeName
        } else if s.functions && c.get(j) == Some(&'(') {
            Role::Function
        } else {
            Role::CodeBlock
        };
        out.spans.push((role, word));
        j
    }
}

/// A Rust char literal (`'x'`, `'\n'`, `b'x'`) or a lifetime (`'a`); `q`
/// is the quote's index, `start` where the token starts.
fn rust_quote(c: &[char], start: usize, q: usize, out: &mut Out) -> usize {
    let n = c.len();
    if c.get(q + 1) == Some(&'\\') {
        let mut j = (q + 3).min(n);
        while j < n && c[j] != '\'' {
            j += 1;
        }
        let j = (j + 1).min(n);
        out.push(Role::StringLit, &c[start..j]);
        return j;
    }
    if c.get(q + 1).is_some() && c.get(q + 2) == Some(&'\'') {
        out.push(Role::StringLit, &c[start..q + 3]);
        return q + 3;
    }
    let j = run(c, q + 1, |x| x.is_alphanumeric() || x == '_');
    out.push(Role::Keyword, &c[start..j]);
    j
}

fn number_end(c: &[char], i: usize) -> usize {
    let hex = c[i] == '0' && matches!(c.get(i + 1), Some('x' | 'X'));
    let mut j = i + 1;
    while j < c.len() {
        let x = c[j];
        let more = x.is_ascii_alphanumeric()
            || x == '_'
            || (x == '.' && c.get(j + 1).is_some_and(char::is_ascii_digit))
            || ((x == '+' || x == '-') && !hex && matches!(c[j - 1], 'e' | 'E'));
        if !more {
            break;
        }
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests;
