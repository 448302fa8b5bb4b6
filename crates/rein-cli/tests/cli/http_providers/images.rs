//! `rein exec --image FILE`: the image reaches each wire API's request in
//! its shape; a file that is not an image, one too big, a FIFO, and a
//! model that does not take images (the local one, refused before it is
//! loaded) are each one line and exit 2, with no model call.

use base64::Engine as _;
use rein_providers::mock_server::MockResponse;
use serde_json::{Value, json};

use super::{
    anthropic_text, assert_completed, openai_env, openai_text_stream, responses_text, server,
};
use crate::cli::support::*;

/// The smallest PNG header with some bytes after it: rein reads the type
/// from the first bytes, it does not decode the picture.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRpixels";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `rein exec --json --provider P --image shot.png --image photo.jpg`.
fn exec_with_images(env: &Env, provider: &str, vars: &[(&str, String)]) -> std::process::Output {
    std::fs::write(env.path("shot.png"), PNG).unwrap();
    std::fs::write(env.path("photo.jpg"), b"\xFF\xD8\xFF\xE0jfif").unwrap();
    let mut cmd = env.command();
    cmd.args(["exec", "--json", "--provider", provider]).args([
        "--image",
        "shot.png",
        "--image",
        "photo.jpg",
        "what is on the screen?",
    ]);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn user_message(body: &Value, key: &str) -> Value {
    body[key]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap()
}

#[test]
fn an_image_reaches_openai_chat_as_image_url_parts_and_stays_with_the_session() {
    let (_rt, server) = server();
    server.push(MockResponse::sse(openai_text_stream("a login form")));
    let env = Env::new();
    let o = exec_with_images(&env, "openai", &openai_env(&server, "sk-test"));
    assert_completed(&o, "a login form");
    let first = user_message(&server.requests()[0].json(), "messages");
    assert_eq!(
        first["content"],
        json!([
            {"type": "text", "text": "what is on the screen?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(PNG))}},
            {"type": "image_url", "image_url": {"url": format!("data:image/jpeg;base64,{}", b64(b"\xFF\xD8\xFF\xE0jfif"))}},
        ])
    ); // Stored with the message: shown, and sent again when the session
    // goes on without `--image`.
    let id = session_id(&json_lines(&o));
    let shown = stdout(&env.rein(&["sessions", "show", &id]));
    assert!(
        shown.contains(&format!("[image: image/png, {} bytes]", PNG.len())),
        "{shown}"
    );
    server.push(MockResponse::sse(openai_text_stream("still a form")));
    let mut cmd = env.command();
    cmd.args([
        "exec",
        "--json",
        "--provider",
        "openai",
        "--resume",
        &id,
        "and now?",
    ])
    .envs(openai_env(&server, "sk-test"));
    assert_completed(&cmd.output().unwrap(), "still a form");
    let again = user_message(&server.requests()[1].json(), "messages");
    assert_eq!(again["content"], first["content"]);
}

#[test]
fn an_image_reaches_openai_responses_as_an_input_image() {
    let (_rt, server) = server();
    server.push(MockResponse::sse(responses_text("a login form")));
    let env = Env::new();
    let o = exec_with_images(&env, "openai-responses", &openai_env(&server, "sk-test"));
    assert_completed(&o, "a login form");
    let user = user_message(&server.requests()[0].json(), "input");
    assert_eq!(
        user["content"][1],
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64(PNG))})
    );
    assert_eq!(user["content"][2]["type"], "input_image");
}

#[test]
fn an_image_reaches_anthropic_as_a_base64_image_block() {
    let (_rt, server) = server();
    server.push(MockResponse::sse(anthropic_text("a login form")));
    let env = Env::new();
    let vars = [
        ("ANTHROPIC_BASE_URL", format!("{}/v1", server.url())),
        ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
    ];
    let o = exec_with_images(&env, "anthropic", &vars);
    assert_completed(&o, "a login form");
    let user = user_message(&server.requests()[0].json(), "messages");
    assert_eq!(
        user["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}})
    );
    assert_eq!(user["content"][2]["source"]["media_type"], "image/jpeg");
}

/// `rein exec --provider openai --image NAME hi` against `server`, which
/// must get no request.
fn refused(env: &Env, image: &str, needle: &str) {
    let (_rt, server) = server();
    let mut cmd = env.command();
    cmd.args(["exec", "--provider", "openai", "--image", image, "hi"])
        .envs(openai_env(&server, "sk-test"));
    let o = cmd.output().unwrap();
    assert_clean_failure(&o, 2, needle);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn a_file_that_is_not_an_image_is_one_line_naming_it() {
    let env = Env::new();
    // Named like an image, but its bytes are text.
    std::fs::write(env.path("notes.png"), "just some notes\n").unwrap();
    refused(
        &env,
        "notes.png",
        "notes.png is not a PNG, JPEG, GIF or WebP image",
    );
    refused(&env, "missing.png", "cannot read the image missing.png");
}

#[test]
fn an_image_over_20_mib_is_one_line_with_the_limit() {
    let env = Env::new();
    let big = std::fs::File::create(env.path("big.png")).unwrap();
    big.set_len(20 * 1024 * 1024 + 1).unwrap();
    refused(&env, "big.png", "the image big.png is larger than 20 MiB");
}

#[test]
fn a_fifo_or_a_directory_is_refused_as_not_a_regular_file() {
    let env = Env::new();
    let fifo = env.path("pipe.png");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // Nothing ever writes to it: reading it would hang the run.
    refused(&env, "pipe.png", "the image pipe.png is not a regular file");
    std::fs::create_dir(env.path("shots")).unwrap();
    refused(&env, "shots", "the image shots is not a regular file");
}

#[test]
fn the_local_model_refuses_images_before_it_is_loaded() {
    let env = Env::new();
    std::fs::write(env.path("shot.png"), PNG).unwrap();
    // Not a model at all: loading it would fail with another message.
    std::fs::write(env.path("fake.gguf"), "not a model").unwrap();
    let o = env.rein(&[
        "exec",
        "--provider",
        "local",
        "--model-path",
        "fake.gguf",
        "--image",
        "shot.png",
        "hi",
    ]);
    assert_clean_failure(&o, 2, "the local model does not take images");
    let o = env.rein(&[
        "exec",
        "--json",
        "--provider",
        "local",
        "--model-path",
        "fake.gguf",
        "--image",
        "shot.png",
        "hi",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let last = json_lines(&o).pop().unwrap();
    assert_eq!(last["reason"], "usage_error");
    assert!(
        last["error"]
            .as_str()
            .unwrap()
            .contains("does not take images"),
        "{last}"
    );
}

#[test]
fn image_is_refused_with_stream_json_input() {
    let env = Env::new();
    let o = env.rein(&["exec", "--input-format", "stream-json", "--image", "a.png"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--image"), "{}", stderr(&o));
}
