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

/// The first characters of a session id are random: sessions made one
/// after the other are told apart by the six a user types, for `sessions
/// show` and `--resume`, and the list still puts the newest first.
#[test]
fn sessions_made_a_moment_apart_differ_in_six_characters_and_list_newest_first() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    let mut ids = Vec::new();
    for title in ["older", "newer", "newest"] {
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
    }
    let short: Vec<&str> = ids.iter().map(|id| &id[..6]).collect();
    assert!(
        short[0] != short[1] && short[1] != short[2] && short[0] != short[2],
        "{ids:?}"
    );
    let o = env.rein(&["sessions", "list", "--json"]);
    let listed: Vec<String> = json_lines(&o)
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        listed,
        [ids[2].clone(), ids[1].clone(), ids[0].clone()],
        "newest first"
    );
    let table = stdout(&env.rein(&["sessions", "list"]));
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(
        rows[0].starts_with(&ids[2]) && rows[2].starts_with(&ids[0]),
        "{table}"
    );
    let o = env.rein(&["sessions", "show", short[0]]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("older"), "{}", stdout(&o));
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "replay",
        "--script",
        &script,
        "--resume",
        short[1],
        "again",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(session_id(&json_lines(&o)), ids[1]);
}

/// An id prefix shared by several sessions is refused with the candidates
/// listed, so the user can pick one.
#[test]
fn an_ambiguous_prefix_lists_the_sessions_it_matches() {
    let env = Env::new();
    let script = env.script("s.json", &json!({"turns": [{"text": "ok"}]}));
    // Ids start with random hex digits: among 17 sessions two share their
    // first one (most often far sooner).
    let mut seen: Vec<String> = Vec::new();
    let (ids, shared) = loop {
        let o = env.rein(&[
            "exec",
            "--json",
            "--provider",
            "replay",
            "--script",
            &script,
            "hi",
        ]);
        let id = session_id(&json_lines(&o));
        if let Some(twin) = seen.iter().find(|s| s[..1] == id[..1]) {
            break ([twin.clone(), id.clone()], id[..1].to_string());
        }
        assert!(seen.len() < 16, "{seen:?}");
        seen.push(id);
    };
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
