//! `rein acp` with an editor that offers its terminal: bash calls run in a
//! terminal the editor creates, as `rein sandbox-run`, with rein's gate
//! before and rein's sandbox and environment inside.
//!
//! The scripted editor here really spawns what `terminal/create` asks for,
//! with its OWN environment (holding secrets rein must keep from commands)
//! as a real editor does.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::*;

/// The editor's own secrets: in the environment of whatever it spawns.
const EDITOR_SECRETS: [(&str, &str); 2] = [
    ("ANTHROPIC_API_KEY", "sk-ant-leak-editor-0123456789"),
    ("REIN_TEST_EDITOR_SECRET", "editor-secret-4242"),
];

/// The editor's terminals: each `terminal/create` spawns its command.
#[derive(Default)]
pub struct Terminals {
    /// Answer `terminal/create` with this error instead.
    pub create_error: Option<String>,
    running: HashMap<String, Term>,
    /// `terminal/wait_for_exit` requests not answered yet: (request id,
    /// terminal id).
    waiting: Vec<(Value, String)>,
    next: u64,
}

/// One terminal's process and what it printed.
struct Term {
    child: Child,
    output: Arc<Mutex<Vec<u8>>>,
    /// Pipes still being read.
    open_pipes: Arc<AtomicUsize>,
    limit: Option<usize>,
    status: Option<ExitStatus>,
}

impl Terminals {
    /// The reply to a `terminal/*` request; `None` for a wait that is
    /// answered when the command ends ([`Terminals::ready`]).
    pub fn answer(&mut self, id: &Value, method: &str, params: &Value) -> Option<Value> {
        let terminal = params["terminalId"].as_str().unwrap_or("").to_string();
        let result = match method {
            "terminal/create" => self.create(params),
            "terminal/wait_for_exit" => {
                self.waiting.push((id.clone(), terminal));
                return None;
            }
            "terminal/output" => self.with(&terminal, |t| Ok(t.output_json())),
            "terminal/kill" => self.with(&terminal, |t| {
                let _ = t.child.kill();
                Ok(json!({}))
            }),
            "terminal/release" => self.release(&terminal),
            _ => Err(format!("{method} is not offered")),
        };
        Some(reply(id, result))
    }

    /// Replies to the waits whose command has ended.
    pub fn ready(&mut self) -> Vec<Value> {
        let mut replies = Vec::new();
        for (id, terminal) in std::mem::take(&mut self.waiting) {
            let status = self.running.get_mut(&terminal).map(Term::poll);
            match status {
                None => replies.push(reply(&id, Err(format!("no terminal {terminal}")))),
                Some(Some(status)) => replies.push(reply(&id, Ok(exit_json(status)))),
                Some(None) => self.waiting.push((id, terminal)),
            }
        }
        replies
    }

    /// Spawn the command as asked, in the editor's environment.
    fn create(&mut self, params: &Value) -> Result<Value, String> {
        if let Some(why) = &self.create_error {
            return Err(why.clone());
        }
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(String::from))
                .collect()
        };
        let mut cmd = Command::new(params["command"].as_str().unwrap_or(""));
        cmd.args(strings(&params["args"]))
            .envs(EDITOR_SECRETS)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = params["cwd"].as_str() {
            cmd.current_dir(cwd);
        }
        for var in params["env"].as_array().into_iter().flatten() {
            cmd.env(
                var["name"].as_str().unwrap_or(""),
                var["value"].as_str().unwrap_or(""),
            );
        }
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let output = Arc::new(Mutex::new(Vec::new()));
        let open_pipes = Arc::new(AtomicUsize::new(2));
        collect(child.stdout.take(), &output, &open_pipes);
        collect(child.stderr.take(), &output, &open_pipes);
        self.next += 1;
        let id = format!("term-{}", self.next);
        let limit = params["outputByteLimit"].as_u64().map(|n| n as usize);
        self.running.insert(
            id.clone(),
            Term {
                child,
                output,
                open_pipes,
                limit,
                status: None,
            },
        );
        Ok(json!({"terminalId": id}))
    }

    fn with(
        &mut self,
        terminal: &str,
        f: impl FnOnce(&mut Term) -> Result<Value, String>,
    ) -> Result<Value, String> {
        match self.running.get_mut(terminal) {
            Some(t) => f(t),
            None => Err(format!("no terminal {terminal}")),
        }
    }

    /// Kill the command if it still runs, and forget the terminal.
    fn release(&mut self, terminal: &str) -> Result<Value, String> {
        let mut t = self
            .running
            .remove(terminal)
            .ok_or_else(|| format!("no terminal {terminal}"))?;
        let _ = t.child.kill();
        let _ = t.child.wait();
        Ok(json!({}))
    }

    /// How many terminals are not released.
    pub fn open(&self) -> usize {
        self.running.len()
    }
}

