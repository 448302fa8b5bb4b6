//! Diagnostics after edits, against the real pyright language server
//! (installed by `.ci/run` under ~/.cache/rein/lsp): an edit that brings
//! a type error gets it in the result, the fix clears it, and a server
//! that is missing or never answers costs at most the cap and adds
//! nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rein_core::{
    AfterCall, CallHook, HookRun, PermissionMode, SandboxPolicy, ToolCall, ToolOutput,
};
use rein_test_support::{Component, skip};
use rein_tools::lsp::{Diagnostics, Launch, LspSettings, ServerSpec};
use serde_json::json;

fn pyright() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".cache/rein/lsp/node_modules/.bin/pyright-langserver");
    p.exists().then_some(p)
}

fn spec(command: Vec<String>) -> ServerSpec {
    ServerSpec {
        name: "python".into(),
        command,
        extensions: vec!["py".into()],
        init_options: None,
        language_id: "python".into(),
        root_markers: vec!["pyproject.toml".into()],
    }
}

fn servers(command: Vec<String>, cap: Duration) -> std::sync::Arc<rein_tools::lsp::Servers> {
    let settings = LspSettings {
        servers: vec![spec(command)],
        cap,
        first_cap: cap,
        ..LspSettings::default()
    };
    let launch = Launch {
        kind: rein_tools::sandbox::available(),
        policy: SandboxPolicy {
            home: std::env::var_os("HOME").map(PathBuf::from),
            ..SandboxPolicy::default()
        },
    };
    std::sync::Arc::new(rein_tools::lsp::Servers::new(settings, launch))
}

fn hook(command: Vec<String>, cap: Duration) -> Diagnostics {
    Diagnostics::over(servers(command, cap))
}

/// Write `text` to `name` in `root` and tell the hook an edit did it.
async fn edited(hook: &Diagnostics, root: &Path, name: &str, text: &str) -> AfterCall {
    std::fs::write(root.join(name), text).unwrap();
    after(hook, root, "edit_file", json!({"path": name})).await
}

/// Tell the hook a call of `tool` with `args` ran.
async fn after(hook: &Diagnostics, root: &Path, tool: &str, args: serde_json::Value) -> AfterCall {
    let call = ToolCall {
        id: "c1".into(),
        name: tool.into(),
        arguments: String::new(),
    };
    let run = HookRun {
        session_id: "s".into(),
        workspace: root.to_path_buf(),
        mode: PermissionMode::Default,
        agent_id: None,
        user_can_answer: false,
    };
    hook.after_call_in(&call, &args, &ToolOutput::ok("done"), &run)
        .await
}

const BROKEN: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, \"2\")\n";
const FIXED: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, 2)\n";

#[tokio::test]
async fn a_type_error_an_edit_brings_is_in_its_result_and_the_fix_clears_it() {
    let Some(server) = pyright() else {
        skip(Component::Pyright, "no pyright under ~/.cache/rein/lsp");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let hook = hook(
        vec![server.display().to_string(), "--stdio".into()],
        Duration::from_secs(30),
    );
    std::fs::write(root.join("calc.py"), FIXED).unwrap();
    assert_eq!(
        edited(&hook, &root, "calc.py", FIXED).await,
        AfterCall::Nothing
    );
    let AfterCall::Tell(report) = edited(&hook, &root, "calc.py", BROKEN).await else {
        panic!("no diagnostics for a type error");
    };
    eprintln!("{report}");
    assert!(
        report.starts_with("[python language server: 1 error in calc.py]"),
        "{report}"
    );
    assert!(report.contains("\ncalc.py:5:21: error: "), "{report}");
    assert!(report.contains("\"Literal['2']\""), "{report}");
    assert!(report.ends_with("(new)"), "{report}");
    assert_eq!(
        edited(&hook, &root, "calc.py", FIXED).await,
        AfterCall::Nothing
    );
    // A command that breaks an open file gets the error too.
    std::fs::write(root.join("calc.py"), BROKEN).unwrap();
    let AfterCall::Tell(report) = after(&hook, &root, "bash", json!({"command": "sed"})).await
    else {
        panic!("no diagnostics after a command changed an open file");
    };
    assert!(report.contains("calc.py:5:21: error: "), "{report}");
    // A command that changed nothing open costs nothing.
    assert_eq!(
        after(&hook, &root, "bash", json!({"command": "true"})).await,
        AfterCall::Nothing
    );
    hook.shutdown().await;
}

#[tokio::test]
async fn a_missing_server_is_said_once_and_then_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let servers = servers(
        vec!["/nonexistent/pyright-langserver".into()],
        Duration::from_secs(5),
    );
    let hook = Diagnostics::over(servers.clone());
    assert_eq!(
        status(&servers, &root),
        ["python: missing: /nonexistent/pyright-langserver is not on PATH"]
    );
    let AfterCall::Warn(why) = edited(&hook, &root, "a.py", BROKEN).await else {
        panic!("a missing server must be said once");
    };
    assert!(
        why.contains("python language server is off") && why.contains("not found"),
        "{why}"
    );
    assert_eq!(
        edited(&hook, &root, "a.py", BROKEN).await,
        AfterCall::Nothing
    );
    // Files of no configured language cost nothing.
    assert_eq!(
        edited(&hook, &root, "notes.txt", "x").await,
        AfterCall::Nothing
    );
    assert_eq!(
        status(&servers, &root),
        ["python [.]: missing: /nonexistent/pyright-langserver is not on PATH"]
    );
}

