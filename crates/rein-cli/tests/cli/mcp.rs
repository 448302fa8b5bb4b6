//! MCP servers through the binary: `[mcp_servers.NAME]` in the user's
//! config starts a real server (the reference "everything" server, which
//! `.ci/run` installs under `~/.cache/rein/npm`) and its tools run in a
//! headless run; a server that fails is one note; a project's config
//! cannot start one in a folder that is not trusted.

use std::path::PathBuf;

use serde_json::json;

use super::support::*;

pub fn everything() -> Option<PathBuf> {
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

/// A home whose config.toml starts the reference server as `everything`,
/// with `more` appended to the file.
pub fn with_everything(server: &std::path::Path, more: &str) -> Env {
    let env = Env::new();
    let config = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n# A loaded CI machine starts Node slowly.\nstartup_timeout_sec = 60\n{more}",
        server.display().to_string()
    );
    std::fs::write(env.home.path().join("config.toml"), config).unwrap();
    env
}

#[test]
fn a_configured_server_s_tools_run_and_a_broken_one_is_one_note() {
    let Some(server) = everything() else { return };
    let env = with_everything(
        &server,
        "\n[mcp_servers.broken]\ncommand = \"/nonexistent/server\"\n",
    );
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "hi from rein"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(finished["name"], "mcp__everything__echo");
    assert_eq!(finished["is_error"], false);
    assert!(
        finished["output_preview"]
            .as_str()
            .unwrap()
            .contains("Echo: hi from rein"),
        "{finished}"
    );
    let err = stderr(&o);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("MCP server `broken`"))
        .collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("cannot start") && notes[0].contains("not offered"),
        "{err}"
    );

    // `rein mcp list` says the same, server by server; one failed: exit 1.
    let o = env.rein(&["mcp", "list"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("everything: ") && text.contains("mcp__everything__echo"),
        "{text}"
    );
    assert!(text.contains("broken: not running: cannot start"), "{text}");
    let o = env.rein(&["mcp", "list", "--json"]);
    let rows = json_lines(&o);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let row = |name: &str| rows.iter().find(|r| r["server"] == name).unwrap().clone();
    let tools = row("everything")["tools"].clone();
    assert!(tools.as_array().is_some_and(|t| !t.is_empty()), "{rows:?}");
    let error = row("broken")["error"].clone();
    assert!(
        error.as_str().is_some_and(|e| e.contains("cannot start")),
        "{rows:?}"
    );
}

/// A repository's `.rein/config.toml` naming an MCP server starts nothing
/// in a folder that is not trusted, and the ignored section is named.
#[test]
fn an_untrusted_project_cannot_start_an_mcp_server() {
    let env = Env::new();
    let marker = env.home.path().join("started");
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(
        env.path(".rein/config.toml"),
        format!(
            "[mcp_servers.evil]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
            marker.display()
        ),
    )
    .unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!marker.exists(), "the project's server was started");
    assert!(stderr(&o).contains("[mcp_servers.evil]"), "{}", stderr(&o));
}

/// A server's environment is the scrubbed one commands get plus its own
/// `env`: rein's keys and secrets never reach it (the reference server's
/// `get-env` tool prints what it was given).
#[test]
fn a_server_never_sees_reins_keys_only_its_own_env() {
    let Some(server) = everything() else { return };
    let env = with_everything(&server, "env = { \"SERVER_SETTING\" = \"on\" }\n");
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__everything__get-env", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    let mut cmd = env.command();
    cmd.args([
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ])
    .env("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    .env("DATABASE_URL", "postgres://user:hunter2@db/prod");
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let events = json_lines(&o);
    let result = events
        .iter()
        .find_map(|e| match &e["message"]["role"] {
            serde_json::Value::String(r) if r == "tool" => {
                e["message"]["output"].as_str().map(str::to_string)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{events:?}"));
    assert!(result.contains("SERVER_SETTING"), "{result}");
    assert!(result.contains("PATH"), "{result}");
    assert!(!result.contains("sk-ant-secret-value"), "{result}");
    assert!(!result.contains("hunter2"), "{result}");
}

/// A server that never finishes starting does not hold up the run: the
/// model's first request goes out at once and the run ends long before
/// the server's startup timeout; the hung server is killed with rein.
#[test]
fn a_server_still_starting_does_not_hold_up_the_run() {
    let env = Env::new();
    // A sleep of an odd length: its command line finds it.
    let marker = "60.74318";
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"{marker}\"]\nstartup_timeout_sec = 50\n"
        ),
    )
    .unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let began = std::time::Instant::now();
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        began.elapsed() < std::time::Duration::from_secs(40),
        "the run waited for the server: {:?}",
        began.elapsed()
    );
    assert_eq!(stdout(&o).trim(), "done");
    // The hung server went with rein.
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!alive(), "the hung server outlived rein");
}

