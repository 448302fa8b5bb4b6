//! Tool calls from the real model: with the grammar every call parses and
//! names an offered tool, a required call is always one, and the
//! model's own call shapes are read.

use rein_core::{Message, ModelRequest};
use rein_providers::local::parse_tool_calls;
use serde_json::Value;

use crate::{complete, config, engine_system, load, serial, tools};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_grammar_every_call_parses_and_names_an_offered_tool() {
    let _serial = serial().await;
    let provider = load(config());
    let offered = tools();
    let system = engine_system(&offered);
    // Prompts on which the model, unconstrained, calls tools that do not
    // exist ("Cargo.toml", "grep", "python3") or writes broken calls.
    let prompts = [
        "Show me what is in notes.txt.",
        "Read Cargo.toml and tell me the package name.",
        "Find every TODO in the project with grep.",
        "Which Python version is installed? Run python3 --version.",
        "Read CHANGELOG.md and summarise the latest release.",
    ];
    let mut seen = 0;
    for prompt in prompts {
        let request = ModelRequest {
            temperature: None,
            system: system.clone(),
            messages: vec![Message::user(prompt)],
            tools: offered.clone(),
            max_output_tokens: Some(80),
            tool_choice: Default::default(),
            single_tool_call: false,
            answer_schema: None,
        };
        let answer = complete(&provider, &request).await;
        println!("{prompt}: {:?}", answer.content);
        for call in answer.tool_calls() {
            seen += 1;
            assert!(
                offered.iter().any(|t| t.name == call.name),
                "{prompt}: {call:?}"
            );
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            assert!(args.is_object(), "{prompt}: {call:?}");
        }
        let text = answer.text();
        assert!(
            !text.contains("<tool_call>"),
            "{prompt}: unparsed call in {text:?}"
        );
    }
    assert!(seen > 0, "the model made tool calls");
}

/// The prompts on which the model answers from memory instead of looking
/// ("3", "1000"): with a call required, the first thing it writes is a
/// well-formed call to an offered tool, never text; asked for one call, it
/// writes exactly one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_call_is_always_a_call_to_an_offered_tool() {
    let _serial = serial().await;
    let provider = load(config());
    let offered = tools();
    let system = engine_system(&offered);
    let prompts = [
        "How many rows of data does data.csv have, not counting the header?",
        "What does the function mean() in calc.py return for [1, 2, 3]?",
        "Hello! What can you do?",
    ];
    for (prompt, single) in prompts.iter().flat_map(|p| [(*p, false), (*p, true)]) {
        let request = ModelRequest {
            temperature: None,
            system: system.clone(),
            messages: vec![Message::user(prompt)],
            tools: offered.clone(),
            max_output_tokens: Some(120),
            tool_choice: rein_core::ToolChoice::Required,
            single_tool_call: single,
            answer_schema: None,
        };
        let answer = complete(&provider, &request).await;
        println!("{prompt} (single: {single}): {:?}", answer.content);
        let calls: Vec<_> = answer.tool_calls().collect();
        assert!(
            !calls.is_empty(),
            "{prompt}: no call in {:?}",
            answer.content
        );
        if single {
            assert_eq!(calls.len(), 1, "{prompt}: {calls:?}");
        }
        for call in calls {
            assert!(offered.iter().any(|t| t.name == call.name), "{call:?}");
            let args: Value = serde_json::from_str(&call.arguments).unwrap();
            assert!(args.is_object(), "{call:?}");
        }
        assert_eq!(answer.text().trim(), "", "{prompt}: text beside the call");
    }
}

#[test]
fn tool_calls_found_in_model_style_text() {
    // A shape the 0.5B model writes without the grammar.
    let (rest, calls) = parse_tool_calls(
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
        &tools(),
    );
    assert_eq!(rest, "");
    assert_eq!(calls[0].name, "read_file");
}

/// `--output-schema` on the local model: with the schema's grammar every
/// answer is JSON valid under the schema (prompts on which the model,
/// free, writes prose), or calls to the offered tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_answer_schema_every_answer_is_valid_json_or_calls() {
    let _serial = serial().await;
    let provider = load(config());
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "reason": {"type": "string", "maxLength": 60}
        },
        "required": ["verdict", "reason"]
    });
    let prompts = [
        ("Is 17 a prime number? Explain briefly.", false),
        ("Show me what is in notes.txt.", true),
    ];
    for (prompt, with_tools) in prompts {
        let offered = if with_tools { tools() } else { Vec::new() };
        let request = ModelRequest {
            system: engine_system(&offered),
            messages: vec![Message::user(prompt)],
            tools: offered.clone(),
            max_output_tokens: Some(120),
            answer_schema: Some(std::sync::Arc::new(schema.clone())),
            ..Default::default()
        };
        let answer = complete(&provider, &request).await;
        println!("{prompt}: {:?}", answer.content);
        let calls: Vec<_> = answer.tool_calls().collect();
        if calls.is_empty() {
            let value: Value = serde_json::from_str(answer.text().trim())
                .unwrap_or_else(|e| panic!("{prompt}: not JSON ({e}): {:?}", answer.text()));
            rein_core::schema_check::check(&value, &schema)
                .unwrap_or_else(|e| panic!("{prompt}: {e}: {value}"));
        } else {
            assert!(with_tools, "{prompt}: calls without tools: {calls:?}");
            for call in calls {
                assert!(offered.iter().any(|t| t.name == call.name), "{call:?}");
            }
        }
    }
}
