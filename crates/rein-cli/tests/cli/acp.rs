//! `rein acp` end to end: a scripted client speaking the Agent Client
//! Protocol as JSON-RPC lines on the binary's stdin and stdout, against
//! the replay provider.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

mod editor_fs;
mod editor_race;
mod terminal;

/// How long one message may take to arrive.
const WAIT: Duration = Duration::from_secs(60);

/// A client on one `rein acp` process.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// Every message received, in order (printed when a test fails).
    seen: Vec<Value>,
    /// The option picked for each permission request (None: answer
    /// `cancelled`).
    answer: Option<String>,
    /// The permission requests received.
    asked: Vec<Value>,
    /// The editor's buffers by absolute path, for `fs/read_text_file`
    /// (a path without one is an error) and `fs/write_text_file`.
    buffers: HashMap<String, String>,
    /// A path without a buffer is read and written on disk by name, as a
    /// real editor does (following any symlink on it).
    fs_disk: bool,
    /// Answer every `fs/*` request with this error instead.
    fs_error: Option<String>,
    /// The `fs/*` requests received.
    fs_asked: Vec<Value>,
    /// The editor's terminals, for `terminal/*` requests.
    terminals: terminal::Terminals,
    /// The `terminal/*` requests received.
    terminal_asked: Vec<Value>,
}

impl Client {
    fn start(env: &Env, script: &str, extra: &[&str]) -> Client {
        Client::start_offering(env, script, extra, json!({}))
    }

    /// A client whose `initialize` offers `capabilities`.
    fn start_offering(env: &Env, script: &str, extra: &[&str], capabilities: Value) -> Client {
        let mut cmd = env.command();
        cmd.args(["acp", "--provider", "replay", "--script", script])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client = Client {
            child,
            stdin,
            lines,
            next_id: 0,
            seen: Vec::new(),
            answer: Some("allow_once".into()),
            asked: Vec::new(),
            buffers: HashMap::new(),
            fs_error: None,
            fs_disk: false,
            fs_asked: Vec::new(),
            terminals: terminal::Terminals::default(),
            terminal_asked: Vec::new(),
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        );
        assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
        client
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line from rein; meanwhile, the terminals whose command
    /// ended answer the waits for them.
    fn next_line(&mut self) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            for reply in self.terminals.ready() {
                self.send(reply);
            }
            match self.lines.recv_timeout(Duration::from_millis(20)) {
                Ok(line) => return line,
                Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no message in {WAIT:?}; seen: {:#?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("rein acp closed stdout; seen: {:#?}", self.seen)
                }
            }
        }
    }

    /// The next message; requests from the agent are answered on the way.
    fn read(&mut self) -> Value {
        let line = self.next_line();
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        self.seen.push(message.clone());
        if message["method"] == "session/request_permission" {
            self.asked.push(message.clone());
            let outcome = match &self.answer {
                Some(option) => json!({"outcome": "selected", "optionId": option}),
                None => json!({"outcome": "cancelled"}),
            };
            self.send(
                json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}}),
            );
        }
        if let Some(method) = message["method"].as_str()
            && method.starts_with("fs/")
        {
            self.fs_asked.push(message.clone());
            let answer = self.answer_fs(method, &message["params"]);
            let mut reply = json!({"jsonrpc": "2.0", "id": message["id"]});
            match answer {
                Ok(result) => reply["result"] = result,
                Err(why) => reply["error"] = json!({"code": -32603, "message": why}),
            }
            self.send(reply);
        }
        if let Some(method) = message["method"].as_str()
            && method.starts_with("terminal/")
        {
            self.terminal_asked.push(message.clone());
            let answer = self
                .terminals
                .answer(&message["id"], method, &message["params"]);
            if let Some(reply) = answer {
                self.send(reply);
            }
        }
        message
    }

    /// What the editor answers an `fs/*` request.
    fn answer_fs(&mut self, method: &str, params: &Value) -> Result<Value, String> {
        if let Some(why) = &self.fs_error {
            return Err(why.clone());
        }
        let path = params["path"].as_str().unwrap_or("").to_string();
        match method {
            "fs/read_text_file" => match self.buffers.get(&path) {
                Some(text) => Ok(json!({"content": text})),
                None if self.fs_disk => std::fs::read_to_string(&path)
                    .map(|text| json!({"content": text}))
                    .map_err(|e| format!("cannot read {path}: {e}")),
                None => Err(format!("no buffer for {path}")),
            },
            "fs/write_text_file" => {
                let text = params["content"].as_str().unwrap_or("").to_string();
                if self.fs_disk && !self.buffers.contains_key(&path) {
                    return std::fs::write(&path, text)
                        .map(|()| json!({}))
                        .map_err(|e| format!("cannot write {path}: {e}"));
                }
                self.buffers.insert(path, text);
                Ok(json!({}))
            }
            _ => Err(format!("{method} is not offered")),
        }
    }

    /// Send a request and read until its response (notifications on the
    /// way are kept in `seen`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.until_response(id)
    }

    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn until_response(&mut self, id: u64) -> Value {
        loop {
            let m = self.read();
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    }

    /// `session/new` in `cwd`; the session id.
    fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let r = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {r}"))
            .to_string()
    }

    fn prompt(&mut self, session: &str, text: &str) -> Value {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// The `session/update`s received so far, as their `update` objects.
    fn updates(&self) -> Vec<&Value> {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| &m["params"]["update"])
            .collect()
    }

    fn updates_of(&self, kind: &str) -> Vec<&Value> {
        self.updates()
            .into_iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    fn text_of(&self, kind: &str) -> String {
        self.updates_of(kind)
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    /// Close stdin and wait for the process to end.
    fn finish(mut self) -> std::process::Output {
        self.stdin.take();
        let (tx, rx) = channel();
        let child = self.child;
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        rx.recv_timeout(WAIT)
            .expect("rein acp did not exit when its stdin closed")
            .unwrap()
    }
}

fn write_then_answer(env: &Env) -> String {
    env.script(
        "write.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "hello.txt", "content": "hi there\n"}}]},
            {"text": "Wrote hello.txt."},
            {"text": "Still here."}
        ]}),
    )
}

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
    let Some(server) = super::mcp::everything() else {
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
