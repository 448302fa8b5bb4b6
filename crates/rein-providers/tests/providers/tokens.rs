//! Token counting with OpenAI's tokenizers, and prices.
//!
//! The reference figures below are published ones, each with its source;
//! the counts must match them exactly.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_core::{Pricing, Provider, TokenCounter, Usage};
use rein_providers::catalog;
use rein_providers::http::{HttpOptions, HttpProvider};
use rein_providers::protocol::{EndpointConfig, WireProtocol};
use rein_providers::tokens::{Encoding, TiktokenCounter, encoding_for_model, openai_counter};
use rein_providers::{ReplayProvider, ReplayScript};

fn o200k() -> TiktokenCounter {
    TiktokenCounter::new(Encoding::O200kBase)
}

fn cl100k() -> TiktokenCounter {
    TiktokenCounter::new(Encoding::Cl100kBase)
}

/// Check the token ids (and so the count) of each reference string.
fn check(counter: &TiktokenCounter, cases: &[(&str, &[u32])]) {
    for (text, ids) in cases {
        assert_eq!(
            counter.encode(text).as_deref(),
            Some(*ids),
            "{} of {text:?}",
            counter.encoding().name()
        );
        assert_eq!(counter.count(text), ids.len() as u64, "{text:?}");
    }
}

#[test]
fn cl100k_base_matches_published_token_ids() {
    check(
        &cl100k(),
        &[
            // OpenAI cookbook, "How to count tokens with tiktoken"
            // (examples/How_to_count_tokens_with_tiktoken.ipynb): encode(),
            // and compare_encodings() for the next three.
            ("tiktoken is great!", &[83, 1609, 5963, 374, 2294, 0]),
            (
                "antidisestablishmentarianism",
                &[519, 85342, 34500, 479, 8997, 2191],
            ),
            ("2 + 2 = 4", &[17, 489, 220, 17, 284, 220, 19]),
            (
                "お誕生日おめでとう",
                &[33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699],
            ),
            // openai/tiktoken, tests/test_encoding.py: test_simple,
            // test_simple_regex, test_basic_encode,
            // test_encode_surrogate_pairs.
            ("hello world", &[15339, 1917]),
            ("rer", &[38149]),
            ("'rer", &[2351, 81]),
            ("today\n ", &[31213, 198, 220]),
            ("today\n \n", &[31213, 27907]),
            ("today\n  \n", &[31213, 14211]),
            (" \u{85}0", &[220, 126, 227, 15]),
            ("👍", &[9468, 239, 235]),
        ],
    );
}

#[test]
fn o200k_base_matches_published_token_ids() {
    check(
        &o200k(),
        &[
            // OpenAI cookbook, "How to count tokens with tiktoken", the
            // revision that added o200k_base (encoding_for_model("gpt-4o-mini")
            // and compare_encodings()).
            ("tiktoken is great!", &[83, 8251, 2488, 382, 2212, 0]),
            (
                "antidisestablishmentarianism",
                &[493, 129901, 376, 160388, 21203, 2367],
            ),
            ("2 + 2 = 4", &[17, 659, 220, 17, 314, 220, 19]),
            (
                "お誕生日おめでとう",
                &[8930, 9697, 243, 128225, 8930, 17693, 4344, 48669],
            ),
            // tiktoken-rs, tests/tiktoken.rs: o200k_base_test.
            (
                "This is a test         with a lot of spaces",
                &[2500, 382, 261, 1746, 269, 483, 261, 3261, 328, 18608],
            ),
        ],
    );
}

/// The cookbook's chat example, whose prompt token counts the cookbook
/// checked against the OpenAI API's reported usage: 129 prompt tokens for
/// gpt-3.5-turbo and gpt-4, 124 for gpt-4o and gpt-4o-mini. Each message
/// costs 3 tokens of framing plus its role, content and name (and 1 more
/// for a name); every reply is primed with 3 more.
#[test]
fn chat_prompt_counts_match_what_the_api_reported() {
    let messages: &[&[(&str, &str)]] = &[
        &[
            ("role", "system"),
            (
                "content",
                "You are a helpful, pattern-following assistant that translates corporate jargon into plain English.",
            ),
        ],
        &[
            ("role", "system"),
            ("name", "example_user"),
            ("content", "New synergies will help drive top-line growth."),
        ],
        &[
            ("role", "system"),
            ("name", "example_assistant"),
            (
                "content",
                "Things working well together will increase revenue.",
            ),
        ],
        &[
            ("role", "system"),
            ("name", "example_user"),
            (
                "content",
                "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage.",
            ),
        ],
        &[
            ("role", "system"),
            ("name", "example_assistant"),
            (
                "content",
                "Let's talk later when we're less busy about how to do better.",
            ),
        ],
        &[
            ("role", "user"),
            (
                "content",
                "This late pivot means we don't have time to boil the ocean for the client deliverable.",
            ),
        ],
    ];
    let prompt_tokens = |counter: &dyn TokenCounter| {
        let mut n = 3;
        for m in messages {
            n += 3;
            for (key, value) in *m {
                n += counter.count(value);
                if *key == "name" {
                    n += 1;
                }
            }
        }
        n
    };
    for (model, reported) in [
        ("gpt-3.5-turbo", 129),
        ("gpt-4", 129),
        ("gpt-4o", 124),
        ("gpt-4o-mini", 124),
    ] {
        let counter = openai_counter(model).unwrap();
        assert!(!counter.exact(), "estimates until the engine asks");
        assert!(counter.sharpen());
        assert!(counter.exact());
        assert_eq!(prompt_tokens(counter.as_ref()), reported, "{model}");
    }
}

