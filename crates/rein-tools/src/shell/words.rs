//! Words: quote removal, and what in a word is only known at run time.
//!
//! brush-parser splits a word into pieces (quoted text, escapes, expansions);
//! this module joins them back into the text the command would receive,
//! keeping expansions as written, and collects the command substitutions
//! found inside (also inside `${x:-$(…)}` and `$(( $(…) ))`) for the caller
//! to parse.

use brush_parser::ParserOptions;
use brush_parser::word::{
    self, Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource,
};

use super::Dyn;

/// How deep `${…}` / `$((…))` may nest inside one word.
const MAX_WORD_DEPTH: usize = 32;

/// A word after quote removal.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub(crate) text: String,
    pub(crate) dyn_: Dyn,
    /// The source of every command substitution in the word, in order.
    pub(crate) subs: Vec<String>,
    /// Part of the word could not be analysed (it may hide commands).
    pub(crate) unanalysed: bool,
}

/// Render a word of the command line.
pub(crate) fn render(raw: &str, opts: &ParserOptions) -> Rendered {
    let mut r = Renderer::new(raw, opts);
    match word::parse(raw, opts) {
        Ok(pieces) => r.pieces(&pieces, false, 0),
        Err(_) => r.unparsable(),
    }
    r.finish()
}

/// Render the body of a here-document whose delimiter was not quoted (so
/// `$x`, `$(…)` and `` `…` `` are expanded; quotes are kept).
pub(crate) fn render_heredoc(raw: &str, opts: &ParserOptions) -> Rendered {
    let mut r = Renderer::new(raw, opts);
    match word::parse_heredoc(raw, opts) {
        Ok(pieces) => r.pieces(&pieces, true, 0),
        Err(_) => r.unparsable(),
    }
    r.finish()
}

struct Renderer<'a> {
    raw: &'a str,
    opts: &'a ParserOptions,
    out: Rendered,
    /// The unquoted parts as written, quoted parts replaced by `_`: where
    /// globs and brace expansions are looked for.
    skeleton: String,
    expanded: bool,
}

impl<'a> Renderer<'a> {
    fn new(raw: &'a str, opts: &'a ParserOptions) -> Self {
        Self {
            raw,
            opts,
            out: Rendered::default(),
            skeleton: String::new(),
            expanded: false,
        }
    }

    fn unparsable(&mut self) {
        self.out.text.push_str(self.raw);
        self.out.unanalysed = true;
        self.expanded = true;
    }

    fn finish(mut self) -> Rendered {
        self.out.dyn_ = if self.expanded || has_brace_expansion(&self.skeleton) {
            Dyn::Runtime
        } else if has_glob(&self.skeleton) {
            Dyn::Glob
        } else {
            Dyn::Static
        };
        self.out
    }

    /// The source text of a piece (as written), or `fallback`.
    fn source(&self, p: &WordPieceWithSource, fallback: &str) -> String {
        self.raw
            .get(p.start_index..p.end_index)
            .map_or_else(|| fallback.to_string(), str::to_string)
    }

    fn quoted(&mut self, text: &str) {
        self.out.text.push_str(text);
        self.skeleton.push('_');
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], in_dq: bool, depth: usize) {
        for p in pieces {
            let at_start = self.out.text.is_empty();
            match &p.piece {
                WordPiece::Text(s) => {
                    self.out.text.push_str(s);
                    if in_dq {
                        self.skeleton.push('_');
                    } else {
                        self.skeleton.push_str(s);
                    }
                }
                WordPiece::SingleQuotedText(s) => self.quoted(s),
                WordPiece::AnsiCQuotedText(s) => self.quoted(&decode_ansi_c(s)),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.skeleton.push('_');
                    self.pieces(inner, true, depth);
                }
                WordPiece::EscapeSequence(s) => {
                    let escaped: String = s.chars().skip(1).filter(|c| *c != '\n').collect();
                    self.quoted(&escaped);
                }
                WordPiece::TildeExpansion(TildeExpr::Home) => {
                    self.out.text.push('~');
                    self.skeleton.push('~');
                }
                WordPiece::TildeExpansion(_) => self.expansion(p, "~?"),
                WordPiece::ParameterExpansion(expr) => {
                    let home = at_start
                        && matches!(
                            expr,
                            ParameterExpr::Parameter {
                                parameter: Parameter::Named(name),
                                indirect: false,
                            } if name == "HOME"
                        );
                    let text = self.source(p, "$?");
                    if home {
                        self.out.text.push_str(&text);
                        self.skeleton.push('_');
                    } else {
                        self.expansion(p, "$?");
                        // `${x:-$(cmd)}`: parse what is inside the braces as
                        // a word to find substitutions hidden there.
                        if let Some(inner) =
                            text.strip_prefix("${").and_then(|t| t.strip_suffix('}'))
                        {
                            self.nested(inner, depth);
                        }
                    }
                }
                WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                    self.expansion(p, "$(…)");
                    self.out.subs.push(s.clone());
                }
                WordPiece::ArithmeticExpression(e) => {
                    self.expansion(p, "$((…))");
                    self.nested(&e.value, depth);
                }
            }
        }
    }

    /// A piece only known at run time: kept as written.
    fn expansion(&mut self, p: &WordPieceWithSource, fallback: &str) {
        let text = self.source(p, fallback);
        self.out.text.push_str(&text);
        self.skeleton.push('_');
        self.expanded = true;
    }

    /// Look for command substitutions inside an expansion's own text.
    fn nested(&mut self, inner: &str, depth: usize) {
        if depth >= MAX_WORD_DEPTH {
            self.out.unanalysed = true;
            return;
        }
        match word::parse(inner, self.opts) {
            Ok(pieces) => {
                let mut sub = Renderer::new(inner, self.opts);
                sub.pieces(&pieces, false, depth + 1);
                self.out.subs.append(&mut sub.out.subs);
                self.out.unanalysed |= sub.out.unanalysed;
            }
            Err(_) => self.out.unanalysed = true,
        }
    }
}

/// Unquoted glob characters: `*`, `?`, `[…]`, extglob `@(…)` and friends.
pub(crate) fn has_glob(s: &str) -> bool {
    if s.contains('*') || s.contains('?') {
        return true;
    }
    if s.find('[').is_some_and(|i| s[i + 1..].contains(']')) {
        return true;
    }
    ["@(", "+(", "!("].iter().any(|p| s.contains(p))
}

/// A brace expansion: `{a,b}` or `{1..9}`.
fn has_brace_expansion(s: &str) -> bool {
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                let body = &after[..close];
                if body.contains(',') || body.contains("..") {
                    return true;
                }
                rest = after;
            }
            None => return false,
        }
    }
    false
}

/// Decode the escapes of an ANSI-C quoted string (`$'…'`, given without
/// the quotes).
pub(crate) fn decode_ansi_c(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.extend(char::from_u32(v & 0xff));
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v = 0u32;
                let mut n = 0;
                while n < max {
                    match chars.peek().and_then(|c| c.to_digit(16)) {
                        Some(d) => {
                            v = v.saturating_mul(16).saturating_add(d);
                            chars.next();
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    out.extend(char::from_u32(v));
                }
            }
            'c' => match chars.next() {
                Some(x) => out.extend(char::from_u32(u32::from(x) & 0x1f)),
                None => out.push_str("\\c"),
            },
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}
