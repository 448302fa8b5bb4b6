use super::*;
use crate::schema::{AssistantMessage, ToolCall, ToolResult};

fn assistant_call(id: &str) -> Message {
    Message::Assistant(AssistantMessage {
        content: vec![ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        })],
        ..Default::default()
    })
}

fn result(id: &str, out: &str) -> Message {
    Message::Tool(ToolResult {
        images: Vec::new(),
        call_id: id.into(),
        name: "bash".into(),
        output: out.into(),
        is_error: false,
    })
}

fn history(turns: usize) -> Vec<Message> {
    let mut m = vec![Message::user("fix it")];
    for i in 0..turns {
        m.push(assistant_call(&format!("c{i}")));
        m.push(result(&format!("c{i}"), "ok"));
    }
    m
}

#[test]
fn the_split_keeps_whole_turns_so_no_result_loses_its_call() {
    let m = history(6);
    let cut = split_point(&m, 3).unwrap();
    assert!(matches!(m[cut], Message::Assistant(_)));
    let kept = &m[cut..];
    assert_eq!(
        kept.iter()
            .filter(|x| matches!(x, Message::Assistant(_)))
            .count(),
        3
    );
    // Every kept result's call is kept too.
    for (i, x) in kept.iter().enumerate() {
        if let Message::Tool(r) = x {
            assert!(kept[..i].iter().any(|y| matches!(y, Message::Assistant(a)
                if a.tool_calls().any(|c| c.id == r.call_id))));
        }
    }
    assert_eq!(
        split_point(&history(3), 3),
        None,
        "nothing older to compact"
    );
}

#[test]
fn a_summary_alone_before_the_cut_is_not_compacted_again() {
    let ledger = TaskLedger::default();
    let mut m = vec![summary_message(
        Ok("## Goal\nfix the bug in calc.py"),
        &ledger,
        9,
    )];
    m.extend(history(3).into_iter().skip(1));
    assert_eq!(split_point(&m, 3), None);
    assert!(is_summary(&m[0]));
    assert!(user_requests(&m).is_empty());
}

#[test]
fn the_ledger_holds_the_instruction_verbatim_the_todos_files_and_history() {
    let ledger = TaskLedger {
        latest_instruction: "Now also add a CHANGELOG entry.\nKeep it short.".into(),
        earlier_requests: vec!["Fix the failing test".into()],
        todos: vec![Todo {
            id: "1".into(),
            content: "fix mean()".into(),
            status: TodoStatus::Completed,
        }],
        files: [("calc.py".to_string(), "edited (turn 4)".to_string())].into(),
        last_test: Some("`python3 test_calc.py` → exit 0".into()),
    };
    let text = ledger.render();
    assert!(text.contains("> Now also add a CHANGELOG entry.\n> Keep it short.\n"));
    assert!(text.contains("- [x] fix mean() (1)"));
    assert!(text.contains("- calc.py: edited (turn 4)"));
    assert!(text.contains("exit 0"));
    assert!(text.contains("do not redo them"));
}

#[test]
fn empty_tiny_or_oversized_summaries_are_refused() {
    assert!(matches!(
        check_summary("   ", 1000),
        Err(SummaryError::Empty)
    ));
    assert!(matches!(
        check_summary("ok", 1000),
        Err(SummaryError::Malformed)
    ));
    let big = check_summary(&"word ".repeat(400), 1000).unwrap_err();
    assert_eq!(
        big.to_string(),
        "the summary is too big (1999 bytes, limit 1000)"
    );
    assert!(check_summary("## Goal\nfix the mean function", 1000).is_ok());
}

#[test]
fn the_transcript_is_bounded_and_marks_previous_summaries() {
    let mut m = vec![summary_message(
        Ok("## Goal\nold goal here"),
        &TaskLedger::default(),
        3,
    )];
    m.push(assistant_call("x"));
    m.push(result("x", &"y".repeat(50_000)));
    let t = transcript(&m, 8_000);
    assert!(t.len() <= 8_000 + 64, "{}", t.len());
    assert!(t.starts_with("PREVIOUS SUMMARY:"));
}