#[test]
fn models_map_to_their_encodings() {
    for model in [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-nano",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5.4",
        "o1",
        "o3-mini",
        "o4-mini",
        "openai/gpt-4o",
    ] {
        assert_eq!(
            encoding_for_model(model),
            Some(Encoding::O200kBase),
            "{model}"
        );
    }
    for model in ["gpt-4", "gpt-4-turbo", "gpt-4-0613", "gpt-3.5-turbo"] {
        assert_eq!(
            encoding_for_model(model),
            Some(Encoding::Cl100kBase),
            "{model}"
        );
    }
    for model in [
        "deepseek-chat",
        "llama-3.3-70b",
        "qwen2.5-coder",
        "claude-sonnet-4-5",
        "mistral-large",
    ] {
        assert_eq!(encoding_for_model(model), None, "{model}");
        assert!(openai_counter(model).is_none(), "{model}");
    }
    // The two encodings really differ.
    let text = "お誕生日おめでとう";
    let exact = |model: &str| {
        let counter = openai_counter(model).unwrap();
        counter.sharpen();
        counter.count(text)
    };
    assert_ne!(exact("gpt-4o"), exact("gpt-4"));
}

#[test]
fn special_token_markers_count_as_plain_text() {
    // The API treats `<|endoftext|>` in a message as text, not as the
    // special token 100257.
    let ids = cl100k().encode("<|endoftext|>").unwrap();
    assert!(ids.len() > 1, "{ids:?}");
    assert!(!ids.contains(&100_257));
}

#[test]
fn counting_is_fast_enough_for_big_tool_outputs() {
    let counter = o200k();
    let _ = counter.encode("build the tables first");
    // About 1 MB of source-like text.
    let text = "fn main() {\n    let total: u64 = (1..=100).map(|n| n * 2).sum();\n    println!(\"{total}\");\n}\n"
        .repeat(12_000);
    let started = Instant::now();
    let n = counter.count(&text);
    let took = started.elapsed();
    assert!(n > 100_000, "{n}");
    // Generous for an unoptimised build on a small machine.
    assert!(took < Duration::from_secs(20), "{took:?} for {n} tokens");
    // Long runs of one character must not blow up.
    assert!(counter.count(&" ".repeat(200_000)) > 0);
    assert!(counter.count(&"a".repeat(200_000)) > 0);
}

fn http(protocol: Arc<dyn WireProtocol>, model: &str) -> HttpProvider {
    HttpProvider::new(
        "test",
        protocol,
        EndpointConfig {
            base_url: "http://127.0.0.1:9".into(),
            model: model.into(),
            ..Default::default()
        },
        HttpOptions::default(),
    )
    .unwrap()
}

#[test]
fn http_providers_count_with_tiktoken_only_for_openai_models() {
    use rein_providers::anthropic::Anthropic;
    use rein_providers::openai_chat::OpenAiChat;
    use rein_providers::openai_responses::OpenAiResponses;
    let chat = http(Arc::new(OpenAiChat), "gpt-4o");
    let counter = chat.token_counter().unwrap();
    assert!(counter.sharpen());
    assert!(counter.exact());
    assert_eq!(counter.count("tiktoken is great!"), 6);
    let responses = http(Arc::new(OpenAiResponses), "gpt-5-mini");
    let counter = responses.token_counter().unwrap();
    assert!(counter.sharpen() && counter.exact());
    // An OpenAI-compatible server with another vendor's model: none.
    assert!(
        http(Arc::new(OpenAiChat), "deepseek-chat")
            .token_counter()
            .is_none()
    );
    // Claude's tokenizer is not OpenAI's.
    assert!(
        http(Arc::new(Anthropic), "claude-sonnet-4-5")
            .token_counter()
            .is_none()
    );
}

