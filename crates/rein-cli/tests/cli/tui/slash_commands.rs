//! Slash commands that report on the session: `/context` and `/mcp` (with
//! an MCP tool called first).

use serde_json::json;

use super::{Tmux, quit, status_of};
use crate::cli::support::*;

/// `/context` gives a number for every part of the next request: the
/// system prompt, the tool definitions, the instructions, the history.
#[test]
fn slash_context_gives_a_number_for_every_part() {
    let env = Env::new();
    std::fs::write(env.path("AGENTS.md"), "Answer in one short sentence.\n").unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [{"text": "The answer is 42."}]}),
    );
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "what is the answer?",
        ],
    );
    app.wait_for("The answer is 42.");
    app.type_text("/context");
    app.keys(&["Enter"]);
    let screen = app.wait_for("tool definitions");
    let number_after = |label: &str| -> u64 {
        let line = screen
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} line:\n{screen}"));
        line.trim_start()[label.len()..]
            .split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("no number on {line:?}"))
    };
    assert!(number_after("system prompt") > 0, "{screen}");
    assert!(number_after("tool definitions") > 0, "{screen}");
    assert!(
        number_after("instructions") > 0,
        "AGENTS.md counts: {screen}"
    );
    assert!(number_after("history") > 0, "{screen}");
    // /cost says the cost in the words exec and the status line use: the
    // replay model has no prices.
    app.type_text("/cost");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Cost of session");
    assert!(
        screen.contains("cost unknown (1 of 1 calls at unknown prices)"),
        "{screen}"
    );
    assert!(status_of(&app, "m ·").contains("cost unknown"), "{screen}");
    quit(&app);
}

/// Before any call is counted, the status line of a model without prices
/// says its cost is unknown (it used to say `$0.0000` until the run
/// ended); a priced model's says `$0.0000`.
#[test]
fn an_unpriced_models_status_line_never_shows_a_zero_cost() {
    let env = Env::new();
    for (script, cost) in [
        (
            json!({"model": "m", "turns": [{"text": "hi"}]}),
            "cost unknown",
        ),
        (
            json!({"model": "m", "turns": [{"text": "hi"}], "pricing": {"input": 1.0, "cached_input": 0.5, "output": 2.0}}),
            "$0.0000",
        ),
    ] {
        let script = env.script("t.json", &script);
        let app = Tmux::start(&env, &["--provider", "replay", "--script", &script]);
        let line = status_of(&app, "m ·");
        assert!(line.contains(cost), "{line}");
        quit(&app);
    }
}

/// The app with an MCP server (the reference server): the model's call to
/// one of its tools runs (read-only, so without asking) and `/mcp` shows
/// the server with its tools.
#[test]
fn the_app_calls_an_mcp_tool_and_slash_mcp_shows_the_server() {
    let Some(home) = std::env::var_os("HOME") else {
        return;
    };
    let server = std::path::PathBuf::from(home)
        .join(".cache/rein/npm/node_modules/.bin/mcp-server-everything");
    if !server.exists() {
        rein_test_support::skip(
            rein_test_support::Component::McpReferenceServer,
            "the MCP reference server is not installed",
        );
        return;
    }
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\nstartup_timeout_sec = 60\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "mcp__everything__echo", "arguments": {"message": "hi from the app"}}]},
            {"text": "It echoed."}
        ]}),
    );
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "echo something",
        ],
    );
    let screen = app.wait_for("It echoed.");
    assert!(screen.contains("Echo: hi from the app"), "{screen}");
    app.type_text("/mcp");
    app.keys(&["Enter"]);
    let screen = app.wait_for("MCP servers");
    // rein announces form elicitation, so the server offers its tool
    // that asks the user.
    assert!(screen.contains("everything: 14 tools"), "{screen}");
    assert!(screen.contains("trigger-elicitation-request"), "{screen}");
    quit(&app);
}

