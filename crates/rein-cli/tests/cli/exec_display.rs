//! What `rein exec` shows people on stderr (no `--json`): every result
//! names its call, and a call of any tool, an MCP server's too, reads as
//! its target or `key=value` pairs, never raw JSON or escape sequences.

use serde_json::json;

use super::support::*;

/// Three calls of one turn: each result line names its tool and target,
/// so results printed after all the calls still say which call they are.
#[test]
fn parallel_results_each_name_their_tool_and_target() {
    let env = Env::new();
    std::fs::write(env.path("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.path("b.txt"), "beta\n").unwrap();
    let script = env.script(
        "parallel.json",
        &json!({"turns": [
            {"tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "read_file", "arguments": {"path": "b.txt"}},
                {"name": "glob", "arguments": {"pattern": "*.txt"}}
            ]},
            {"text": "read both"}
        ]}),
    );
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let results: Vec<&str> = err
        .lines()
        .filter(|l| l.trim_start().starts_with('✓'))
        .collect();
    assert_eq!(results.len(), 3, "{err}");
    for (target, output) in [
        ("read_file a.txt (", "alpha"),
        ("read_file b.txt (", "beta"),
        ("glob *.txt (", "a.txt"),
    ] {
        assert!(
            results
                .iter()
                .any(|l| l.contains(&format!("✓ {target}")) && l.contains(output)),
            "no result line for {target:?} with {output:?}:\n{err}"
        );
    }
}

/// Calls to a real MCP server (the reference server): `get-sum` shows
/// `a=2 b=3`, not `{"a":2,"b":3}`, on its start and result lines; an
/// `echo` whose message carries escape sequences and a newline shows them
/// escaped, and no escape character reaches stderr.
#[test]
fn mcp_calls_show_key_value_arguments_and_no_escape_sequences() {
    let Some(server) = super::mcp::everything() else {
        return;
    };
    let env = super::mcp::with_everything(&server, "");
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2Jhi\nthere";
    let script = env.script(
        "mcp.json",
        &json!({"turns": [
            {"tool_calls": [
                {"name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 3}},
                {"name": "mcp__everything__echo", "arguments": {"message": hostile}}
            ]},
            {"text": "summed"}
        ]}),
    );
    let o = env.rein(&[
        "exec",
        "--mode",
        "auto",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("▸ mcp__everything__get-sum a=2 b=3\n"),
        "{err}"
    );
    assert!(
        err.contains("✓ mcp__everything__get-sum a=2 b=3 ("),
        "{err}"
    );
    assert!(!err.contains(r#"{"a""#), "raw JSON arguments shown:\n{err}");
    let escaped = r"message=\u{1b}]0;owned\u{7}\u{1b}[2Jhi\nthere";
    assert!(
        err.contains(&format!("▸ mcp__everything__echo {escaped}")),
        "{err}"
    );
    assert!(
        err.contains(&format!("✓ mcp__everything__echo {escaped} (")),
        "{err}"
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
}
