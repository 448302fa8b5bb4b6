//! The grammar that keeps a tool call well-formed once the model starts one.
//!
//! It is lazy: the model writes freely until it opens a call, in one of the
//! shapes it actually uses: `<tool_call>`, or a call object (fenced as
//! ```` ```json ```` or bare) opening the answer, or at the start of a later
//! line once `{"name": "<an offered tool>"` is written. From there the grammar holds it to
//! well-formed calls, `{"name": "<offered tool>", "arguments": <JSON
//! matching that tool's parameter schema>}`, each in the shape it was opened
//! with, one or more, and then only the end of the answer. The JSON part
//! comes from llama.cpp's JSON-schema converter, fed one `anyOf` branch per
//! tool.

use rein_core::ToolSpec;

/// Name the converter's root rule is renamed to.
const CALL_RULE: &str = "rein-call";

/// A grammar and the patterns that switch it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolGrammar {
    /// GBNF, root rule `root`: calls in any shape that sets it off.
    pub(crate) grammar: String,
    /// Regular expressions (ECMAScript) searched in the output; the grammar
    /// applies from the first capture group of the first match (or from the
    /// match when there is no group).
    pub(crate) triggers: Vec<String>,
}

/// The grammar for calls to `tools`; None when there are no tools or
/// llama.cpp cannot convert the schemas even loosened.
pub(crate) fn tool_call_grammar(tools: &[ToolSpec]) -> Option<ToolGrammar> {
    if tools.is_empty() {
        return None;
    }
    let convert = |schema: &str| llama_cpp_2::json_schema_to_grammar(schema).ok();
    // Every schema strict when the converter takes them all (the usual
    // case, one conversion); otherwise only the tools it cannot convert
    // fall back to "any object": one odd schema must not loosen every other
    // tool's arguments.
    let json_rules = convert(&calls_schema(tools, false))
        .or_else(|| {
            let loose: Vec<bool> = tools
                .iter()
                .map(|t| convert(&calls_schema(std::slice::from_ref(t), false)).is_none())
                .collect();
            convert(&calls_schema_with(tools, &loose))
        })
        .or_else(|| convert(&calls_schema(tools, true)))?;
    Some(ToolGrammar {
        grammar: wrap(&json_rules),
        triggers: triggers(tools),
    })
}

