//! The grammar for an answer held to a JSON Schema (`rein exec
//! --output-schema`): from its first token the answer is either tool calls
//! (in the `<tool_call>` shape the template teaches, when tools are
//! offered) or a JSON value valid under the schema, and then nothing.
//!
//! The schema's rules come from llama.cpp's converter, renamed under a
//! prefix so that they cannot clash with the tool calls' rules (both
//! define `space`, `string`, ...).

use std::collections::HashSet;

use serde_json::Value;

use super::grammar::ToolGrammar;

/// Prefix of the schema's rules; its root becomes `rein-answer-root`.
const PREFIX: &str = "rein-answer-";

/// The grammar (root `root`) for an answer valid under `schema` or made of
/// calls to the tools of `tools` (`single`: one call); None when the
/// converter refuses the schema.
pub(crate) fn answer_grammar(
    schema: &Value,
    tools: Option<&ToolGrammar>,
    single: bool,
) -> Option<String> {
    let rules = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).ok()?;
    let answer = prefixed(&rules, PREFIX);
    let Some(tools) = tools else {
        return Some(format!("root ::= {PREFIX}root\n{answer}"));
    };
    let forced = tools.for_shape(true, single);
    let (first, rest) = forced.split_once('\n')?;
    let calls = first.strip_prefix("root ::=")?;
    Some(format!(
        "root ::= rein-calls | {PREFIX}root\nrein-calls ::={calls}\n{rest}\n{answer}"
    ))
}

/// `gbnf` with every rule it defines renamed to `prefix` + name, the
/// references in the rule bodies too (never inside a string literal or a
/// character class).
fn prefixed(gbnf: &str, prefix: &str) -> String {
    let defined: HashSet<&str> = gbnf
        .lines()
        .filter_map(|l| l.split_once("::=").map(|(name, _)| name.trim()))
        .collect();
    let mut out = String::with_capacity(gbnf.len() + defined.len() * 16);
    for line in gbnf.lines() {
        match line.split_once("::=") {
            Some((name, body)) => {
                out.push_str(prefix);
                out.push_str(name.trim());
                out.push_str(" ::=");
                out.push_str(&rename_refs(body, &defined, prefix));
            }
            None => out.push_str(&rename_refs(line, &defined, prefix)),
        }
        out.push('\n');
    }
    out
}

/// A rule body with its references to `defined` rules prefixed.
fn rename_refs(body: &str, defined: &HashSet<&str>, prefix: &str) -> String {
    let mut out = String::with_capacity(body.len() + 32);
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '[' => {
                let close = if c == '"' { '"' } else { ']' };
                out.push(c);
                while let Some(d) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if d == close {
                        break;
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' => {
                let mut word = String::from(c);
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_alphanumeric() || d == '-' || d == '_' {
                        word.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if defined.contains(word.as_str()) {
                    out.push_str(prefix);
                }
                out.push_str(&word);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_and_references_are_renamed_but_not_literals_or_classes() {
        let gbnf = "root ::= \"{\" space value \"root\" [a-z\\]root] space{0,2}\nvalue ::= \"x\" | root\nspace ::= \" \"?\n";
        let got = prefixed(gbnf, "p-");
        assert_eq!(
            got,
            "p-root ::= \"{\" p-space p-value \"root\" [a-z\\]root] p-space{0,2}\n\
             p-value ::= \"x\" | p-root\n\
             p-space ::= \" \"?\n"
        );
    }

    #[test]
    fn a_schema_grammar_compiles_alone_and_beside_the_tool_calls() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"verdict": {"enum": ["pass", "fail"]}, "notes": {"type": "string"}},
            "required": ["verdict"]
        });
        let alone = answer_grammar(&schema, None, false).unwrap();
        assert!(alone.starts_with("root ::= rein-answer-root\n"), "{alone}");
        let tool = rein_core::ToolSpec {
            name: "read_file".into(),
            description: "Read.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        };
        let tools = super::super::grammar::tool_call_grammar(&[tool]).unwrap();
        let both = answer_grammar(&schema, Some(&tools), true).unwrap();
        assert!(
            both.starts_with("root ::= rein-calls | rein-answer-root\n"),
            "{both}"
        );
        // Every rule is defined once.
        let names: Vec<&str> = both
            .lines()
            .filter_map(|l| l.split_once("::=").map(|(n, _)| n.trim()))
            .collect();
        let unique: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(names.len(), unique.len(), "{both}");
    }
}
