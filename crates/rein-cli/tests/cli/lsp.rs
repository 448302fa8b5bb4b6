//! Diagnostics after edits as a user meets them in `rein exec`: the
//! model's `write_file` of a file with a type error gets pyright's error
//! in its result; with `[lsp] enabled = false` it does not; a file of a
//! sub-project (its own `pyproject.toml`) gets its server's error too.

use serde_json::json;

use super::sandbox::{bash_output, dirs};

fn pyright() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p =
        std::path::Path::new(&home).join(".cache/rein/lsp/node_modules/.bin/pyright-langserver");
    p.exists().then_some(p)
}

fn write_broken(d: &super::sandbox::Dirs) -> String {
    write_broken_at(d, "calc.py")
}

fn write_broken_at(d: &super::sandbox::Dirs, path: &str) -> String {
    let script = d.home.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": path,
                "content": "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, \"2\")\n"
            }}]},
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
        .args(["exec", "--json", "--provider", "replay", "--script"])
        .arg(&script)
        .args(["--mode", "auto", "go"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", super::support::stderr(&o));
    bash_output(&super::support::json_lines(&o))
}

#[test]
fn a_written_file_with_a_type_error_gets_the_language_servers_error_unless_turned_off() {
    let Some(server) = pyright() else {
        rein_test_support::skip(rein_test_support::Component::Pyright, "no pyright");
        return;
    };
    let d = dirs();
    let entry = format!(
        "[lsp.python]\ncommand = [{:?}, \"--stdio\"]\nextensions = [\"py\"]\n",
        server.display().to_string()
    );
    std::fs::write(d.home.join("config.toml"), &entry).unwrap();
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
    let entry = format!(
        "[lsp.python]\ncommand = [{:?}, \"--stdio\"]\nextensions = [\"py\"]\n",
        server.display().to_string()
    );
    std::fs::write(d.home.join("config.toml"), &entry).unwrap();
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
