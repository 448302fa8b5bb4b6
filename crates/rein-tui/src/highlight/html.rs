//! HTML and XML, line by line: tags, attributes, strings and comments.

use super::{Out, run, starts};
use crate::theme::Role;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HState {
    Text,
    Tag,
    Comment,
    Str(char),
}

pub(super) fn html_line(c: &[char], st: &mut HState) -> Vec<(Role, String)> {
    let mut out = Out::default();
    let n = c.len();
    let mut i = 0;
    while i < n {
        let j = match *st {
            HState::Comment => {
                let end = (i..n).find(|&k| starts(c, k, "-->")).map(|k| k + 3);
                if end.is_some() {
                    *st = HState::Text;
                }
                let j = end.unwrap_or(n);
                out.push(Role::Comment, &c[i..j]);
                j
            }
            HState::Str(q) => {
                let end = c[i..].iter().position(|&x| x == q).map(|p| i + p + 1);
                if end.is_some() {
                    *st = HState::Tag;
                }
                let j = end.unwrap_or(n);
                out.push(Role::StringLit, &c[i..j]);
                j
            }
            HState::Tag => {
                let ch = c[i];
                let (role, j) = if ch.is_whitespace() {
                    (Role::CodeBlock, run(c, i, char::is_whitespace))
                } else if ch == '>' {
                    *st = HState::Text;
                    (Role::Keyword, i + 1)
                } else if starts(c, i, "/>") || starts(c, i, "?>") {
                    *st = HState::Text;
                    (Role::Keyword, i + 2)
                } else if ch == '"' || ch == '\'' {
                    *st = HState::Str(ch);
                    (Role::StringLit, i + 1)
                } else if ch == '=' || ch == '/' || ch == '?' {
                    (Role::CodeBlock, i + 1)
                } else {
                    let j = run(c, i, |x| !x.is_whitespace() && !"=>/?\"'".contains(x));
                    (Role::TypeName, j.max(i + 1))
                };
                out.push(role, &c[i..j]);
                j
            }
            HState::Text => {
                let (role, j) = if starts(c, i, "<!--") {
                    *st = HState::Comment;
                    (Role::Comment, i + 4)
                } else if c[i] == '<'
                    && c.get(i + 1)
                        .is_some_and(|&x| x.is_alphabetic() || "/!?".contains(x))
                {
                    let s = if "/!?".contains(c[i + 1]) {
                        i + 2
                    } else {
                        i + 1
                    };
                    *st = HState::Tag;
                    (
                        Role::Keyword,
                        run(c, s, |x| x.is_alphanumeric() || "-:_.".contains(x)),
                    )
                } else if c[i] == '&' {
                    let e = run(c, i + 1, |x| x.is_alphanumeric() || x == '#');
                    if c.get(e) == Some(&';') && e > i + 1 {
                        (Role::Number, e + 1)
                    } else {
                        (Role::CodeBlock, i + 1)
                    }
                } else {
                    (Role::CodeBlock, run(c, i + 1, |x| x != '<' && x != '&'))
                };
                out.push(role, &c[i..j]);
                j
            }
        };
        i = j.max(i + 1);
    }
    out.spans
}
