//! Running brush-parser within bounds.
//!
//! brush-parser recurses once per nesting level (of `( )`, `{ }`, `$( )`,
//! `if`, `[[ ! … ]]`, …), using up to ~25 KiB of stack a level in a debug
//! build, and a shell command comes from the model, so it may be anything.
//! Two bounds keep that safe: the parse runs on its own thread with a large
//! stack, and a command with more possible nesting openers than that stack
//! holds is refused before brush sees it. Our own walk of the tree stops at
//! `parse::MAX_DEPTH`.

use std::io::Cursor;

use brush_parser::ast;
use brush_parser::{ParseError, ParserOptions, TokenizerError};

use super::parse::walk;
use super::{ParsedCommand, ShellParseError};

/// Longest command line analysed, in bytes.
const MAX_LEN: usize = 1 << 20;
/// Stack of the parser thread beyond what the nesting openers need; the
/// stack is rounded up to a multiple of it (so the C library's cache of
/// thread stacks gets reused: a fresh large stack costs page faults).
const BASE_STACK: usize = 16 << 20;
/// Stack one nesting opener may cost brush (measured ~15 KiB, debug build).
const STACK_PER_OPENER: usize = 32 << 10;
/// Most nesting openers a command may hold (a 272 MiB stack).
const MAX_OPENERS: usize = 8192;
/// Openers a command may hold when parsed on the caller's own thread (only
/// when a thread cannot be started).
const INLINE_OPENERS: usize = 16;

pub(crate) fn parse(command: &str) -> Result<ParsedCommand, ShellParseError> {
    if command.len() > MAX_LEN {
        return Err(ShellParseError::TooLarge);
    }
    let openers = nesting_openers(command);
    if openers > MAX_OPENERS {
        return Err(ShellParseError::TooLarge);
    }
    let stack = (BASE_STACK + openers * STACK_PER_OPENER).next_multiple_of(BASE_STACK);
    let owned = command.to_string();
    let spawned = std::thread::Builder::new()
        .name("rein-shell-parse".into())
        .stack_size(stack)
        .spawn(move || walk(&owned));
    match spawned {
        Ok(handle) => handle
            .join()
            .unwrap_or_else(|_| Err(ShellParseError::Syntax("the shell parser failed".into()))),
        Err(_) if openers <= INLINE_OPENERS => walk(command),
        Err(_) => Err(ShellParseError::TooLarge),
    }
}

/// An upper bound of how deep brush may recurse on `text`: every character
/// and keyword that can open a nesting level, wherever it is (quoted or not).
fn nesting_openers(text: &str) -> usize {
    let chars = text
        .bytes()
        .filter(|b| matches!(b, b'(' | b'{' | b'!' | b'`'))
        .count();
    let keywords = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            matches!(
                *w,
                "if" | "while" | "until" | "for" | "select" | "case" | "coproc" | "function"
            )
        })
        .count();
    chars + keywords
}

pub(crate) fn parse_program(
    text: &str,
    opts: &ParserOptions,
) -> Result<ast::Program, ShellParseError> {
    let mut parser = brush_parser::Parser::new(Cursor::new(text.as_bytes()), opts);
    parser
        .parse_program()
        .map_err(|e| ShellParseError::Syntax(describe(&e)))
}

fn describe(e: &ParseError) -> String {
    let text = match e {
        ParseError::Tokenizing { inner, .. } => match inner {
            TokenizerError::UnterminatedSingleQuote(_)
            | TokenizerError::UnterminatedDoubleQuote(_)
            | TokenizerError::UnterminatedAnsiCQuote(_) => "unterminated quote".to_string(),
            TokenizerError::UnterminatedHereDocuments(tags, _) => {
                format!("unterminated here-document (no line `{tags}`)")
            }
            other => other.to_string(),
        },
        ParseError::ParsingAtEndOfInput => {
            "syntax error: unexpected end of input (unbalanced or unterminated construct)"
                .to_string()
        }
        ParseError::ParsingNear(pos) => {
            format!("syntax error at line {} column {}", pos.line, pos.column)
        }
    };
    text.lines().next().unwrap_or("syntax error").to_string()
}
