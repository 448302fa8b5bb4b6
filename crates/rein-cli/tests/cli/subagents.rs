//! Sub-agents through the binary: the `task` tool with the replay
//! provider scripting each child's turns; children side by side, their
//! answers as results, their events nested in `--json`, the user's hooks
//! told the child's `agent_id`; a project's agent definition; a child
//! that tries to widen what it may do.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::support::*;

fn results(o: &std::process::Output) -> Vec<(String, String, bool)> {
    json_lines(o)
        .iter()
        .filter(|e| e["type"] == "message_committed" && e["message"]["role"] == "tool")
        .map(|e| {
            let m = &e["message"];
            (
                m["call_id"].as_str().unwrap_or("").to_string(),
                m["output"].as_str().unwrap_or("").to_string(),
                m["is_error"] == true,
            )
        })
        .collect()
}

#[test]
fn children_work_side_by_side_and_hooks_see_their_agent_id() {
    let env = Env::new();
    std::fs::write(env.ws.path().join("a.txt"), "hello from a\n").unwrap();
    let log = log_every_childs_hooks(&env);
    let script = two_children_script(&env);
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stderr(&o), stdout(&o));
    let mut r = results(&o);
    r.sort();
    assert!(
        r[0].1
            .starts_with("a.txt says hello from a\n\n[sub-agent explore · session "),
        "{r:?}"
    );
    assert!(r[1].1.starts_with("wrote b.txt"), "{r:?}");
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("b.txt")).unwrap(),
        "made\n"
    );
    // The children's runs are in the event stream, nested.
    let lines = json_lines(&o);
    let nested: Vec<&serde_json::Value> =
        lines.iter().filter(|e| e["type"] == "subagent").collect();
    for agent in ["explore", "general"] {
        let kinds: Vec<&str> = nested
            .iter()
            .filter(|e| e["agent"] == agent)
            .map(|e| e["event"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
        assert_eq!(kinds.last(), Some(&"stopped"), "{kinds:?}");
        assert!(kinds.contains(&"tool_finished"), "{kinds:?}");
    }
    the_hooks_saw_each_child(&log);
    let parent = json_lines(&o)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    the_child_session_is_linked_to_its_parent(&env, &parent, &r[0].1);
    // The parent session resumes with its children's results in it.
    let next = env.script("n.json", &json!({"turns": [{"text": "resumed"}]}));
    let o = env.replay_json(&next, &["--resume", &parent, "what now?"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let shown = stdout(&env.rein(&["sessions", "show", &parent]));
    assert!(
        shown.contains("a.txt says hello from a") && shown.contains("resumed"),
        "{shown}"
    );
}

/// User hooks that log each child's start, stop and calls (with its
/// agent id and type) to `hooks.log` in the workspace; the log's path.
fn log_every_childs_hooks(env: &Env) -> PathBuf {
    let log = env.ws.path().join("hooks.log");
    let hook = format!(
        "python3 -c 'import json,sys; e=json.load(sys.stdin); open(\"{}\",\"a\").write(e[\"hook_event_name\"]+\" \"+e.get(\"agent_id\",\"main\")+\" \"+e.get(\"agent_type\",e.get(\"tool_name\",\"\"))+\"\\n\")'",
        log.display()
    );
    std::fs::create_dir_all(env.home.path()).unwrap();
    std::fs::write(
        env.home.path().join("settings.json"),
        json!({"hooks": {
            "SubagentStart": [{"hooks": [{"type": "command", "command": hook}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": hook}]}],
            "PreToolUse": [{"matcher": "Read|Write|task", "hooks": [{"type": "command", "command": hook}]}]
        }})
        .to_string(),
    )
    .unwrap();
    log
}

/// The parent asks two children at once: `explore` reads a.txt, `general`
/// writes b.txt; then it answers.
fn two_children_script(env: &Env) -> String {
    env.script(
        "s.json",
        &json!({
            "turns": [
                {"tool_calls": [
                    {"id": "t1", "name": "task", "arguments": {"agent": "explore", "description": "read a", "prompt": "What does a.txt say?"}},
                    {"id": "t2", "name": "task", "arguments": {"agent": "general", "description": "make b", "prompt": "Create b.txt saying made."}}
                ]},
                {"text": "Both done."}
            ],
            "agents": {
                "explore": [
                    {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                    {"text": "a.txt says hello from a"}
                ],
                "general": [
                    {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "made\n"}}]},
                    {"text": "wrote b.txt"}
                ]
            }
        }),
    )
}

/// Hooks: each child's start, calls (named as Claude Code names the
/// tools) and stop, with its id and type.
fn the_hooks_saw_each_child(log: &Path) {
    let log = std::fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with("PreToolUse main Task")),
        "{log}"
    );
    let read = lines
        .iter()
        .find(|l| l.starts_with("PreToolUse") && l.ends_with(" Read"))
        .unwrap();
    assert!(
        !read.contains(" main "),
        "the child's call names its agent: {log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("SubagentStart") && l.ends_with("explore")),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("SubagentStop") && l.ends_with("general")),
        "{log}"
    );
}

/// The child's own session (named at the end of its `result`) can be
/// read and is linked to its parent, which lists it.
fn the_child_session_is_linked_to_its_parent(env: &Env, parent: &str, result: &str) {
    let child = result
        .split("session ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let shown = stdout(&env.rein(&["sessions", "show", child]));
    assert!(shown.contains("hello from a"), "{shown}");
    assert!(shown.contains(&format!("parent    {parent}")), "{shown}");
    let shown = stdout(&env.rein(&["sessions", "show", parent]));
    assert!(shown.contains("sub-agent sessions"), "{shown}");
    assert!(shown.contains(child), "{shown}");
    let listed = stdout(&env.rein(&["sessions", "list"]));
    assert!(listed.contains("↳ What does a.txt say?"), "{listed}");
}

#[test]
fn a_projects_agent_can_only_narrow_what_its_parent_may_do() {
    let env = Env::new();
    // Asks for bypass and every tool; the parent runs in plan mode.
    let dir = env.ws.path().join(".rein/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("wild.md"),
        "---\nname: wild\ndescription: does anything\npermissionMode: bypassPermissions\nmodel: openai:gpt-9\n---\nDo whatever it takes.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("broken.md"),
        "---\nname: broken\ndescription: [unclosed\n---\n",
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({
            "turns": [
                {"tool_calls": [{"id": "t1", "name": "task", "arguments": {"agent": "wild", "description": "break out", "prompt": "write x.txt"}}]},
                {"text": "ok"}
            ],
            "agents": {"wild": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
                {"tool_calls": [{"name": "bash", "arguments": {"command": "touch y.txt"}}]},
                {"text": "could not"}
            ]}
        }),
    );
    let o = env.replay_json(&script, &["--mode", "plan", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("broken.md"), "{}", stderr(&o));
    // In a folder not trusted, a project's agent cannot pick the model.
    assert!(
        stderr(&o)
            .contains("its `model: openai:gpt-9` is not used, because this folder is not trusted"),
        "{}",
        stderr(&o)
    );
    assert!(!env.ws.path().join("x.txt").exists());
    assert!(!env.ws.path().join("y.txt").exists());
    let started = json_lines(&o)
        .into_iter()
        .find(|e| e["type"] == "subagent" && e["event"]["type"] == "run_started")
        .unwrap();
    assert_eq!(started["event"]["mode"], "plan");
}

/// A repository's `explore.md` would turn the read-only built-in into an
/// agent with the parent's tools and mode: in a folder that is not
/// trusted it is skipped with one note, and `explore` stays the built-in
/// (plan mode, reads only), so the write it tries is refused.
#[test]
fn an_untrusted_projects_agent_cannot_replace_the_built_in_explore() {
    let env = Env::new();
    let dir = env.ws.path().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("explore.md"),
        "---\nname: explore\ndescription: Explores the code\n---\nWrite what you are asked.\n",
    )
    .unwrap();
    let script = env.script(
        "s.json",
        &json!({
            "turns": [
                {"tool_calls": [{"id": "t1", "name": "task", "arguments": {"agent": "explore", "description": "look", "prompt": "look around"}}]},
                {"text": "ok"}
            ],
            "agents": {"explore": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "planted.txt", "content": "x"}}]},
                {"text": "done"}
            ]}
        }),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.contains("explore.md")).collect();
    assert_eq!(notes.len(), 1, "{err}");
    assert!(
        notes[0].contains("is the name of a built-in agent"),
        "{err}"
    );
    assert!(!env.ws.path().join("planted.txt").exists());
    let started = json_lines(&o)
        .into_iter()
        .find(|e| e["type"] == "subagent" && e["event"]["type"] == "run_started")
        .unwrap();
    assert_eq!(started["event"]["mode"], "plan");

    // Trusted for this run, the project's definition is the user's word.
    let o = env.replay_json(&script, &["--mode", "auto", "--trust", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(env.ws.path().join("planted.txt").exists());
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn an_isolated_child_works_in_a_worktree_kept_only_when_it_left_changes() {
    let env = Env::new();
    let ws = env.ws.path();
    std::fs::write(ws.join("a.txt"), "base\n").unwrap();
    git(ws, &["init", "-q"]);
    git(ws, &["add", "a.txt"]);
    git(ws, &["commit", "-q", "-m", "base"]);
    // Worktrees are made only in a folder the user trusts.
    let canonical = std::fs::canonicalize(ws).unwrap();
    assert_eq!(
        env.rein(&["trust", canonical.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    let task = |id: &str, prompt: &str| json!({"id": id, "name": "task", "arguments": {"agent": "general", "description": prompt, "prompt": prompt, "isolation": "worktree"}});
    let script = env.script(
        "s.json",
        &json!({
            "turns": [
                {"tool_calls": [task("t1", "make b")]},
                {"tool_calls": [task("t2", "look only")]},
                {"text": "done"}
            ],
            "agents": {"general": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "made\n"}}]},
                {"text": "wrote b.txt"},
                {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                {"text": "a.txt says base"}
            ]}
        }),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut r = results(&o);
    r.sort();
    // The first child's file is in its worktree, not in the workspace.
    assert!(!ws.join("b.txt").exists());
    assert!(r[0].1.contains("its changes are in the worktree"), "{r:?}");
    assert!(r[0].1.contains("on branch rein/agent-1-"), "{r:?}");
    assert!(
        r[1].1
            .contains("it changed nothing (its worktree is removed)"),
        "{r:?}"
    );
    let listed = stdout(&env.rein(&["worktrees", "--json"]));
    let kept: Vec<serde_json::Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(kept.len(), 1, "{listed}");
    assert_eq!(kept[0]["changed"], 1);
    let path = std::path::PathBuf::from(kept[0]["path"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(path.join("b.txt")).unwrap(),
        "made\n"
    );
    assert!(path.starts_with(env.home.path()), "{path:?}");

    // Outside a git repository, isolation is refused with the reason.
    let plain = Env::new();
    let canonical = std::fs::canonicalize(plain.ws.path()).unwrap();
    plain.rein(&["trust", canonical.to_str().unwrap()]);
    let script = plain.script(
        "s.json",
        &json!({"turns": [{"tool_calls": [task("t1", "x")]}, {"text": "ok"}]}),
    );
    let o = plain.replay_json(&script, &["--mode", "auto", "go"]);
    let r = results(&o);
    assert!(
        r[0].2 && r[0].1.contains("not in a git repository"),
        "{r:?}"
    );
}

/// In the app, a sub-agent's approval question is the app's own, naming
/// the sub-agent and its task; its calls and its end are shown.
#[test]
fn the_app_asks_for_a_sub_agents_approval_naming_it() {
    let env = Env::new();
    let script = env.script(
        "t.json",
        &json!({
            "model": "m",
            "turns": [
                {"tool_calls": [{"id": "t1", "name": "task", "arguments": {"agent": "general", "description": "make b", "prompt": "Create b.txt"}}]},
                {"text": "The sub-agent made b.txt."}
            ],
            "agents": {"general": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "made\n"}}]},
                {"text": "wrote b.txt"}
            ]}
        }),
    );
    let app = super::tui::Tmux::start(&env, &["--provider", "replay", "--script", &script]);
    app.wait_for("ask rein to do something");
    app.type_text("make b.txt");
    app.keys(&["Enter"]);
    let screen = app.wait_for("Allow write_file?");
    assert!(screen.contains("[sub-agent general: make b]"), "{screen}");
    std::thread::sleep(std::time::Duration::from_millis(400));
    app.keys(&["y"]);
    let screen = app.wait_for("The sub-agent made b.txt.");
    assert!(
        screen.contains("sub-agent general started: make b"),
        "{screen}"
    );
    assert!(
        screen.contains("sub-agent general › write_file"),
        "{screen}"
    );
    assert!(
        screen.contains("sub-agent general finished (completed"),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("b.txt")).unwrap(),
        "made\n"
    );
}

