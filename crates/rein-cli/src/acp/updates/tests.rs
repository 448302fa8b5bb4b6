use super::*;

fn json(update: &SessionUpdate) -> Value {
    serde_json::to_value(update).unwrap()
}

fn started(u: &mut Updates, name: &str, args: Value) -> Value {
    let out = u.of(&Event::ToolStarted {
        call_id: "c1".into(),
        name: name.into(),
        arguments: args.to_string(),
    });
    assert_eq!(out.len(), 1, "{out:?}");
    json(&out[0])
}

fn finished(u: &mut Updates, is_error: bool) -> Value {
    let out = u.of(&Event::ToolFinished {
        call_id: "c1".into(),
        name: "x".into(),
        duration_ms: 1,
        is_error,
        output_preview: "preview".into(),
    });
    json(&out[0])
}

#[test]
fn an_edit_shows_the_whole_file_before_and_after_as_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(ws.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let mut u = Updates::new(&ws);
    let call = started(
        &mut u,
        "edit_file",
        serde_json::json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
    );
    assert_eq!(call["sessionUpdate"], "tool_call", "{call}");
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], "Edit a.txt");
    assert_eq!(
        call["locations"][0]["path"],
        ws.join("a.txt").display().to_string()
    );
    let diff = &call["content"][0];
    assert_eq!(diff["type"], "diff", "{call}");
    assert_eq!(diff["oldText"], "one\ntwo\nthree\n");
    assert_eq!(diff["newText"], "one\n2\nthree\n");
    // The tool ran: the update shows what the file holds now.
    std::fs::write(ws.join("a.txt"), "one\n2\nthree\n").unwrap();
    let done = finished(&mut u, false);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["content"][0]["newText"], "one\n2\nthree\n");
    assert_eq!(done["content"][0]["oldText"], "one\ntwo\nthree\n");
}

#[test]
fn a_file_outside_the_workspace_or_behind_a_symlink_is_never_read_for_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let secret = ws.parent().unwrap().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").unwrap();
    std::os::unix::fs::symlink(&secret, ws.join("link.txt")).unwrap();
    let mut u = Updates::new(&ws);
    for path in ["../secret.txt", secret.to_str().unwrap(), "link.txt"] {
        let call = started(
            &mut u,
            "write_file",
            serde_json::json!({"path": path, "content": "x"}),
        );
        assert!(!call.to_string().contains("TOP SECRET"), "{path}: {call}");
    }
}

#[test]
fn a_fifo_in_the_workspace_does_not_block_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    let fifo = ws.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut u = Updates::new(&ws);
    let call = started(
        &mut u,
        "write_file",
        serde_json::json!({"path": "pipe", "content": "new"}),
    );
    assert_eq!(call["content"][0]["newText"], "new", "{call}");
    assert!(call["content"][0]["oldText"].is_null(), "{call}");
}

#[test]
fn bash_shows_its_command_and_a_failed_call_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let mut u = Updates::new(dir.path());
    let call = started(
        &mut u,
        "bash",
        serde_json::json!({"command": "cargo test\necho hi"}),
    );
    assert_eq!(call["kind"], "execute");
    assert_eq!(call["title"], "`cargo test…`");
    assert_eq!(call["rawInput"]["command"], "cargo test\necho hi");
    let text = call["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("cargo test\necho hi"), "{text}");
    assert_eq!(finished(&mut u, true)["status"], "failed");
}

#[test]
fn output_cannot_close_its_code_fence() {
    let fenced = fenced("", "a ``` b ```` c");
    assert!(fenced.starts_with("`````\n"), "{fenced}");
    assert!(fenced.ends_with("\n`````"), "{fenced}");
}

#[test]
fn todos_become_the_plan_without_cancelled_ones() {
    let todo = |content: &str, status| Todo {
        id: content.into(),
        content: content.into(),
        status,
    };
    let plan = json(&plan(&[
        todo("read", TodoStatus::Completed),
        todo("fix", TodoStatus::InProgress),
        todo("drop", TodoStatus::Cancelled),
        todo("test", TodoStatus::Pending),
    ]));
    let entries: Vec<(String, String)> = plan["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("read".to_string(), "completed".to_string()),
            ("fix".into(), "in_progress".into()),
            ("test".into(), "pending".into())
        ]
    );
}

#[test]
fn a_subagents_calls_are_shown_with_ids_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut u = Updates::new(dir.path());
    let out = u.of(&Event::Subagent {
        agent_id: "a1".into(),
        agent: "explore".into(),
        description: "look".into(),
        call_id: "t1".into(),
        event: Box::new(Event::ToolStarted {
            call_id: "c1".into(),
            name: "grep".into(),
            arguments: r#"{"pattern":"fn main"}"#.into(),
        }),
    });
    let call = json(&out[0]);
    assert_eq!(call["toolCallId"], "a1/c1");
    assert_eq!(call["title"], "[explore] Search for fn main");
}

#[test]
fn an_edit_keeps_its_diff_and_writes_through_the_editor_are_not_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    let committed = Event::MessageCommitted {
        seq: 1,
        message: Message::Tool(rein_core::ToolResult {
            call_id: "c1".into(),
            name: "write_file".into(),
            output: "Overwrote `a.txt`".into(),
            is_error: false,
            images: Vec::new(),
        }),
    };
    for through_editor in [false, true] {
        let mut u = Updates::new(&ws).writes_through_client(through_editor);
        started(
            &mut u,
            "write_file",
            serde_json::json!({"path": "a.txt", "content": "two\n"}),
        );
        let done = finished(&mut u, false);
        assert_eq!(done["status"], "completed");
        if through_editor {
            // The disk still says "one": it is not shown as the result.
            assert!(done.get("content").is_none(), "{done}");
        } else {
            assert_eq!(done["content"][0]["newText"], "one\n", "{done}");
        }
        // The output that follows does not replace the diff.
        assert!(u.of(&committed).is_empty());
    }
}