/// The status lines of the python server (the built-in languages' lines
/// depend on what this machine has on PATH).
fn status(servers: &rein_tools::lsp::Servers, root: &Path) -> Vec<String> {
    servers
        .status()
        .iter()
        .filter(|s| s.name == "python")
        .map(|s| s.line(root))
        .collect()
}

#[tokio::test]
async fn a_server_that_never_answers_costs_at_most_the_handshake_and_then_nothing() {
    if !std::path::Path::new("/bin/cat").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // `sleep` reads nothing and answers nothing.
    let servers = servers(
        vec!["/bin/sleep".into(), "600".into()],
        Duration::from_millis(500),
    );
    let hook = Diagnostics::over(servers.clone());
    assert_eq!(
        status(&servers, &root),
        ["python: not started yet (/bin/sleep)"]
    );
    let started = Instant::now();
    let first = edited(&hook, &root, "a.py", BROKEN).await;
    assert!(
        matches!(first, AfterCall::Warn(ref w) if w.contains("did not answer initialize")),
        "{first:?}"
    );
    let again = Instant::now();
    assert_eq!(
        edited(&hook, &root, "a.py", BROKEN).await,
        AfterCall::Nothing
    );
    assert!(again.elapsed() < Duration::from_secs(1));
    eprintln!("first edit took {:?}", started.elapsed());
    let lines = status(&servers, &root);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("python [.]: off for this session: ")
            && lines[0].contains("did not answer initialize"),
        "{lines:?}"
    );
}

/// The crashing server of the tests, `--silent` or not, on the host (its
/// log lies in the workspace, which the sandbox keeps read-only).
fn scripted(
    starts: &Path,
    silent: bool,
    cap: Duration,
) -> std::sync::Arc<rein_tools::lsp::Servers> {
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/crashing_lsp.py");
    let mut command = vec![
        "/usr/bin/python3".into(),
        server.display().to_string(),
        starts.display().to_string(),
    ];
    if silent {
        command.push("--silent".into());
    }
    let settings = LspSettings {
        servers: vec![spec(command)],
        cap,
        first_cap: cap,
        ..LspSettings::default()
    };
    let launch = Launch {
        kind: rein_tools::sandbox::SandboxKind::None,
        policy: SandboxPolicy::default(),
    };
    std::sync::Arc::new(rein_tools::lsp::Servers::new(settings, launch))
}

#[tokio::test]
async fn a_server_whose_diagnostics_never_come_is_shown_slow_after_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let servers = scripted(
        &dir.path().join("starts.log"),
        true,
        Duration::from_millis(300),
    );
    let hook = Diagnostics::over(servers.clone());
    assert_eq!(
        edited(&hook, &root, "a.py", BROKEN).await,
        AfterCall::Nothing
    );
    assert_eq!(
        status(&servers, &root),
        ["python [.]: slow: the last wait for diagnostics hit the 300ms cap"]
    );
    hook.shutdown().await;
}

