//! rein's MCP client against a real third-party server: the reference
//! "everything" server (`@modelcontextprotocol/server-everything`, Node),
//! over stdio and streamable HTTP, and the Python SDK (OAuth included, in
//! `http`). `.ci/run` installs them under `~/.cache/rein/npm` and
//! `~/.cache/rein/pymcp`; `REIN_MCP_EVERYTHING` names another copy of the
//! reference server. Without them these tests say so and pass (they cannot
//! run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures_util::stream;
use rein_core::*;
use rein_mcp::{Launch, LazyTools, McpHub, McpServerConfig, ServerStatus};
use serde_json::{Value, json};

/// The server's launcher, if it is installed.
fn everything() -> Option<PathBuf> {
    let path = match std::env::var_os("REIN_MCP_EVERYTHING") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(std::env::var_os("HOME")?)
            .join(".cache/rein/npm/node_modules/.bin/mcp-server-everything"),
    };
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped: the MCP reference server is not installed ({})",
            path.display()
        );
        None
    }
}

/// Start `configs` as a run does, in `ws` (stderr logs under `ws/logs`),
/// and wait until each has started or failed.
async fn started(configs: Vec<McpServerConfig>, ws: &std::path::Path) -> Arc<McpHub> {
    let hub = McpHub::start(configs, launch(ws));
    hub.settled().await;
    hub
}

fn launch(ws: &std::path::Path) -> Launch {
    Launch {
        workspace: ws.to_path_buf(),
        env_allow: Vec::new(),
        log_dir: Some(ws.join("logs")),
        auth_dir: None,
    }
}

#[path = "mcp/http.rs"]
mod http;

fn config(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
    let mut c = McpServerConfig::stdio(name, command, args);
    // A loaded CI machine starts Node and Python slowly.
    c.startup_timeout_sec = 60;
    c
}

/// A model that makes the scripted calls, one turn each, then answers.
struct Scripted {
    turns: Mutex<Vec<Vec<StreamChunk>>>,
}

impl Scripted {
    fn calls(calls: &[(&str, Value)]) -> Arc<Scripted> {
        let mut turns: Vec<Vec<StreamChunk>> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                vec![
                    StreamChunk::ToolCall(ToolCall {
                        id: format!("c{i}"),
                        name: name.to_string(),
                        arguments: args.to_string(),
                    }),
                    StreamChunk::Done(FinishReason::ToolCalls),
                ]
            })
            .collect();
        turns.push(vec![
            StreamChunk::TextDelta("done".into()),
            StreamChunk::Done(FinishReason::Stop),
        ]);
        turns.reverse();
        Arc::new(Scripted {
            turns: Mutex::new(turns),
        })
    }
}

#[async_trait]
impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn model(&self) -> &str {
        "m"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn stream(
        &self,
        _request: &ModelRequest,
        _cancel: &CancellationToken,
    ) -> Result<ChunkStream, ProviderError> {
        let turn = self.turns.lock().unwrap().pop().unwrap_or_default();
        Ok(Box::pin(stream::iter(turn.into_iter().map(Ok))))
    }
}

