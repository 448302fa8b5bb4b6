//! The sandbox as the binary fills it: `$REIN_HOME` hidden from commands
//! (plan mode included), `[sandbox]` limits from the user's config reaching
//! every command, nothing left in the project by the sandbox itself. `REIN_HOME` and the workspace live under the target
//! folder, not /tmp (private under bubblewrap: a test there would prove
//! nothing).

use serde_json::{Value, json};

use super::support::{json_lines, stderr};

pub(super) struct Dirs {
    _home: tempfile::TempDir,
    _ws: tempfile::TempDir,
    pub home: std::path::PathBuf,
    pub ws: std::path::PathBuf,
}

pub(super) fn dirs() -> Dirs {
    let base = env!("CARGO_TARGET_TMPDIR");
    let home = tempfile::Builder::new()
        .prefix("sbx-home-")
        .tempdir_in(base)
        .unwrap();
    let ws = tempfile::Builder::new()
        .prefix("sbx-ws-")
        .tempdir_in(base)
        .unwrap();
    Dirs {
        home: std::fs::canonicalize(home.path()).unwrap(),
        ws: std::fs::canonicalize(ws.path()).unwrap(),
        _home: home,
        _ws: ws,
    }
}

/// Run one bash command through a replay model; the events.
pub(super) fn run_one(d: &Dirs, mode: &str, command: &str) -> Vec<Value> {
    let script = d.home.join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
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
        .args(["--mode", mode, "go"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    json_lines(&o)
}

pub(super) fn bash_output(events: &[Value]) -> String {
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_finished")
        .unwrap_or_else(|| panic!("no tool ran: {events:?}"));
    finished["output_preview"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn commands_never_see_rein_home_not_even_in_plan_mode() {
    if !rein_tools::sandbox::can_apply(&rein_core::SandboxPolicy::default()) {
        rein_test_support::skip(rein_test_support::Component::AnySandbox, "no sandbox here");
        return;
    }
    let d = dirs();
    std::fs::write(d.home.join("marker.txt"), "REIN-HOME-MARKER\n").unwrap();
    for mode in ["plan", "auto"] {
        let cmd = format!(
            "cat {0}/marker.txt; ls -a {0}; grep -r -a -l REIN-HOME-MARKER {0}; true",
            d.home.display()
        );
        let out = bash_output(&run_one(&d, mode, &cmd));
        eprintln!("{mode}: {out}");
        assert!(!out.contains("REIN-HOME-MARKER"), "{mode}: {out}");
        assert!(!out.contains("sessions.db"), "{mode}: {out}");
        assert!(out.contains("No such file"), "{mode}: {out}");
    }
}

#[test]
fn sandbox_limits_from_the_user_config_reach_commands() {
    if !rein_tools::sandbox::can_apply(&rein_core::SandboxPolicy::default()) {
        rein_test_support::skip(rein_test_support::Component::AnySandbox, "no sandbox here");
        return;
    }
    let d = dirs();
    std::fs::write(
        d.home.join("config.toml"),
        "[sandbox]\nfile_size_mib = 1\nmax_concurrent = 2\n",
    )
    .unwrap();
    let out = bash_output(&run_one(&d, "auto", "head -c 3M /dev/zero > big"));
    eprintln!("{out}");
    assert!(out.contains("file size limit (1 MiB) reached"), "{out}");
    let len = std::fs::metadata(d.ws.join("big")).unwrap().len();
    assert!(len <= 1024 * 1024, "{len}");
}

/// Under bubblewrap a command needs `.rein/` to exist to keep it read-only;
/// a project without one has none after the session, though commands ran
/// (one after another and side by side), and no command could make one:
/// not directly, not by moving the folder away, not from a process left
/// behind.
#[test]
fn commands_leave_no_rein_folder_and_cannot_make_one() {
    if rein_tools::sandbox::available() != rein_tools::sandbox::SandboxKind::Bubblewrap {
        rein_test_support::skip(
            rein_test_support::Component::Bubblewrap,
            "`.rein` is read-only to commands only under bubblewrap",
        );
        return;
    }
    let d = dirs();
    let out = bash_output(&run_one(&d, "auto", "echo ran > ran.txt"));
    assert!(d.ws.join("ran.txt").is_file(), "{out}");
    assert!(!d.ws.join(".rein").exists(), "an empty .rein/ was left");

    let hostile = "exec 2>/dev/null; mkdir -p .rein; \
                   { echo '{}' > .rein/settings.json; } || printf 'no-settings '; \
                   { echo 'model = \"x\"' > .rein/config.toml; } || printf 'no-config '; \
                   mv .rein moved || printf 'no-move '; rmdir .rein || printf 'no-rmdir '; \
                   (sleep 2; mkdir -p .rein; echo late > .rein/config.toml) >/dev/null & \
                   echo \"files: $(ls -A .rein | wc -l)\"";
    let script = d.home.join("script.json");
    let call = |id: &str| json!({"id": id, "name": "bash", "arguments": {"command": hostile}});
    std::fs::write(
        &script,
        json!({"turns": [{"tool_calls": [call("a"), call("b")]}, {"text": "done"}]}).to_string(),
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
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let outputs: Vec<String> = json_lines(&o)
        .iter()
        .filter(|e| e["type"] == "tool_finished")
        .map(|e| e["output_preview"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    for out in &outputs {
        // Inside, `.rein` was there, empty and unchangeable.
        for refused in [
            "no-settings",
            "no-config",
            "no-move",
            "no-rmdir",
            "files: 0",
        ] {
            assert!(out.contains(refused), "{out}");
        }
    }
    // Longer than the process left behind would have waited.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let left: Vec<_> = std::fs::read_dir(&d.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(!d.ws.join(".rein").exists(), "{left:?}");
    assert!(
        std::fs::symlink_metadata(d.ws.join(".rein")).is_err(),
        "{left:?}"
    );
    assert!(!d.ws.join("moved").exists(), "{left:?}");
}
