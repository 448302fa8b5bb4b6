//! Script errors: what a script may hold, and the precise message
//! (turn, field, line and column, file) when it holds something else.

use std::time::Duration;

use rein_core::*;
use rein_providers::{ReplayError, ReplayProvider, ReplayScript};

use super::{assemble, chunks, parse_err};

#[test]
fn a_full_script_parses_into_its_turns() {
    let script = ReplayScript::parse(
        r#"{"description": "demo", "model": "m", "context_window": 10, "turns": [
            {"reasoning": "r", "reasoning_signature": "s", "text": "t",
             "tool_calls": [{"id": "x", "name": "n", "arguments": [1, 2]}],
             "usage": {"output_tokens": 3}, "finish": "tool_calls", "chunk_chars": 2, "delay_ms": 5},
            {"error": {"kind": "auth", "message": "bad key", "status": 401, "after_text": false}}
        ]}"#,
    )
    .unwrap();
    assert_eq!(script.description.as_deref(), Some("demo"));
    assert_eq!(script.turns.len(), 2);
    let t = &script.turns[0];
    assert_eq!(t.tool_calls[0].arguments, "[1,2]");
    assert_eq!(t.usage.unwrap().output_tokens, 3);
    assert_eq!(t.delay, Duration::from_millis(5));
    assert_eq!(t.chunk_chars, Some(2));
    let e = script.turns[1].error.as_ref().unwrap();
    assert_eq!((e.kind, e.status), (ProviderErrorKind::Auth, Some(401)));
}

#[test]
fn an_unknown_turn_field_is_rejected_naming_the_turn_field_and_position() {
    let msg = parse_err("{\"turns\": [\n  {\"text\": \"a\"},\n  {\"txt\": \"b\"}\n]}");
    assert!(msg.contains("turn 2"), "{msg}");
    assert!(msg.contains("unknown field `txt`"), "{msg}");
    assert!(msg.contains("line 3"), "{msg}");
}

#[test]
fn an_unknown_tool_call_field_is_rejected_naming_the_turn() {
    let msg = parse_err(r#"{"turns": [{"tool_calls": [{"name": "glob", "args": {}}]}]}"#);
    assert!(msg.contains("turn 1"), "{msg}");
    assert!(msg.contains("unknown field `args`"), "{msg}");
}

#[test]
fn an_unknown_usage_field_is_rejected() {
    let msg = parse_err(r#"{"turns": [{"text": "a", "usage": {"input": 3}}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("unknown field `input`"),
        "{msg}"
    );
}

#[test]
fn an_unknown_error_kind_is_rejected_listing_the_valid_kinds() {
    let msg = parse_err(r#"{"turns": [{"text": "a"}, {"error": {"kind": "overloaded"}}]}"#);
    assert!(msg.contains("turn 2"), "{msg}");
    assert!(msg.contains("unknown error kind \"overloaded\""), "{msg}");
    assert!(msg.contains("unavailable"), "{msg}");
}

#[test]
fn an_unknown_finish_reason_is_rejected() {
    let msg = parse_err(r#"{"turns": [{"text": "a", "finish": "end_turn"}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("unknown finish reason \"end_turn\""),
        "{msg}"
    );
}

#[test]
fn empty_turns_are_rejected() {
    let msg = parse_err(r#"{"turns": []}"#);
    assert!(msg.contains("`turns` is empty"), "{msg}");
    let msg = parse_err(r#"{"model": "x"}"#);
    assert!(msg.contains("missing field `turns`"), "{msg}");
}

#[test]
fn a_turn_with_nothing_in_it_is_rejected_naming_the_turn() {
    let msg = parse_err(
        r#"{"turns": [{"text": "a"}, {"usage": {"input_tokens": 1}, "tool_calls": []}]}"#,
    );
    assert!(
        msg.contains("turn 2") && msg.contains("nothing to play"),
        "{msg}"
    );
}

#[test]
fn a_tool_call_without_a_name_is_rejected_naming_the_turn() {
    let msg = parse_err(r#"{"turns": [{"tool_calls": [{"arguments": {}}]}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("missing field `name`"),
        "{msg}"
    );
    let msg =
        parse_err(r#"{"turns": [{"text": "a"}, {"tool_calls": [{"name": "a"}, {"name": " "}]}]}"#);
    assert!(
        msg.contains("turn 2") && msg.contains("tool call 2 has an empty `name`"),
        "{msg}"
    );
}

#[test]
fn zero_chunk_chars_and_empty_ids_are_rejected() {
    let msg = parse_err(r#"{"turns": [{"text": "a", "chunk_chars": 0}]}"#);
    assert!(
        msg.contains("turn 1") && msg.contains("`chunk_chars` must be at least 1"),
        "{msg}"
    );
    let msg = parse_err(r#"{"turns": [{"tool_calls": [{"id": "", "name": "a"}]}]}"#);
    assert!(msg.contains("empty `id`"), "{msg}");
}

#[test]
fn malformed_json_is_reported_with_line_and_column() {
    let err = ReplayScript::parse("{\"turns\": [\n  {\"text\": \"a\",}\n]}").unwrap_err();
    match &err {
        ReplayError::Json { line, column, .. } => {
            assert_eq!(*line, 2);
            assert!(*column > 0);
        }
        other => panic!("expected a JSON error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("malformed JSON at line 2 column"), "{msg}");
    let msg = parse_err("");
    assert!(msg.contains("malformed JSON at line 1"), "{msg}");
}

#[test]
fn a_missing_file_is_reported_with_its_path_and_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.json");
    let err = ReplayProvider::from_file(&path).unwrap_err();
    assert!(matches!(err, ReplayError::Read { .. }));
    let msg = err.to_string();
    assert!(msg.contains("nope.json"), "{msg}");
    let os = std::io::Error::from(std::io::ErrorKind::NotFound).to_string();
    assert!(
        msg.contains(&os) || msg.to_lowercase().contains("no such file"),
        "{msg}"
    );
}

#[tokio::test]
async fn a_script_file_loads_and_its_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"turns": [{"text": "from a file"}]}"#).unwrap();
    let p = ReplayProvider::from_file(&good).unwrap();
    assert_eq!(assemble(chunks(&p).await).text(), "from a file");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"turns": [{"text": "a", "delay": 5}]}"#).unwrap();
    let msg = ReplayProvider::from_file(&bad).unwrap_err().to_string();
    assert!(msg.contains("bad.json") && msg.contains("turn 1"), "{msg}");
    assert!(msg.contains("unknown field `delay`"), "{msg}");
}

#[test]
fn an_empty_summary_text_is_a_script_error() {
    let err = parse_err(r#"{"turns": [{"text": "x"}], "summaries": [" "]}"#);
    assert!(err.contains("summaries"), "{err}");
}
