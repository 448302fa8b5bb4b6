//! What the project and the editor add to a session over ACP: the
//! project's commands and the MCP servers the editor passes.

use serde_json::json;

use super::Client;
use crate::cli::support::*;

#[test]
fn acp_offers_the_projects_commands_and_expands_one_in_a_prompt() {
    let env = Env::new();
    let dir = env.path(".rein/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("greet.md"),
        "---\ndescription: Greet someone\nargument-hint: <name>\n---\nSay hello to $1.\n",
    )
    .unwrap();
    let script = env.script("s.json", &json!({"turns": [{"text": "Hello, Ada!"}]}));
    let mut c = Client::start(&env, &script, &[]);
    let session = c.new_session(env.ws.path());
    while c.updates_of("available_commands_update").is_empty() {
        c.read();
    }
    let offered = c.updates_of("available_commands_update")[0].clone();
    assert_eq!(
        offered["availableCommands"][0]["name"], "greet",
        "{offered}"
    );
    assert_eq!(
        offered["availableCommands"][0]["description"],
        "Greet someone <name>"
    );
    let done = c.prompt(&session, "/greet Ada");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    let stored = stored(&env, &session);
    assert_eq!(stored[0]["content"], "Say hello to Ada.", "{stored:?}");
    // An unknown command is a one-line error, nothing is run.
    let r = c.prompt(&session, "/nope");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("no command named `nope`"),
        "{r}"
    );
}

#[test]
fn acp_starts_the_mcp_servers_the_editor_passes_and_offers_their_tools() {
    let Some(server) = crate::cli::mcp::everything() else {
        return;
    };
    let env = Env::new();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "m1", "name": "mcp__everything__echo",
                             "arguments": {"message": "hi from the editor"}}]},
            {"text": "done"}
        ]}),
    );
    let mut c = Client::start(&env, &script, &["--profile", "full"]);
    let r = c.request(
        "session/new",
        json!({"cwd": env.ws.path(), "mcpServers": [
            {"name": "everything", "command": server, "args": ["stdio"], "env": []}
        ]}),
    );
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    let done = c.prompt(&session, "echo something");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    let stored = stored(&env, &session);
    let result = stored
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{stored:?}"));
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("Echo: hi from the editor"),
        "{result}"
    );
    // An SSE server is refused in one line (rein speaks stdio and HTTP).
    let r = c.request(
        "session/new",
        json!({"cwd": env.ws.path(), "mcpServers": [
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}
        ]}),
    );
    assert!(
        r["error"]["message"].as_str().unwrap().contains("SSE"),
        "{r}"
    );
}

/// An MCP server's form goes to an editor that offers forms, and its
/// answer is the server's; an editor that does not offer them is never
/// asked (the server's policy, decline, answers).
#[test]
fn acp_sends_an_mcp_servers_form_to_the_editor_that_offers_forms() {
    let Some(server) = crate::cli::mcp::everything() else {
        return;
    };
    let env = Env::new();
    let turns = json!({"turns": [
        {"tool_calls": [{"id": "e1", "name": "mcp__everything__trigger-elicitation-request",
                         "arguments": {}}]},
        {"text": "done"}
    ]});
    let servers = json!([{"name": "everything", "command": server, "args": ["stdio"], "env": []}]);
    let tool_output = |env: &Env, session: &str| {
        let stored = stored(env, session);
        let result = stored.iter().find(|m| m["role"] == "tool").cloned();
        result.unwrap_or_else(|| panic!("{stored:?}"))["output"]
            .as_str()
            .unwrap()
            .to_string()
    };

    let script = env.script("forms.json", &turns);
    let offers = json!({"elicitation": {"form": {}}});
    let mut c = Client::start_offering(&env, &script, &["--profile", "full"], offers);
    c.form_answer = json!({"action": "accept", "content": {"name": "Ada Lovelace", "integer": 7}});
    let r = c.request(
        "session/new",
        json!({"cwd": env.ws.path(), "mcpServers": servers}),
    );
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    let done = c.prompt(&session, "ask me");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(c.forms.len(), 1, "{:#?}", c.seen);
    let form = &c.forms[0]["params"];
    assert_eq!(form["sessionId"], session.as_str(), "{form}");
    assert_eq!(form["mode"], "form", "{form}");
    assert_eq!(
        form["requestedSchema"]["properties"]["integer"]["default"], 42,
        "{form}"
    );
    let output = tool_output(&env, &session);
    assert!(output.contains("- Name: Ada Lovelace"), "{output}");
    assert!(output.contains("- Favorite Integer: 7"), "{output}");

    let env = Env::new();
    let script = env.script("plain.json", &turns);
    let mut c = Client::start(&env, &script, &["--profile", "full"]);
    let r = c.request(
        "session/new",
        json!({"cwd": env.ws.path(), "mcpServers": servers}),
    );
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    c.prompt(&session, "ask me");
    assert!(c.forms.is_empty(), "{:#?}", c.forms);
    let output = tool_output(&env, &session);
    assert!(output.contains("declined"), "{output}");
}
