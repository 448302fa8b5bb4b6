//! The small glob language of permission rules.
//!
//! `*` matches any run of characters (for paths: not across `/`), `**`
//! matches across `/` (and `**/` also matches no folder at all), `?` one
//! character, `\x` the character `x` itself. Everything else is literal.

/// How `*` treats `/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobKind {
    /// Shell commands: `*` matches anything, `/` included.
    Command,
    /// Paths: `*` stays within one path component, `**` crosses them.
    Path,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    Any,
    /// `*`: any run (within a component for paths).
    Star,
    /// `**`: any run across components.
    DoubleStar,
    /// `**/`: zero or more whole folders.
    DoubleStarSlash,
}

fn tokenize(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(Token::Literal(chars[i + 1]));
                i += 2;
            }
            '*' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                // `***` and the like: the extra stars add nothing.
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                if chars.get(i) == Some(&'/') {
                    out.push(Token::DoubleStarSlash);
                    i += 1;
                } else {
                    out.push(Token::DoubleStar);
                }
            }
            '*' => {
                out.push(Token::Star);
                i += 1;
            }
            '?' => {
                out.push(Token::Any);
                i += 1;
            }
            c => {
                out.push(Token::Literal(c));
                i += 1;
            }
        }
    }
    out
}

/// Whether `text` matches `pattern` as a whole.
pub fn glob_match(pattern: &str, text: &str, kind: GlobKind) -> bool {
    let tokens = tokenize(pattern);
    let text: Vec<char> = text.chars().collect();
    // memo[t][s]: tokens[t..] against text[s..] already known to fail.
    let mut failed = vec![vec![false; text.len() + 1]; tokens.len() + 1];
    matches_at(&tokens, 0, &text, 0, kind, &mut failed)
}

fn matches_at(
    tokens: &[Token],
    t: usize,
    text: &[char],
    s: usize,
    kind: GlobKind,
    failed: &mut [Vec<bool>],
) -> bool {
    if failed[t][s] {
        return false;
    }
    let ok = match tokens.get(t) {
        None => s == text.len(),
        Some(Token::Literal(c)) => {
            text.get(s) == Some(c) && matches_at(tokens, t + 1, text, s + 1, kind, failed)
        }
        Some(Token::Any) => {
            s < text.len()
                && !(kind == GlobKind::Path && text[s] == '/')
                && matches_at(tokens, t + 1, text, s + 1, kind, failed)
        }
        Some(Token::Star) => {
            let mut end = s;
            loop {
                if matches_at(tokens, t + 1, text, end, kind, failed) {
                    break true;
                }
                if end == text.len() || (kind == GlobKind::Path && text[end] == '/') {
                    break false;
                }
                end += 1;
            }
        }
        Some(Token::DoubleStar) => {
            (s..=text.len()).any(|end| matches_at(tokens, t + 1, text, end, kind, failed))
        }
        Some(Token::DoubleStarSlash) => {
            // Zero folders, or any run that ends just after a `/`.
            matches_at(tokens, t + 1, text, s, kind, failed)
                || (s..text.len())
                    .filter(|&i| text[i] == '/')
                    .any(|i| matches_at(tokens, t + 1, text, i + 1, kind, failed))
        }
    };
    if !ok {
        failed[t][s] = true;
    }
    ok
}

/// `text` with every glob character escaped, so that it matches itself only.
pub fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(p: &str, t: &str) -> bool {
        glob_match(p, t, GlobKind::Command)
    }
    fn path(p: &str, t: &str) -> bool {
        glob_match(p, t, GlobKind::Path)
    }

    #[test]
    fn command_star_matches_anything_including_slashes() {
        assert!(cmd("git status*", "git status"));
        assert!(cmd("git status*", "git status --short"));
        assert!(cmd("cat *", "cat /etc/hosts"));
        assert!(!cmd("git status*", "git statu"));
        assert!(!cmd("git status", "git status --short"));
    }

    #[test]
    fn path_star_stays_in_one_component_and_double_star_crosses() {
        assert!(path("src/*.rs", "src/lib.rs"));
        assert!(!path("src/*.rs", "src/a/lib.rs"));
        assert!(path("src/**", "src/a/b/lib.rs"));
        assert!(path("**/.env", ".env"));
        assert!(path("**/.env", "config/prod/.env"));
        assert!(!path("**/.env", "config/.envrc"));
        assert!(path("**/*.pem", "a/b/key.pem"));
        assert!(path("?.txt", "a.txt"));
        assert!(!path("?.txt", "/.txt"));
    }

    #[test]
    fn escaped_characters_are_literal() {
        let exact = glob_escape("ls *.rs");
        assert_eq!(exact, "ls \\*.rs");
        assert!(cmd(&exact, "ls *.rs"));
        assert!(!cmd(&exact, "ls main.rs"));
    }

    #[test]
    fn pathological_patterns_stay_fast() {
        let p = "*a*a*a*a*a*a*a*a*a*a*b";
        let t = "a".repeat(2000);
        assert!(!cmd(p, &t));
    }
}
