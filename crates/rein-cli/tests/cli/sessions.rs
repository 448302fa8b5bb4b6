//! `rein sessions list | show | delete`.

use serde_json::json;

use super::support::*;

#[test]
fn sessions_are_listed_newest_first_shown_and_deleted() {
    let env = Env::new();
    let mut ids = Vec::new();
    for (i, title) in ["first task", "second task"].iter().enumerate() {
        let script = env.script(
            &format!("s{i}.json"),
            &json!({"turns": [{"text": format!("answer {i}")}]}),
        );
        let o = env.rein(&[
            "exec",
            "--json",
            "--provider",
            "replay",
            "--script",
            &script,
            title,
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        ids.push(session_id(&json_lines(&o)));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let o = env.rein(&["sessions", "list"]);
    let table = stdout(&o);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("ID"), "{table}");
    assert!(
        lines[1].starts_with(&ids[1]) && lines[1].contains("second task"),
        "{table}"
    );
    assert!(lines[2].starts_with(&ids[0]), "{table}");
    // Model, turns, cost and how the last run ended are columns.
    for column in ["MODEL", "TURNS", "COST", "LAST RUN"] {
        assert!(lines[0].contains(column), "{table}");
    }
    let cells: Vec<&str> = lines[1].split_whitespace().collect();
    assert!(cells.contains(&"replay"), "{table}");
    assert!(cells.contains(&"completed"), "{table}");
    assert!(lines[1].contains(" 1  cost unknown "), "{table}");
    let json = json_lines(&env.rein(&["sessions", "list", "--json"]));
    assert_eq!(json[0]["last_stop"], "completed");

    let o = env.rein(&["sessions", "show", &ids[0]]);
    let shown = stdout(&o);
    assert!(shown.contains("── user ──\nfirst task"), "{shown}");
    assert!(shown.contains("── assistant ──\nanswer 0"), "{shown}");

    let o = env.rein(&["sessions", "delete", &ids[0]]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = env.rein(&["sessions", "list", "--json"]);
    assert_eq!(json_lines(&o).len(), 1);
}

#[test]
fn show_prints_tool_calls_results_and_todos() {
    let env = Env::new();
    let script = env.script(
        "t.json",
        &json!({"turns": [
            {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [{"id": "1", "content": "look around", "status": "in_progress"}]}}]},
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
        "todo",
    ]);
    let id = session_id(&json_lines(&o));
    let shown = stdout(&env.rein(&["sessions", "show", &id]));
    assert!(shown.contains("→ todo_write"), "{shown}");
    assert!(shown.contains("── tool todo_write"), "{shown}");
    assert!(shown.contains("[~] 1. look around"), "{shown}");
}

/// An id prefix shared by several sessions is refused with the candidates
/// listed, so the user can pick one.
#[test]
fn an_ambiguous_prefix_lists_the_sessions_it_matches() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let mut ids = Vec::new();
    for _ in 0..2 {
        let o = env.rein(&[
            "exec",
            "--json",
            "--provider",
            "replay",
            "--script",
            &script,
            "hi",
        ]);
        ids.push(session_id(&json_lines(&o)));
    }
    // Time-ordered ids made a moment apart share their first characters.
    let shared: String = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    assert!(!shared.is_empty(), "{ids:?}");
    for args in [
        vec!["sessions", "show", shared.as_str()],
        vec![
            "exec",
            "--provider",
            "replay",
            "--script",
            &script,
            "--resume",
            shared.as_str(),
            "again",
        ],
    ] {
        let o = env.rein(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains("matches several sessions")
                && err.contains(&ids[0])
                && err.contains(&ids[1]),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}