/// An MCP server's form in the app (the reference server's, whose `name`
/// is required and has no default): the defaults are shown, Enter with the
/// name typed accepts (the server gets the name and the defaults), Ctrl+D
/// declines.
#[test]
fn the_app_shows_a_servers_form_with_its_defaults_and_sends_accept_and_decline() {
    let Some(server) = crate::cli::mcp::everything() else {
        return;
    };
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        format!(
            "[permissions]\nallow = [\"mcp__everything__*\"]\n\n[mcp_servers.everything]\n\
             command = {:?}\nargs = [\"stdio\"]\nstartup_timeout_sec = 60\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let call = json!({"tool_calls": [{"name": "mcp__everything__trigger-elicitation-request",
                                      "arguments": {}}]});
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [call, call, {"text": "Both forms answered."}]}),
    );
    let app = Tmux::start(
        &env,
        &["--provider", "replay", "--script", &script, "ask me"],
    );
    let screen = app.wait_for("MCP form");
    assert!(screen.contains("`everything` asks"), "{screen}");
    assert!(
        screen.contains("It was a dark and stormy night."),
        "{screen}"
    );
    assert!(screen.contains("42"), "{screen}");
    // Enter before the required name is filled does not accept.
    app.keys(&["Enter"]);
    let screen = app.wait_for("is required");
    assert!(screen.contains("MCP form"), "{screen}");
    app.type_text("Ada Lovelace");
    app.keys(&["Enter"]);
    let screen = app.wait_for("User provided the requested information");
    assert!(screen.contains("MCP form"), "the second form: {screen}");
    app.keys(&["C-d"]);
    let screen = app.wait_for("Both forms answered.");
    assert!(screen.contains("User declined"), "{screen}");
    quit(&app);
    // The server got the typed name and the defaults.
    let list = env.rein(&["sessions", "list", "--json"]);
    let sessions = json_lines(&list);
    let id = sessions[0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sessions:?}"));
    let outputs: Vec<String> = stored(&env, id)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["output"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(outputs.len(), 2, "{outputs:?}");
    assert!(
        outputs[0].contains("- Name: Ada Lovelace"),
        "{}",
        outputs[0]
    );
    assert!(
        outputs[0].contains("- Favorite Integer: 42"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("User declined"), "{}", outputs[1]);
}

/// On the small profile the configured servers are not started: `/mcp`
/// says so and how to have them, never "no MCP servers configured".
#[test]
fn slash_mcp_on_the_small_profile_names_the_servers_that_were_not_started() {
    let env = Env::new();
    std::fs::write(
        env.home.path().join("config.toml"),
        "[mcp_servers.one]\ncommand = \"true\"\n[mcp_servers.two]\ncommand = \"true\"\n",
    )
    .unwrap();
    let script = env.script("t.json", &json!({"model": "m", "turns": [{"text": "ok"}]}));
    let app = Tmux::start(
        &env,
        &[
            "--provider",
            "replay",
            "--script",
            &script,
            "--profile",
            "small",
        ],
    );
    app.wait_for("/help");
    app.type_text("/mcp");
    app.keys(&["Enter"]);
    let screen = app.wait_for("MCP servers");
    assert!(
        screen.contains("2 MCP servers are configured but not started"),
        "{screen}"
    );
    assert!(screen.contains("--profile full"), "{screen}");
    assert!(!screen.contains("no MCP servers configured"), "{screen}");
    quit(&app);
}

/// The status line and `/context` give one figure for the next request,
/// taken from the provider's count of the last one (not an estimate that
/// contradicts it), `/context` names the provider's count, and a resumed
/// session starts from the same figure.
#[test]
fn the_status_line_and_slash_context_agree_with_the_providers_count() {
    let env = Env::new();
    let script = env.script(
        "t.json",
        &json!({"model": "m", "turns": [
            {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*"}}],
             "usage": {"input_tokens": 12000, "output_tokens": 40}},
            {"text": "Nothing here.", "usage": {"input_tokens": 12400, "output_tokens": 4}}
        ]}),
    );
    let app = Tmux::start(
        &env,
        &["--provider", "replay", "--script", &script, "what is here?"],
    );
    app.wait_for("Nothing here.");
    let status = status_of(&app, "m ·");
    // 12,400 and the reply's few tokens.
    assert!(status.contains("ctx 12.4k"), "{status}");
    app.type_text("/context");
    app.keys(&["Enter"]);
    let screen = app.wait_for("last request");
    let line = |label: &str| {
        screen
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} line:\n{screen}"))
            .to_string()
    };
    let next = line("next request");
    let tokens: u64 = next
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number in {next:?}"));
    assert!((12401..12450).contains(&tokens), "{next}");
    assert!(next.contains("the provider's count"), "{next}");
    assert!(line("last request").contains("12400"), "{screen}");
    quit(&app);
    // A new app resuming the session shows the same figure, from the
    // session's ledger, not an estimate of the whole history.
    let app = Tmux::start(
        &env,
        &["--provider", "replay", "--script", &script, "--last"],
    );
    app.wait_for("Resumed");
    let status = status_of(&app, "m ·");
    assert!(status.contains("ctx 12.4k"), "{status}");
    quit(&app);
}
