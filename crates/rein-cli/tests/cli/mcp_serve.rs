//! `rein mcp serve` driven by the official Python MCP SDK as its client:
//! initialize, list, a call that runs rein (with the replay provider) and
//! reports progress, the result tool, bad arguments and a `cwd` outside
//! the project (tool errors; the server goes on), an unknown tool (a
//! protocol error), and a cancel that stops the run mid-command.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::sandbox::dirs;

fn sdk() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("HOME")?).join(".cache/rein/pymcp");
    if dir.join("mcp").is_dir() {
        return Some(dir);
    }
    rein_test_support::skip(
        rein_test_support::Component::PythonMcpSdk,
        "the Python MCP SDK is not installed",
    );
    None
}

fn client(sdk: &PathBuf, d: &super::sandbox::Dirs, script: Value, mode: &str) -> Value {
    let path = d.home.join("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cli/mcp_serve_client.py");
    let o = std::process::Command::new("python3")
        .arg(&client)
        .arg(env!("CARGO_BIN_EXE_rein"))
        .arg(&d.ws)
        .arg(&path)
        .arg(mode)
        .env("PYTHONPATH", sdk)
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    serde_json::from_str(out.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {out}\n{err}"))
}

#[test]
fn another_agent_runs_rein_through_mcp_and_reads_its_result() {
    let Some(sdk) = sdk() else { return };
    let d = dirs();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo made > made.txt"}}]},
        {"text": "Made the file."}
    ]});
    let seen = client(&sdk, &d, script, "basic");
    assert_eq!(seen["server"], "rein");
    assert_eq!(seen["tools"], json!(["rein", "rein_result"]));
    let answer = seen["answer"].as_str().unwrap();
    assert!(answer.starts_with("Made the file.\n[session "), "{answer}");
    assert_eq!(seen["is_error"], false);
    assert_eq!(
        std::fs::read_to_string(d.ws.join("made.txt")).unwrap(),
        "made\n"
    );
    let progress: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(progress.contains(&"turn 1"), "{progress:?}");
    assert!(
        progress.iter().any(|p| p.starts_with("bash echo made")),
        "{progress:?}"
    );
    assert_eq!(seen["result"]["answer"], "Made the file.");
    assert_eq!(seen["result"]["stop_reason"], "completed");
    assert_eq!(seen["result"]["exit_code"], 0);
    assert_eq!(seen["bad"][0], true);
    assert!(
        seen["bad"][1]
            .as_str()
            .unwrap()
            .contains("bad arguments for `rein`"),
        "{seen}"
    );
    assert_eq!(seen["outside"][0], true);
    assert!(
        seen["outside"][1].as_str().unwrap().contains("cwd `../..`"),
        "{seen}"
    );
    assert!(
        seen["unknown"]
            .as_str()
            .unwrap()
            .contains("no tool named `nope`"),
        "{seen}"
    );
}

#[test]
fn a_cancelled_call_stops_its_run_and_the_server_goes_on() {
    let Some(sdk) = sdk() else { return };
    let d = dirs();
    let script = json!({"turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2 && echo late > late.txt"}}]},
        {"text": "done"}
    ]});
    let seen = client(&sdk, &d, script, "cancel");
    assert_eq!(seen["after_cancel"], 2);
    assert!(
        !d.ws.join("late.txt").exists(),
        "the cancelled command ran on"
    );
}

#[test]
fn rein_calls_rein_through_its_own_mcp_client() {
    let d = dirs();
    // The inner rein keeps its sessions in a home of its own, never the
    // user's: host processes get an allowlisted environment, so it is
    // named in the server's `env`.
    let inner_home = d.home.join("inner-home");
    std::fs::create_dir_all(&inner_home).unwrap();
    let inner = d.home.join("inner.json");
    std::fs::write(
        &inner,
        json!({"turns": [{"text": "inner answer 42"}]}).to_string(),
    )
    .unwrap();
    std::fs::write(
        d.home.join("config.toml"),
        format!(
            "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"mcp\", \"serve\", \"-C\", {:?}, \
             \"--provider\", \"replay\", \"--script\", {:?}]\nstartup_timeout_sec = 60\n\
             env = {{ REIN_HOME = {:?} }}\n",
            env!("CARGO_BIN_EXE_rein"),
            d.ws.display().to_string(),
            inner.display().to_string(),
            inner_home.display().to_string()
        ),
    )
    .unwrap();
    let outer = d.home.join("outer.json");
    std::fs::write(
        &outer,
        json!({"turns": [
            {"tool_calls": [{"name": "mcp__inner__rein", "arguments": {"prompt": "what is it?"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args([
            "exec",
            "--json",
            "--mode",
            "auto",
            "--provider",
            "replay",
            "--script",
        ])
        .arg(&outer)
        .arg("go")
        .output()
        .unwrap();
    let events = super::support::json_lines(&o);
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished" && e["name"] == "mcp__inner__rein")
        .unwrap_or_else(|| panic!("{}", super::support::stderr(&o)));
    let out = finished["output_preview"].as_str().unwrap();
    assert!(out.starts_with("inner answer 42"), "{out}");
    assert_eq!(finished["is_error"], false);
    assert!(
        inner_home.join("sessions.db").exists(),
        "the inner rein did not use the home it was given"
    );
}
