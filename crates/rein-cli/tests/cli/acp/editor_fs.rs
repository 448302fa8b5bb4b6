//! `rein acp` with an editor that offers its file system: the file tools
//! read its buffers, with rein's confinement and gate first; writes are
//! rein's own, beneath the workspace's handle.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::*;

/// The capabilities of an editor that offers its file system.
fn fs_capabilities() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}})
}

/// The outputs of the tool results stored in session `id`, by call id.
fn tool_results(env: &Env, id: &str) -> HashMap<String, (String, bool)> {
    stored(env, id)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["call_id"].as_str().unwrap_or("").to_string(),
                (
                    m["output"].as_str().unwrap_or("").to_string(),
                    m["is_error"].as_bool().unwrap_or(false),
                ),
            )
        })
        .collect()
}

/// A script whose first turn makes `calls` (name, arguments) with ids
/// c1, c2, ..., then answers `text`.
fn calls_then(env: &Env, calls: &[(&str, Value)], text: &str) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| json!({"id": format!("c{}", i + 1), "name": name, "arguments": args}))
        .collect();
    env.script(
        "calls.json",
        &json!({"turns": [{"tool_calls": calls}, {"text": text}]}),
    )
}

#[test]
fn acp_read_file_reads_the_editor_buffer_when_the_client_offers_it() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    std::fs::write(ws.join("a.txt"), "on disk\n").unwrap();
    let script = calls_then(&env, &[("read_file", json!({"path": "a.txt"}))], "Read.");
    let mut c = Client::start_offering(&env, &script, &[], fs_capabilities());
    let file = ws.join("a.txt").display().to_string();
    c.buffers
        .insert(file.clone(), "unsaved one\nunsaved two\n".into());
    let session = c.new_session(&ws);
    let done = c.prompt(&session, "read a.txt");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(c.fs_asked.len(), 1, "{:#?}", c.fs_asked);
    assert_eq!(c.fs_asked[0]["method"], "fs/read_text_file");
    assert_eq!(c.fs_asked[0]["params"]["path"], file.as_str());
    assert_eq!(c.fs_asked[0]["params"]["sessionId"], session.as_str());
    drop(c);
    // The model saw the buffer, numbered as read_file numbers a file.
    let (output, is_error) = &tool_results(&env, &session)["c1"];
    assert!(!is_error, "{output}");
    assert_eq!(output, "     1\tunsaved one\n     2\tunsaved two");
}

#[test]
fn acp_write_and_edit_are_written_by_rein_never_by_name_through_the_editor() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    std::fs::write(ws.join("b.txt"), "alpha\nbeta\n").unwrap();
    let script = calls_then(
        &env,
        &[
            (
                "write_file",
                json!({"path": "sub/new.txt", "content": "fresh\n"}),
            ),
            (
                "edit_file",
                json!({"path": "b.txt", "old_string": "gamma", "new_string": "delta"}),
            ),
        ],
        "Done.",
    );
    let mut c = Client::start_offering(&env, &script, &[], fs_capabilities());
    let b = ws.join("b.txt").display().to_string();
    let new = ws.join("sub/new.txt").display().to_string();
    // The buffer holds unsaved lines the disk does not have.
    c.buffers
        .insert(b.clone(), "alpha\nbeta (unsaved)\ngamma\n".into());
    let session = c.new_session(&ws);
    let done = c.prompt(&session, "write and edit");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    // The editor was asked only for the edit's text (its buffer); rein
    // wrote both files, the edit applied to the buffer's text.
    let asked: Vec<&str> = c
        .fs_asked
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["fs/read_text_file"], "{:#?}", c.fs_asked);
    assert!(!c.buffers.contains_key(&new));
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/new.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).unwrap(),
        "alpha\nbeta (unsaved)\ndelta\n"
    );
    // The edit's call shows the diff it made to the buffer, and keeps it.
    let last_content: Vec<&Value> = c
        .updates_of("tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == "c2" && u.get("content").is_some())
        .collect();
    let shown = &last_content.last().expect("no content for the edit")["content"][0];
    assert_eq!(shown["type"], "diff", "{:#?}", c.seen);
    assert_eq!(shown["oldText"], "alpha\nbeta (unsaved)\ngamma\n");
    assert_eq!(shown["newText"], "alpha\nbeta (unsaved)\ndelta\n");
    drop(c);
    let results = tool_results(&env, &session);
    assert_eq!(
        results["c1"],
        (
            "Created `sub/new.txt` (6 bytes, 1 line).".to_string(),
            false
        )
    );
    let (edit, is_error) = &results["c2"];
    assert!(!is_error, "{edit}");
    assert!(
        edit.starts_with("Edited `b.txt`: 1 replacement.\n"),
        "{edit}"
    );
    assert!(edit.contains("-gamma\n+delta"), "{edit}");
}

