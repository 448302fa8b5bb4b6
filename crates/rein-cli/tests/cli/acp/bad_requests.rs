//! Malformed or unknown ACP requests: one-line errors, and the connection
//! survives them.

use serde_json::json;

use super::{Client, write_then_answer};
use crate::cli::support::*;

#[test]
fn acp_bad_requests_get_one_line_errors_and_the_connection_survives() {
    let env = Env::new();
    let script = write_then_answer(&env);
    let mut c = Client::start(&env, &script, &[]);
    // A line that is not JSON.
    c.send_raw("{this is not json");
    // A relative folder, a missing one.
    let r = c.request(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not an absolute path"),
        "{r}"
    );
    let r = c.request(
        "session/new",
        json!({"cwd": "/no/such/folder", "mcpServers": []}),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{r}"
    );
    // A prompt to a session never opened; an image rein did not offer to take.
    let r = c.prompt("nope", "hi");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no open session"),
        "{r}"
    );
    let session = c.new_session(env.ws.path());
    let r = c.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "image", "mimeType": "image/png", "data": "AAAA"}]}),
    );
    assert!(
        r["error"]["message"].as_str().unwrap().contains("images"),
        "{r}"
    );
    // Modes: plan is taken, bypass is not offered to an editor.
    let r = c.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "bypass"}),
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a mode"),
        "{r}"
    );
    let r = c.request(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "plan"}),
    );
    assert!(r.get("error").is_none(), "{r}");
    // In plan mode the write is refused without asking.
    let done = c.prompt(&session, "write hello.txt");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert!(c.asked.is_empty(), "plan mode asked: {:#?}", c.asked);
    assert!(!env.path("hello.txt").exists());
    let out = c.finish();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