impl Term {
    fn poll(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// The output so far (the last `limit` bytes), and the exit status.
    fn output_json(&mut self) -> Value {
        // An ended command's last bytes are read first.
        if self.poll().is_some() {
            let until = Instant::now() + Duration::from_secs(2);
            while self.open_pipes.load(Ordering::SeqCst) > 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let bytes = self.output.lock().unwrap().clone();
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        let mut truncated = false;
        if let Some(limit) = self.limit
            && text.len() > limit
        {
            let mut start = text.len() - limit;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            text = text[start..].to_string();
            truncated = true;
        }
        let mut out = json!({"output": text, "truncated": truncated});
        if let Some(status) = self.status {
            out["exitStatus"] = exit_json(status);
        }
        out
    }
}

/// Read a pipe into `output` on a thread of its own.
fn collect(
    pipe: Option<impl Read + Send + 'static>,
    output: &Arc<Mutex<Vec<u8>>>,
    open: &Arc<AtomicUsize>,
) {
    let (output, open) = (output.clone(), open.clone());
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                output.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        }
        open.fetch_sub(1, Ordering::SeqCst);
    });
}

fn exit_json(status: ExitStatus) -> Value {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => json!({"exitCode": code}),
        (None, Some(signal)) => json!({"exitCode": null, "signal": format!("signal {signal}")}),
        (None, None) => json!({"exitCode": null}),
    }
}

fn reply(id: &Value, result: Result<Value, String>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(why) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}})
        }
    }
}

/// The capabilities of an editor that offers its terminal.
fn terminal_capabilities() -> Value {
    json!({"terminal": true})
}

/// A script whose first turn runs `command` in bash (call id c1), then
/// answers "Done.".
fn bash_then_done(env: &Env, command: &str, timeout_secs: Option<u64>) -> String {
    let mut args = json!({"command": command});
    if let Some(t) = timeout_secs {
        args["timeout_secs"] = json!(t);
    }
    env.script(
        "bash.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "c1", "name": "bash", "arguments": args}]},
            {"text": "Done."}
        ]}),
    )
}

/// The stored observation of call c1 of `session`, and whether it is an
/// error (what the model reads next).
fn observation(env: &Env, session: &str) -> (String, bool) {
    let stored = stored(env, session);
    let result = stored
        .iter()
        .find(|m| m["role"] == "tool" && m["call_id"] == "c1")
        .unwrap_or_else(|| panic!("no result for c1: {stored:?}"));
    (
        result["output"].as_str().unwrap_or("").to_string(),
        result["is_error"].as_bool().unwrap_or(false),
    )
}

/// Run `command` through a terminal-offering editor in `--mode auto`;
/// the client (for what it saw) and the session.
fn run_in_terminal(env: &Env, command: &str, timeout: Option<u64>) -> (Client, String) {
    let script = bash_then_done(env, command, timeout);
    let mut c = Client::start_offering(env, &script, &["--mode", "auto"], terminal_capabilities());
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    let session = c.new_session(&ws);
    let done = c.prompt(&session, "run it");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    (c, session)
}

fn methods(c: &Client) -> Vec<&str> {
    c.terminal_asked
        .iter()
        .map(|m| m["method"].as_str().unwrap_or(""))
        .collect()
}

