//! Session hooks at the engine's moments: when each fires, and what its
//! answer does (context for the model, a refused prompt, a stop that is
//! not let through, a halt), for the main agent and a sub-agent.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rein_core::*;
use serde_json::json;

use super::support::*;

/// One moment a hook saw: its event, subject, agent and own fields.
type Seen = (String, Option<String>, Option<String>, serde_json::Value);

/// A session hook that records every moment (name, subject, agent) and
/// answers each event with a fixed reply.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<Seen>>,
    replies: Mutex<Vec<(&'static str, MomentReply)>>,
}

impl Recorder {
    fn answering(replies: Vec<(&'static str, MomentReply)>) -> Arc<Recorder> {
        Arc::new(Recorder {
            replies: Mutex::new(replies),
            ..Default::default()
        })
    }

    fn names(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.0.clone())
            .collect()
    }

    fn fields_of(&self, name: &str) -> Vec<serde_json::Value> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.0 == name)
            .map(|s| s.3.clone())
            .collect()
    }
}

#[async_trait]
impl SessionHook for Recorder {
    fn listens(&self, _name: &str) -> bool {
        true
    }

    async fn at(&self, moment: &SessionMoment<'_>, run: &HookRun) -> MomentReply {
        self.seen.lock().unwrap().push((
            moment.name().to_string(),
            moment.subject().map(str::to_string),
            run.agent_id.clone(),
            moment.fields(),
        ));
        let replies = self.replies.lock().unwrap();
        replies
            .iter()
            .find(|(n, _)| *n == moment.name())
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    }
}

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn session_start_fires_once_per_session_and_its_context_follows_the_prompt() {
    let hook = Recorder::answering(vec![
        (
            "SessionStart",
            MomentReply {
                context: vec!["codename BLUEBIRD".into()],
                ..Default::default()
            },
        ),
        (
            "UserPromptSubmit",
            MomentReply {
                context: vec!["ticket ABC-1".into()],
                ..Default::default()
            },
        ),
    ]);
    let h = harness(
        Scripted::new(vec![Ok(text("one")), Ok(text("two")), Ok(text("three"))]),
        |b| b.session_hook(hook.clone()),
    );
    let (first, _) = h.run(RunRequest::new("first")).await;
    assert_eq!(first.reason, StopReason::Completed);
    let mut again = RunRequest::new("second");
    again.resume = first.session_id.clone();
    h.run(again).await;
    // The same session in this engine: no second start.
    assert_eq!(
        hook.names(),
        [
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "UserPromptSubmit",
            "Stop"
        ]
    );
    assert_eq!(hook.fields_of("SessionStart")[0]["source"], "startup");
    assert_eq!(hook.fields_of("UserPromptSubmit")[1]["prompt"], "second");
    let texts = user_texts(&h.stored(&first).await);
    assert_eq!(texts[0], "first");
    assert_eq!(
        texts[1],
        "[rein] Context from the user's hooks:\ncodename BLUEBIRD\n\nticket ABC-1"
    );
    assert_eq!(texts[2], "second");
    // The model saw it, right after the prompt.
    let req = &h.provider.requests()[0];
    assert!(
        matches!(&req.messages[1], Message::User { content, .. } if content.contains("BLUEBIRD")),
        "{:?}",
        req.messages
    );

    // A new engine (a new process) resuming the session starts it again.
    let fresh = AgentEngine::builder(h.provider.clone(), h.store.clone())
        .workspace(std::env::temp_dir())
        .session_hook(hook.clone())
        .build()
        .unwrap();
    let mut resumed = RunRequest::new("third");
    resumed.resume = first.session_id.clone();
    fresh
        .run(resumed, CancellationToken::new(), &mut Vec::new())
        .await;
    assert_eq!(hook.fields_of("SessionStart")[1]["source"], "resume");

    // SessionEnd: once, for a session this engine ran.
    let id = first.session_id.unwrap();
    fresh
        .end_session(&id, EndReason::Other, &mut Vec::new())
        .await;
    fresh
        .end_session(&id, EndReason::Other, &mut Vec::new())
        .await;
    assert_eq!(hook.fields_of("SessionEnd"), [json!({"reason": "other"})]);
}