/// `<tool_call>`; a call object opening the answer (maybe fenced) as soon as
/// its `"name"` value starts, so that the name too is held to the offered
/// ones; or a call object later, at the start of a line (maybe fenced),
/// once it names an offered tool (so that a JSON document with a `name`
/// key quoted inside an answer, such as a package.json, is left alone).
pub(crate) fn triggers(tools: &[ToolSpec]) -> Vec<String> {
    let names: Vec<String> = tools.iter().map(|t| regex_escape(&t.name)).collect();
    let opening =
        r#"(?:```(?:json|tool_call)?[ \t]*\n[ \t\n]*)?\{[ \t\n]*"name"[ \t\n]*:[ \t\n]*""#;
    vec![
        "<tool_call>".to_string(),
        format!(r#"^[ \t\n]*({opening})"#),
        format!(r#"(?:^|\n)[ \t]*({opening}(?:{}))"#, names.join("|")),
    ]
}

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\^$.|?*+()[]{}-/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The JSON schema of one call object, as text so that `name` stays
/// before `arguments` (the converter keeps the written order). With `loose`
/// every tool's arguments are any object.
pub(crate) fn calls_schema(tools: &[ToolSpec], loose: bool) -> String {
    calls_schema_with(tools, &vec![loose; tools.len()])
}

/// As `calls_schema`, loosening only the tools marked in `loose`.
fn calls_schema_with(tools: &[ToolSpec], loose: &[bool]) -> String {
    let mut defs = serde_json::Map::new();
    let branches: Vec<String> = tools
        .iter()
        .zip(loose)
        .map(|(t, &loose)| {
            let params = if loose || !t.parameters.is_object() {
                r#"{"type": "object"}"#.to_string()
            } else {
                hoist_defs(&t.name, &t.parameters, &mut defs).to_string()
            };
            format!(
                r#"{{"type": "object", "properties": {{"name": {{"const": {}}}, "arguments": {params}}}, "required": ["name", "arguments"]}}"#,
                serde_json::Value::String(t.name.clone())
            )
        })
        .collect();
    if defs.is_empty() {
        format!(r#"{{"anyOf": [{}]}}"#, branches.join(", "))
    } else {
        format!(
            r#"{{"anyOf": [{}], "$defs": {}}}"#,
            branches.join(", "),
            serde_json::Value::Object(defs)
        )
    }
}

/// A tool's parameter schema with its `$defs` (or `definitions`) moved to
/// the combined document's root under `<tool>__<name>`, and its references
/// rewritten to match: a reference like `#/$defs/Todo` points at the root
/// of the whole document, where the tool's own definitions are not.
fn hoist_defs(
    tool: &str,
    params: &serde_json::Value,
    root: &mut serde_json::Map<String, serde_json::Value>,
) -> serde_json::Value {
    let mut params = params.clone();
    let mut own = serde_json::Map::new();
    if let Some(obj) = params.as_object_mut() {
        for key in ["$defs", "definitions"] {
            if let Some(serde_json::Value::Object(d)) = obj.remove(key) {
                own.extend(d);
            }
        }
    }
    if own.is_empty() {
        return params;
    }
    let rename = |r: &str| -> Option<String> {
        let name = r
            .strip_prefix("#/$defs/")
            .or_else(|| r.strip_prefix("#/definitions/"))?;
        Some(format!("#/$defs/{tool}__{name}"))
    };
    fn rewrite(v: &mut serde_json::Value, rename: &dyn Fn(&str) -> Option<String>) {
        match v {
            serde_json::Value::Object(o) => {
                if let Some(serde_json::Value::String(r)) = o.get_mut("$ref")
                    && let Some(new) = rename(r)
                {
                    *r = new;
                }
                for child in o.values_mut() {
                    rewrite(child, rename);
                }
            }
            serde_json::Value::Array(a) => {
                for child in a {
                    rewrite(child, rename);
                }
            }
            _ => {}
        }
    }
    rewrite(&mut params, &rename);
    for (name, mut def) in own {
        rewrite(&mut def, &rename);
        root.insert(format!("{tool}__{name}"), def);
    }
    params
}

/// The root of the lazy grammar: calls in any of the shapes that set it off.
const LAZY_ROOT: &str = concat!(
    "root ::= rein-tagged (\"\\n\" rein-tagged){0,7}",
    " | rein-fenced (\"\\n\"{1,2} rein-fenced){0,7}",
    " | rein-call (\"\\n\" rein-call){0,7}\n",
);

/// The root for an answer that must be calls (`ToolChoice::Required`),
/// applied from the first token: `<tool_call>` blocks, the shape the
/// model's template teaches.
const FORCED_ROOT: &str = "root ::= rein-tagged (\"\\n\" rein-tagged){0,7}\n";

/// The lazy root for one call (`single_tool_call`), in any shape.
const SINGLE_ROOT: &str = "root ::= rein-tagged | rein-fenced | rein-call\n";

/// The forced root for one call.
const SINGLE_FORCED_ROOT: &str = "root ::= rein-tagged\n";

impl ToolGrammar {
    /// The grammar for an answer held to `shape`: the same rules under
    /// the root that shape needs.
    pub(crate) fn for_shape(&self, forced: bool, single: bool) -> String {
        let root = match (forced, single) {
            (false, false) => return self.grammar.clone(),
            (true, false) => FORCED_ROOT,
            (false, true) => SINGLE_ROOT,
            (true, true) => SINGLE_FORCED_ROOT,
        };
        let rules = self.grammar.split_once('\n').map_or("", |(_, rest)| rest);
        format!("{root}{rules}")
    }
}

/// The call shapes around the converter's rules (its root renamed).
pub(crate) fn wrap(json_rules: &str) -> String {
    wrap_with(LAZY_ROOT, json_rules)
}

/// The converter's rules (its root renamed) under `root`.
fn wrap_with(root: &str, json_rules: &str) -> String {
    let mut out = String::with_capacity(json_rules.len() + 600);
    out.push_str(root);
    out.push_str(concat!(
        "rein-tagged ::= \"<tool_call>\" rein-ws rein-call rein-ws \"</tool_call>\"\n",
        "rein-fenced ::= \"```\" (\"json\" | \"tool_call\")? [ \\t]* \"\\n\" rein-ws rein-call rein-ws \"```\"\n",
        "rein-ws ::= [ \\t\\n]{0,4}\n",
    ));
    for line in json_rules.lines() {
        match line.strip_prefix("root ") {
            Some(rest) if rest.trim_start().starts_with("::=") => {
                out.push_str(CALL_RULE);
                out.push(' ');
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, params: serde_json::Value) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: params,
        }
    }

    #[test]
    fn tool_definitions_move_to_the_root_so_references_resolve() {
        let todo = tool(
            "todo_write",
            json!({
                "type": "object",
                "properties": {"todos": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
                "required": ["todos"],
                "$defs": {"Item": {"type": "object", "properties": {
                    "status": {"$ref": "#/$defs/Status"}}},
                    "Status": {"type": "string", "enum": ["pending", "completed"]}}
            }),
        );
        let read = tool(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        );
        let text = calls_schema(&[read.clone(), todo.clone()], false);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(v["$defs"]["todo_write__Item"].is_object(), "{text}");
        assert_eq!(
            v["$defs"]["todo_write__Item"]["properties"]["status"]["$ref"],
            "#/$defs/todo_write__Status"
        );
        assert_eq!(
            v["anyOf"][1]["properties"]["arguments"]["properties"]["todos"]["items"]["$ref"],
            "#/$defs/todo_write__Item"
        );
        // llama.cpp's converter takes it, so neither tool is loosened.
        assert!(llama_cpp_2::json_schema_to_grammar(&text).is_ok(), "{text}");
        let g = tool_call_grammar(&[read, todo]).unwrap();
        assert!(g.grammar.contains("pending"), "the enum is kept");
    }

    #[test]
    fn a_schema_the_converter_rejects_loosens_only_its_own_tool() {
        let read = tool(
            "read_file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        );
        let odd = tool(
            "odd",
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}}),
        );
        assert!(
            llama_cpp_2::json_schema_to_grammar(&calls_schema(std::slice::from_ref(&odd), false))
                .is_err(),
            "the test needs a schema the converter rejects"
        );
        let g = tool_call_grammar(&[read, odd]).unwrap();
        // read_file's arguments are still held to its schema.
        assert!(g.grammar.contains("path"), "{}", g.grammar);
    }

    #[test]
    fn the_schema_keeps_name_first_and_one_branch_per_tool() {
        let s = calls_schema(
            &[
                tool(
                    "read_file",
                    json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                ),
                tool("bash", json!(null)),
            ],
            false,
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["anyOf"].as_array().unwrap().len(), 2);
        assert!(s.find("\"name\"").unwrap() < s.find("\"arguments\"").unwrap());
        assert_eq!(
            v["anyOf"][1]["properties"]["arguments"],
            json!({"type": "object"})
        );
    }

    #[test]
    fn the_converter_root_is_renamed_under_the_wrapper() {
        let g = wrap("root ::= \"{\" space \"}\"\nspace ::= \" \"?\n");
        assert!(g.starts_with("root ::= rein-tagged"));
        assert!(g.contains("rein-call ::= \"{\" space \"}\"\n"));
        assert_eq!(g.matches("root ::=").count(), 1);
    }

    #[test]
    fn tool_names_are_escaped_in_triggers() {
        assert_eq!(regex_escape("a.b-c_d"), "a\\.b\\-c_d");
    }

    #[test]
    fn real_tool_schemas_convert() {
        let g = tool_call_grammar(&[
            tool(
                "read_file",
                json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}),
            ),
            tool("bash", json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})),
        ])
        .unwrap();
        assert!(g.grammar.contains("\"\\\"read_file\\\"\""), "{}", g.grammar);
        assert!(g.grammar.contains("rein-call ::="), "{}", g.grammar);
        assert_eq!(g.triggers.len(), 3);
        assert!(g.triggers[1].starts_with('^'), "{:?}", g.triggers);
        assert!(
            g.triggers[2].contains("(?:read_file|bash)"),
            "{:?}",
            g.triggers
        );
        assert!(tool_call_grammar(&[]).is_none());
    }

    #[test]
    fn each_shape_keeps_the_rules_and_changes_only_the_root() {
        let g =
            tool_call_grammar(&[tool("read_file", serde_json::json!({"type": "object"}))]).unwrap();
        assert_eq!(g.for_shape(false, false), g.grammar);
        let rules = g.grammar.split_once('\n').unwrap().1;
        for (forced, single, root) in [
            (true, false, FORCED_ROOT),
            (false, true, SINGLE_ROOT),
            (true, true, SINGLE_FORCED_ROOT),
        ] {
            assert_eq!(g.for_shape(forced, single), format!("{root}{rules}"));
        }
        assert!(g.grammar.starts_with("root ::= rein-tagged (") && LAZY_ROOT.ends_with('\n'));
    }
}
