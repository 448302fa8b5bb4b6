//! rein's MCP client against a real third-party server: the reference
//! "everything" server (`@modelcontextprotocol/server-everything`, Node),
//! over stdio and streamable HTTP, and the Python SDK (OAuth included, in
//! `http`). `.ci/run` installs them under `~/.cache/rein/npm` and
//! `~/.cache/rein/pymcp`; `REIN_MCP_EVERYTHING` names another copy of the
//! reference server. Without them these tests say so and pass (they cannot
//! run).
//!
//! The reference server through the gate and a server offered through
//! `tool_search` are tested here; failing, changing, Python SDK and remote
//! servers in the submodules, which share the helpers of this file.
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
        rein_test_support::skip(
            rein_test_support::Component::McpReferenceServer,
            format!("not installed ({})", path.display()),
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
        browser: None,
        asker: Default::default(),
    }
}

#[path = "mcp/changing_servers.rs"]
mod changing_servers;
#[path = "mcp/failing_servers.rs"]
mod failing_servers;
#[path = "mcp/http.rs"]
mod http;
#[path = "mcp/python_sdk_servers.rs"]
mod python_sdk_servers;

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

/// Where `.ci/run` installs the Python SDK (`mcp` package), if it did.
fn python_sdk() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("HOME")?).join(".cache/rein/pymcp");
    if dir.join("mcp").is_dir() {
        Some(dir)
    } else {
        rein_test_support::skip(
            rein_test_support::Component::PythonMcpSdk,
            format!("not installed ({})", dir.display()),
        );
        None
    }
}