#[tokio::test]
async fn the_lsp_tool_finds_definitions_references_hover_and_symbols() {
    use rein_core::Tool;
    let Some(server) = pyright() else {
        skip(Component::Pyright, "no pyright under ~/.cache/rein/lsp");
        return;
    };
    let env = super::common::Env::new().await;
    std::fs::write(env.root.join("calc.py"), FIXED).unwrap();
    std::fs::write(
        env.root.join("main.py"),
        "from calc import add\n\nprint(add(2, 3))\n",
    )
    .unwrap();
    let servers = servers(
        vec![server.display().to_string(), "--stdio".into()],
        Duration::from_secs(30),
    );
    let tool = rein_tools::lsp::LspTool::new(servers.clone());
    let ask = |args: serde_json::Value| {
        let tool = &tool;
        let ctx = env.ctx();
        async move { tool.call(args, ctx).await }
    };
    let out = ask(json!({"operation": "definition", "path": "main.py", "line": 3, "column": 7}))
        .await
        .unwrap();
    assert_eq!(out.content, "calc.py:1:5", "{}", out.content);
    let out = ask(json!({"operation": "references", "path": "calc.py", "line": 1, "column": 5}))
        .await
        .unwrap();
    assert!(out.content.contains("calc.py:5:14"), "{}", out.content);
    let out = ask(json!({"operation": "hover", "path": "calc.py", "line": 1, "column": 5}))
        .await
        .unwrap();
    assert!(
        out.content.contains("def add(") && out.content.contains(") -> int"),
        "{}",
        out.content
    );
    let out = ask(json!({"operation": "document_symbols", "path": "calc.py"}))
        .await
        .unwrap();
    assert!(out.content.contains("function add 1"), "{}", out.content);
    assert!(out.content.contains("variable total 5"), "{}", out.content);
    let err = ask(json!({"operation": "hover", "path": "calc.py"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("needs `line` and `column`"),
        "{err}"
    );
    let err = ask(json!({"operation": "hover", "path": "notes.txt", "line": 1, "column": 1}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no language server"), "{err}");
    servers.shutdown().await;
}

#[tokio::test]
async fn typescript_errors_come_from_the_typescript_language_server() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let bin = Path::new(&home).join(".cache/rein/lsp/node_modules/.bin/typescript-language-server");
    if !bin.exists() {
        skip(
            Component::Pyright,
            "no typescript-language-server under ~/.cache/rein/lsp",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let settings = LspSettings {
        servers: vec![ServerSpec {
            name: "typescript".into(),
            command: vec![bin.display().to_string(), "--stdio".into()],
            extensions: vec!["ts".into()],
            init_options: None,
            language_id: "typescript".into(),
            root_markers: vec!["package.json".into()],
        }],
        cap: Duration::from_secs(30),
        first_cap: Duration::from_secs(30),
        ..LspSettings::default()
    };
    let launch = Launch {
        kind: rein_tools::sandbox::available(),
        policy: SandboxPolicy {
            home: std::env::var_os("HOME").map(PathBuf::from),
            ..SandboxPolicy::default()
        },
    };
    let hook = Diagnostics::new(settings, launch);
    let got = edited(
        &hook,
        &root,
        "a.ts",
        "const n: number = \"three\";\nexport { n };\n",
    )
    .await;
    let AfterCall::Tell(report) = got else {
        panic!("no diagnostics for a TypeScript type error: {got:?}");
    };
    assert!(report.contains("a.ts:1:7: error: "), "{report}");
    assert!(
        report.contains("not assignable to type 'number'"),
        "{report}"
    );
    hook.shutdown().await;
}

#[tokio::test]
async fn a_server_that_crashes_is_started_once_more_and_then_left_off() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let starts = dir.path().join("starts.log");
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/crashing_lsp.py");
    // On the host: the log lies in the workspace, which the sandbox keeps
    // read-only for servers.
    let settings = LspSettings {
        servers: vec![spec(vec![
            "/usr/bin/python3".into(),
            server.display().to_string(),
            starts.display().to_string(),
        ])],
        cap: Duration::from_millis(500),
        first_cap: Duration::from_secs(10),
        ..LspSettings::default()
    };
    let launch = Launch {
        kind: rein_tools::sandbox::SandboxKind::None,
        policy: SandboxPolicy::default(),
    };
    let hook = Diagnostics::new(settings, launch);
    for _ in 0..4 {
        assert_eq!(
            edited(&hook, &root, "a.py", BROKEN).await,
            AfterCall::Nothing
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(log.lines().count(), 2, "started {log:?}");
}

#[tokio::test]
async fn the_status_says_crashed_then_restarted_then_off() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let servers = scripted(
        &dir.path().join("starts.log"),
        false,
        Duration::from_secs(10),
    );
    let hook = Diagnostics::over(servers.clone());
    let crashed = "python [.]: crashed; restarted on its next file";
    edited(&hook, &root, "a.py", BROKEN).await;
    wait_for(&servers, &root, crashed).await;
    edited(&hook, &root, "a.py", BROKEN).await;
    let off = "python [.]: off for this session: it crashed again after its restart (restarted once after a crash)";
    wait_for(&servers, &root, off).await;
}

/// Wait until the python server's status is `line` (a crash is seen when
/// the server's stream ends, a moment after the edit).
async fn wait_for(servers: &rein_tools::lsp::Servers, root: &Path, line: &str) {
    for _ in 0..100 {
        if status(servers, root) == [line] {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status(servers, root), [line]);
}

#[tokio::test]
async fn two_python_projects_in_one_workspace_get_a_server_each_and_their_errors() {
    let Some(server) = pyright() else {
        skip(Component::Pyright, "no pyright under ~/.cache/rein/lsp");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    for project in ["api", "web"] {
        std::fs::create_dir_all(root.join("apps").join(project)).unwrap();
        std::fs::write(root.join("apps").join(project).join("pyproject.toml"), "").unwrap();
    }
    let servers = servers(
        vec![server.display().to_string(), "--stdio".into()],
        Duration::from_secs(30),
    );
    let hook = Diagnostics::over(servers.clone());
    for project in ["api", "web"] {
        let name = format!("apps/{project}/calc.py");
        let AfterCall::Tell(report) = edited(&hook, &root, &name, BROKEN).await else {
            panic!("no diagnostics in {name}");
        };
        assert!(
            report.contains(&format!("{name}:5:21: error: ")),
            "{report}"
        );
    }
    assert_eq!(
        status(&servers, &root),
        ["python [apps/api]: ready", "python [apps/web]: ready"]
    );
    hook.shutdown().await;
}
