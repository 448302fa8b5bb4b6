//! The user's hooks end to end: settings read, handlers run, answers
//! turned into verdicts.

use super::*;
use rein_core::HookVerdict;
use tool::verdict;

fn handler(command: &str) -> Handler {
    Handler {
        kind: "command".into(),
        command: command.into(),
        timeout: Some(5),
        fail_closed: false,
        env: Vec::new(),
    }
}

#[test]
fn matchers_take_names_lists_patterns_and_claudes_names() {
    assert!(Matcher::new("").unwrap().takes("bash"));
    assert!(Matcher::new("*").unwrap().takes("edit_file"));
    let m = Matcher::new("Bash|Edit").unwrap();
    assert!(m.takes("bash") && m.takes("edit_file") && !m.takes("read_file"));
    let m = Matcher::new("mcp__github__.*").unwrap();
    assert!(m.takes("mcp__github__get_issue") && !m.takes("mcp__db__query"));
    assert!(Matcher::new("(").is_err());
}

#[test]
fn a_block_with_unknown_events_and_bad_matchers_is_named() {
    let mut set = HookSet::default();
    let block = json!({
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
        "TeammateIdle": [{"hooks": [{"type": "command", "command": "true"}]}],
        "PostToolUse": [{"matcher": "(", "hooks": []}]
    });
    set.add_block(&block, Path::new("settings.json"));
    assert_eq!(set.entries.len(), 2);
    assert_eq!(set.notes.len(), 2, "{:?}", set.notes);
    assert!(
        set.notes
            .iter()
            .any(|n| n.contains("1 hook(s) for `TeammateIdle` are not run")),
        "{:?}",
        set.notes
    );
}

#[tokio::test]
async fn exit_codes_and_json_decide_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"tool_name": "bash", "tool_input": {"command": "rm -rf /"}});
    let run = |cmd: &str| {
        let h = handler(cmd);
        let input = input.clone();
        let launch = HostLaunch::for_project(dir.path());
        async move { verdict(&h, &run_handler(&h, &input, &launch).await, "bash") }
    };
    assert_eq!(
        run("cat >/dev/null; echo 'no rm here' >&2; exit 2").await,
        HookVerdict::Veto("no rm here".into())
    );
    // The event reaches the hook on stdin.
    assert_eq!(
        run(r#"grep -q '"rm -rf /"' && echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"seen"}}'"#).await,
        HookVerdict::Veto("seen".into())
    );
    assert_eq!(
        run(r#"echo '{"hookSpecificOutput":{"updatedInput":{"command":"ls"}}}'"#).await,
        HookVerdict::Rewrite(json!({"command": "ls"}))
    );
    assert_eq!(
        run(r#"echo '{"decision":"approve"}'"#).await,
        HookVerdict::Allow
    );
    assert_eq!(run("echo junk not json").await, HookVerdict::Continue);
    let HookVerdict::Warn(w) = run("echo oops >&2; exit 1").await else {
        panic!("a failed hook warns");
    };
    assert!(w.contains("exit 1: oops"), "{w}");
    let mut slow = handler("sleep 5");
    slow.timeout = Some(1);
    slow.fail_closed = true;
    let ran = run_handler(&slow, &input, &HostLaunch::for_project(dir.path())).await;
    let HookVerdict::Veto(why) = verdict(&slow, &ran, "bash") else {
        panic!("a fail-closed hook that times out blocks");
    };
    assert!(why.contains("timed out after 1 s"), "{why}");
}

#[tokio::test]
async fn claude_shaped_json_answers_rewrite_in_reins_keys_and_allow() {
    let dir = tempfile::tempdir().unwrap();
    let input = json!({"tool_name": "Write"});
    let run = |cmd: &str| {
        let h = handler(cmd);
        let input = input.clone();
        let launch = HostLaunch::for_project(dir.path());
        async move { verdict(&h, &run_handler(&h, &input, &launch).await, "write_file") }
    };
    // Claude's keys come back as rein's; with `allow`, it is not asked.
    assert_eq!(
        run(r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"file_path":"b.txt","content":"x"}}}'"#).await,
        HookVerdict::AllowRewritten(json!({"path": "b.txt", "content": "x"}))
    );
    assert_eq!(
        run(
            r#"echo '{"hookSpecificOutput":{"updatedInput":{"file_path":"b.txt","content":"x"}}}'"#
        )
        .await,
        HookVerdict::Rewrite(json!({"path": "b.txt", "content": "x"}))
    );
    assert_eq!(
        run(r#"echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check it"}}'"#).await,
        HookVerdict::Escalate("check it".into())
    );
    assert_eq!(
        run(r#"echo '{"decision":"block","reason":"no"}'"#).await,
        HookVerdict::Veto("no".into())
    );
    assert_eq!(
        run(r#"echo '{"continue":false,"stopReason":"enough"}'"#).await,
        HookVerdict::Halt("enough".into())
    );
    assert_eq!(
        run(r#"echo '{"systemMessage":"careful","suppressOutput":true}'"#).await,
        HookVerdict::Warn("careful".into())
    );
}

#[tokio::test]
async fn tool_hooks_read_claudes_names_keys_and_mode() {
    use rein_core::{CallHook, ToolCall, ToolOutput};
    let dir = tempfile::tempdir().unwrap();
    let mut run = run_in(dir.path());
    run.mode = rein_core::PermissionMode::AcceptEdits;
    let save = |name: &str| format!("cat > \"$REIN_PROJECT_DIR/{name}.json\"");
    let h = hooks(json!({
        "PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": save("pre")}]}],
        "PostToolUse": [{"matcher": "edit_file", "hooks": [{"type": "command", "command": save("post")}]}]
    }));
    let call = ToolCall {
        id: "c1".into(),
        name: "edit_file".into(),
        arguments: "{}".into(),
    };
    let args = json!({"path": "a.rs", "old_string": "x", "new_string": "y"});
    assert_eq!(
        h.before_call_in(&call, &args, &run).await,
        HookVerdict::Continue
    );
    let output = ToolOutput::ok("edited");
    h.after_call_in(&call, &args, &output, &run).await;
    let read = |name: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap()
    };
    let pre = read("pre");
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    assert_eq!(pre["tool_name"], "Edit");
    assert_eq!(
        pre["tool_input"],
        json!({"file_path": "a.rs", "old_string": "x", "new_string": "y"})
    );
    assert_eq!(pre["permission_mode"], "acceptEdits");
    assert_eq!(pre["session_id"], "s1");
    assert_eq!(pre["cwd"], json!(dir.path()));
    assert_eq!(pre["transcript_path"], Value::Null);
    let post = read("post");
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_name"], "Edit");
    assert_eq!(post["tool_response"]["filePath"], "a.rs");
    assert_eq!(post["tool_response"]["success"], true);
    assert_eq!(post["tool_response"]["output"], "edited");
}

