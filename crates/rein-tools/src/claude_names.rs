//! The one table between rein's words and Claude Code's, both ways: tool
//! names (custom commands' `allowed-tools`, agent definitions' `tools`,
//! hook matchers), the argument keys of each built-in tool (a hook's
//! `tool_input` and its `updatedInput`) and the permission modes (a hook's
//! `permission_mode`). Only the front end and the hooks read it; core
//! knows no tool's name.

use rein_core::PermissionMode;
use serde_json::{Map, Value};

/// How an argument's value reads on Claude's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// The same value.
    Same,
    /// rein counts seconds, Claude milliseconds.
    SecondsAsMillis,
}

/// One argument of a built-in tool: rein's key, Claude's key.
struct Key {
    rein: &'static str,
    claude: &'static str,
    unit: Unit,
}

const fn key(rein: &'static str, claude: &'static str) -> Key {
    Key {
        rein,
        claude,
        unit: Unit::Same,
    }
}

/// One built-in tool as both name it, with the argument keys that differ
/// (every other key is the same on both sides).
struct ToolNames {
    rein: &'static str,
    claude: &'static str,
    keys: &'static [Key],
}

/// rein's built-in tools by Claude Code's names. `mcp__server__tool` and
/// every tool not listed keep their name on both sides.
const TOOLS: &[ToolNames] = &[
    ToolNames {
        rein: "bash",
        claude: "Bash",
        keys: &[Key {
            rein: "timeout_secs",
            claude: "timeout",
            unit: Unit::SecondsAsMillis,
        }],
    },
    ToolNames {
        rein: "read_file",
        claude: "Read",
        keys: &[key("path", "file_path")],
    },
    ToolNames {
        rein: "write_file",
        claude: "Write",
        keys: &[key("path", "file_path")],
    },
    // `old_string`, `new_string` and `replace_all` are the same.
    ToolNames {
        rein: "edit_file",
        claude: "Edit",
        keys: &[key("path", "file_path")],
    },
    // `pattern`, `path` and `glob` are the same.
    ToolNames {
        rein: "grep",
        claude: "Grep",
        keys: &[key("case_insensitive", "-i")],
    },
    ToolNames {
        rein: "glob",
        claude: "Glob",
        keys: &[],
    },
    // `description` and `prompt` are the same.
    ToolNames {
        rein: "task",
        claude: "Task",
        keys: &[
            key("agent", "subagent_type"),
            key("background", "run_in_background"),
        ],
    },
    ToolNames {
        rein: "todo_write",
        claude: "TodoWrite",
        keys: &[],
    },
    // `url` and `prompt` are the same.
    ToolNames {
        rein: "web_fetch",
        claude: "WebFetch",
        keys: &[],
    },
    // `query`, `allowed_domains` and `blocked_domains` are the same.
    ToolNames {
        rein: "web_search",
        claude: "WebSearch",
        keys: &[],
    },
];

/// Claude's names that read as a rein tool but that rein never calls
/// its tools by.
const ALIASES: &[(&str, &str)] = &[("MultiEdit", "edit_file"), ("LS", "glob")];

fn by_rein(name: &str) -> Option<&'static ToolNames> {
    TOOLS.iter().find(|t| t.rein == name)
}

/// rein's name for a tool named the Claude Code way (`Bash`, `Read`...;
/// a pattern like `Bash(git:*)` names the whole tool); other names as
/// they are.
pub fn rein_name(name: &str) -> String {
    let base = name.split('(').next().unwrap_or(name).trim();
    TOOLS
        .iter()
        .find(|t| t.claude == base)
        .map(|t| t.rein)
        .or_else(|| ALIASES.iter().find(|(c, _)| *c == base).map(|(_, r)| *r))
        .unwrap_or(base)
        .to_string()
}

