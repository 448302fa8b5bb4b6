//! Whole (non-streamed) responses, and the follow-up requests that replay
//! their turns as the recorded clients did.

use rein_core::*;
use serde_json::{Value, json};

use super::{
    assert_call, body_of, calls, interactions, json_body, response_message, tool_result, usage,
    without_cache_control,
};
use crate::providers::fixtures::Interaction;

#[test]
fn non_streamed_text_response_gives_text_usage_and_stop() {
    let its = interactions("anthropic_claude-sonnet-4-5_text.response.json");
    let m = response_message(json_body(&its[0]));
    assert_eq!(
        m.text(),
        "Hello! I'm doing well, thanks for asking. How are you doing today? Is there anything I can help you with?"
    );
    assert_eq!(m.usage, Some(usage(12, 0, 29)));
    assert_eq!(m.finish, Some(FinishReason::Stop));
}

#[test]
fn non_streamed_tool_use_with_empty_input_gives_empty_object_arguments() {
    let its = interactions("anthropic_claude-3-opus_tool-no-args.response.json");
    let m = response_message(json_body(&its[0]));
    assert_eq!(
        m.text(),
        "<thinking>\nThe updateIssueList tool was provided in the list of available functions. The tool has no required parameters, so it can be called without any additional information needed from the user.\n</thinking>\n\nOkay, I will update the current issue list:"
    );
    let c = calls(&m);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_01LRmxn9vGM1d2DZSDBowdZ1",
        "updateIssueList",
        json!({}),
    );
    assert_eq!(m.usage, Some(usage(602, 0, 93)));
    assert_eq!(m.finish, Some(FinishReason::ToolCalls));
}

#[test]
fn non_streamed_parallel_tool_use_re_serialises_inputs_compactly_and_replays_them() {
    let its = interactions("anthropic_claude-sonnet-4_parallel-tool-use_nonstream.vcr.yaml");
    assert_eq!(its.len(), 2);
    let first = response_message(json_body(&its[0]));
    assert_eq!(
        first.text(),
        "I'll add and multiply the numbers 2 and 3 for you."
    );
    let c = calls(&first);
    assert_eq!(c.len(), 2);
    assert_call(
        &c[0],
        "toolu_01StBeRxDEwsqcc3arbDgpS9",
        "add",
        json!({"a": 2, "b": 3}),
    );
    assert_call(
        &c[1],
        "toolu_01AC6WQhj2iRkdYHgTAGMpVQ",
        "multiply",
        json!({"a": 2, "b": 3}),
    );
    assert_eq!(c[0].arguments, r#"{"a":2,"b":3}"#);
    assert_eq!(first.usage, Some(usage(507, 0, 137)));
    assert_eq!(first.finish, Some(FinishReason::ToolCalls));

    let second = response_message(json_body(&its[1]));
    assert_eq!(
        second.text(),
        "The results are:\n- 2 + 3 = 5\n- 2 \u{d7} 3 = 6"
    );
    assert_eq!(second.usage, Some(usage(705, 0, 31)));
    assert_eq!(second.finish, Some(FinishReason::Stop));

    let recorded = its[1].request.as_ref().unwrap();
    let req = ModelRequest {
        messages: vec![
            Message::user("Add and multiply the number 2 and 3"),
            Message::Assistant(first),
            tool_result("toolu_01StBeRxDEwsqcc3arbDgpS9", "5", false),
            tool_result("toolu_01AC6WQhj2iRkdYHgTAGMpVQ", "6", false),
        ],
        ..Default::default()
    };
    let body = body_of(&req);
    assert_eq!(body["messages"][0], recorded["messages"][0]);
    assert_eq!(body["messages"][1], recorded["messages"][1]);
}

#[test]
fn tool_runner_recording_every_turn_parses_and_follow_ups_match_the_recorded_requests() {
    let its = interactions("anthropic_tool-runner_nonstream_with-headers.nock.json");
    assert_eq!(its.len(), 10);
    let m: Vec<AssistantMessage> = its.iter().map(|i| response_message(json_body(i))).collect();
    let finishes: Vec<_> = m.iter().map(|m| m.finish.clone().unwrap()).collect();
    use FinishReason::{Stop, ToolCalls};
    assert_eq!(
        finishes,
        vec![
            ToolCalls, Stop, ToolCalls, Stop, ToolCalls, Stop, ToolCalls, Stop, Stop, Stop
        ]
    );
    let usages: Vec<_> = m.iter().map(|m| m.usage.unwrap()).collect();
    assert_eq!(
        usages,
        vec![
            usage(415, 0, 76),
            usage(505, 0, 41),
            usage(418, 0, 113),
            usage(602, 0, 45),
            usage(415, 0, 76),
            usage(505, 0, 33),
            usage(591, 0, 1056),
            usage(311, 0, 497),
            usage(2123, 0, 140),
            usage(1847, 0, 651),
        ]
    );

    assert_the_short_turns_text_and_calls(&m);
    assert_the_long_answers_ends_and_lengths(&m);
    assert_follow_ups_replay_the_tool_turns(&its, &m);
}

/// Turns 0 to 5 of the tool-runner recording: a call, then the answer
/// after its result, three times over.
fn assert_the_short_turns_text_and_calls(m: &[AssistantMessage]) {
    assert_eq!(
        m[0].text(),
        "I'll use the test_tool with the value \"test\" as requested, then provide a final response."
    );
    let c = calls(&m[0]);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_011LF2VkWpAfJnTKJcmh1PNf",
        "test_tool",
        json!({"value": "test"}),
    );
    assert_eq!(
        m[1].text(),
        "I have successfully executed the test_tool with the value \"test\". The tool completed without any errors. This was a simple test to demonstrate the tool functionality and confirm it's working properly."
    );
    assert_eq!(
        m[2].text(),
        "I'll use the test_tool twice as requested - first with count 1, then with count 2."
    );
    let c = calls(&m[2]);
    assert_eq!(c.len(), 2);
    assert_call(
        &c[0],
        "toolu_01L8GVQapA1HmggQcrwboukH",
        "test_tool",
        json!({"count": 1}),
    );
    assert_call(
        &c[1],
        "toolu_01J5Fvzxu7DP1Uh59c1kr5JD",
        "test_tool",
        json!({"count": 2}),
    );
    assert_eq!(
        m[3].text(),
        "I've successfully used the test_tool twice:\n- First call with count 1: returned \"Called with 1\"\n- Second call with count 2: returned \"Called with 2\""
    );
    assert_eq!(
        m[4].text(),
        "I'll use the test_tool with the input \"test\" as requested, then provide a final response."
    );
    let c = calls(&m[4]);
    assert_eq!(c.len(), 1);
    assert_call(
        &c[0],
        "toolu_01BTPr2x4Nduos6gVrE19JZr",
        "test_tool",
        json!({"input": "test"}),
    );
    assert_eq!(
        m[5].text(),
        "I have successfully executed the test_tool with the input \"test\". The tool ran and returned a result. The test has been completed as requested."
    );
}

