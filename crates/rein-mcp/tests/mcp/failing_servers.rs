//! Servers that cannot be used or misbehave: each failure is one clear
//! error or observation, bounded, and the other servers go on.

use std::sync::Arc;

use rein_core::*;
use rein_mcp::ServerStatus;
use serde_json::json;

use super::{Scripted, config, everything, started};

/// A server that cannot be used is one clear error each, and the others
/// still start: a command that does not exist, one that exits at once,
/// one that never answers the handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_are_clear_errors_and_do_not_stop_the_others() {
    let ws = tempfile::tempdir().unwrap();
    let mut silent = config("silent", "sleep", &["30"]);
    silent.startup_timeout_sec = 1;
    // Junk on stdout without end, and a file that is not a program.
    let mut junk = config("junk", "yes", &["not json"]);
    junk.startup_timeout_sec = 2;
    let not_program = ws.path().join("notes.txt");
    std::fs::write(&not_program, "hello").unwrap();
    let mut cfgs = vec![
        config("missing", "/nonexistent/rein-mcp-server", &[]),
        config("quits", "sh", &["-c", "echo 'no such thing' >&2; exit 3"]),
        silent,
        junk,
        config("text", not_program.to_str().unwrap(), &[]),
    ];
    if let Some(server) = everything() {
        cfgs.push(config("everything", server.to_str().unwrap(), &["stdio"]));
    }
    let expect_ok = cfgs.len() - 5;
    let began = std::time::Instant::now();
    let hub = started(cfgs, ws.path()).await;
    let reports = hub.reports();
    let ready = reports
        .iter()
        .filter(|r| r.status == ServerStatus::Ready)
        .count();
    assert_eq!(ready, expect_ok, "{reports:?}");
    let text: Vec<String> = reports[..3]
        .iter()
        .map(|r| r.error.clone().unwrap_or_default())
        .collect();
    assert!(
        reports[..3]
            .iter()
            .all(|r| r.status == ServerStatus::Failed)
    );
    assert!(
        text[0].contains("MCP server `missing`: cannot start"),
        "{text:?}"
    );
    assert!(text[1].contains("MCP server `quits`"), "{text:?}");
    assert!(text[2].contains("did not start within 1 s"), "{text:?}");
    // Started once more, with twice the time, before it was given up.
    assert!(text[2].contains("nor in twice that"), "{text:?}");
    assert!(text[2].contains("`startup_timeout_sec`"), "{text:?}");
    let more: Vec<String> = reports[3..5]
        .iter()
        .map(|r| r.error.clone().unwrap_or_default())
        .collect();
    assert!(
        reports[3..5]
            .iter()
            .all(|r| r.status == ServerStatus::Failed),
        "{more:?}"
    );
    assert!(more[0].contains("MCP server `junk`"), "{more:?}");
    assert!(
        more[1].contains("cannot start") && more[1].contains("Permission denied"),
        "{more:?}"
    );
    assert!(
        more.iter().all(|m| m.len() < 2_000 && !m.contains('\n')),
        "{more:?}"
    );
    assert!(began.elapsed().as_secs() < 20, "servers start side by side");
}

/// A server written to misbehave (JSON-RPC over stdio in Python): names
/// that are paths and too long, a description of a megabyte, a schema
/// that is not an object, a tool marked destructive, a tool that hangs
/// and one that kills the server; it also writes megabytes of stderr
/// without a newline.
const HOSTILE: &str = r#"
import json, sys
# Five megabytes of stderr on one line: rein keeps a bounded tail.
sys.stderr.write("e" * 5000000)
sys.stderr.flush()
tools = [
    {"name": "../../etc/passwd" + "x" * 200, "description": "d" * 1000000,
     "inputSchema": {"type": "string"}},
    {"name": "drop", "description": "drops everything", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "hang", "inputSchema": {"type": "object"}},
    {"name": "crash", "inputSchema": {"type": "object"}},
]
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, rid = m["method"], m["id"]
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "hostile", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": tools}
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "hang":
            continue
        if name == "crash":
            sys.exit(9)
        r = {"content": [{"type": "text", "text": "dropped"}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": r}), flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_server_is_bounded_and_its_failures_are_observations() {
    let ws = tempfile::tempdir().unwrap();
    let script = ws.path().join("hostile.py");
    std::fs::write(&script, HOSTILE).unwrap();
    let mut cfg = config("bad", "python3", &[script.to_str().unwrap()]);
    cfg.tool_timeout_sec = Some(1);
    let hub = started(vec![cfg], ws.path()).await;
    assert_eq!(hub.reports()[0].status, ServerStatus::Ready);
    let tools = hub.tools();
    let specs: Vec<ToolSpec> = tools.iter().map(|t| t.spec()).collect();
    for s in &specs {
        assert!(s.name.len() <= 64, "{}", s.name);
        assert!(
            s.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            s.name
        );
        assert!(s.description.len() < 2_200, "{}", s.description.len());
        assert_eq!(s.parameters["type"], "object", "{}", s.name);
    }
    assert!(
        specs[0].name.starts_with("mcp__bad________etc_passwd"),
        "{}",
        specs[0].name
    );

    let store = Arc::new(InMemorySessionStore::new());
    let engine = AgentEngine::builder(
        Scripted::calls(&[
            ("mcp__bad__drop", json!({})),
            ("mcp__bad__hang", json!({})),
            ("mcp__bad__crash", json!({})),
        ]),
        store.clone(),
    )
    .workspace(ws.path().to_path_buf())
    .tools(tools)
    .mode(PermissionMode::Auto)
    .build()
    .unwrap();
    let started = std::time::Instant::now();
    let outcome = engine
        .run(
            RunRequest::new("go"),
            CancellationToken::new(),
            &mut NullSink,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    assert!(started.elapsed().as_secs() < 30);
    let results: Vec<ToolResult> = store
        .messages(&outcome.session_id.unwrap())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r),
            _ => None,
        })
        .collect();
    // Destructive: refused headless even in auto mode.
    assert!(
        results[0].is_error && results[0].output.contains("needs the user's approval"),
        "{results:?}"
    );
    assert!(
        results[1].is_error && results[1].output.contains("timed out"),
        "{results:?}"
    );
    assert!(
        results[2].is_error && results[2].output.contains("MCP server `bad`"),
        "{results:?}"
    );
    // Whatever of its stderr the error quotes is bounded (the tail itself
    // is tested in server.rs: when the crash comes, the reader may not
    // have seen the megabytes yet).
    assert!(
        results[2].output.len() < 8_000,
        "{}",
        results[2].output.len()
    );
}