/// Run the scripted calls through a real engine (default mode, headless)
/// with the server's tools; the stored results by call id.
async fn run(tools: Vec<Arc<dyn Tool>>, calls: &[(&str, Value)]) -> Vec<ToolResult> {
    let store = Arc::new(InMemorySessionStore::new());
    let ws = tempfile::tempdir().unwrap();
    let engine = AgentEngine::builder(Scripted::calls(calls), store.clone())
        .workspace(ws.path().to_path_buf())
        .tools(tools)
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
    assert_eq!(outcome.reason, StopReason::Completed, "{outcome:?}");
    let id = outcome.session_id.unwrap();
    store
        .messages(&id)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            Message::Tool(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// The reference server's tools are offered as `mcp__everything__NAME`
/// and called through rein's gate: a read-only tool runs headless in
/// default mode, one that is not needs an approval (refused headless), an
/// image comes back described, and a tool left out by the config is not
/// offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_servers_tools_run_through_the_gate() {
    let Some(server) = everything() else { return };
    let mut cfg = config("everything", server.to_str().unwrap(), &["stdio"]);
    cfg.disabled_tools = vec!["get-env".into()];
    let ws = tempfile::tempdir().unwrap();
    let hub = started(vec![cfg], ws.path()).await;
    let reports = hub.reports();
    assert_eq!(reports[0].status, ServerStatus::Ready, "{reports:?}");
    let tools = hub.tools();
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("get-env")), "{names:?}");
    let echo = tools
        .iter()
        .find(|t| t.spec().name == "mcp__everything__echo")
        .unwrap();
    assert_eq!(echo.access(), ToolAccess::Read);
    let spec = echo.spec();
    assert_eq!(spec.parameters["required"], json!(["message"]));
    assert!(spec.parameters.get("$schema").is_none());

    let results = run(
        tools,
        &[
            ("mcp__everything__echo", json!({"message": "hello rein"})),
            ("mcp__everything__get-tiny-image", json!({})),
            ("mcp__everything__toggle-simulated-logging", json!({})),
        ],
    )
    .await;
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        !results[0].is_error && results[0].output.contains("Echo: hello rein"),
        "{results:?}"
    );
    assert!(
        results[1].output.contains("[image image/png,"),
        "{}",
        results[1].output
    );
    // The image itself is kept (stored with the result) for the providers
    // that take images.
    assert_eq!(results[1].images.len(), 1, "{:?}", results[1]);
    assert_eq!(results[1].images[0].media_type, "image/png");
    assert!(results[1].images[0].bytes() > 0);
    assert!(results[2].is_error, "{results:?}");
    assert!(
        results[2].output.contains("needs the user's approval"),
        "{}",
        results[2].output
    );
}

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

/// What a tool called directly (not through the gate) gets.
fn context(workspace: &std::path::Path) -> ToolContext {
    ToolContext {
        workspace: workspace.to_path_buf(),
        session_id: "s".into(),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
        session: rein_core::SessionHandle::new(Arc::new(InMemorySessionStore::new()), "s"),
        sandbox: SandboxPolicy::default(),
        read_roots: Vec::new(),
        events: None,
    }
}

/// Call `name` of the hub's tools directly (the gate is tested above).
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

/// A server with a hundred tools: offered lazily, the model sees only
/// `tool_search` (a fraction of the tokens); a search loads the tools it
/// finds, which are offered from then on; below the budget every tool is
/// offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_many_tools_is_offered_through_tool_search() {
    let ws = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/many_tools.py");
    let hub = started(vec![config("gh", "python3", &[script, "100"])], ws.path()).await;
    let all = hub.offered(LazyTools::Never);
    assert_eq!(all.len(), 100);
    let full = rein_mcp::schema_tokens(&all);
    let lazy = hub.offered(LazyTools::Above(full / 2));
    let names: Vec<String> = lazy.iter().map(|t| t.spec().name).collect();
    assert_eq!(names, ["tool_search"]);
    let small = rein_mcp::schema_tokens(&lazy);
    assert!(small * 20 < full, "{small} tokens lazy against {full}");
    assert_eq!(hub.offered(LazyTools::Above(full + 1)).len(), 100);

    let ctx = context(ws.path());
    let found = lazy[0]
        .call(json!({"query": "weather in a city"}), ctx.clone())
        .await
        .unwrap();
    assert!(
        found
            .content
            .contains("- mcp__gh__get_weather: Current weather"),
        "{}",
        found.content
    );
    assert!(found.content.contains("\"city\""), "{}", found.content);
    let now: Vec<String> = hub
        .offered(LazyTools::Always)
        .iter()
        .map(|t| t.spec().name)
        .collect();
    assert!(now.contains(&"mcp__gh__get_weather".to_string()), "{now:?}");
    assert!(now.len() <= 6, "{now:?}");
    let none = lazy[0]
        .call(json!({"query": "zzzz qqqq"}), ctx.clone())
        .await
        .unwrap();
    assert!(
        none.content.starts_with("no MCP tool matches"),
        "{}",
        none.content
    );
    assert!(lazy[0].call(json!({"query": ""}), ctx).await.is_err());
}

/// A server run by `python3 script` with the SDK on its `PYTHONPATH`.
fn python_server(name: &str, script: &str, sdk: &std::path::Path) -> McpServerConfig {
    let mut cfg = config(name, "python3", &[script]);
    if let rein_mcp::McpTransport::Stdio { env, .. } = &mut cfg.transport {
        env.insert("PYTHONPATH".into(), sdk.display().to_string());
    }
    cfg
}