#[test]
fn acp_paths_leaving_the_workspace_are_refused_before_the_editor_is_asked() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside.path()).unwrap();
    std::fs::write(outside.join("secret.txt"), "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
    let secret = outside.join("secret.txt").display().to_string();
    let script = calls_then(
        &env,
        &[
            ("read_file", json!({"path": "../secret.txt"})),
            ("read_file", json!({"path": secret})),
            ("read_file", json!({"path": "out/secret.txt"})),
            (
                "write_file",
                json!({"path": "out/planted.txt", "content": "x"}),
            ),
            (
                "edit_file",
                json!({"path": secret, "old_string": "TOP", "new_string": "NOT"}),
            ),
        ],
        "Carried on.",
    );
    let mut c = Client::start_offering(&env, &script, &["--mode", "auto"], fs_capabilities());
    c.buffers.insert(secret.clone(), "TOP SECRET\n".into());
    let session = c.new_session(&ws);
    let done = c.prompt(&session, "try to leave");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert!(
        c.fs_asked.is_empty(),
        "the editor was asked: {:#?}",
        c.fs_asked
    );
    assert_eq!(c.text_of("agent_message_chunk"), "Carried on.");
    drop(c);
    let results = tool_results(&env, &session);
    for id in ["c1", "c2", "c3", "c4", "c5"] {
        let (output, is_error) = &results[id];
        assert!(is_error, "{id} ran: {output}");
        assert!(output.contains("outside"), "{id}: {output}");
        assert!(!output.contains("TOP SECRET"), "{id}: {output}");
    }
    assert!(!outside.join("planted.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "TOP SECRET\n"
    );
}

#[test]
fn acp_an_editor_error_is_an_error_observation_and_the_turn_goes_on() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    std::fs::write(ws.join("a.txt"), "on disk\n").unwrap();
    let script = calls_then(
        &env,
        &[
            ("read_file", json!({"path": "a.txt"})),
            ("write_file", json!({"path": "c.txt", "content": "x\n"})),
        ],
        "Carried on.",
    );
    let mut c = Client::start_offering(&env, &script, &["--mode", "auto"], fs_capabilities());
    c.fs_error = Some("the buffer is locked".into());
    let session = c.new_session(&ws);
    let done = c.prompt(&session, "read and write");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    // Only the read asks the editor: the write is rein's.
    assert_eq!(c.fs_asked.len(), 1, "{:#?}", c.fs_asked);
    assert_eq!(c.text_of("agent_message_chunk"), "Carried on.");
    let out = c.finish();
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let results = tool_results(&env, &session);
    let (read, is_error) = &results["c1"];
    assert!(is_error, "{read}");
    assert!(
        read.contains("the editor could not read `a.txt`: the buffer is locked"),
        "{read}"
    );
    let (write, is_error) = &results["c2"];
    assert!(!is_error, "{write}");
    assert_eq!(std::fs::read_to_string(ws.join("c.txt")).unwrap(), "x\n");
}

#[test]
fn acp_a_client_without_fs_gets_rein_own_disk_io() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    std::fs::write(ws.join("a.txt"), "on disk\n").unwrap();
    // One call a turn: the read comes before the edit.
    let script = env.script(
        "read-edit.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"id": "c2", "name": "edit_file", "arguments":
                {"path": "a.txt", "old_string": "on disk", "new_string": "edited"}}]},
            {"text": "Done."}
        ]}),
    );
    // Only reading offered: edits stay rein's (an edit needs the buffer's
    // text to apply to), reads go to the editor.
    let read_only = json!({"fs": {"readTextFile": true}});
    for (caps, reads_buffer) in [(json!({}), false), (read_only, true)] {
        std::fs::write(ws.join("a.txt"), "on disk\n").unwrap();
        let mut c = Client::start_offering(&env, &script, &["--mode", "auto"], caps);
        let file = ws.join("a.txt").display().to_string();
        c.buffers.insert(file, "in the buffer\n".into());
        let session = c.new_session(&ws);
        let done = c.prompt(&session, "read and edit");
        assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
        let asked: Vec<&str> = c
            .fs_asked
            .iter()
            .map(|m| m["method"].as_str().unwrap())
            .collect();
        let expected: &[&str] = if reads_buffer {
            &["fs/read_text_file"]
        } else {
            &[]
        };
        assert_eq!(asked, expected);
        drop(c);
        assert_eq!(
            std::fs::read_to_string(ws.join("a.txt")).unwrap(),
            "edited\n"
        );
        let results = tool_results(&env, &session);
        let shown = if reads_buffer {
            "in the buffer"
        } else {
            "on disk"
        };
        assert_eq!(results["c1"].0, format!("     1\t{shown}"));
    }
}

#[test]
fn acp_the_gate_decides_on_editor_writes_as_on_rein_own() {
    let env = Env::new();
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    let script = env.script(
        "two-writes.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "c1", "name": "write_file",
                             "arguments": {"path": "x.txt", "content": "x\n"}}]},
            {"text": "Denied."},
            {"tool_calls": [{"id": "c2", "name": "write_file",
                             "arguments": {"path": "x.txt", "content": "x\n"}}]},
            {"text": "Planned."}
        ]}),
    );
    let mut c = Client::start_offering(&env, &script, &[], fs_capabilities());
    c.answer = Some("deny".into());
    let session = c.new_session(&ws);
    // Asked first, as rein's own write is; denied, the editor never hears.
    let done = c.prompt(&session, "write x.txt");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(c.asked.len(), 1, "{:#?}", c.seen);
    assert_eq!(c.asked[0]["params"]["toolCall"]["toolCallId"], "c1");
    // In plan mode the write is refused without asking anyone.
    let r = c.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert!(r.get("error").is_none(), "{r}");
    let done = c.prompt(&session, "write it anyway");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(c.asked.len(), 1, "plan mode asked: {:#?}", c.asked);
    assert!(
        c.fs_asked.is_empty(),
        "the editor was asked: {:#?}",
        c.fs_asked
    );
    drop(c);
    let results = tool_results(&env, &session);
    assert!(results["c1"].1 && results["c2"].1, "{results:?}");
}