#[tokio::test]
async fn a_refused_prompt_stops_the_run_before_it_is_stored_or_sent() {
    let hook = Recorder::answering(vec![(
        "UserPromptSubmit",
        MomentReply {
            block: Some("no passwords in prompts".into()),
            ..Default::default()
        },
    )]);
    let h = harness(Scripted::new(vec![Ok(text("never"))]), |b| {
        b.session_hook(hook.clone())
    });
    let (outcome, _) = h.run(RunRequest::new("my password is hunter2")).await;
    assert_eq!(outcome.reason, StopReason::HookStopped);
    assert!(
        outcome
            .error
            .as_deref()
            .unwrap()
            .contains("no passwords in prompts"),
        "{outcome:?}"
    );
    assert!(h.provider.requests().is_empty());
    assert!(user_texts(&h.stored(&outcome).await).is_empty());
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_to_work_until_it_lets_the_run_end() {
    // Blocks every stop: the run ends after the cap anyway.
    let hook = Recorder::answering(vec![(
        "Stop",
        MomentReply {
            block: Some("run the tests first".into()),
            ..Default::default()
        },
    )]);
    let mut provider = Scripted::build(vec![]);
    provider.repeat = Some(text("done"));
    let h = harness(Arc::new(provider), |b| b.session_hook(hook.clone()));
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let stops = hook.fields_of("Stop");
    // Eight blocks, then the run ends without asking a ninth time.
    assert_eq!(stops.len(), 8, "{stops:?}");
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
    assert_eq!(stops[0]["last_assistant_message"], "done");
    assert_eq!(h.provider.requests().len(), 9);
    let texts = user_texts(&h.stored(&outcome).await);
    assert_eq!(
        texts[1],
        "[rein] A Stop hook did not let you finish yet: run the tests first"
    );
    assert!(events.iter().any(|e| matches!(e,
        Event::Notice { message } if message.contains("blocked 8 answers in a row"))));
}

#[tokio::test]
async fn a_hook_saying_continue_false_stops_the_run() {
    let hook = Recorder::answering(vec![(
        "Stop",
        MomentReply {
            halt: Some("budget meeting".into()),
            notices: vec!["from the hook".into()],
            ..Default::default()
        },
    )]);
    let h = harness(Scripted::new(vec![Ok(text("done"))]), |b| {
        b.session_hook(hook.clone())
    });
    let (outcome, events) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::HookStopped);
    assert!(outcome.error.unwrap().contains("budget meeting"));
    assert!(events.iter().any(|e| matches!(e,
        Event::Notice { message } if message == "from the hook")));
}

#[tokio::test]
async fn a_sub_agent_has_its_own_start_and_stop_and_its_calls_carry_its_id() {
    let hook = Recorder::answering(vec![]);
    let calls_seen = Arc::new(Mutex::new(Vec::new()));
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("s", "sleep", json!({"ms": 1}))])),
            Ok(text("child done")),
        ]),
        |b| {
            b.session_hook(hook.clone())
                .hook(Arc::new(AgentIds(calls_seen.clone())))
        },
    );
    let child = h.engine.child(ChildPolicy {
        agent: Some(AgentTag {
            id: "agent-1".into(),
            kind: "explore".into(),
            parent_session: None,
        }),
        ..Default::default()
    });
    let outcome = child
        .run(
            RunRequest::new("look"),
            CancellationToken::new(),
            &mut Vec::new(),
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(
        hook.names(),
        ["SubagentStart", "UserPromptSubmit", "SubagentStop"]
    );
    let seen = hook.seen.lock().unwrap().clone();
    assert_eq!(seen[0].1.as_deref(), Some("explore"));
    assert!(seen.iter().all(|s| s.2.as_deref() == Some("agent-1")));
    assert_eq!(seen[2].3["last_assistant_message"], "child done");
    assert_eq!(*calls_seen.lock().unwrap(), [Some("agent-1".to_string())]);
}

/// A call hook that notes the agent each call is part of.
struct AgentIds(Arc<Mutex<Vec<Option<String>>>>);

#[async_trait]
impl CallHook for AgentIds {
    async fn before_call(&self, _call: &ToolCall, _args: &serde_json::Value) -> HookVerdict {
        HookVerdict::Continue
    }

