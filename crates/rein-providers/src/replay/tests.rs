use super::plan::{split_arguments, split_chars, split_text, split_words};
use super::*;
use rein_core::StreamChunk;

#[test]
fn word_deltas_rejoin_to_the_exact_text_with_three_words_each() {
    let text = "  Hello there my friend,\nhow are\tyou today? ";
    let parts = split_words(text, 3);
    assert_eq!(parts.concat(), text);
    assert_eq!(parts[0], "  Hello there my ");
    assert_eq!(parts[1], "friend,\nhow are\t");
    assert_eq!(parts[2], "you today? ");
}

#[test]
fn char_deltas_never_split_a_multibyte_char() {
    let text = "héllo wörld 🦀🦀🦀";
    let parts = split_chars(text, 4);
    assert_eq!(parts.concat(), text);
    assert!(parts.iter().all(|p| p.chars().count() <= 4));
    assert_eq!(parts[0], "héll");
    assert_eq!(parts.last().map(String::as_str), Some("🦀🦀🦀"));
}

#[test]
fn empty_text_makes_no_deltas() {
    assert!(split_text("", None).is_empty());
    assert!(split_text("", Some(3)).is_empty());
}

#[test]
fn arguments_split_into_two_or_three_fragments_on_char_boundaries() {
    assert_eq!(split_arguments(""), vec![""]);
    assert_eq!(split_arguments("{"), vec!["{"]);
    assert_eq!(split_arguments("{}"), vec!["{", "}"]);
    let args = "{\"p\":\"é🦀\"}";
    let parts = split_arguments(args);
    assert_eq!(parts.len(), 3);
    assert_eq!(parts.concat(), args);
    assert!(parts.iter().all(|p| !p.is_empty()));
}

#[test]
fn plan_streams_reasoning_text_calls_usage_then_done() {
    let turn = ReplayTurn {
        reasoning: Some("hm".into()),
        reasoning_signature: Some("sig".into()),
        text: Some("ok".into()),
        tool_calls: vec![ReplayToolCall {
            id: None,
            name: "glob".into(),
            arguments: "{}".into(),
        }],
        usage: Some(Usage::default()),
        ..Default::default()
    };
    let chunks: Vec<StreamChunk> = plan(&turn, 2).into_iter().map(|c| c.unwrap()).collect();
    assert_eq!(chunks[0], StreamChunk::ReasoningDelta("hm".into()));
    assert!(matches!(chunks[1], StreamChunk::ReasoningEnd { .. }));
    assert_eq!(chunks[2], StreamChunk::TextDelta("ok".into()));
    assert_eq!(
        chunks[3],
        StreamChunk::ToolCallDelta {
            index: 0,
            id: Some("call_2_1".into()),
            name: Some("glob".into()),
            arguments: "{".into()
        }
    );
    assert_eq!(
        chunks[4],
        StreamChunk::ToolCallDelta {
            index: 0,
            id: None,
            name: None,
            arguments: "}".into()
        }
    );
    assert_eq!(chunks[5], StreamChunk::Usage(Usage::default()));
    assert_eq!(chunks[6], StreamChunk::Done(FinishReason::ToolCalls));
}

#[test]
fn a_data_error_inside_a_turn_names_that_turn() {
    let text = r#"{"turns": [{"text": "a"}, {"text": "b"}, {"txt": "c"}]}"#;
    let err = ReplayScript::parse(text).unwrap_err();
    match err {
        ReplayError::Invalid { turn, position, .. } => {
            assert_eq!(turn, Some(3));
            assert!(position.is_some());
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn a_top_level_data_error_names_no_turn() {
    let text = r#"{"modle": "x", "turns": [{"text": "a"}]}"#;
    let err = ReplayScript::parse(text).unwrap_err();
    assert!(
        matches!(err, ReplayError::Invalid { turn: None, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("unknown field `modle`"), "{err}");
}

#[test]
fn default_error_message_names_the_kind() {
    let text = r#"{"turns": [{"error": {"kind": "context_length_exceeded"}}]}"#;
    let script = ReplayScript::parse(text).unwrap();
    let failure = script.turns[0].error.as_ref().unwrap();
    assert_eq!(failure.message, "replayed context_length_exceeded error");
    assert_eq!(failure.kind, ProviderErrorKind::ContextLengthExceeded);
}

#[test]
fn every_kind_name_round_trips() {
    for (name, kind) in KINDS {
        assert_eq!(kind_name(*kind), *name);
    }
}