fn hooks(block: Value) -> UserHooks {
    let mut set = HookSet::default();
    set.add_block(&block, Path::new("settings.json"));
    assert!(set.notes.is_empty(), "{:?}", set.notes);
    UserHooks::new(&set).unwrap()
}

fn run_in(dir: &Path) -> HookRun {
    HookRun {
        session_id: "s1".into(),
        workspace: dir.to_path_buf(),
        mode: rein_core::PermissionMode::Default,
        agent_id: Some("agent-7".into()),
        user_can_answer: true,
    }
}

fn command(cmd: &str) -> Value {
    json!([{"hooks": [{"type": "command", "command": cmd, "timeout": 5}]}])
}

#[tokio::test]
async fn session_hooks_answers_become_context_blocks_halts_and_notices() {
    use rein_core::{SessionHook, SessionMoment, StartSource};
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let prompt = SessionMoment::UserPromptSubmit {
        prompt: "my password",
    };
    let start = SessionMoment::SessionStart {
        source: StartSource::Startup,
        model: "m",
    };
    // The event reaches the hook on stdin, with the agent's id.
    let h = hooks(json!({"UserPromptSubmit": command(
        r#"input=$(cat); echo "$input" | grep -q '"agent_id":"agent-7"' && echo "$input" | grep -q password && { echo 'no passwords' >&2; exit 2; }; echo fine"#
    )}));
    let r = h.at(&prompt, &run).await;
    assert_eq!(r.block.as_deref(), Some("no passwords"), "{r:?}");
    let r = h
        .at(&SessionMoment::UserPromptSubmit { prompt: "hello" }, &run)
        .await;
    assert_eq!((r.block, r.context), (None, vec!["fine".to_string()]));

    // Exit 2 cannot block a start: it is shown. Plain output is context.
    let h = hooks(json!({"SessionStart": [
        {"matcher": "startup", "hooks": [{"type": "command", "command": "echo codename BLUEBIRD"}]},
        {"matcher": "resume", "hooks": [{"type": "command", "command": "echo never"}]},
        {"hooks": [{"type": "command", "command": "echo cannot >&2; exit 2"}]}
    ]}));
    let r = h.at(&start, &run).await;
    assert_eq!(r.context, ["codename BLUEBIRD"]);
    assert_eq!(r.block, None);
    assert!(r.notices[0].contains("cannot"), "{r:?}");

    // JSON: a message for the user, context, and a stop.
    let h = hooks(json!({"Stop": command(
        r#"echo '{"continue": false, "stopReason": "out of budget", "systemMessage": "heads up", "hookSpecificOutput": {"additionalContext": "ctx"}}'"#
    )}));
    let stop = SessionMoment::Stop {
        last_message: "done",
        stop_hook_active: false,
    };
    let r = h.at(&stop, &run).await;
    assert_eq!(r.halt.as_deref(), Some("out of budget"));
    assert_eq!(r.notices, ["heads up"]);
    assert_eq!(r.context, ["ctx"]);

    // A Stop hook's block carries its reason; junk output is nothing;
    // a crash is a notice.
    let h = hooks(json!({"Stop": [{"hooks": [
        {"type": "command", "command": r#"echo '{"decision": "block", "reason": "tests fail"}'"#},
        {"type": "command", "command": "echo junk {"},
        {"type": "command", "command": "kill -9 $$"}
    ]}]}));
    let r = h.at(&stop, &run).await;
    assert_eq!(r.block.as_deref(), Some("tests fail"));
    assert!(r.context.is_empty());
    assert!(r.notices[0].contains("killed by a signal"), "{r:?}");

    // A prompt hook that fails closed refuses the prompt.
    let h = hooks(json!({"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "exit 3", "fail_closed": true}
    ]}]}));
    let r = h.at(&prompt, &run).await;
    assert!(r.block.unwrap().contains("fails closed"));
}

