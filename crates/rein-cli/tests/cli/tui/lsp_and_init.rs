//! `/lsp` (a line per language server, from the LSP client's own record)
//! and `/init` (its write of AGENTS.md shows the diff and asks first, even
//! in accept-edits mode) in the app.

use serde_json::json;

use super::{Tmux, quit};
use crate::cli::support::*;

const BROKEN: &str =
    "def add(a: int, b: int) -> int:\n    return a + b\n\n\ntotal: int = add(1, \"2\")\n";

/// `/lsp` before any edit says the configured server has not started and
/// the one whose program is absent is missing; after the model writes a
/// file of a sub-project, its server is ready, rooted at that project.
#[test]
fn slash_lsp_shows_each_language_servers_state_from_not_started_to_ready() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let server =
        std::path::PathBuf::from(home).join(".cache/rein/lsp/node_modules/.bin/pyright-langserver");
    if !server.exists() {
        rein_test_support::skip(rein_test_support::Component::Pyright, "no pyright");
        return;
    }
    let env = Env::new();
    std::fs::create_dir_all(env.path("svc/api")).unwrap();
    std::fs::write(env.path("svc/api/pyproject.toml"), "").unwrap();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[lsp.python]\ncommand = [{:?}, \"--stdio\"]\nextensions = [\"py\"]\n\n\
             [lsp.gone]\ncommand = [\"no-such-langserver\"]\nextensions = [\"zz\"]\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "write_file",
                             "arguments": {"path": "svc/api/calc.py", "content": BROKEN}}]},
            {"text": "Written."}
        ]}),
    );
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "--mode",
            "accept-edits",
        ],
    );
    app.wait_for("accept-edits");
    app.type_text("/lsp");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Language servers");
    assert!(screen.contains("python: not started yet ("), "{screen}");
    assert!(
        screen.contains("gone: missing: no-such-langserver is not on PATH"),
        "{screen}"
    );
    app.type_text("write calc.py");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Written.");
    assert!(screen.contains("1 error in svc/api/calc.py"), "{screen}");
    app.type_text("/lsp");
    app.keys(&["Enter"]);
    let screen = app.wait_for("python [svc/api]: ready");
    assert!(screen.contains("gone: missing"), "{screen}");
    quit(&app);
}

/// `/init` in accept-edits mode: its write of AGENTS.md, which the mode
/// and the command's pre-approval would let through, opens the approval
/// with the diff; `n` leaves the file as it was.
#[test]
fn slash_init_shows_the_agents_md_diff_and_asks_even_in_accept_edits_mode() {
    let env = Env::new();
    std::fs::write(env.path("AGENTS.md"), "Old notes.\n").unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": "AGENTS.md", "content": "Build with make; test with make check.\n"}}]},
            {"text": "Left AGENTS.md alone."}
        ]}),
    );
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "--mode",
            "accept-edits",
        ],
    );
    app.wait_for("accept-edits");
    app.type_text("/init");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Allow write_file?");
    assert!(screen.contains("AGENTS.md"), "{screen}");
    assert!(screen.contains("-Old notes."), "{screen}");
    assert!(
        screen.contains("+Build with make; test with make check."),
        "{screen}"
    );
    assert!(screen.contains("asks first"), "{screen}");
    std::thread::sleep(std::time::Duration::from_millis(400));
    app.keys(&["n"]);
    app.wait_for("Left AGENTS.md alone.");
    assert_eq!(
        std::fs::read_to_string(env.path("AGENTS.md")).unwrap(),
        "Old notes.\n"
    );
    quit(&app);
}