/// A Claude Code permission rule (a command's `allowed-tools` entry) as
/// rein's rules: the tool renamed, and a command prefix `Bash(git diff:*)`
/// as the command itself and the command with arguments (`bash(git
/// diff)`, `bash(git diff *)`); other patterns as they are. An entry
/// with an unclosed or empty pattern (`Bash(git`, a list split in the
/// wrong place) is no rule at all, never the whole tool.
pub fn rein_rules(claude: &str) -> Result<Vec<String>, String> {
    let claude = claude.trim();
    let tool = rein_name(claude);
    let broken = || format!("`{claude}` is not a permission rule (`Tool` or `Tool(pattern)`)");
    let Some((_, rest)) = claude.split_once('(') else {
        return match claude.contains(')') {
            true => Err(broken()),
            false => Ok(vec![tool]),
        };
    };
    let pattern = rest
        .strip_suffix(')')
        .map(str::trim)
        .filter(|p| !p.is_empty());
    let Some(p) = pattern.filter(|p| !p.contains(['(', ')'])) else {
        return Err(broken());
    };
    // `WebFetch(domain:example.com)`: rein's web_fetch rules name the host.
    let p = match (tool.as_str(), p.strip_prefix("domain:")) {
        ("web_fetch", Some(host)) if !host.trim().is_empty() => host.trim(),
        _ => p,
    };
    Ok(match p.strip_suffix(":*") {
        Some(prefix) => vec![format!("{tool}({prefix})"), format!("{tool}({prefix} *)")],
        None => vec![format!("{tool}({p})")],
    })
}

/// Claude Code's name for a rein tool, so its hook matchers match; other
/// names as they are.
pub fn claude_name(name: &str) -> &str {
    by_rein(name).map_or(name, |t| t.claude)
}

/// A rein tool's arguments in Claude's keys (a hook's `tool_input`).
pub fn claude_input(tool: &str, args: &Value) -> Value {
    rekey(tool, args, Direction::ToClaude)
}

/// A hook's `tool_input` (its `updatedInput`) in rein's keys: Claude's
/// keys turned back, rein's own left as they are.
pub fn rein_input(tool: &str, input: &Value) -> Value {
    rekey(tool, input, Direction::ToRein)
}

#[derive(Clone, Copy)]
enum Direction {
    ToClaude,
    ToRein,
}

fn rekey(tool: &str, args: &Value, direction: Direction) -> Value {
    let (Some(names), Some(object)) = (by_rein(tool), args.as_object()) else {
        return args.clone();
    };
    let mut out = Map::new();
    for (k, v) in object {
        let found = names.keys.iter().find(|key| match direction {
            Direction::ToClaude => key.rein == k,
            Direction::ToRein => key.claude == k,
        });
        let Some(key) = found else {
            out.insert(k.clone(), v.clone());
            continue;
        };
        let (name, value) = match direction {
            Direction::ToClaude => (key.claude, to_claude_unit(key.unit, v)),
            Direction::ToRein => (key.rein, to_rein_unit(key.unit, v)),
        };
        out.insert(name.to_string(), value);
    }
    Value::Object(out)
}

fn to_claude_unit(unit: Unit, v: &Value) -> Value {
    match (unit, v.as_u64()) {
        (Unit::SecondsAsMillis, Some(secs)) => Value::from(secs.saturating_mul(1000)),
        _ => v.clone(),
    }
}

fn to_rein_unit(unit: Unit, v: &Value) -> Value {
    match (unit, v.as_u64()) {
        // Rounded up, and never 0 s.
        (Unit::SecondsAsMillis, Some(ms)) => Value::from(ms.div_ceil(1000).max(1)),
        _ => v.clone(),
    }
}

