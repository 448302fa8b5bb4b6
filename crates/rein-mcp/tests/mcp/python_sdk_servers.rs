//! Servers built with the official Python SDK over stdio: typed tools,
//! annotations, structured and failed results, resources attached by
//! mention and prompts offered as commands.

use rein_core::*;
use rein_mcp::{McpHub, McpServerConfig, ServerStatus};
use serde_json::json;

use super::{config, context, launch, python_sdk, run, started};

/// A server run by `python3 script` with the SDK on its `PYTHONPATH`.
fn python_server(name: &str, script: &str, sdk: &std::path::Path) -> McpServerConfig {
    let mut cfg = config(name, "python3", &[script]);
    if let rein_mcp::McpTransport::Stdio { env, .. } = &mut cfg.transport {
        env.insert("PYTHONPATH".into(), sdk.display().to_string());
    }
    cfg
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
