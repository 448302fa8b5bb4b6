//! Counting and limits: tokens counted in the model's own vocabulary, bad
//! model files, prompts longer than the context, generation at the
//! context's end, and cancellation mid-generation.

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rein_core::{
    CancellationToken, Message, ModelRequest, Provider, ProviderErrorKind, StreamChunk,
};
use rein_providers::local::{LocalConfig, LocalProvider};

use crate::{collect, complete, config, load, model_path, serial};

/// A fixed text and its length in Qwen2.5-Coder's vocabulary, measured once
/// with this model file (o200k_base makes it 23 tokens, the four bytes a
/// token estimate 21).
const COUNTED: &str =
    "Qwen's tokenizer splits `fn main() { println!(\"héllo, 世界\"); }` its own way.\n";
const COUNTED_TOKENS: u64 = 25;

/// The prompt tokens the provider reports for one user message.
async fn prompt_tokens(provider: &LocalProvider, text: &str) -> u64 {
    let request = ModelRequest {
        messages: vec![Message::user(text)],
        max_output_tokens: Some(1),
        ..Default::default()
    };
    complete(provider, &request)
        .await
        .usage
        .unwrap()
        .input_tokens
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_counter_uses_the_models_own_vocabulary() {
    let _serial = serial().await;
    let provider = load(config());
    let counter = provider
        .token_counter()
        .expect("the local model counts with its own vocabulary");
    assert!(counter.exact());
    let n = counter.count(COUNTED);
    assert_eq!(n, COUNTED_TOKENS, "measured once with this model");
    assert_eq!(counter.count(COUNTED), n, "counting is deterministic");
    assert_eq!(provider.gguf_counter().tokenize(COUNTED).len() as u64, n);
    // Not an estimate, nor OpenAI's tokenizer.
    let estimate = rein_core::CalibratedEstimator::default();
    assert_ne!(n, rein_core::TokenCounter::count(&estimate, COUNTED));
    let o200k = rein_providers::tokens::openai_counter("gpt-4o").unwrap();
    o200k.sharpen();
    assert_ne!(n, o200k.count(COUNTED));
    // What the provider bills for the text inside a prompt: the prompt
    // with the text, less the same prompt with an empty message.
    let with = prompt_tokens(&provider, COUNTED).await;
    let without = prompt_tokens(&provider, "").await;
    assert_eq!(with - without, n, "{with} - {without}");
    // A chat-template marker is the one special token it names, as the
    // worker reads it in a prompt.
    assert_eq!(counter.count("<|im_end|>"), 1);
    assert_eq!(counter.count(""), 0);
    // A local model costs nothing.
    let p = provider.pricing().unwrap();
    assert_eq!((p.input, p.cached_input, p.output), (0.0, 0.0, 0.0));
}

/// What `/context` shows for the local model is the size the model reads:
/// the request with its chat template, tools and history, counted as the
/// worker evaluates it, before it is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_counted_before_sending_as_the_model_reports_it() {
    let _serial = serial().await;
    let provider = load(config());
    let tool = rein_core::ToolSpec {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        }),
    };
    let request = ModelRequest {
        system: "You are a coding agent.".into(),
        messages: vec![
            Message::user(COUNTED),
            Message::Assistant(rein_core::AssistantMessage {
                content: vec![rein_core::ContentPart::Text {
                    text: "Looking.".into(),
                }],
                ..Default::default()
            }),
            Message::user("and now?"),
        ],
        tools: vec![tool],
        max_output_tokens: Some(1),
        ..Default::default()
    };
    let counted = provider
        .count_request(&request)
        .expect("the local model counts requests");
    let reported = complete(&provider, &request)
        .await
        .usage
        .unwrap()
        .input_tokens;
    assert_eq!(counted, reported);
    // The template and tools are in it: more than the texts alone.
    let counter = provider.token_counter().unwrap();
    let texts: u64 = request
        .messages
        .iter()
        .map(|m| rein_core::count_message(counter.as_ref(), m))
        .sum::<u64>()
        + counter.count(&request.system);
    assert!(counted > texts + 50, "{counted} vs {texts}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_model_files_are_clear_errors() {
    let _serial = serial().await;
    let dir = tempfile::tempdir().unwrap();
    let err = |path: &Path| {
        let e = LocalProvider::load(LocalConfig {
            model_path: path.to_path_buf(),
            ..LocalConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::Config, "{e:?}");
        assert!(!e.message.contains('\n'), "one line: {}", e.message);
        e.message
    };
    let missing = err(&dir.path().join("missing.gguf"));
    assert!(missing.contains("does not exist"), "{missing}");

    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "just some text, not a model\n").unwrap();
    let foreign = err(&text);
    assert!(foreign.contains("not a GGUF file"), "{foreign}");

    let mut head = vec![0u8; 1024 * 1024];
    let mut f = std::fs::File::open(model_path()).unwrap();
    std::io::Read::read_exact(&mut f, &mut head).unwrap();
    let truncated = dir.path().join("truncated.gguf");
    std::fs::write(&truncated, &head).unwrap();
    let started = Instant::now();
    let broken = err(&truncated);
    assert!(broken.contains("truncated or corrupt"), "{broken}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_longer_than_the_context_is_refused() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        context_size: 512,
        ..config()
    });
    assert_eq!(provider.capabilities().context_window, Some(512));
    let request = ModelRequest {
        messages: vec![Message::user("lorem ipsum dolor sit amet ".repeat(400))],
        ..Default::default()
    };
    let (chunks, error) = collect(&provider, &request, &CancellationToken::new()).await;
    let error = error.expect("an error");
    assert_eq!(
        error.kind,
        ProviderErrorKind::ContextLengthExceeded,
        "{error:?}"
    );
    assert!(chunks.is_empty());
    // The provider still works afterwards.
    let ok = ModelRequest {
        messages: vec![Message::user("Say hi.")],
        max_output_tokens: Some(5),
        ..Default::default()
    };
    let answer = complete(&provider, &ok).await;
    assert!(answer.usage.unwrap().output_tokens > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_stops_at_the_end_of_the_context() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        context_size: 128,
        max_output_tokens: 1000,
        ..config()
    });
    let request = ModelRequest {
        messages: vec![Message::user("Count from 1 to 500, one number per line.")],
        ..Default::default()
    };
    let answer = complete(&provider, &request).await;
    let usage = answer.usage.unwrap();
    assert_eq!(
        answer.finish,
        Some(rein_core::FinishReason::Length),
        "{answer:?}"
    );
    // llama.cpp rounds the context up to a multiple of 256; the last token
    // sampled is never evaluated.
    let n_ctx = u64::from(provider.context_size());
    assert!(n_ctx < 512, "{n_ctx}");
    assert_eq!(
        usage.input_tokens + usage.output_tokens,
        n_ctx + 1,
        "{usage:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_generation_ends_the_stream_promptly() {
    let _serial = serial().await;
    let provider = load(LocalConfig {
        max_output_tokens: 2000,
        ..config()
    });
    let request = ModelRequest {
        messages: vec![Message::user(
            "Write a long, detailed essay about the history of computing.",
        )],
        ..Default::default()
    };
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(&request, &cancel).await.unwrap();
    let mut deltas = 0;
    let cancelled_at = loop {
        let item = tokio::time::timeout(Duration::from_secs(120), stream.next())
            .await
            .expect("text comes")
            .expect("the stream goes on");
        if let Ok(StreamChunk::TextDelta(_)) = item {
            deltas += 1;
            if deltas == 5 {
                cancel.cancel();
                break Instant::now();
            }
        }
    };
    let mut ended_with = None;
    while let Some(item) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("the stream ends promptly")
    {
        if let Err(e) = item {
            ended_with = Some(e.kind);
        }
    }
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "stream ended {:?} after the cancel",
        cancelled_at.elapsed()
    );
    assert_eq!(ended_with, Some(ProviderErrorKind::Cancelled));
    // The next request is served normally.
    let ok = ModelRequest {
        messages: vec![Message::user("Say hi.")],
        max_output_tokens: Some(5),
        ..Default::default()
    };
    assert!(complete(&provider, &ok).await.usage.unwrap().output_tokens > 0);
}
