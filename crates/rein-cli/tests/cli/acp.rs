//! `rein acp` end to end: a scripted client speaking the Agent Client
//! Protocol as JSON-RPC lines on the binary's stdin and stdout, against
//! the replay provider. This module holds the client; its submodules hold
//! the tests, one module per behaviour.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::*;

mod bad_requests;
mod editor_fs;
mod editor_race;
mod permissions;
mod project_and_editor_extras;
mod sessions;
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
    /// The editor's answer to `elicitation/create` (a form).
    form_answer: Value,
    /// The forms received.
    forms: Vec<Value>,
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
            form_answer: json!({"action": "decline"}),
            forms: Vec::new(),
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
        if message["method"] == "elicitation/create" {
            self.forms.push(message.clone());
            let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": self.form_answer});
            self.send(reply);
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