#[tokio::test]
async fn permission_request_hooks_allow_deny_and_interrupt() {
    use rein_core::{CallHook, PermissionAnswer, ToolCall};
    let dir = tempfile::tempdir().unwrap();
    let run = run_in(dir.path());
    let call = ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: "{}".into(),
    };
    let args = json!({"command": "touch made.txt"});
    let answer = |cmd: &str| {
        let h = hooks(json!({"PermissionRequest": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": cmd}
        ]}]}));
        let (call, args, run) = (call.clone(), args.clone(), run.clone());
        async move { h.permission_request(&call, &args, "writes", &run).await }
    };
    assert_eq!(
        answer(r#"grep -q made.txt && echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'"#).await,
        Some(PermissionAnswer::Allow)
    );
    assert_eq!(
        answer(r#"echo '{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"not today","interrupt":true}}}'"#).await,
        Some(PermissionAnswer::Deny { message: "not today".into(), interrupt: true })
    );
    assert_eq!(
        answer("echo nope >&2; exit 2").await,
        Some(PermissionAnswer::Deny {
            message: "nope".into(),
            interrupt: false
        })
    );
    assert_eq!(answer("true").await, None);
}

#[tokio::test]
async fn a_hook_that_writes_before_it_reads_a_big_input_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = handler("head -c 200000 /dev/zero | tr '\\0' y; wc -c >&2");
    h.timeout = Some(20);
    // An input bigger than a pipe holds (a big file's tool_input).
    let input = json!({"tool_input": {"content": "z".repeat(300_000)}});
    let started = std::time::Instant::now();
    let ran = run_handler(&h, &input, &HostLaunch::for_project(dir.path())).await;
    let Ran::Exited {
        code,
        stdout,
        stderr,
    } = &ran
    else {
        panic!("{ran:?}");
    };
    assert_eq!(*code, Some(0));
    assert_eq!(stdout.len(), 64 * 1024);
    assert!(
        stderr.trim().parse::<usize>().unwrap() > 300_000,
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}

#[tokio::test]
async fn a_hook_flooding_its_output_is_read_to_its_end_without_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let h =
        handler("head -c 3000000 /dev/zero | tr '\\0' x >&2; head -c 3000000 /dev/zero; exit 2");
    let ran = run_handler(&h, &json!({}), &HostLaunch::for_project(dir.path())).await;
    let Ran::Exited { code, stderr, .. } = &ran else {
        panic!("{ran:?}");
    };
    assert_eq!(*code, Some(2));
    assert_eq!(stderr.len(), 64 * 1024);
}

#[tokio::test]
async fn a_call_waiting_for_the_user_is_a_notification_but_not_headless() {
    use rein_core::{CallHook, ToolCall};
    let dir = tempfile::tempdir().unwrap();
    let h = hooks(
        json!({"Notification": [{"matcher": "permission_prompt", "hooks": [
            {"type": "command", "command": "cat > \"$REIN_PROJECT_DIR/notified.json\""}
        ]}]}),
    );
    let call = ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: "{}".into(),
    };
    let args = json!({"command": "make"});
    let mut run = run_in(dir.path());
    run.user_can_answer = false;
    assert_eq!(
        h.permission_request(&call, &args, "runs make", &run).await,
        None
    );
    run.user_can_answer = true;
    assert_eq!(
        h.permission_request(&call, &args, "runs make", &run).await,
        None
    );
    // It runs in the background: wait for it.
    let file = dir.path().join("notified.json");
    for _ in 0..100 {
        if std::fs::read_to_string(&file).is_ok_and(|t| t.ends_with('}')) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let seen: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(seen["notification_type"], "permission_prompt");
    assert_eq!(
        seen["message"],
        "rein needs your permission to use bash (runs make)"
    );
    // Only the second call told it: a headless run cannot be answered.
    std::fs::remove_file(&file).unwrap();
    run.user_can_answer = false;
    h.permission_request(&call, &args, "runs make", &run).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!file.exists());
}

/// Whether process `pid` is gone (or a zombie not reaped yet).
fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'))
    })
}

#[tokio::test]
async fn a_hook_that_times_out_takes_its_background_grandchild_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = handler(r#"sleep 300 & echo $! > "$REIN_PROJECT_DIR/pid"; sleep 30"#);
    h.timeout = Some(1);
    let ran = run_handler(&h, &json!({}), &HostLaunch::for_project(dir.path())).await;
    assert!(
        matches!(&ran, Ran::Failed(why) if why.contains("timed out")),
        "{ran:?}"
    );
    let pid: u32 = std::fs::read_to_string(dir.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..100 {
        if gone(pid) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the hook's background sleep {pid} outlived it");
}
