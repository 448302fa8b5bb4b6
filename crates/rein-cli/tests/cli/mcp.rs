//! MCP servers through the binary: `[mcp_servers.NAME]` in the user's
//! config starts a real server (the reference "everything" server, which
//! `.ci/run` installs under `~/.cache/rein/npm`) and its tools run in a
//! headless run; a server that fails is one note; a project's config
//! cannot start one in a folder that is not trusted.

use std::path::PathBuf;

use serde_json::json;

use super::support::*;

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

/// A home whose config.toml starts the reference server as `everything`,
/// with `more` appended to the file.
fn with_everything(server: &std::path::Path, more: &str) -> Env {
    let env = Env::new();
    let config = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n{more}",
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
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
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
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "go",
    ]);
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