/// A call to a tool of a server that could not start is an error naming
/// the server and why, not an unknown tool.
#[test]
fn a_call_to_a_failed_server_says_why() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[mcp_servers.gone]\ncommand = \"/nonexistent/server\"\n",
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__gone__anything", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let finished = json_lines(&o)
        .into_iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap();
    let preview = finished["output_preview"].as_str().unwrap();
    assert_eq!(finished["is_error"], true);
    assert!(
        preview.contains("MCP server `gone` is not running") && preview.contains("cannot start"),
        "{preview}"
    );
}

/// A project's `.mcp.json`: nothing starts in a folder that is not
/// trusted; trusted, a server starts only once approved as written, and a
/// repository that changes what the approved name runs is asked about
/// again.
#[test]
fn a_project_server_starts_only_in_a_trusted_folder_once_approved() {
    let env = Env::new();
    let marker = env.home.path().join("started");
    let mcp_json = |arg: &str| {
        let server = json!({"mcpServers": {"proj": {
            "command": "sh",
            "args": ["-c", format!("echo {arg} >> {}", marker.display())],
        }}});
        std::fs::write(env.path(".mcp.json"), server.to_string()).unwrap();
    };
    mcp_json("first");
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let exec = || env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);

    // Not trusted: not started, and named as ignored.
    let o = exec();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(".mcp.json: [mcp_servers.proj]"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "an untrusted project's server started");

    // Trusted but not approved: a note saying how, still not started.
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    assert_eq!(
        env.rein(&["trust", ws.to_str().unwrap()]).status.code(),
        Some(0)
    );
    let o = exec();
    assert!(
        stderr(&o).contains("`proj` (.mcp.json, would run: sh -c echo first")
            && stderr(&o).contains("rein mcp approve proj"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "an unapproved server started");

    // Approved: it starts (it is not a real server, so it then fails).
    // `mcp list` starts servers as a run does and waits for them: a run
    // that ends at once may end before a background server was spawned.
    let o = env.rein(&["mcp", "approve", "proj"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    env.rein(&["mcp", "list"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !marker.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "first\n"
    );

    // The repository changes what `proj` runs: asked about again.
    mcp_json("second");
    let o = exec();
    assert!(stderr(&o).contains("is not approved"), "{}", stderr(&o));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "first\n");
}

/// `rein mcp add`, `get` and `remove` edit the user's config.toml and
/// keep the rest of it; bad input is one clear line.
#[test]
fn mcp_add_get_and_remove_edit_the_users_config() {
    let env = Env::new();
    let config = env.home.path().join("config.toml");
    std::fs::write(&config, "# my settings\nmax_turns = 7\n").unwrap();
    let o = env.rein(&[
        "mcp",
        "add",
        "files",
        "--env",
        "A=1",
        "--",
        "my-server",
        "--root",
        "/srv x",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# my settings\nmax_turns = 7\n"), "{text}");
    assert!(text.contains("[mcp_servers.files]"), "{text}");

    let o = env.rein(&["mcp", "get", "files", "--json"]);
    let got: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(got["transport"]["command"], "my-server");
    assert_eq!(got["transport"]["args"], json!(["--root", "/srv x"]));
    assert_eq!(got["from"], "your config.toml");
    assert_eq!(
        o.status.code(),
        Some(1),
        "my-server does not exist: {}",
        stdout(&o)
    );

    assert_clean_failure(
        &env.rein(&["mcp", "add", "files", "--", "other"]),
        2,
        "is configured already",
    );
    assert_clean_failure(
        &env.rein(&["mcp", "add", "a.b", "--", "x"]),
        2,
        "an MCP server name",
    );
    assert_clean_failure(
        &env.rein(&["mcp", "get", "nothing"]),
        2,
        "no MCP server named `nothing`",
    );

    let o = env.rein(&["mcp", "remove", "files"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "# my settings\nmax_turns = 7\n\n"
    );
    assert_clean_failure(
        &env.rein(&["mcp", "remove", "files"]),
        2,
        "has no [mcp_servers.files]",
    );
}

/// `mcp_tool_search = "always"`: the run's model finds a server's tool
/// with `tool_search`, then calls it.
#[test]
fn tool_search_finds_a_servers_tool_and_the_model_calls_it() {
    let Some(server) = everything() else { return };
    let env = with_everything(&server, "");
    let config = env.home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("mcp_tool_search = \"always\"\n{text}")).unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "tool_search", "arguments": {"query": "echo a message"}}]},
            {"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "found"}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let outputs = tool_outputs(&o);
    assert!(
        outputs[0].contains("- mcp__everything__echo:"),
        "{outputs:?}"
    );
    assert!(outputs[1].contains("Echo: found"), "{outputs:?}");
}

/// An untrusted repository may set a stricter mode, and plan counts as
/// stricter than default: it must not make a tool that default mode asks
/// about (the reference server's `toggle-simulated-logging` is not
/// read-only) run without asking.
#[test]
fn an_untrusted_projects_plan_mode_does_not_run_an_mcp_tool_default_mode_asks_about() {
    let Some(server) = everything() else { return };
    let env = with_everything(&server, "");
    std::fs::create_dir_all(env.path(".rein")).unwrap();
    std::fs::write(
        env.path(".rein/config.toml"),
        "[permissions]\nmode = \"plan\"\n",
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__everything__toggle-simulated-logging", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["go"]);
    // 9: a call needed an approval headless runs cannot give.
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    let events = json_lines(&o);
    let started = events.iter().find(|e| e["type"] == "run_started").unwrap();
    assert_eq!(started["mode"], "plan", "{started}");
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(finished["is_error"], true, "{finished}");
    let preview = finished["output_preview"].as_str().unwrap();
    assert!(preview.contains("approval"), "{preview}");
    assert!(!preview.contains("simulated"), "{preview}");
}

/// Where the Python MCP SDK is installed, and the SDK's test server;
/// `None` when the SDK is not installed (the test is then skipped).
pub fn python_server() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let sdk = std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache/rein/pymcp");
    if !sdk.join("mcp").is_dir() {
        rein_test_support::skip(
            rein_test_support::Component::PythonMcpSdk,
            "the Python MCP SDK is not installed",
        );
        return None;
    }
    let server = repo_root().join("crates/rein-mcp/tests/servers/python_sdk_server.py");
    Some((sdk, server))
}

/// Configure the Python SDK's test server as `py` in `env`'s home (its
/// resource `note://greeting` reads "hello from the note"); false when
/// the SDK is not installed (the test is then skipped).
pub fn with_python_server(env: &Env) -> bool {
    let Some((sdk, server)) = python_server() else {
        return false;
    };
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.py]\ncommand = \"python3\"\nargs = [{:?}]\nstartup_timeout_sec = 60\nenv = {{ PYTHONPATH = {:?} }}\n",
            server.display().to_string(),
            sdk.display().to_string()
        ),
    )
    .unwrap();
    true
}

