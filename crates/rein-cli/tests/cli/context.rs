//! Project instructions through the binary: `rein context` lists the
//! AGENTS.md / CLAUDE.md files a run follows (yours, then the project's
//! from its root down), and a headless run gets a nested folder's file
//! with the first call that works there.

use serde_json::json;

use super::support::*;

/// A repository (with `.git`) around the workspace `app/`: an AGENTS.md
/// at its root, a CLAUDE.md in `app/`, an AGENTS.md in `app/api/`.
fn repo(env: &Env) -> std::path::PathBuf {
    let root = env.ws.path();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Root rule: use tabs.").unwrap();
    std::fs::create_dir_all(root.join("app/api")).unwrap();
    std::fs::write(root.join("app/CLAUDE.md"), "App rule: run make test.").unwrap();
    std::fs::write(root.join("app/api/AGENTS.md"), "API rule: no panics.").unwrap();
    std::fs::write(root.join("app/api/handler.rs"), "fn handle() {}\n").unwrap();
    root.join("app")
}

#[test]
fn rein_context_lists_yours_then_the_projects_files_root_first() {
    let env = Env::new();
    let app = repo(&env);
    std::fs::write(env.home.path().join("AGENTS.md"), "Mine: be brief.").unwrap();
    let o = env.rein(&["context", "-C", app.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {text}"))
    };
    assert!(
        at("yours") < at("project") && at("/AGENTS.md") < at("app/CLAUDE.md"),
        "{text}"
    );
    assert!(
        !text.contains("api/AGENTS.md"),
        "nested files come during a run: {text}"
    );

    let o = env.rein(&["context", "--json", "-C", app.to_str().unwrap()]);
    let rows = json_lines(&o);
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows[0]["origin"], "global");
    assert_eq!(rows[2]["bytes"], 24);
    assert_eq!(rows[3]["notes"], json!([]));
}

/// A repository's AGENTS.md that is a symlink (to a secret outside the
/// project) is not read, and the user is told.
#[test]
fn a_symlinked_agents_md_is_not_read_and_the_user_is_told() {
    let env = Env::new();
    let secret = env.home.path().join("secret.txt");
    std::fs::write(&secret, "TOKEN=hunter2").unwrap();
    std::os::unix::fs::symlink(&secret, env.ws.path().join("AGENTS.md")).unwrap();
    let o = env.rein(&["context"]);
    let text = stdout(&o);
    assert!(text.contains("not read: it is a symbolic link"), "{text}");
    assert!(!text.contains("hunter2"));
    let script = env.script("s.json", &json!({"turns": [{"text": "done"}]}));
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
    let told = json_lines(&o).iter().any(|e| {
        e["type"] == "notice"
            && e["message"].as_str().is_some_and(|m| {
                m.contains("instructions AGENTS.md not read: it is a symbolic link")
            })
    });
    assert!(told, "{}", stdout(&o));
    assert!(!stdout(&o).contains("hunter2"));
}

/// In a headless run the model reads a file in `api/`: the folder's
/// AGENTS.md comes with that result, once.
#[test]
fn a_nested_folders_instructions_come_with_the_first_call_there() {
    let env = Env::new();
    let app = repo(&env);
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "api/handler.rs"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "api/handler.rs", "offset": 1}}]},
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
        "-C",
        app.to_str().unwrap(),
        "go",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let outputs = tool_outputs(&o);
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert!(
        outputs[0].contains("fn handle()") && outputs[0].contains("API rule: no panics."),
        "{}",
        outputs[0]
    );
    assert!(!outputs[1].contains("API rule"), "{}", outputs[1]);
}
