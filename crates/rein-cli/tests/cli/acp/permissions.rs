//! Permission requests over ACP: the editor's answer runs or refuses a
//! call, and an option it was not offered is a refusal.

use serde_json::{Value, json};

use super::{Client, write_then_answer};
use crate::cli::support::*;

#[test]
fn acp_prompt_asks_permission_runs_the_edit_and_streams_its_diff() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let mut c = Client::start(&env, &script, &[]);
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    let r = c.request("session/new", json!({"cwd": ws, "mcpServers": []}));
    assert_eq!(r["result"]["modes"]["currentModeId"], "default", "{r}");
    let modes: Vec<&str> = r["result"]["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["default", "accept-edits", "plan", "auto"]);
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();

    let done = c.prompt(&session, "write hello.txt");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "hi there\n"
    );
    // The approval: the call, and rein's four answers.
    assert_eq!(c.asked.len(), 1, "{:#?}", c.seen);
    let ask = &c.asked[0]["params"];
    assert_eq!(ask["sessionId"], session.as_str());
    assert_eq!(ask["toolCall"]["toolCallId"], "w1");
    let options: Vec<&str> = ask["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_session", "allow_project", "deny"]
    );
    // The call, with the diff it makes, then its end with the file's text.
    let call = c.updates_of("tool_call");
    assert_eq!(call.len(), 1, "{:#?}", c.seen);
    assert_eq!(call[0]["kind"], "edit");
    assert_eq!(call[0]["content"][0]["type"], "diff");
    assert_eq!(call[0]["content"][0]["newText"], "hi there\n");
    assert_eq!(
        call[0]["content"][0]["path"],
        ws.join("hello.txt").display().to_string()
    );
    let ended: Vec<&Value> = c
        .updates_of("tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(ended.len(), 1, "{:#?}", c.seen);
    assert_eq!(c.text_of("agent_message_chunk"), "Wrote hello.txt.");
    // The session is rein's own: stored, and listed with its title.
    let out = c.finish();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = stored(&env, &session);
    assert!(stored.len() >= 4, "{stored:?}");
    let list = env.rein(&["sessions", "list"]);
    assert!(
        stdout(&list).contains("write hello.txt"),
        "{}",
        stdout(&list)
    );
}

#[test]
fn acp_a_denied_permission_refuses_the_call_and_the_turn_goes_on() {
    let env = Env::new();
    let write = json!({"tool_calls": [{"name": "write_file",
                       "arguments": {"path": "hello.txt", "content": "hi\n"}}]});
    let script = env.script(
        "twice.json",
        &json!({"turns": [write, {"text": "Refused."}, write, {"text": "Refused again."}]}),
    );
    let mut c = Client::start(&env, &script, &[]);
    c.answer = Some("deny".into());
    let session = c.new_session(env.ws.path());
    let done = c.prompt(&session, "write hello.txt");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert!(!env.path("hello.txt").exists(), "a denied write ran");
    let failed: Vec<&Value> = c
        .updates_of("tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "failed")
        .collect();
    assert!(!failed.is_empty(), "{:#?}", c.seen);
    // A client that answers `cancelled` denies too.
    c.answer = None;
    let done = c.prompt(&session, "write hello.txt again");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(c.asked.len(), 2, "{:#?}", c.seen);
    assert!(
        !env.path("hello.txt").exists(),
        "a cancelled answer allowed the write"
    );
}

#[test]
fn acp_an_option_the_client_was_not_offered_is_a_refusal() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let mut c = Client::start(&env, &script, &[]);
    c.answer = Some("allow_everything_forever".into());
    let session = c.new_session(env.ws.path());
    let done = c.prompt(&session, "write hello.txt");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert!(
        !env.path("hello.txt").exists(),
        "an unknown option allowed the write"
    );
}