    async fn before_call_in(
        &self,
        _call: &ToolCall,
        _args: &serde_json::Value,
        run: &HookRun,
    ) -> HookVerdict {
        self.0.lock().unwrap().push(run.agent_id.clone());
        HookVerdict::Continue
    }
}

#[tokio::test]
async fn compaction_runs_its_hooks_and_the_start_hooks_again() {
    let hook = Recorder::answering(vec![(
        "SessionStart",
        MomentReply {
            context: vec!["codename BLUEBIRD".into()],
            ..Default::default()
        },
    )]);
    let h = harness(
        Scripted::new(vec![Ok(text("a")), Ok(text("b")), Ok(text("c"))]),
        |b| {
            b.session_hook(hook.clone())
                .compaction(rein_core::compaction::CompactionConfig {
                    keep_turns: 1,
                    ..Default::default()
                })
        },
    );
    let (first, _) = h.run(RunRequest::new("one")).await;
    let id = first.session_id.clone().unwrap();
    for prompt in ["two", "three"] {
        let mut r = RunRequest::new(prompt);
        r.resume = Some(id.clone());
        h.run(r).await;
    }
    let compacted = h
        .engine
        .compact_session(&id, CancellationToken::new(), &mut Vec::new())
        .await
        .unwrap();
    assert!(compacted);
    let names = hook.names();
    let tail: Vec<&str> = names[names.len() - 3..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(tail, ["PreCompact", "PostCompact", "SessionStart"]);
    assert_eq!(hook.fields_of("PreCompact")[0]["trigger"], "manual");
    assert!(
        hook.fields_of("PostCompact")[0]["compact_summary"]
            .as_str()
            .unwrap()
            .len()
            > 10
    );
    assert_eq!(hook.fields_of("SessionStart")[1]["source"], "compact");
    // The start context is stored again after the summary.
    let texts = user_texts(&h.store.messages(&id).await.unwrap());
    assert!(
        texts.last().unwrap().contains("codename BLUEBIRD"),
        "{texts:?}"
    );
}

/// Hooks answering approval questions: an allow runs the call without
/// asking anyone; a deny with `interrupt` refuses it and stops the run.
#[tokio::test]
async fn permission_request_hooks_answer_for_the_user() {
    struct Answer(PermissionAnswer);
    #[async_trait]
    impl CallHook for Answer {
        async fn before_call(&self, _c: &ToolCall, _a: &serde_json::Value) -> HookVerdict {
            HookVerdict::Continue
        }
        async fn permission_request(
            &self,
            _c: &ToolCall,
            _a: &serde_json::Value,
            _why: &str,
            _run: &HookRun,
        ) -> Option<PermissionAnswer> {
            Some(self.0.clone())
        }
    }
    for (answer, wrote, reason) in [
        (PermissionAnswer::Allow, 1, StopReason::Completed),
        (
            PermissionAnswer::Deny {
                message: "not on Fridays".into(),
                interrupt: true,
            },
            0,
            StopReason::HookStopped,
        ),
    ] {
        let count = Arc::new(Mutex::new(0));
        let h = harness(
            Scripted::new(vec![
                Ok(calls(&[("w", "write", json!({"path": "x"}))])),
                Ok(text("done")),
            ]),
            |b| {
                // Default mode, headless: a write needs an approval nobody
                // can give, unless a hook answers.
                b.mode(PermissionMode::Default)
                    .tool(Arc::new(Writer(count.clone())))
                    .hook(Arc::new(Answer(answer.clone())))
            },
        );
        let (outcome, _) = h.run(RunRequest::new("go")).await;
        assert_eq!(*count.lock().unwrap(), wrote, "{answer:?}");
        assert_eq!(outcome.reason, reason, "{outcome:?}");
        if wrote == 0 {
            let results = tool_results(&h.stored(&outcome).await);
            assert!(results[0].output.contains("not on Fridays"), "{results:?}");
        }
    }
}

/// Records the checkpoints taken (and what the last run wrote); each
/// takes a while, as a snapshot does.
#[derive(Default)]
struct Snapshots(
    Mutex<Vec<String>>,
    Mutex<Option<rein_core::rewind::RunWrites>>,
);

#[async_trait]
impl rein_core::rewind::Checkpointer for Snapshots {
    async fn before_prompt(
        &self,
        _session_id: &str,
        seq: u64,
        prompt: &str,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        self.0
            .lock()
            .unwrap()
            .push(format!("prompt {seq} {prompt}"));
        Ok(())
    }

    async fn after_changes(
        &self,
        _session_id: &str,
        writes: rein_core::rewind::RunWrites,
    ) -> Result<(), rein_core::rewind::CheckpointFailure> {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        self.0.lock().unwrap().push("after".into());
        *self.1.lock().unwrap() = Some(writes);
        Ok(())
    }
}

/// A write tool that notes how many checkpoints were whole when it ran.
struct Marker(Arc<Snapshots>, Arc<Mutex<Vec<usize>>>);

#[async_trait]
impl Tool for Marker {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "mark".into(),
            description: "marks".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Write
    }
    fn assess(&self, _args: &serde_json::Value, _ctx: &ToolContext) -> Assessment {
        Assessment {
            writes: vec![marked()],
            ..Assessment::default()
        }
    }
    async fn call(&self, _a: serde_json::Value, _c: ToolContext) -> Result<ToolOutput, ToolError> {
        let done = self.0.0.lock().unwrap().len();
        self.1.lock().unwrap().push(done);
        Ok(ToolOutput::ok("marked"))
    }
}

