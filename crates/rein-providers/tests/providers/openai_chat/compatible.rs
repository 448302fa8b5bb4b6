//! The `openai-compatible/` recordings: each server's own way of sending
//! reasoning, tool calls and usage.

use rein_core::{ContentPart, FinishReason, ReasoningBlock};
use serde_json::json;

use super::{Want, check_response, check_sse, check_stream, sse_body, usage};

#[test]
fn alibaba_continuations_with_empty_ids_join_the_first_call() {
    check_stream(
        "openai-compatible/alibaba/alibaba-qwen_tool-call_include-usage.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![(
                "call_eee11723464a4b9eb8cee71d",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(295, 22, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn anthropic_compat_tool_index_starting_at_one_makes_one_call_after_the_text() {
    let parsed = check_stream(
        "openai-compatible/anthropic-openai-compat/anthropic-openai-compat_haiku-4-5_tool-index-starts-at-1.sse",
        0,
        &Want {
            text: "Reading it.",
            reasoning: &[],
            calls: vec![("toolu_sanitized", "read_file", json!({"path": "a.txt"}))],
            usage: None,
            finish: FinishReason::ToolCalls,
        },
    );
    assert!(matches!(
        parsed.message.content.as_slice(),
        [ContentPart::Text { .. }, ContentPart::ToolCall(_)]
    ));
}

#[test]
fn cerebras_reasoning_field_streams_each_read_on_their_own() {
    // Two complete answers recorded back to back (no [DONE] in this
    // format): split after the first finish chunk and read each.
    let rel = "openai-compatible/cerebras/cerebras_zai-glm-4.7_reasoning-field_tool-calls_2-streams.data.jsonl";
    let whole = String::from_utf8(sse_body(rel, 0)).unwrap();
    let at = whole.find("\"finish_reason\":\"tool_calls\"").unwrap();
    let cut = at + whole[at..].find("\n\n").unwrap() + 2;
    let (first, second) = whole.split_at(cut);
    check_sse(
        &format!("{rel} (first answer)"),
        first.as_bytes(),
        &Want {
            text: "",
            reasoning: &[
                "The user is asking about a \"magic number\". I have access to a function called \"nonUsefulTool\" that \"returns a magic number\". Let me call this function to get the magic number for the user.\n\nLooking at the function schema:\n- Function name: \"nonUsefulTool\"\n- Parameters: empty object (no parameters required)\n- Description: \"A non-useful tool that returns a magic number\"\n\nI should call this function to get the magic number.",
            ],
            calls: vec![("bbd2b9d98", "nonUsefulTool", json!({}))],
            usage: usage(322, 104, 256, 97),
            finish: FinishReason::ToolCalls,
        },
    );
    check_sse(
        &format!("{rel} (second answer)"),
        second.as_bytes(),
        &Want {
            text: "{\"result\": \"2026\"}",
            reasoning: &[
                "The nonUsefulTool returned the number 2026 as the \"magic number\". Now I need to provide this result in the specified JSON format according to the schema provided.\n\nThe schema requires:\n- A JSON object with a \"result\" property of type string\n- The \"result\" property is required\n- No additional properties are allowed\n\nSo I need to return:\n```json\n{\"result\": \"2026\"}\n```\n\nNote that the result should be a string according to the schema, even though it's a number.",
            ],
            calls: vec![("e0ecf32e0", "nonUsefulTool", json!({}))],
            usage: usage(433, 122, 256, 108),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn deepseek_reasoning_content_then_tool_call_with_usage_on_the_finish_chunk() {
    check_stream(
        "openai-compatible/deepseek/deepseek-reasoner_reasoning-content_then-tool-call.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[
                "The user is asking for the weather in San Francisco. I need to use the weather tool to get this information. Let me invoke the weather tool with the location parameter set to \"San Francisco\".",
            ],
            calls: vec![(
                "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(339, 83, 320, 39),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn deepseek_nonstreaming_reasoning_content_and_tool_call() {
    check_response(
        "openai-compatible/deepseek/deepseek-reasoner_reasoning-content_tool-call.response.json",
        0,
        &Want {
            text: "",
            reasoning: &[
                "The user is asking for the weather in San Francisco. I have a weather tool available that can get weather information for a location. I should use this tool with the location parameter set to \"San Francisco\". Let me call the weather function.",
            ],
            calls: vec![(
                "call_00_9V0vrf86Pc9aelHCJMZqnJBo",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(339, 92, 320, 48),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn deepseek_long_reasoning_then_text_stream() {
    check_stream(
        "openai-compatible/deepseek/deepseek_reasoning-content_text_stream.vcr.yaml",
        0,
        &Want {
            text: "Hello there! 😊 How can I help you today?",
            reasoning: &[
                "Hmm, the user just said \"Hello\". It's a simple greeting but I wonder if there's more to it.  \n\nThe message is very brief, so I don't have much context to work with. Maybe they're just testing if I'm responsive, or perhaps they're new to chatting with AI.  \n\nI should keep my reply warm and inviting to encourage further conversation. A smiley face would help make it friendly. Since they didn't specify a need, I'll leave it open-ended by asking how I can help them today.  \n\nThe tone should be cheerful but professional - not too stiff, not too casual. \"Hello there!\" feels right for a start. Adding \"What can I do for you today?\" turns it into an invitation rather than just mirroring their greeting.  \n\nI'll avoid assumptions about their gender, location, or intent since there's zero information. If they're just being polite, they might not reply further - and that's okay too.",
            ],
            calls: vec![],
            usage: usage(6, 212, 0, 198),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn groq_kimi_whole_calls_in_single_chunks_and_duplicate_usage() {
    let rel = "openai-compatible/groq/groq_kimi-k2_parallel-tool-calls_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "I'll perform both addition and multiplication on the numbers 2 and 3 for you.",
            reasoning: &[],
            calls: vec![
                ("functions.add:0", "add", json!({"a": 2, "b": 3})),
                ("functions.multiply:1", "multiply", json!({"a": 2, "b": 3})),
            ],
            usage: usage(201, 58, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "Here are the results:\n- Addition: 2 + 3 = 5\n- Multiplication: 2 × 3 = 6",
            reasoning: &[],
            calls: vec![],
            usage: usage(296, 30, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn groq_whole_tool_call_in_one_chunk_with_x_groq_usage() {
    check_stream(
        "openai-compatible/groq/groq_llama-3.3-70b_whole-tool-call-in-one-chunk_x-groq.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![("tk85n1k4m", "weather", json!({}))],
            usage: usage(210, 15, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn llama_cpp_reasoning_content_tool_call_and_usage_beside_timings() {
    let rel = "openai-compatible/llama.cpp/llama-cpp-b7010_gpt-oss-20b_reasoning-content_tool-call_timings_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &["User wants weather in Florence, Italy. We can use the weather function."],
            calls: vec![(
                "g2KOIWzn722hzEaZQmNVP4roUPEiYafL",
                "weather",
                json!({"location": "Florence, Italy"}),
            )],
            usage: usage(139, 41, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "The current weather in Florence, Italy is **40\u{202f}°C**.",
            reasoning: &[],
            calls: vec![],
            usage: usage(196, 18, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn llama_cpp_nonstreaming_bodies_with_choices_first_and_timings() {
    let rel =
        "openai-compatible/llama.cpp/llama-cpp_gpt-oss-20b_tool-call_nonstream_timings.vcr.yaml";
    check_response(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[
                "The user asks: \"What's the weather in Florence, Italy?\" We have a tool \"functions.weather\" that can get weather information. We should call it.",
            ],
            calls: vec![(
                "mvVq65j66dyGRizURhbdNCEnSO56GhXx",
                "weather",
                json!({"location": "Florence,Italy"}),
            )],
            usage: usage(139, 58, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_response(
        rel,
        1,
        &Want {
            text: "The current weather in Florence, Italy is **40\u{202f}°C**.",
            reasoning: &[],
            calls: vec![],
            usage: usage(213, 18, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn mistral_tool_call_without_index_or_type_beside_finish_and_usage() {
    check_stream(
        "openai-compatible/mistral/mistral-small_tool-call-without-index-or-type.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![("gSIMJiOkT", "weather", json!({"location": "San Francisco"}))],
            usage: usage(124, 22, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn empty_name_on_a_continuation_keeps_the_first_name() {
    check_stream(
        "openai-compatible/mistral/zai-glm-5-2_incremental-tool-call_empty-name-continuation.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![(
                "chatcmpl-tool-9f149c74c42f265b",
                "webSearchTool",
                json!({"query": "current Berlin weather"}),
            )],
            usage: usage(171, 14, 128, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn ollama_nonstreaming_reasoning_field_text_then_tool_call() {
    let rel = "openai-compatible/ollama/ollama-cloud_tool-call_nonstream.vcr.yaml";
    check_response(
        rel,
        0,
        &Want {
            text: "Paris.",
            reasoning: &[
                "We need to answer question: \"What is the capital of France?\" The answer: Paris. The user didn't request the output to be in a specific format, but the system instructions specify that the tool should be used only if user requests. The user didn't request a tool. So we can produce a direct answer. The instruction: \"When I need to: use tool, say I need it with a brief statement\" - that's for tool usage. We don't need the tool. Just give the answer. Ensure no extra marks. Just plain text.",
            ],
            calls: vec![],
            usage: usage(134, 122, 0, 0),
            finish: FinishReason::Stop,
        },
    );
    check_response(
        rel,
        1,
        &Want {
            text: "",
            reasoning: &[
                "The conversation: user asked \"What is the capital of France?\" assistant responded \"Paris.\" That is fine. But they expect a JSON output? They saw a validation error: \"Expected JSON: invalid JSON.\" The system is set up such that the assistant must respond using the function \"final_result\" JSON object with keys city and country. The previous response was not JSON; that's why validator error. So we must call function final_result with city = \"Paris\" and country = \"France\". We need to produce JSON accordingly. The function signature: final_result({city: string, country: string}). We need to output the JSON. Using the functions interface. Let's produce: { \"city\": \"Paris\", \"country\": \"France\" } as JSON.\n\nWe need to provide answer in JSON format. Let's do that.",
            ],
            calls: vec![(
                "call_o2vnpxrw",
                "final_result",
                json!({"city": "Paris", "country": "France"}),
            )],
            usage: usage(206, 194, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn openrouter_comments_empty_fragments_and_repeated_finish_chunk() {
    let rel =
        "openai-compatible/openrouter/openrouter_anthropic_parallel-tool-calls_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "toolu_bdrk_01L6Xsux1sqgXSsd2xi64poF",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "toolu_bdrk_014pCKe2FHbyMZerLY1JxG4a",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(685, 120, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "Perfect! Here are the results:\n\n- **Addition**: 2 + 3 = **5**\n- **Multiplication**: 2 × 3 = **6**",
            reasoning: &[],
            calls: vec![],
            usage: usage(866, 43, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openrouter_reasoning_and_reasoning_details_are_not_doubled_and_keep_the_signature() {
    let parsed = check_stream(
        "openai-compatible/openrouter/openrouter_processing-comments_reasoning-details_stream.vcr.yaml",
        0,
        &Want {
            text: "2 + 2 = 4",
            reasoning: &["This is a simple arithmetic question. 2+2 equals 4."],
            calls: vec![],
            usage: usage(43, 36, 0, 13),
            finish: FinishReason::Stop,
        },
    );
    let block: &ReasoningBlock = parsed.message.reasoning().next().unwrap();
    assert_eq!(
        block.signature.as_deref(),
        Some(
            "Et0BCkgIChACGAIqQA2s7h7tA7IG35fbwVkou9PM2hANVJNUwcEM4q12fTRDK6y3v6YoEvJ+7bko8wnW/GLsQFXadaJPAEMCpLkhI9ISDLjFkeR1aVUIvdCtyBoMrUTovh0jwk+wpnZWIjANV3e6VVdgbGSsEyyTHO6KMmVtqqs79f9blnVdJmmMIwMyTi6bEtG59+jTU7v1zlsqQ2IKGZILOlr6adh0Aam7zYttvisys+wjyZZXU1y/Srz0nmp1cFgVOJe1BLKQI3SSRrjsqQC0uAEUZy0GX0Rq1AXjvIcYAQ=="
        )
    );
}

#[test]
fn vllm_stream_ignores_token_id_fields() {
    check_stream(
        "openai-compatible/vllm/vllm-0.24_crusoe_llama-3.3-70b_text_include-usage.vcr.yaml",
        0,
        &Want {
            text: "1, 2, 3, 4, 5",
            reasoning: &[],
            calls: vec![],
            usage: usage(46, 14, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn xai_reasoning_tokens_outside_completion_tokens_are_added_to_output() {
    // xAI: prompt 291 + completion 26 + reasoning 196 = total 513.
    check_stream(
        "openai-compatible/xai/xai_grok-3-mini_reasoning-content_tool-call.data.jsonl",
        0,
        &Want {
            text: "",
            reasoning: &["First, the user is"],
            calls: vec![(
                "call_55117580",
                "weather",
                json!({"location": "San Francisco"}),
            )],
            usage: usage(291, 222, 290, 196),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn zai_reasoning_text_and_two_whole_calls_with_usage_on_the_finish_chunk() {
    let rel = "openai-compatible/zai/zai_glm-4.7-flash_reasoning-content_parallel-tool-calls_stream.vcr.yaml";
    let parsed = check_stream(
        rel,
        0,
        &Want {
            text: "I'll both add and multiply the numbers 2 and 3 for you.",
            reasoning: &[
                "The user wants me to both add and multiply the numbers 2 and 3. I need to use both the add and multiply functions on the same time, as instructed.\n\nFor add: a=2, b=3\nFor multiply: a=2, b=3\n\nI'll call both functions together.",
            ],
            calls: vec![
                (
                    "call_4f8cb52342424eb9bbc1b20e",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "call_0d06add371834452b339ffdb",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(275, 112, 43, 64),
            finish: FinishReason::ToolCalls,
        },
    );
    assert!(matches!(
        parsed.message.content.as_slice(),
        [
            ContentPart::Reasoning(_),
            ContentPart::Text { .. },
            ContentPart::ToolCall(_),
            ContentPart::ToolCall(_)
        ]
    ));
    check_stream(
        rel,
        1,
        &Want {
            text: "I've calculated both operations for you:\n\n- **Addition:** 2 + 3 = **5**\n- **Multiplication:** 2 × 3 = **6**",
            reasoning: &[
                "I got the results:\n- Addition: 2 + 3 = 5\n- Multiplication: 2 × 3 = 6\n\nNow I can provide a complete answer to the user.",
            ],
            calls: vec![],
            usage: usage(395, 79, 251, 41),
            finish: FinishReason::Stop,
        },
    );
}