/// Where `.ci/run` installs the Python SDK (`mcp` package), if it did.
fn python_sdk() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("HOME")?).join(".cache/rein/pymcp");
    if dir.join("mcp").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: the Python MCP SDK is not installed ({})",
            dir.display()
        );
        None
    }
}

/// A server written with the official Python SDK: its typed tools are
/// offered with their schemas, a read-only annotation makes a tool Read,
/// a structured result is read, and a tool that raises reaches the model
/// as an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_built_with_the_python_sdk_works() {
    let Some(sdk) = python_sdk() else { return };
    let ws = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/servers/python_sdk_server.py"
    );
    let cfg = python_server("py", script, &sdk);
    let hub = started(vec![cfg], ws.path()).await;
    let report = &hub.reports()[0];
    assert_eq!(report.status, ServerStatus::Ready, "{report:?}");
    let tools = hub.tools();
    let add = tools
        .iter()
        .find(|t| t.spec().name == "mcp__py__add")
        .unwrap();
    assert_eq!(add.spec().parameters["required"], json!(["a", "b"]));
    assert_eq!(add.access(), ToolAccess::Execute);
    let shout = tools
        .iter()
        .find(|t| t.spec().name == "mcp__py__shout")
        .unwrap();
    assert_eq!(shout.access(), ToolAccess::Read);
    // Read-only: runs in default mode without asking; `fail` is not.
    let results = run(
        tools.clone(),
        &[
            ("mcp__py__shout", json!({"text": "quiet"})),
            ("mcp__py__fail", json!({"reason": "no"})),
        ],
    )
    .await;
    assert!(
        !results[0].is_error && results[0].output.contains("QUIET"),
        "{results:?}"
    );
    assert!(
        results[1]
            .output
            .contains("tools that are not read-only) need approval"),
        "{results:?}"
    );
    let fail = tools
        .iter()
        .find(|t| t.spec().name == "mcp__py__fail")
        .unwrap();
    let ctx = context(ws.path());
    let sum = add
        .call(json!({"a": 2, "b": 40}), ctx.clone())
        .await
        .unwrap();
    assert!(sum.content.contains("42"), "{}", sum.content);
    // A tool that raises: the result is an error, with the server's words.
    let failed = fail.call(json!({"reason": "no"}), ctx).await;
    let out = match failed {
        Ok(o) => o,
        Err(e) => panic!("a tool error should be an error result, got {e:?}"),
    };
    assert!(
        out.is_error && out.content.contains("refused: no"),
        "{out:?}"
    );
}

/// Resources and prompts of a Python SDK server: `@py:note://greeting` in
/// a message attaches the note; a mention of an unknown server is left as
/// it is; a missing resource is a note; the prompt is offered as
/// `/mcp__py__review` and its text filled from the arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_attached_by_mention_and_prompts_become_commands() {
    let Some(sdk) = python_sdk() else { return };
    let ws = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/servers/python_sdk_server.py"
    );
    let cfg = python_server("py", script, &sdk);
    // Not waited for: the mention waits for its server.
    let hub = McpHub::start(vec![cfg], launch(ws.path()));
    let (text, notes) = hub
        .attach_mentions("Use @py:note://greeting, and @other:x://y.")
        .await;
    assert!(notes.is_empty(), "{notes:?}");
    assert!(
        text.starts_with("Use @py:note://greeting, and @other:x://y."),
        "{text}"
    );
    assert!(
        text.contains("[resource py:note://greeting, from MCP server `py`]\nThe greeting is: hello from the note"),
        "{text}"
    );
    let (same, notes) = hub.attach_mentions("see @py:note://missing").await;
    assert_eq!(same, "see @py:note://missing");
    assert!(notes[0].contains("was not attached"), "{notes:?}");

    let commands = hub.prompt_commands().await;
    let review = commands
        .iter()
        .find(|c| c.command == "/mcp__py__review")
        .unwrap();
    assert_eq!(review.arguments, ["path", "focus"]);
    let text = hub
        .prompt_text("/mcp__py__review", "src/x.py focus=speed")
        .await
        .unwrap();
    assert_eq!(text, "Review src/x.py, looking for speed.");
    assert!(hub.prompt_text("/mcp__py__nothing", "").await.is_err());
}
