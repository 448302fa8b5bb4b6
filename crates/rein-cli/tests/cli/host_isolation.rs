//! What rein starts on the host loads nothing from the workspace: a user's
//! own hook or MCP server that runs `python3 -m json.tool` or `make`
//! in a hostile repository runs Python's json and no Makefile of the
//! repository's; a hook sees no key of rein's unless `env_allow` names it;
//! a server's background child dies with a SIGKILLed rein.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::*;

/// A workspace package `json/` that, once imported, writes `marker`.
fn hostile_json_package(ws: &Path, marker: &Path) {
    std::fs::create_dir_all(ws.join("json")).unwrap();
    std::fs::write(
        ws.join("json/__init__.py"),
        format!("open({:?}, 'w').write('pwned')\n", marker.to_str().unwrap()),
    )
    .unwrap();
}

fn user_hooks(env: &Env, hooks: serde_json::Value) {
    std::fs::write(
        env.home.path().join("settings.json"),
        json!({"hooks": hooks}).to_string(),
    )
    .unwrap();
}

fn session_start_hook(env: &Env, command: &str) {
    user_hooks(
        env,
        json!({"SessionStart": [{"hooks": [{"type": "command", "command": command, "timeout": 30}]}]}),
    );
}

fn run_once(env: &Env) -> std::process::Output {
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    o
}

#[test]
fn a_user_hook_running_python_dash_m_does_not_import_the_workspaces_package() {
    let env = Env::new();
    let marker = env.home.path().join("pwned-by-hook");
    hostile_json_package(env.ws.path(), &marker);
    // The event JSON on stdin is what json.tool reads.
    session_start_hook(&env, "python3 -m json.tool > /dev/null");
    run_once(&env);
    assert!(!marker.exists(), "the workspace's json/ ran on the host");
}

#[test]
fn a_user_mcp_server_started_as_python_dash_m_does_not_import_the_workspaces_package() {
    let env = Env::new();
    let marker = env.home.path().join("pwned-by-server");
    hostile_json_package(env.ws.path(), &marker);
    // Not an MCP server: its handshake fails, but an import would already
    // have run.
    std::fs::write(
        env.home.path().join("config.toml"),
        "[mcp_servers.py]\ncommand = \"python3\"\nargs = [\"-m\", \"json.tool\"]\nstartup_timeout_sec = 20\n",
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__py__anything", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("MCP server `py`"), "{}", stderr(&o));
    assert!(!marker.exists(), "the workspace's json/ ran on the host");
}

#[test]
fn a_user_hook_running_make_does_not_read_the_workspaces_makefile() {
    let env = Env::new();
    let marker = env.home.path().join("pwned-by-make");
    std::fs::write(
        env.path("Makefile"),
        format!("something:\n\ttouch {}\n", marker.display()),
    )
    .unwrap();
    session_start_hook(&env, "make -s something; true");
    run_once(&env);
    assert!(!marker.exists(), "the workspace's Makefile ran on the host");
}

#[test]
fn a_hook_sees_no_key_of_reins_unless_env_allow_names_it_and_gets_the_project_as_data() {
    let env = Env::new();
    let seen = env.home.path().join("hook-env.txt");
    session_start_hook(
        &env,
        &format!("{{ env; echo cwd=$(pwd); }} > {:?}", seen.to_str().unwrap()),
    );
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let run = |env_allow: bool| {
        let config = if env_allow {
            "[permissions]\nenv_allow = [\"ANTHROPIC_API_KEY\"]\n"
        } else {
            ""
        };
        std::fs::write(env.home.path().join("config.toml"), config).unwrap();
        let o = env
            .command()
            .args(["exec", "--provider", "replay", "--script", &script, "go"])
            .env("ANTHROPIC_API_KEY", "sk-ant-secret-value")
            .env("DATABASE_URL", "postgres://user:hunter2@db/prod")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        std::fs::read_to_string(&seen).unwrap()
    };
    let text = run(false);
    assert!(!text.contains("sk-ant-secret-value"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    let ws = env.ws.path().to_str().unwrap();
    assert!(text.contains(&format!("REIN_PROJECT_DIR={ws}")), "{text}");
    assert!(text.contains(&format!("CLAUDE_PROJECT_DIR={ws}")), "{text}");
    assert!(
        !text.contains(&format!("cwd={ws}")),
        "ran in the workspace: {text}"
    );
    assert!(text.contains("PYTHONSAFEPATH=1"), "{text}");
    // The user's word passes it.
    assert!(run(true).contains("ANTHROPIC_API_KEY=sk-ant-secret-value"));
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

fn wait_for(what: impl Fn() -> bool, secs: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    what()
}

#[test]
fn an_mcp_servers_background_grandchild_dies_with_a_sigkilled_rein() {
    let env = Env::new();
    let pidfile = env.home.path().join("grandchild.pid");
    // A "server" that starts a background child and never answers.
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.bg]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 300 & echo $! > {}; exec sleep 300\"]\nstartup_timeout_sec = 120\n",
            pidfile.display()
        ),
    )
    .unwrap();
    // The model waits on the server's tool, so rein is still running.
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "mcp__bg__anything", "arguments": {}}]},
            {"text": "done"}
        ]}),
    );
    let mut rein = env
        .command()
        .args(["exec", "--provider", "replay", "--script", &script, "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let read_pid = || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
    };
    assert!(
        wait_for(|| read_pid().is_some(), 30),
        "the server did not start"
    );
    let grandchild = read_pid().unwrap();
    assert!(!gone(grandchild));
    rein.kill().unwrap();
    rein.wait().unwrap();
    assert!(
        wait_for(|| gone(grandchild), 10),
        "the server's background child {grandchild} outlived rein"
    );
}