#[test]
fn acp_bash_runs_as_rein_sandbox_run_in_the_editor_terminal_and_the_model_sees_its_output() {
    let env = Env::new();
    let (c, session) = run_in_terminal(&env, "echo hello-from-terminal; exit 3", None);
    let ws = std::fs::canonicalize(env.ws.path()).unwrap();
    // The editor ran rein's own executable as the wrapper, in the
    // workspace, with no variables of rein's choosing added.
    assert_eq!(
        methods(&c),
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ],
        "{:#?}",
        c.terminal_asked
    );
    let create = &c.terminal_asked[0]["params"];
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_rein")).unwrap();
    assert_eq!(create["command"], exe.display().to_string(), "{create}");
    assert_eq!(create["args"][0], "sandbox-run", "{create}");
    assert_eq!(create["args"][1], "--spec", "{create}");
    assert_eq!(create["cwd"], ws.display().to_string());
    assert!(
        create["env"].as_array().is_none_or(Vec::is_empty),
        "{create}"
    );
    assert_eq!(create["outputByteLimit"], 32 * 1024);
    assert_eq!(create["sessionId"], session.as_str());
    // The spec was outside the workspace, and is gone.
    let spec = std::path::PathBuf::from(create["args"][2].as_str().unwrap());
    assert!(!spec.starts_with(&ws), "{}", spec.display());
    assert!(!spec.exists(), "the spec was left behind");
    assert_eq!(c.terminals.open(), 0, "a terminal was not released");
    // The call embedded the live terminal.
    let embedded = c.updates_of("tool_call_update").into_iter().any(|u| {
        u["toolCallId"] == "c1"
            && u["content"][0]["type"] == "terminal"
            && u["content"][0]["terminalId"] == "term-1"
    });
    assert!(embedded, "no terminal in the call: {:#?}", c.seen);
    drop(c);
    // The model read the output and the exit code, as from rein's bash.
    let (output, is_error) = observation(&env, &session);
    assert!(!is_error, "{output}");
    assert_eq!(output, "hello-from-terminal\n[exit code: 3]");
}

#[test]
fn acp_editor_terminal_commands_never_see_the_editor_secrets() {
    let env = Env::new();
    let (c, session) = run_in_terminal(&env, "env; echo END-OF-ENV", None);
    assert_eq!(methods(&c)[0], "terminal/create");
    drop(c);
    let (output, _) = observation(&env, &session);
    assert!(output.contains("PATH="), "{output}");
    assert!(output.contains("END-OF-ENV"), "{output}");
    for (name, value) in EDITOR_SECRETS {
        assert!(!output.contains(name), "{name} leaked: {output}");
        assert!(!output.contains(value), "{name}'s value leaked: {output}");
    }
}

