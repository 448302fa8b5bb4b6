//! Diagnostics after edits as a user meets them in `rein exec`: the
//! model's `write_file` of a file with a type error gets pyright's error
//! in its result; with `[lsp] enabled = false` it does not; a file of a
//! sub-project (its own `pyproject.toml`) gets its server's error too;
//! the small profile gets the errors but not the `lsp` tool.

use serde_json::json;

use super::sandbox::dirs;

fn pyright() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p =
        std::path::Path::new(&home).join(".cache/rein/lsp/node_modules/.bin/pyright-langserver");
    p.exists().then_some(p)
}

/// The `[lsp.python]` entry naming `server`, written as the home's
/// config.toml; returned for tests that add to it.
fn python_entry(d: &super::sandbox::Dirs, server: &std::path::Path) -> String {
    let entry = format!(
        "[lsp.python]\ncommand = [{:?}, \"--stdio\"]\nextensions = [\"py\"]\n",
        server.display().to_string()
    );
    std::fs::write(d.home.join("config.toml"), &entry).unwrap();
    entry
}

fn write_broken(d: &super::sandbox::Dirs) -> String {
    write_broken_at(d, "calc.py")
}

fn write_broken_at(d: &super::sandbox::Dirs, path: &str) -> String {
    run_script(d, path, &[], &[]).swap_remove(0)
}

/// A replay run: `path` written with a type error, then `more` turns,
/// then "done"; `flags` added to `rein exec`. The results of its calls.
fn run_script(
    d: &super::sandbox::Dirs,
    path: &str,
    more: &[serde_json::Value],
    flags: &[&str],
) -> Vec<String> {
    let script = d.home.join("script.json");
    let mut turns = vec![json!({"tool_calls": [{"name": "write_file", "arguments": {
        "path": path,
        "content": "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, \"2\")\n"
    }}]})];
    turns.extend(more.iter().cloned());
    turns.push(json!({"text": "done"}));
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env("REIN_HOME", &d.home)
        .env_remove("REIN_PROVIDER")
        .env_remove("REIN_MODEL")
        .current_dir(&d.ws)
        .stdin(std::process::Stdio::null())
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(flags)
        .args(["--mode", "auto", "go"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", super::support::stderr(&o));
    super::support::json_lines(&o)
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .map(|e| e["output_preview"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_written_file_with_a_type_error_gets_the_language_servers_error_unless_turned_off() {
    let Some(server) = pyright() else {
        rein_test_support::skip(rein_test_support::Component::Pyright, "no pyright");
        return;
    };
    let d = dirs();
    let entry = python_entry(&d, &server);
    let out = write_broken(&d);
    assert!(
        out.contains("[python language server: 1 error in calc.py]"),
        "{out}"
    );
    assert!(
        out.contains("calc.py:5:21: error: Argument of type"),
        "{out}"
    );
    std::fs::write(
        d.home.join("config.toml"),
        format!("[lsp]\nenabled = false\n{entry}"),
    )
    .unwrap();
    let out = write_broken(&d);
    assert!(!out.contains("language server"), "{out}");
}

#[test]
fn a_file_in_a_sub_project_gets_the_error_of_a_server_rooted_there() {
    let Some(server) = pyright() else {
        rein_test_support::skip(rein_test_support::Component::Pyright, "no pyright");
        return;
    };
    let d = dirs();
    // Two projects in one workspace, and a marker above the workspace
    // that must not be followed.
    for project in ["services/api", "services/web"] {
        std::fs::create_dir_all(d.ws.join(project)).unwrap();
        std::fs::write(d.ws.join(project).join("pyproject.toml"), "").unwrap();
    }
    python_entry(&d, &server);
    let out = write_broken_at(&d, "services/api/calc.py");
    assert!(
        out.contains("[python language server: 1 error in services/api/calc.py]"),
        "{out}"
    );
    assert!(
        out.contains("services/api/calc.py:5:21: error: Argument of type"),
        "{out}"
    );
}

#[test]
fn the_small_profile_gets_the_diagnostics_of_its_edits_but_not_the_lsp_tool() {
    let Some(server) = pyright() else {
        rein_test_support::skip(rein_test_support::Component::Pyright, "no pyright");
        return;
    };
    let d = dirs();
    python_entry(&d, &server);
    let symbols = json!({"tool_calls": [{"name": "lsp", "arguments": {
        "operation": "document_symbols", "path": "calc.py"
    }}]});
    // (no nudge: the failed lsp call would earn one, past the script)
    let small = run_script(
        &d,
        "calc.py",
        std::slice::from_ref(&symbols),
        &["--profile", "small", "--without", "nudge"],
    );
    assert!(
        small[0].contains("calc.py:5:21: error: Argument of type"),
        "{small:?}"
    );
    assert!(small[1].contains("unknown tool `lsp`"), "{small:?}");
    // The same script in the full profile: the lsp tool answers.
    let full = run_script(&d, "calc.py", &[symbols], &["--profile", "full"]);
    assert!(full[1].contains("add"), "{full:?}");
}