#[test]
fn http_providers_report_catalog_prices() {
    use rein_providers::anthropic::Anthropic;
    use rein_providers::openai_chat::OpenAiChat;
    let p = http(Arc::new(OpenAiChat), "gpt-4.1").pricing().unwrap();
    assert_eq!((p.input, p.cached_input, p.output), (2.0, 0.5, 8.0));
    let p = http(Arc::new(Anthropic), "claude-sonnet-4-5-20250929")
        .pricing()
        .unwrap();
    assert_eq!((p.input, p.cached_input, p.output), (3.0, 0.3, 15.0));
    assert!(
        http(Arc::new(OpenAiChat), "my-local-model")
            .pricing()
            .is_none()
    );
}

#[test]
fn catalog_prices_the_well_known_models() {
    let table: &[(&str, (f64, f64, f64))] = &[
        ("gpt-5", (1.25, 0.125, 10.0)),
        ("gpt-5-mini", (0.25, 0.025, 2.0)),
        ("gpt-4.1", (2.0, 0.5, 8.0)),
        ("gpt-4.1-mini", (0.4, 0.1, 1.6)),
        ("gpt-4o", (2.5, 1.25, 10.0)),
        ("gpt-4o-mini", (0.15, 0.075, 0.6)),
        ("o3", (2.0, 0.5, 8.0)),
        ("o4-mini", (1.1, 0.275, 4.4)),
        ("claude-opus-4-1-20250805", (15.0, 1.5, 75.0)),
        ("claude-opus-4-5", (5.0, 0.5, 25.0)),
        ("claude-sonnet-4-20250514", (3.0, 0.3, 15.0)),
        ("claude-haiku-4-5", (1.0, 0.1, 5.0)),
        ("claude-3-5-haiku-latest", (0.8, 0.08, 4.0)),
    ];
    for (model, (input, cached, output)) in table {
        let p = catalog::pricing(model).unwrap_or_else(|| panic!("{model} has no price"));
        assert_eq!(
            (p.input, p.cached_input, p.output),
            (*input, *cached, *output),
            "{model}"
        );
        assert!(p.cached_input <= p.input && p.input <= p.output, "{model}");
    }
    assert!(catalog::pricing("gpt-5.9-ultra").is_none());
    assert!(catalog::pricing("llama-3.3-70b").is_none());
}

#[test]
fn a_replay_script_can_declare_prices_for_cost_tests() {
    let script = ReplayScript::parse(
        r#"{"pricing": {"input": 2.0, "cached_input": 0.5, "output": 8.0},
            "turns": [{"text": "hi", "usage": {"input_tokens": 1000000,
                       "cached_input_tokens": 400000, "output_tokens": 100000}}]}"#,
    )
    .unwrap();
    let usage = script.turns[0].usage.unwrap();
    let provider = ReplayProvider::new(script);
    let p = provider.pricing().unwrap();
    assert_eq!(
        p,
        Pricing {
            input: 2.0,
            cached_input: 0.5,
            output: 8.0
        }
    );
    assert!((p.cost(&usage) - (1.2 + 0.2 + 0.8)).abs() < 1e-9);
    // Replay has no tokenizer of its own.
    assert!(provider.token_counter().is_none());
}

#[test]
fn replay_prices_are_optional_and_checked() {
    let turns = r#""turns": [{"text": "hi"}]"#;
    let plain = ReplayScript::parse(&format!("{{{turns}}}")).unwrap();
    assert_eq!(plain.pricing, None);
    assert!(ReplayProvider::new(plain).pricing().is_none());

    // `cached_input` defaults to the input price.
    let p = ReplayScript::parse(&format!(
        r#"{{"pricing": {{"input": 3, "output": 15}}, {turns}}}"#
    ))
    .unwrap()
    .pricing
    .unwrap();
    assert_eq!((p.input, p.cached_input, p.output), (3.0, 3.0, 15.0));

    // Free is a price.
    let free = ReplayScript::parse(&format!(
        r#"{{"pricing": {{"input": 0, "cached_input": 0, "output": 0}}, {turns}}}"#
    ))
    .unwrap();
    assert_eq!(free.pricing.unwrap().cost(&Usage::default()), 0.0);

    for (bad, wanted) in [
        (r#"{"input": -1, "output": 1}"#, "pricing.input"),
        (r#"{"input": 1, "output": 1, "cache": 1}"#, "unknown field"),
        (r#"{"input": 1}"#, "output"),
        (r#""cheap""#, "invalid type"),
    ] {
        let err = ReplayScript::parse(&format!(r#"{{"pricing": {bad}, {turns}}}"#))
            .unwrap_err()
            .to_string();
        assert!(err.contains(wanted), "{bad}: {err}");
    }
}
