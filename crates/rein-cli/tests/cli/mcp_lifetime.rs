//! The lifetime of MCP servers: killed when rein dies.

use serde_json::json;

use crate::cli::support::*;

/// MCP servers are killed when rein dies: rein is SIGKILLed (no clean-up of
/// its own can run) while a server it started is up, and the server is gone
/// soon after.
#[test]
fn an_mcp_server_dies_when_rein_is_killed() {
    let env = Env::new();
    // A sleep of an odd length: its command line finds it.
    let marker = "61.52917";
    std::fs::write(
        env.home.path().join("config.toml"),
        format!("[mcp_servers.slow]\ncommand = \"sleep\"\nargs = [\"{marker}\"]\n"),
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 8"}}]}]}),
    );
    let mut child = env
        .command()
        .args([
            "exec",
            "--mode",
            "bypass",
            "--provider",
            "replay",
            "--script",
        ])
        .arg(&script)
        .arg("go")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
    };
    let wait_for = |want: bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while alive() != want && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        alive() == want
    };
    assert!(wait_for(true), "the server never started");
    // While rein runs (its bash call sleeps 8 s), the server stays.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        alive() && child.try_wait().unwrap().is_none(),
        "ended early"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_for(false), "the server outlived rein's SIGKILL");
}
