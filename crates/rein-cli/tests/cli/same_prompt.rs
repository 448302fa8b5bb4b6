//! The same prompt text behaves the same in every front end: `rein exec`,
//! the app (in tmux), `rein acp` and `rein serve` each send it to a local
//! OpenAI-compatible server, and the user message each run's request
//! carried is compared: a known `/command` expanded, `$skill` attached
//! (the app showing it as one line), a `$name` that is no skill named in
//! a note where each front end shows notes, `@server:uri` attached (an MCP server built with the Python SDK), an
//! unknown `/command` refused before any request, a command that narrows
//! the tools (`allowed-tools`) offering only those for its one run (the
//! next run of the session has them all again), and an untrusted
//! project's command with an `@file` and a `` !`…` `` line: the line sent
//! as written (never run) everywhere, the file attached everywhere.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use rein_providers::mock_server::{MockResponse, MockServer};
use serde_json::{Value, json};

use super::serve::Served;
use super::support::*;
use super::tui::{Tmux, quit};

/// How long one answer may take (an MCP server starts with the Python
/// SDK before its resource is read).
const WAIT: Duration = Duration::from_secs(60);

/// The prompts every front end is given, and what the model must get.
const KNOWN_COMMAND: &str = "/greet Ada";
const SKILL: &str = "Use $greeter for this";
/// A misspelt skill: sent as typed, and named in a note.
const UNKNOWN_SKILL: &str = "Use $greter for this, not $HOME";
const UNKNOWN_SKILL_NOTE: &str =
    "no skill named `greter`, so `$greter` attached nothing; the skills are: greeter";
const RESOURCE: &str = "Summarise @py:note://greeting please";
const UNKNOWN_COMMAND: &str = "/nope at all";
const NARROWING_COMMAND: &str = "/narrow";
const LIVE_COMMAND: &str = "/cite";
/// What the model gets for it (the folder is not trusted: nothing runs).
const LIVE_TEXT: &str = "Summarise @notes.txt and !`touch ran.txt`";
/// What the model gets for the narrowing command, and the tools offered.
const NARROWED: &str = "Read the notes. | tools: read_file";
/// The user's own command that runs on its own model (`other`).
const FAST_COMMAND: &str = "/fast";

/// A home whose provider is the mock server and whose MCP server is the
/// Python SDK's, and a project folder `w` (under the workspace, for
/// `rein serve`'s root) with a command and a skill. `None` when the
/// Python MCP SDK is not installed (the resource tests skip then too).
fn setup(server: &MockServer) -> Option<(Env, PathBuf)> {
    let env = Env::new();
    if !super::mcp::with_python_server(&env) {
        return None;
    }
    let config = env.home.path().join("config.toml");
    let servers = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!(
            "provider = \"mock\"\n{servers}\n[providers.mock]\nkind = \"openai\"\n\
             base_url = \"{}/v1\"\napi_key_env = \"REIN_TEST_UNSET_KEY\"\nmodel = \"m\"\n",
            server.url()
        ),
    )
    .unwrap();
    let project = env.ws.path().join("w");
    let commands = project.join(".rein/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("greet.md"),
        "---\ndescription: Greet someone\n---\nSay hello to $1.\n",
    )
    .unwrap();
    std::fs::write(commands.join("cite.md"), format!("{LIVE_TEXT}\n")).unwrap();
    std::fs::write(project.join("notes.txt"), "the notes say hi\n").unwrap();
    std::fs::write(
        commands.join("narrow.md"),
        "---\nallowed-tools: [Read]\n---\nRead the notes.\n",
    )
    .unwrap();
    let own = env.home.path().join("commands");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("fast.md"), "---\nmodel: other\n---\nBe quick.\n").unwrap();
    let skill = project.join(".rein/skills/greeter");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greeter\ndescription: Greets people warmly.\n---\nBe warm to everyone. Quote @py:note://greeting.\n",
    )
    .unwrap();
    Some((env, project))
}