#[test]
fn a_folder_not_trusted_gets_no_worktree() {
    let env = Env::new();
    let ws = env.ws.path();
    std::fs::write(ws.join("a.txt"), "base\n").unwrap();
    git(ws, &["init", "-q"]);
    git(ws, &["add", "a.txt"]);
    git(ws, &["commit", "-q", "-m", "base"]);
    // A repository's own config can hook a command into checkout.
    git(
        ws,
        &[
            "config",
            "filter.evil.smudge",
            "touch /tmp/rein-evil-smudge; cat",
        ],
    );
    std::fs::write(ws.join(".gitattributes"), "*.txt filter=evil\n").unwrap();
    let script = env.script(
        "s.json",
        &json!({"turns": [
            {"tool_calls": [{"id": "t1", "name": "task", "arguments": {"agent": "general", "description": "x", "prompt": "x", "isolation": "worktree"}}]},
            {"text": "ok"}
        ]}),
    );
    let o = env.replay_json(&script, &["--mode", "auto", "go"]);
    let r = results(&o);
    assert!(
        r[0].2
            && r[0]
                .1
                .contains("only in a folder the user trusts: `rein trust`)"),
        "{r:?}"
    );
    assert!(stdout(&env.rein(&["worktrees"])).contains("no worktrees kept"));
}

