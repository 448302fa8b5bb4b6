//! Servers that change while rein runs: restarted once after a crash, a
//! changed tool list read again, a call waiting for a server still
//! starting.

use std::sync::Arc;

use rein_core::*;
use rein_mcp::{McpHub, ServerStatus};
use serde_json::json;

use super::{Scripted, config, context, everything, launch, started};

/// A server that changes (JSON-RPC over stdio in Python): `started` says
/// how many times it was started for this project (it runs in rein's
/// empty folder: the project is `REIN_PROJECT_DIR`); `crash` kills it; `add`
/// offers one more tool (`extra`) and says the list changed;
/// `wait_listed` answers once the list was read again after that.
const CHANGING: &str = r#"
import json, os, sys
counter = os.path.join(os.environ["REIN_PROJECT_DIR"], "starts")
with open(counter, "a") as f:
    f.write("x")
starts = len(open(counter).read())
tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ["started", "crash", "add", "wait_listed"]]
listed_after_add = False
waiting = None
def send(m):
    print(json.dumps(m), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    method, rid = m["method"], m["id"]
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"],
             "capabilities": {"tools": {"listChanged": True}},
             "serverInfo": {"name": "changing", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": tools}
        if any(t["name"] == "extra" for t in tools):
            listed_after_add = True
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "crash":
            sys.exit(9)
        if name == "add":
            tools.append({"name": "extra", "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if name == "wait_listed" and not listed_after_add:
            waiting = rid
            continue
        text = {"started": "started %d times" % starts, "wait_listed": "listed"}.get(name, name + " done")
        r = {"content": [{"type": "text", "text": text}]}
    else:
        r = {}
    send({"jsonrpc": "2.0", "id": rid, "result": r})
    if waiting is not None and listed_after_add:
        send({"jsonrpc": "2.0", "id": waiting, "result": {"content": [{"type": "text", "text": "listed"}]}})
        waiting = None
"#;

/// The changing server, started in `ws`.
async fn changing(ws: &std::path::Path) -> Arc<McpHub> {
    let script = ws.join("changing.py");
    std::fs::write(&script, CHANGING).unwrap();
    started(
        vec![config("chg", "python3", &[script.to_str().unwrap()])],
        ws,
    )
    .await
}

/// Call `name` of the hub's tools directly (the gate is tested with the
/// reference server).
async fn call(hub: &McpHub, name: &str) -> Result<ToolOutput, ToolError> {
    let tool = hub
        .wait_for(name)
        .await
        .unwrap_or_else(|| panic!("no tool {name}"));
    let ctx = context(&std::env::temp_dir());
    tool.call(json!({}), ctx).await
}

/// A server that dies is started again once: the call it died in fails
/// saying so (not repeated), the next call works on the new process; the
/// second death is final and the server's tools go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_restarted_once_and_then_given_up() {
    let ws = tempfile::tempdir().unwrap();
    let hub = changing(ws.path()).await;
    assert_eq!(
        call(&hub, "mcp__chg__started").await.unwrap().content,
        "started 1 times"
    );
    let died = call(&hub, "mcp__chg__crash").await.unwrap_err();
    assert!(
        died.to_string()
            .contains("(the call was not repeated) and is being started again"),
        "{died:?}"
    );
    assert_eq!(
        call(&hub, "mcp__chg__started").await.unwrap().content,
        "started 2 times"
    );
    assert_eq!(hub.reports()[0].restarts, 1);

    let again = call(&hub, "mcp__chg__crash").await.unwrap_err();
    assert!(
        again.to_string().contains("not restarted a second time"),
        "{again:?}"
    );
    let report = &hub.reports()[0];
    assert_eq!(report.status, ServerStatus::Failed, "{report:?}");
    assert!(hub.tools().is_empty());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("starts")).unwrap(),
        "xx"
    );
}

/// `notifications/tools/list_changed`: the list is read again and the
/// hub's tools follow; whoever follows the hub hears of the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_read_again() {
    let ws = tempfile::tempdir().unwrap();
    let hub = changing(ws.path()).await;
    let names =
        |hub: &McpHub| -> Vec<String> { hub.tools().iter().map(|t| t.spec().name).collect() };
    assert!(!names(&hub).contains(&"mcp__chg__extra".to_string()));
    let mut changes = hub.changes();
    changes.borrow_and_update();
    call(&hub, "mcp__chg__add").await.unwrap();
    assert_eq!(
        call(&hub, "mcp__chg__wait_listed").await.unwrap().content,
        "listed"
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !names(&hub).contains(&"mcp__chg__extra".to_string()) {
            changes.changed().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the new tool never came: {:?}", names(&hub)));
    assert_eq!(
        call(&hub, "mcp__chg__extra").await.unwrap().content,
        "extra done"
    );
}

/// A call to a tool of a server still starting waits for it (through the
/// engine's gate): the first request is not held up, the call still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_to_a_server_still_starting_waits_for_it() {
    let Some(server) = everything() else { return };
    let ws = tempfile::tempdir().unwrap();
    let hub = McpHub::start(
        vec![config("everything", server.to_str().unwrap(), &["stdio"])],
        launch(ws.path()),
    );
    assert!(
        hub.tools().is_empty(),
        "the hub returned before the server started"
    );
    let store = Arc::new(InMemorySessionStore::new());
    let engine = AgentEngine::builder(
        Scripted::calls(&[("mcp__everything__echo", json!({"message": "early"}))]),
        store.clone(),
    )
    .workspace(ws.path().to_path_buf())
    .late_tools(hub.clone())
    .mode(PermissionMode::Default)
    .build()
    .unwrap();
    let outcome = engine
        .run(
            RunRequest::new("go"),
            CancellationToken::new(),
            &mut NullSink,
        )
        .await;
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
    assert!(
        !results[0].is_error && results[0].output.contains("Echo: early"),
        "{results:?}"
    );
    // Its stderr went to its log file, not the screen.
    assert!(ws.path().join("logs/everything.log").exists());
}