#[tokio::test]
async fn checkpoints_come_before_each_prompt_and_after_a_run_that_wrote_and_are_whole_before_calls_run()
 {
    let snaps = Arc::new(Snapshots::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("m1", "mark", json!({}))])),
            Ok(calls(&[("s", "sleep", json!({"ms": 1}))])),
            Ok(calls(&[("m2", "mark", json!({}))])),
            Ok(text("done")),
            Ok(text("second")),
        ]),
        |b| {
            b.checkpointer(snaps.clone())
                .tool(Arc::new(Marker(snaps.clone(), seen.clone())))
        },
    );
    let (first, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(first.reason, StopReason::Completed);
    let mut again = RunRequest::new("more");
    again.resume = first.session_id.clone();
    h.run(again).await;
    // The first call ran after the prompt's checkpoint was whole.
    assert_eq!(*seen.lock().unwrap(), [1, 1]);
    // One more when the run that wrote ends (whole before it says so);
    // none after the second run, which wrote nothing.
    let taken = snaps.0.lock().unwrap().clone();
    assert_eq!(
        taken,
        ["prompt 0 go", "after", "prompt 8 more"],
        "{taken:?}"
    );
}

/// The file [`Marker`] says it writes.
fn marked() -> std::path::PathBuf {
    std::env::temp_dir().join("marked.txt")
}

/// A command: runs a program, names no file it writes.
struct Command;

#[async_trait]
impl Tool for Command {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "cmd".into(),
            description: "runs".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Execute
    }
    async fn call(&self, _a: serde_json::Value, _c: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        Ok(ToolOutput::ok("ran"))
    }
}

#[tokio::test]
async fn the_after_run_checkpoint_gets_the_files_calls_wrote_and_when_commands_ran() {
    let snaps = Arc::new(Snapshots::default());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("m1", "mark", json!({}))])),
            Ok(calls(&[("s", "sleep", json!({"ms": 1}))])),
            Ok(calls(&[("c", "cmd", json!({}))])),
            Ok(text("done")),
        ]),
        |b| {
            b.checkpointer(snaps.clone())
                .tool(Arc::new(Marker(snaps.clone(), seen.clone())))
                .tool(Arc::new(Command))
        },
    );
    let before = std::time::SystemTime::now();
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    let after = std::time::SystemTime::now();
    assert_eq!(outcome.reason, StopReason::Completed);
    let writes = snaps.1.lock().unwrap().clone().unwrap();
    assert_eq!(writes.paths, [marked()]);
    // One window, the command's round: not the write's, not the read's.
    let [window] = writes.exec_windows[..] else {
        panic!("{writes:?}")
    };
    assert!(before <= window.start && window.start <= window.end && window.end <= after);
    let ran_for = window.end.duration_since(window.start).unwrap();
    assert!(
        ran_for >= std::time::Duration::from_millis(20),
        "{ran_for:?}"
    );
}