/// Claude Code's name for a permission mode. rein's `auto` (everything
/// runs without asking, inside the sandbox) and `bypass` are both
/// Claude's `bypassPermissions`: nothing is asked.
pub fn claude_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
        PermissionMode::Auto | PermissionMode::Bypass => "bypassPermissions",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_rule_reads_as_reins_rules_with_a_command_prefix_as_two() {
        let rein_rules = |t: &str| rein_rules(t).unwrap();
        assert_eq!(rein_rules("Read"), ["read_file"]);
        assert_eq!(rein_rules("Read(src/**)"), ["read_file(src/**)"]);
        assert_eq!(
            rein_rules("Bash(git diff:*)"),
            ["bash(git diff)", "bash(git diff *)"]
        );
        assert_eq!(rein_rules("Bash(cargo test)"), ["bash(cargo test)"]);
        assert_eq!(rein_rules("mcp__docs__search"), ["mcp__docs__search"]);
        // A broken entry grants nothing, least of all the whole tool.
        for broken in ["Bash(git", "Bash()", "add:*)", "Bash(a(b))"] {
            assert!(super::rein_rules(broken).is_err(), "{broken}");
        }
    }
    use serde_json::json;

    #[test]
    fn claudes_names_and_patterns_read_as_reins_tools_and_others_pass() {
        assert_eq!(rein_name("Read"), "read_file");
        assert_eq!(rein_name("Bash(git diff:*)"), "bash");
        assert_eq!(rein_name("MultiEdit"), "edit_file");
        assert_eq!(rein_name("LS"), "glob");
        assert_eq!(rein_name("Task"), "task");
        assert_eq!(rein_name("TodoWrite"), "todo_write");
        assert_eq!(rein_name("mcp__fs__read"), "mcp__fs__read");
        assert_eq!(claude_name("edit_file"), "Edit");
        assert_eq!(claude_name("task"), "Task");
        assert_eq!(claude_name("todo_write"), "TodoWrite");
        assert_eq!(claude_name("mcp__fs__read"), "mcp__fs__read");
        assert_eq!(claude_name("memory_write"), "memory_write");
    }

    #[test]
    fn webfetch_domain_rules_become_web_fetch_host_rules() {
        assert_eq!(rein_name("WebFetch"), "web_fetch");
        assert_eq!(claude_name("web_fetch"), "WebFetch");
        assert_eq!(
            rein_rules("WebFetch(domain:docs.example.org)").unwrap(),
            vec!["web_fetch(docs.example.org)"]
        );
        assert_eq!(rein_rules("WebFetch").unwrap(), vec!["web_fetch"]);
    }

    #[test]
    fn every_tool_reads_back_from_its_claude_name() {
        for t in TOOLS {
            assert_eq!(rein_name(claude_name(t.rein)), t.rein);
        }
    }

    #[test]
    fn file_tools_arguments_read_as_claudes_file_path_and_back() {
        let args =
            json!({"path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": true});
        let claude = claude_input("edit_file", &args);
        assert_eq!(
            claude,
            json!({"file_path": "a.rs", "old_string": "x", "new_string": "y", "replace_all": true})
        );
        assert_eq!(rein_input("edit_file", &claude), args);
        assert_eq!(
            claude_input("write_file", &json!({"path": "b", "content": "c"})),
            json!({"file_path": "b", "content": "c"})
        );
        assert_eq!(
            claude_input("read_file", &json!({"path": "b", "offset": 3})),
            json!({"file_path": "b", "offset": 3})
        );
        // A hook that answers in rein's own keys is understood too.
        assert_eq!(
            rein_input("write_file", &json!({"path": "b", "content": "c"})),
            json!({"path": "b", "content": "c"})
        );
    }

    #[test]
    fn bash_timeout_is_claudes_milliseconds_and_back_to_whole_seconds() {
        let claude = claude_input("bash", &json!({"command": "ls", "timeout_secs": 5}));
        assert_eq!(claude, json!({"command": "ls", "timeout": 5000}));
        assert_eq!(
            rein_input("bash", &json!({"command": "ls", "timeout": 1500})),
            json!({"command": "ls", "timeout_secs": 2})
        );
        assert_eq!(
            rein_input("bash", &json!({"command": "ls", "timeout": 1})),
            json!({"command": "ls", "timeout_secs": 1})
        );
    }

    #[test]
    fn search_task_and_unknown_tools_map_their_own_keys_only() {
        assert_eq!(
            claude_input(
                "grep",
                &json!({"pattern": "fn", "path": "src", "case_insensitive": true})
            ),
            json!({"pattern": "fn", "path": "src", "-i": true})
        );
        assert_eq!(
            claude_input("glob", &json!({"pattern": "*.rs", "path": "src"})),
            json!({"pattern": "*.rs", "path": "src"})
        );
        assert_eq!(
            rein_input(
                "task",
                &json!({"description": "d", "prompt": "p", "subagent_type": "explore"})
            ),
            json!({"description": "d", "prompt": "p", "agent": "explore"})
        );
        let mcp = json!({"path": "x"});
        assert_eq!(claude_input("mcp__fs__read", &mcp), mcp);
        assert_eq!(rein_input("mcp__fs__read", &mcp), mcp);
    }

    #[test]
    fn permission_modes_read_in_claudes_words() {
        assert_eq!(claude_mode(PermissionMode::Default), "default");
        assert_eq!(claude_mode(PermissionMode::AcceptEdits), "acceptEdits");
        assert_eq!(claude_mode(PermissionMode::Plan), "plan");
        assert_eq!(claude_mode(PermissionMode::Auto), "bypassPermissions");
        assert_eq!(claude_mode(PermissionMode::Bypass), "bypassPermissions");
    }
}