/// Turns 6 to 9 of the tool-runner recording, too long to write out:
/// their starts, ends and lengths, and turn 6's call.
fn assert_the_long_answers_ends_and_lengths(m: &[AssistantMessage]) {
    let t = m[6].text();
    assert!(t.starts_with("I'll write a detailed 500-word essay about dogs, cats, and b"));
    assert!(t.ends_with("ill our days with joy, making our lives immeasurably richer."));
    assert_eq!(t.chars().count(), 3885);
    let c = calls(&m[6]);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, "toolu_01XcUoZcU2fsiw59H5aEAyY6");
    assert_eq!(c[0].name, "submit_analysis");
    let args: Value = serde_json::from_str(&c[0].arguments).unwrap();
    let summary = args["summary"].as_str().unwrap();
    assert!(summary.starts_with("This 500-word essay explores the unique characteri"));
    assert!(summary.ends_with("unique contributions to human wellbeing."));
    assert_eq!(summary.chars().count(), 1214);
    for (i, head, tail, len) in [
        (
            7,
            "<summary>\n## Task Overview\nThe user requested:\n1. Write a de",
            " should contain the same or different information\n</summary>",
            2179,
        ),
        (
            8,
            "Perfect! I've completed both parts of your request:\n\n1. **Wr",
            "tinctive qualities and suitability for different lifestyles.",
            683,
        ),
        (
            9,
            "<summary>\n## Task Overview\nThe user requested:\n1. Write a de",
            "ssfully completed with both deliverables provided\n</summary>",
            3010,
        ),
    ] {
        let t = m[i].text();
        assert!(t.starts_with(head), "{i}");
        assert!(t.ends_with(tail), "{i}");
        assert_eq!(t.chars().count(), len, "{i}");
        assert!(!m[i].has_tool_calls());
    }
}

/// The follow-up requests 1 and 3 replay turns 0 and 2 and their results
/// exactly as rein does (rein adds its cache breakpoint on top).
fn assert_follow_ups_replay_the_tool_turns(its: &[Interaction], m: &[AssistantMessage]) {
    for (turn, results) in [
        (
            0usize,
            vec![("toolu_011LF2VkWpAfJnTKJcmh1PNf", "Tool result")],
        ),
        (
            2,
            vec![
                ("toolu_01L8GVQapA1HmggQcrwboukH", "Called with 1"),
                ("toolu_01J5Fvzxu7DP1Uh59c1kr5JD", "Called with 2"),
            ],
        ),
    ] {
        let recorded = its[turn + 1].request.as_ref().unwrap();
        let mut messages = vec![
            Message::user(recorded["messages"][0]["content"].as_str().unwrap()),
            Message::Assistant(m[turn].clone()),
        ];
        messages.extend(results.iter().map(|(id, out)| tool_result(id, out, false)));
        let body = body_of(&ModelRequest {
            messages,
            ..Default::default()
        });
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[1], recorded["messages"][1], "turn {turn}");
        assert_eq!(
            without_cache_control(&sent[2]),
            recorded["messages"][2],
            "turn {turn}"
        );
    }
}