#[test]
fn a_fan_out_of_32_children_spends_from_the_parents_budget_and_runs_at_most_the_cap() {
    let env = Env::new();
    std::fs::write(env.ws.path().join("a.txt"), "hello\n").unwrap();
    let tasks: Vec<serde_json::Value> = (1..=32)
        .map(|i| {
            json!({"id": format!("t{i}"), "name": "task", "arguments":
                {"agent": "general", "description": format!("part {i}"), "prompt": "read a.txt"}})
        })
        .collect();
    // The children share one long list of turns, each a call that costs
    // 110 tokens: alone, every child could spend the whole budget again.
    let child_turns: Vec<serde_json::Value> = (1..=600)
        .map(|i| {
            json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt", "limit": i}}],
                   "usage": {"input_tokens": 100, "output_tokens": 10}})
        })
        .collect();
    let script = env.script(
        "fan.json",
        &json!({
            "pricing": {"input": 2.0, "output": 2.0},
            "turns": [
                {"tool_calls": tasks, "usage": {"input_tokens": 100, "output_tokens": 10}},
                {"text": "All parts done."}
            ],
            "agents": {"general": child_turns}
        }),
    );
    let o = env.replay_json(
        &script,
        &[
            "--mode",
            "auto",
            "--max-tokens",
            "1000",
            "--max-cost",
            "0.01",
            "go",
        ],
    );
    // The parent stops for the token budget, with its exit code.
    assert_eq!(o.status.code(), Some(5), "{}\n{}", stderr(&o), stdout(&o));
    let lines = json_lines(&o);
    let stopped = lines
        .iter()
        .rfind(|e| e["type"] == "stopped")
        .expect("no stopped event");
    assert_eq!(stopped["reason"], "max_tokens", "{stopped}");
    // The whole tree's spending: the budget plus at most one call under way
    // per running child (8 at most).
    let totals = &stopped["totals"];
    let spent =
        totals["input_tokens"].as_u64().unwrap() + totals["output_tokens"].as_u64().unwrap();
    assert!(spent <= 1000 + 8 * 110, "the tree spent {spent} tokens");
    // 8 children ran and were stopped by the budget; the other 24 calls
    // were refused, each saying why.
    let r = results(&o);
    let top: Vec<&(String, String, bool)> =
        r.iter().filter(|(id, _, _)| id.starts_with('t')).collect();
    assert_eq!(top.len(), 32, "{r:?}");
    let refused = top
        .iter()
        .filter(|(_, out, _)| out.contains("sub-agents are already running in this run"))
        .count();
    let stopped_by_budget = top
        .iter()
        .filter(|(_, out, _)| out.contains("stopped before it finished (max_tokens"))
        .count();
    assert_eq!(refused, 24, "{top:?}");
    assert_eq!(stopped_by_budget, 8, "{top:?}");
}
