//! The `openai-chat/` recordings: OpenAI and Azure streams and bodies.

use rein_core::{FinishReason, StreamChunk};
use serde_json::json;

use super::{Want, check_response, check_stream, usage};

#[test]
fn openai_text_stream_joins_content_and_sends_the_trailing_usage_before_done() {
    let parsed = check_stream(
        "openai-chat/openai_gpt-4o_text_include-usage.sse",
        0,
        &Want {
            text: "I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app.",
            reasoning: &[],
            calls: vec![],
            usage: usage(14, 30, 0, 0),
            finish: FinishReason::Stop,
        },
    );
    // Only content deltas, then usage and Done: the finish chunk itself
    // sends nothing.
    assert!(
        parsed.chunks[..parsed.chunks.len() - 2]
            .iter()
            .all(|c| matches!(c, StreamChunk::TextDelta(t) if !t.is_empty()))
    );
}

#[test]
fn openai_parallel_tool_calls_stream_joins_fragments_per_index() {
    check_stream(
        "openai-chat/openai_gpt-4o_parallel-tool-calls_include-usage.sse",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "call_JMW1whyEaYG438VE1OIflxA2",
                    "GetWeatherArgs",
                    json!({"city": "Edinburgh", "country": "GB", "units": "c"}),
                ),
                (
                    "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                    "get_stock_price",
                    json!({"ticker": "AAPL", "exchange": "NASDAQ"}),
                ),
            ],
            usage: usage(149, 60, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn openai_single_tool_call_joins_arguments_split_mid_token() {
    check_stream(
        "openai-chat/openai_gpt-4o_single-tool-call_args-fragments.sse",
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![(
                "call_c91SqDXlYFuETYv8mUHzz6pp",
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "UK", "units": "c"}),
            )],
            usage: usage(76, 24, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
}

#[test]
fn openai_n3_stream_reads_only_choice_zero() {
    let parsed = check_stream(
        "openai-chat/openai_gpt-4o_n3-multiple-choices.sse",
        0,
        &Want {
            text: "{\"city\":\"San Francisco\",\"temperature\":65,\"units\":\"f\"}",
            reasoning: &[],
            calls: vec![],
            usage: usage(79, 42, 0, 0),
            finish: FinishReason::Stop,
        },
    );
    // Choices 1 and 2 said 61 and 59; none of their text leaks in.
    let all: String = parsed
        .chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(!all.contains("61") && !all.contains("59"), "{all}");
}

#[test]
fn openai_max_tokens_stream_finishes_with_length() {
    check_stream(
        "openai-chat/openai_gpt-4o_finish-length_max-tokens-1.sse",
        0,
        &Want {
            text: "{\"",
            reasoning: &[],
            calls: vec![],
            usage: usage(79, 1, 0, 0),
            finish: FinishReason::Length,
        },
    );
}

#[test]
fn openai_refusal_deltas_become_text_and_finish_as_content_filter() {
    check_stream(
        "openai-chat/openai_gpt-4o_refusal-deltas.sse",
        0,
        &Want {
            text: "I'm sorry, I can't assist with that request.",
            reasoning: &[],
            calls: vec![],
            usage: usage(79, 11, 0, 0),
            // The service said "stop", but the model refused.
            finish: FinishReason::ContentFilter,
        },
    );
}

#[test]
fn openai_logprobs_are_ignored() {
    check_stream(
        "openai-chat/openai_gpt-4o_content-logprobs.sse",
        0,
        &Want {
            text: "Foo!",
            reasoning: &[],
            calls: vec![],
            usage: usage(9, 2, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_stream_with_obfuscation_and_null_usage_and_no_done_marker_reads_fully() {
    check_stream(
        "openai-chat/openai_gpt-4.1-nano_text_obfuscation.data.jsonl",
        0,
        &Want {
            text: "**Holiday Name:** Harmony Day\n\n**Date:** Celebrated annually on the first Saturday of May\n\n**Purpose:** Harmony Day is dedicated to fostering understanding, kindness, and unity among diverse communities. It emphasizes celebrating cultural differences while promoting empathy and collaboration.\n\n**Traditions:**\n\n1. **Cultural Potluck Gatherings:** Communities come together to share traditional dishes from their backgrounds, encouraging conversation and curiosity about different cultures.\n\n2. **Story Circles:** People of all ages are encouraged to share stories from their heritage or personal experiences that promote understanding and empathy.\n\n3. **Decorate for Unity:** Public spaces and homes are decorated with symbols representing different cultures—flags, traditional art, and meaningful motifs—to visually celebrate diversity.\n\n4. **Collaborative Art Projects:** Communities create murals or sculptures that symbolize unity and diversity, involving artists and residents of all ages.\n\n5. **Acts of Kindness:** As a central activity, participants perform Small acts of kindness throughout the day, such as volunteering, helping neighbors, or inviting someone new to join festivities.\n\n6. **Music & Dance Festivals:** Local performances showcase a variety of musical styles and dances from different parts of the world, emphasizing shared joy and creativity.\n\n7. **Educational Workshops:** Interactive sessions teach about various cultures’ histories, traditions, and celebrations, fostering respect and knowledge.\n\n**Overall Spirit:** Harmony Day aims to create a sense of global community, reminding everyone that despite our differences, we are all connected through shared human experiences and mutual respect.",
            reasoning: &[],
            calls: vec![],
            usage: usage(16, 300, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_nonstreaming_text_body_reads_content_usage_and_finish() {
    check_response(
        "openai-chat/openai_gpt-4.1-nano_text.response.json",
        0,
        &Want {
            text: "**Holiday Name:** Galaxy Day  \n\n**Date:** October 31st, aligning with the night sky's peak viewing of constellations and celestial events.  \n\n**Purpose:** Galaxy Day celebrates the universe's vastness, beauty, and our collective curiosity about the cosmos. It's a time to honor science, imagination, and our shared human wonder about the stars and beyond.  \n\n**Traditions:**  \n\n1. **Stargazing Festivals:** Communities host outdoor gatherings in parks, rooftops, or open fields. People set up telescopes, enjoy guided stargazing sessions, and share stories about space, astronomy, and mythologies linked to constellations.  \n\n2. **Cosmic Costumes:** Participants dress up as planets, stars, astronauts, aliens, or celestial phenomena. Parades and costume contests encourage creativity inspired by the universe's mysteries.  \n\n3. **Celestial Art:** Art installations and light shows depict galaxies, nebulae, and astronomical phenomena. Schools and galleries often hold exhibitions or workshops focusing on space-inspired creativity.  \n\n4. **Educational Activities:** Museums and science centers offer special exhibits, planetarium shows, and activities for all ages to learn about space exploration, astronomy, and the universe's origins.  \n\n5. **Offering of Light:** In homage to distant stars, families and communities light candles or lanterns, symbolizing hope, curiosity, and the idea that even the smallest light can illuminate vast darkness—mirroring our quest to find knowledge amidst the cosmos.  \n\n6. **Global Connection:** As Galaxy Day emphasizes shared wonder, people are encouraged to connect virtually with friends or communities worldwide to share discoveries, stories, and aspirations related to space.  \n\nGalaxy Day fosters a sense of unity, exploration, and awe, inspiring individuals to look up and dream beyond our world.",
            reasoning: &[],
            calls: vec![],
            usage: usage(16, 363, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn azure_stream_skips_the_prompt_filter_chunk_and_reads_reasoning_tokens() {
    check_stream(
        "openai-chat/azure-openai_gpt-5-nano_model-router_prompt-filter-results.data.jsonl",
        0,
        &Want {
            text: "Capital of Denmark.",
            reasoning: &[],
            calls: vec![],
            usage: usage(15, 78, 0, 64),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_nonstreaming_parallel_tool_calls_then_text_turn() {
    let rel = "openai-chat/openai_gpt-4o_parallel-tool-calls_nonstream.vcr.yaml";
    check_response(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "call_fifE5poZ3dg3JDUKGFi48NGq",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "call_cvvIly4eGLZUYOMhAviT8jAF",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(110, 50, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_response(
        rel,
        1,
        &Want {
            text: "The result of adding 2 and 3 is 5, and the result of multiplying 2 and 3 is 6.",
            reasoning: &[],
            calls: vec![],
            usage: usage(176, 28, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}

#[test]
fn openai_streamed_parallel_tool_calls_then_text_turn() {
    let rel = "openai-chat/openai_gpt-4o_parallel-tool-calls_stream.vcr.yaml";
    check_stream(
        rel,
        0,
        &Want {
            text: "",
            reasoning: &[],
            calls: vec![
                (
                    "call_ehIWdjL1abZk1h8FWGLQ0Hie",
                    "add",
                    json!({"a": 2, "b": 3}),
                ),
                (
                    "call_fBSgA47J5VeONggizTIvl7AH",
                    "multiply",
                    json!({"a": 2, "b": 3}),
                ),
            ],
            usage: usage(106, 50, 0, 0),
            finish: FinishReason::ToolCalls,
        },
    );
    check_stream(
        rel,
        1,
        &Want {
            text: "The sum of 2 and 3 is 5, and the product is 6.",
            reasoning: &[],
            calls: vec![],
            usage: usage(172, 20, 0, 0),
            finish: FinishReason::Stop,
        },
    );
}
