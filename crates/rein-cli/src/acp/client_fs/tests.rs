use super::*;

fn ctx(workspace: &Path) -> ToolContext {
    ToolContext {
        workspace: workspace.to_path_buf(),
        session_id: "s".into(),
        call_id: "c".into(),
        cancel: CancellationToken::new(),
        store: Arc::new(rein_core::InMemorySessionStore::new()),
        sandbox: rein_core::SandboxPolicy::default(),
        read_roots: Vec::new(),
        events: None,
    }
}

#[test]
fn a_symlink_appearing_on_a_resolved_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/a.rs"), "x").unwrap();
    let c = ctx(&ws);
    let path = workspace::resolve(&ws, "src/a.rs").unwrap();
    assert!(still_plain(&c, &path, "src/a.rs").is_ok());
    // A file not made yet is plain too.
    assert!(still_plain(&c, &ws.join("src/new.rs"), "src/new.rs").is_ok());
    // The folder swapped for a symlink after the path was resolved.
    let outside = tempfile::tempdir().unwrap();
    std::fs::rename(ws.join("src"), ws.join("old")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("src")).unwrap();
    let e = still_plain(&c, &path, "src/a.rs").unwrap_err();
    assert!(e.0.contains("a symlink appeared"), "{e}");
    // A path outside the workspace never passes.
    let e = still_plain(&c, outside.path(), "x").unwrap_err();
    assert!(e.0.contains("outside the workspace"), "{e}");
}

#[test]
fn what_the_client_offers_decides_what_goes_through_it() {
    let none = Through::offered(&ClientCapabilities::default());
    assert_eq!(none, Through::default());
    let caps: ClientCapabilities = serde_json::from_value(serde_json::json!({
        "fs": {"readTextFile": true, "writeTextFile": false}, "terminal": true
    }))
    .unwrap();
    assert_eq!(
        Through::offered(&caps),
        Through {
            read: true,
            write: false
        }
    );
}