/// `@server:uri` in an exec prompt attaches the resource to the message
/// the model gets (a server built with the Python SDK).
#[test]
fn a_resource_named_in_the_prompt_is_attached() {
    let env = Env::new();
    if !with_python_server(&env) {
        return;
    }
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let o = env.replay_json(&script, &["Summarise @py:note://greeting please"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let user = json_lines(&o)
        .into_iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap();
    let content = user["message"]["content"].as_str().unwrap();
    assert!(
        content.starts_with("Summarise @py:note://greeting please"),
        "{content}"
    );
    assert!(content.contains("hello from the note"), "{content}");
}

/// A sub-agent uses the parent's MCP tools (even one whose server is
/// still starting when the child begins), and the user's hooks see its
/// call with its agent id; `explore`, whose tools are listed, gets none.
#[test]
fn a_sub_agent_calls_an_mcp_tool_through_the_same_hooks() {
    let Some(server) = everything() else { return };
    let env = with_everything(&server, "");
    let log = env.ws.path().join("hook.log");
    std::fs::write(
        env.home.path().join("settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [{"type": "command",
            "command": format!("grep -o '\"agent_id\":\"[^\"]*\"' >> {}", log.display())}]}]}})
        .to_string(),
    )
    .unwrap();
    let echo = json!({"name": "mcp__everything__echo", "arguments": {"message": "from the child"}});
    let script = env.script(
        "s.json",
        &json!({
            "turns": [
                {"tool_calls": [
                    {"id": "t1", "name": "task", "arguments": {"agent": "general", "description": "echo", "prompt": "echo"}},
                    {"id": "t2", "name": "task", "arguments": {"agent": "explore", "description": "echo too", "prompt": "echo"}}
                ]},
                {"text": "done"}
            ],
            "agents": {
                "general": [{"tool_calls": [echo.clone()]}, {"text": "echoed"}],
                "explore": [{"tool_calls": [echo]}, {"text": "could not"}]
            }
        }),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let finished: Vec<(String, String, bool)> = json_lines(&o)
        .iter()
        .filter(|e| e["type"] == "subagent" && e["event"]["type"] == "tool_finished")
        .map(|e| {
            (
                e["agent"].as_str().unwrap().to_string(),
                e["event"]["output_preview"].as_str().unwrap().to_string(),
                e["event"]["is_error"] == true,
            )
        })
        .collect();
    let general = finished.iter().find(|f| f.0 == "general").unwrap();
    assert!(
        !general.2 && general.1.contains("from the child"),
        "{finished:?}"
    );
    let explore = finished.iter().find(|f| f.0 == "explore").unwrap();
    assert!(
        explore.2 && explore.1.contains("unknown tool"),
        "{finished:?}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.trim().lines().count(), 1, "{logged}");
    assert!(logged.contains("\"agent_id\":\"agent-"), "{logged}");
}

/// A headless run never waits on a server's form: by default it is
/// declined at once, and `accept-defaults` does not guess a required field
/// the schema gives no default (the reference server's `name`).
#[test]
fn a_headless_run_answers_a_servers_form_by_its_policy_without_waiting() {
    let Some(server) = everything() else { return };
    for policy in ["", "elicitation = \"accept-defaults\"\n"] {
        let more = format!("{policy}\n[permissions]\nallow = [\"mcp__everything__*\"]\n");
        let env = with_everything(&server, &more);
        let script = env.script(
            "s.json",
            &json!({"turns": [
                {"tool_calls": [{"name": "mcp__everything__trigger-elicitation-request",
                                 "arguments": {}}]},
                {"text": "done"}
            ]}),
        );
        let o = env.replay_json(&script, &["go"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let events = json_lines(&o);
        let finished = events
            .iter()
            .find(|e| e["type"] == "tool_finished")
            .unwrap_or_else(|| panic!("{events:?}"));
        let output = finished["output_preview"].as_str().unwrap();
        assert!(output.contains("User declined"), "{policy}: {output}");
    }
}