#[test]
fn acp_editor_terminal_commands_stay_in_rein_sandbox() {
    if !rein_tools::sandbox::can_apply(&rein_core::SandboxPolicy::default()) {
        rein_test_support::skip(
            rein_test_support::Component::AnySandbox,
            "no sandbox here (neither bubblewrap nor Landlock)",
        );
        return;
    }
    let env = Env::new();
    let home = std::env::var("HOME").unwrap_or_default();
    let escape = format!("rein-acp-terminal-escape-{}.txt", std::process::id());
    let command = format!(
        "echo inside > inside.txt; echo out > \"$HOME/{escape}\"; \
         echo out > /etc/{escape}; echo finished"
    );
    let (c, session) = run_in_terminal(&env, &command, None);
    assert_eq!(methods(&c)[0], "terminal/create");
    drop(c);
    let (output, _) = observation(&env, &session);
    eprintln!("{output}");
    let leaked: Vec<std::path::PathBuf> =
        [std::path::Path::new(&home), std::path::Path::new("/etc")]
            .iter()
            .map(|d| d.join(&escape))
            .filter(|p| p.exists())
            .collect();
    for p in &leaked {
        let _ = std::fs::remove_file(p);
    }
    assert!(
        leaked.is_empty(),
        "written outside the workspace: {leaked:?}; {output}"
    );
    assert_eq!(
        std::fs::read_to_string(env.path("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(output.contains("finished"), "{output}");
}

#[test]
fn acp_an_editor_terminal_command_past_its_timeout_is_killed_and_the_model_is_told() {
    let env = Env::new();
    let started = Instant::now();
    let (c, session) = run_in_terminal(&env, "sleep 20; echo never", Some(1));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(c.terminals.open(), 0, "a terminal was not released");
    drop(c);
    let (output, is_error) = observation(&env, &session);
    eprintln!("{output}");
    assert!(is_error, "{output}");
    assert!(
        output.contains("[timed out after 1 s; the command and its child processes were killed]"),
        "{output}"
    );
    assert!(!output.contains("never"), "{output}");
}

#[test]
fn acp_a_denied_bash_call_never_reaches_the_editor_terminal() {
    let env = Env::new();
    let script = bash_then_done(&env, "echo ran > ran.txt", None);
    let mut c = Client::start_offering(&env, &script, &[], terminal_capabilities());
    c.answer = Some("deny".into());
    let session = c.new_session(env.ws.path());
    let done = c.prompt(&session, "run it");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(c.asked.len(), 1, "{:#?}", c.seen);
    assert!(c.terminal_asked.is_empty(), "{:#?}", c.terminal_asked);
    drop(c);
    assert!(!env.path("ran.txt").exists());
    let (output, is_error) = observation(&env, &session);
    assert!(is_error, "{output}");
}

#[test]
fn acp_when_the_editor_cannot_create_a_terminal_the_command_runs_in_rein_sandbox() {
    let env = Env::new();
    let script = bash_then_done(&env, "echo fallback-ran", None);
    let mut c = Client::start_offering(&env, &script, &["--mode", "auto"], terminal_capabilities());
    c.terminals.create_error = Some("terminals are turned off".into());
    let session = c.new_session(env.ws.path());
    let done = c.prompt(&session, "run it");
    assert_eq!(done["result"]["stopReason"], "end_turn", "{:#?}", c.seen);
    assert_eq!(methods(&c), ["terminal/create"], "{:#?}", c.terminal_asked);
    drop(c);
    let (output, is_error) = observation(&env, &session);
    assert!(!is_error, "{output}");
    assert_eq!(
        output,
        "[the editor's terminal could not be used (terminals are turned off); the command ran \
         in rein's own sandbox]\nfallback-ran\n[exit code: 0]"
    );
}

#[test]
fn acp_cancel_kills_and_releases_the_editor_terminal() {
    let env = Env::new();
    let script = bash_then_done(&env, "sleep 3; echo late > late.txt", None);
    let mut c = Client::start_offering(&env, &script, &["--mode", "auto"], terminal_capabilities());
    let session = c.new_session(env.ws.path());
    let id = c.send_request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    // Cancel once rein waits on the terminal.
    while !methods(&c).contains(&"terminal/wait_for_exit") {
        c.read();
    }
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}));
    let done = c.until_response(id);
    assert_eq!(done["result"]["stopReason"], "cancelled", "{:#?}", c.seen);
    let asked = methods(&c);
    assert!(asked.contains(&"terminal/kill"), "{asked:?}");
    assert!(asked.contains(&"terminal/release"), "{asked:?}");
    assert_eq!(c.terminals.open(), 0, "a terminal was not released");
    // The command died with its terminal.
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        !env.path("late.txt").exists(),
        "the command outlived the cancel"
    );
}

/// `rein sandbox-run --spec PATH --sha256 HEX`.
fn sandbox_run(env: &Env, spec: &std::path::Path, digest: &str) -> std::process::Output {
    let spec = spec.display().to_string();
    env.rein(&["sandbox-run", "--spec", &spec, "--sha256", digest])
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn sandbox_run_refuses_a_missing_a_world_readable_or_a_malformed_spec_in_one_line() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let dir = tempfile::tempdir().unwrap();
    // Missing.
    let missing = dir.path().join("missing.json");
    let o = sandbox_run(&env, &missing, "00");
    assert_clean_failure(&o, 2, "cannot open the spec");
    // Readable by everyone.
    let open = dir.path().join("open.json");
    std::fs::write(&open, "{}").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = sandbox_run(&env, &open, &sha256_hex(b"{}"));
    assert_clean_failure(&o, 2, "has mode 0644; only 0600 is accepted");
    assert!(open.exists(), "a refused spec was deleted");
    // Not a spec (with the right digest).
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{not json").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = sandbox_run(&env, &bad, &sha256_hex(b"{not json"));
    assert_clean_failure(&o, 2, "is not valid");
    // A digest that does not match.
    std::fs::write(&bad, "{}").unwrap();
    std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
    let o = sandbox_run(&env, &bad, &sha256_hex(b"{other}"));
    assert_clean_failure(&o, 2, "is not the one rein wrote");
}
