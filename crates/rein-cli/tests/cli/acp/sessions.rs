//! ACP sessions: cancelling a prompt, loading a session after a restart,
//! and the folders a session may not use.

use serde_json::{Value, json};

use super::{Client, write_then_answer};
use crate::cli::support::*;

#[test]
fn acp_cancel_stops_a_running_prompt() {
    let env = Env::new();
    let script = env.script(
        "slow.json",
        &json!({"turns": [
            {"text": "thinking very slowly about it", "delay_ms": 2000, "chunk_chars": 2},
            {"text": "after the cancel"}
        ]}),
    );
    let mut c = Client::start(&env, &script, &[]);
    let session = c.new_session(env.ws.path());
    let id = c.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    // A second prompt while one runs is refused at once.
    let busy = c.prompt(&session, "again");
    assert!(
        busy["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("already running"),
        "{busy}"
    );
    // Cancel once the answer has started streaming.
    while c.updates_of("agent_message_chunk").is_empty() {
        c.read();
    }
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    let done = c.until_response(id);
    assert_eq!(done["result"]["stopReason"], "cancelled", "{:#?}", c.seen);
    // The session takes the next prompt.
    let next = c.prompt(&session, "and now?");
    assert_eq!(next["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    let text = c.text_of("agent_message_chunk");
    assert!(
        !text.contains("slowly about it"),
        "the cancelled answer went on: {text}"
    );
    assert!(text.contains("after the cancel"), "{:#?}", c.seen);
}

#[test]
fn acp_load_after_a_restart_replays_the_conversation_then_goes_on() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let mut first = Client::start(&env, &script, &[]);
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    let session = first.new_session(&ws);
    first.prompt(&session, "write hello.txt");
    assert!(first.finish().status.success());

    let again = env.script("again.json", &json!({"turns": [{"text": "Back again."}]}));
    let mut c = Client::start(&env, &again, &[]);
    let r = c.request(
        "session/load",
        json!({"sessionId": session, "cwd": ws, "mcpServers": []}),
    );
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(r["result"]["modes"]["currentModeId"], "default");
    // Everything replayed came before the answer.
    assert_eq!(c.text_of("user_message_chunk"), "write hello.txt");
    assert_eq!(c.text_of("agent_message_chunk"), "Wrote hello.txt.");
    let calls = c.updates_of("tool_call");
    assert_eq!(calls.len(), 1, "{:#?}", c.seen);
    assert_eq!(calls[0]["toolCallId"], "w1");
    assert_eq!(calls[0]["content"][0]["newText"], "hi there\n");
    // The loaded session goes on with what it remembers.
    let done = c.prompt(&session, "anything else?");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    let stored = stored(&env, &session);
    let users: Vec<&Value> = stored.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 2, "{stored:?}");
}

#[test]
fn acp_load_refuses_an_unknown_session_a_prefix_or_another_folder() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let mut c = Client::start(&env, &script, &[]);
    let session = c.new_session(env.ws.path());
    let other = tempfile::tempdir().unwrap();
    let cases = [
        (
            json!("no-such-session"),
            env.ws.path().to_path_buf(),
            "not found",
        ),
        (
            json!(&session[..6]),
            env.ws.path().to_path_buf(),
            "not found",
        ),
        (json!(session), other.path().to_path_buf(), "ran in"),
    ];
    for (id, cwd, needle) in cases {
        let r = c.request(
            "session/load",
            json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
        );
        let message = r["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(needle), "{id} in {}: {r}", cwd.display());
    }
}

#[test]
fn acp_refuses_a_git_directory_or_rein_home_as_a_session_folder() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let git = env.path("repo/.git");
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    let mut c = Client::start(&env, &script, &[]);
    let session = c.new_session(env.ws.path());
    for cwd in [
        git.clone(),
        git.join("hooks"),
        env.home.path().to_path_buf(),
    ] {
        let r = c.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let message = r["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("git directory") || message.contains("REIN_HOME"),
            "{}: {r}",
            cwd.display()
        );
        let r = c.request(
            "session/load",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        );
        let message = r["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("git directory") || message.contains("REIN_HOME"),
            "{}: {r}",
            cwd.display()
        );
    }
    // Nothing ran there, and the connection still serves.
    assert!(
        std::fs::read_dir(git.join("hooks"))
            .unwrap()
            .next()
            .is_none()
    );
    assert_ne!(c.new_session(env.ws.path()), session);
}