/// A model that answers every request with one line.
fn answering_server() -> (tokio::runtime::Runtime, MockServer) {
    let (rt, server) = mock_server();
    server.respond_with(Arc::new(|_| {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]});
        MockResponse::sse(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
    }));
    (rt, server)
}

/// The text of a message's content (a string or text parts).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The user message of each run request (one offering tools) the server
/// got after the first `seen`.
fn prompts_after(server: &MockServer, seen: usize) -> Vec<String> {
    server.requests()[seen..]
        .iter()
        .map(|r| r.json())
        .filter(|body| body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .filter_map(|body| {
            let messages = body["messages"].as_array()?.clone();
            let user = messages.iter().rev().find(|m| m["role"] == "user")?;
            Some(text_of(&user["content"]))
        })
        .collect()
}

/// The tool names the first run request after the first `seen` offered.
fn tools_after(server: &MockServer, seen: usize) -> Vec<String> {
    let body = server.requests()[seen..]
        .iter()
        .map(|r| r.json())
        .find(|body| body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .expect("a run request");
    let tools = body["tools"].as_array().unwrap().iter();
    tools
        .filter_map(|t| t["function"]["name"].as_str().map(String::from))
        .collect()
}

/// The model each run request after the first `seen` asked for.
fn models_after(server: &MockServer, seen: usize) -> Vec<String> {
    server.requests()[seen..]
        .iter()
        .map(|r| r.json())
        .filter(|body| body["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .map(|body| body["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A run of `prompt` as the model saw it: its message and its tools.
fn narrowed(server: &MockServer, seen: usize, prompt: String) -> String {
    format!("{prompt} | tools: {}", tools_after(server, seen).join(","))
}

/// Wait until a run request came after the first `seen`; its prompt.
fn next_prompt(server: &MockServer, seen: usize) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(p) = prompts_after(server, seen).into_iter().next() {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "no run reached the model in {WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the model got for each prompt, or the refusal of the unknown
/// command (the model got nothing for it).
#[derive(Debug)]
struct Seen {
    command: String,
    skill: String,
    /// Where the front end shows notes, after the unknown skill's run.
    unknown_skill_notes: String,
    resource: String,
    refusal: String,
    /// The commands that set their run's model and tools, and the run
    /// after them.
    scoped: Scoped,
    /// What the model got for the command with live parts.
    live: String,
}

/// What the runs of the commands that set their run's model (`/fast`)
/// and tools (`/narrow`) were sent, and the run after them.
#[derive(Debug)]
struct Scoped {
    /// What the model got for the narrowing command, and its tools.
    narrowing: String,
    /// How many tools the run after it was offered.
    tools_after_narrowing: usize,
    /// The model of each run from `/fast` on (it, `/narrow`'s, the next).
    models: Vec<String>,
}

/// `/fast`, `/narrow`, then a plain command, each through `run` (one
/// front end's way to send a prompt and wait for its run).
fn scoped_runs(server: &MockServer, run: &mut dyn FnMut(&str) -> String) -> Scoped {
    let from_fast = server.requests().len();
    run(FAST_COMMAND);
    let seen = server.requests().len();
    let narrowing = narrowed(server, seen, run(NARROWING_COMMAND));
    let seen = server.requests().len();
    run(KNOWN_COMMAND);
    Scoped {
        narrowing,
        tools_after_narrowing: tools_after(server, seen).len(),
        models: models_after(server, from_fast),
    }
}

/// The expectations every front end meets.
fn assert_prepared(front: &str, seen: &Seen) {
    assert_eq!(seen.command, "Say hello to Ada.", "{front}: {seen:#?}");
    assert!(
        seen.skill.starts_with(SKILL) && seen.skill.contains("Be warm to everyone."),
        "{front}: the skill is not attached: {seen:#?}"
    );
    assert!(
        !seen.skill.contains("hello from the note"),
        "{front}: a resource named inside a skill's body was read: {seen:#?}"
    );
    assert!(
        seen.unknown_skill_notes.contains(UNKNOWN_SKILL_NOTE)
            && !seen.unknown_skill_notes.contains("`HOME`"),
        "{front}: the unknown skill is not named as elsewhere: {seen:#?}"
    );
    assert!(
        seen.resource.starts_with(RESOURCE) && seen.resource.contains("hello from the note"),
        "{front}: the resource is not attached: {seen:#?}"
    );
    assert!(
        seen.refusal
            .contains("no command named `nope`: cite, greet"),
        "{front}: the unknown command is not refused as elsewhere: {seen:#?}"
    );
    assert!(
        seen.live.starts_with(LIVE_TEXT),
        "{front}: the untrusted command's text is not sent as written: {seen:#?}"
    );
    assert!(
        seen.live.contains("[file notes.txt]") && seen.live.contains("the notes say hi"),
        "{front}: the command's file is not attached: {seen:#?}"
    );
    assert_eq!(seen.scoped.narrowing, NARROWED, "{front}: {seen:#?}");
    assert!(
        seen.scoped.tools_after_narrowing > 3,
        "{front}: the command's tools held past its run: {seen:#?}"
    );
    assert_eq!(
        seen.scoped.models,
        ["other", "m", "m"],
        "{front}: a command's model is not its run's alone: {seen:#?}"
    );
}

fn via_exec(env: &Env, project: &Path, server: &MockServer) -> Seen {
    let mut run = |prompt: &str| {
        let seen = server.requests().len();
        let o = env.rein(&["exec", "-C", project.to_str().unwrap(), prompt]);
        assert_eq!(o.status.code(), Some(0), "{prompt}: {}", stderr(&o));
        next_prompt(server, seen)
    };
    let seen = server.requests().len();
    let refused = env.rein(&["exec", "-C", project.to_str().unwrap(), UNKNOWN_COMMAND]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(prompts_after(server, seen).is_empty());
    let o = env.rein(&["exec", "-C", project.to_str().unwrap(), UNKNOWN_SKILL]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let scoped = scoped_runs(server, &mut run);
    Seen {
        command: run(KNOWN_COMMAND),
        skill: run(SKILL),
        unknown_skill_notes: stderr(&o),
        resource: run(RESOURCE),
        refusal: stderr(&refused),
        scoped,
        live: run(LIVE_COMMAND),
    }
}

/// A screen's text with its wrapped lines joined.
fn joined(screen: String) -> String {
    screen
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join(" ")
}

fn via_app(env: &Env, project: &Path, server: &MockServer) -> Seen {
    let app = Tmux::start(env, &["-C", project.to_str().unwrap()]);
    app.wait_for("/help");
    let answers = || app.capture().matches("• Done.").count();
    let mut run = |prompt: &str| {
        let (seen, answered) = (server.requests().len(), answers());
        app.type_text(prompt);
        app.keys(&["Enter"]);
        let got = next_prompt(server, seen);
        // The run has ended before the next prompt is typed.
        let deadline = Instant::now() + WAIT;
        while answers() == answered {
            assert!(Instant::now() < deadline, "{}", app.capture());
            std::thread::sleep(Duration::from_millis(50));
        }
        got
    };
    let command = run(KNOWN_COMMAND);
    let skill = run(SKILL);
    let screen = app.capture();
    assert!(
        screen.contains("⚙ skill greeter attached") && !screen.contains("Be warm to everyone."),
        "the app shows the skill's body, not one line: {screen}"
    );
    run(UNKNOWN_SKILL);
    let unknown_skill_notes = joined(app.capture());
    let resource = run(RESOURCE);
    let live = run(LIVE_COMMAND);
    let scoped = scoped_runs(server, &mut run);
    let seen = server.requests().len();
    app.type_text(UNKNOWN_COMMAND);
    app.keys(&["Enter"]);
    let refusal = app.wait_for("no command named");
    std::thread::sleep(Duration::from_millis(300));
    assert!(prompts_after(server, seen).is_empty());
    quit(&app);
    Seen {
        command,
        skill,
        unknown_skill_notes,
        resource,
        refusal: joined(refusal),
        scoped,
        live,
    }
}

/// A bare ACP client: JSON-RPC lines on the binary's stdin and stdout.
struct Acp {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    /// The notifications read so far (session updates).
    updates: Vec<Value>,
}

impl Acp {
    fn start(env: &Env) -> Acp {
        let mut child = env
            .command()
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        let mut acp = Acp {
            child,
            stdin,
            lines,
            next_id: 0,
            updates: Vec::new(),
        };
        acp.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        acp
    }

    /// Send a request and read until its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let line = self.lines.recv_timeout(WAIT).expect("rein acp went quiet");
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
            if m["id"].is_null() {
                self.updates.push(m);
            }
        }
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn via_acp(env: &Env, project: &Path, server: &MockServer) -> Seen {
    let mut acp = Acp::start(env);
    let opened = acp.request("session/new", json!({"cwd": project, "mcpServers": []}));
    let session = opened["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{opened}"))
        .to_string();
    let mut prompt = |text: &str| {
        acp.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
    };
    let mut run = |text: &str| {
        let seen = server.requests().len();
        let done = prompt(text);
        assert_eq!(done["result"]["stopReason"], "end_turn", "{text}: {done}");
        next_prompt(server, seen)
    };
    let command = run(KNOWN_COMMAND);
    let skill = run(SKILL);
    run(UNKNOWN_SKILL);
    let resource = run(RESOURCE);
    let live = run(LIVE_COMMAND);
    let scoped = scoped_runs(server, &mut run);
    let seen = server.requests().len();
    let refused = prompt(UNKNOWN_COMMAND);
    assert!(prompts_after(server, seen).is_empty());
    let unknown_skill_notes = Value::from(acp.updates.clone()).to_string();
    Seen {
        command,
        skill,
        unknown_skill_notes,
        resource,
        refusal: refused["error"]["message"].to_string(),
        scoped,
        live,
    }
}

fn via_serve(env: &Env, server: &MockServer) -> Seen {
    let s = Served::start(env, &[]);
    let (status, created) = s.call("POST", "/sessions", Some(json!({"workspace": "w"})));
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let prompt = |text: &str| {
        s.call(
            "POST",
            &format!("/sessions/{id}/prompt"),
            Some(json!({"text": text})),
        )
    };
    let mut run = |text: &str| {
        let seen = server.requests().len();
        let (status, body) = prompt(text);
        assert_eq!(status, 202, "{text}: {body}");
        let got = next_prompt(server, seen);
        s.wait_idle(&id);
        got
    };
    // First, so that its events are the first run's.
    run(UNKNOWN_SKILL);
    let events = s.events_until(&id, None, "stopped");
    let unknown_skill_notes = format!("{events:?}");
    let command = run(KNOWN_COMMAND);
    let skill = run(SKILL);
    let resource = run(RESOURCE);
    let live = run(LIVE_COMMAND);
    let scoped = scoped_runs(server, &mut run);
    let seen = server.requests().len();
    let (status, refused) = prompt(UNKNOWN_COMMAND);
    assert_eq!(status, 400, "{refused}");
    assert!(prompts_after(server, seen).is_empty());
    Seen {
        command,
        skill,
        unknown_skill_notes,
        resource,
        refusal: refused.to_string(),
        scoped,
        live,
    }
}

#[test]
fn every_front_end_prepares_the_same_prompt_the_same_way() {
    let (_rt, server) = answering_server();
    let Some((env, project)) = setup(&server) else {
        return;
    };
    assert_prepared("rein exec", &via_exec(&env, &project, &server));
    assert_prepared("the app", &via_app(&env, &project, &server));
    assert_prepared("rein acp", &via_acp(&env, &project, &server));
    assert_prepared("rein serve", &via_serve(&env, &server));
    assert!(!project.join("ran.txt").exists());
}
