//! The gate's permission step inside whole runs: approvals through the
//! event stream, their scopes, refusals.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rein_core::*;
use serde_json::{Value, json};

use super::support::*;

/// A tool that runs "commands": rules match its `cmd` argument.
pub(super) struct Shell(pub(super) Arc<Mutex<Vec<String>>>);

#[async_trait]
impl Tool for Shell {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "shell".into(),
            description: "runs".into(),
            parameters: json!({"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Execute
    }
    fn assess(&self, args: &Value, _ctx: &ToolContext) -> Assessment {
        let cmd = args["cmd"].as_str().unwrap_or("").to_string();
        Assessment {
            subjects: vec![cmd.clone()],
            kind: SubjectKind::Command,
            summary: cmd,
            ..Default::default()
        }
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let cmd = args["cmd"].as_str().unwrap().to_string();
        self.0.lock().unwrap().push(cmd);
        Ok(ToolOutput::ok("ran"))
    }
}

fn shell_calls(cmds: &[&str]) -> Vec<StreamChunk> {
    let list: Vec<(String, Value)> = cmds
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("s{i}"), json!({"cmd": c})))
        .collect();
    let refs: Vec<(&str, &str, Value)> = list
        .iter()
        .map(|(id, a)| (id.as_str(), "shell", a.clone()))
        .collect();
    calls(&refs)
}

struct Setup {
    h: Harness,
    ran: Arc<Mutex<Vec<String>>>,
}

fn setup(steps: Vec<Step>, approvals: Approvals) -> Setup {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let r = ran.clone();
    let h = harness(Scripted::new(steps), move |b| {
        b.tool(Arc::new(Shell(r)))
            .mode(PermissionMode::Default)
            .approvals(approvals)
    });
    Setup { h, ran }
}

/// Run, answering every approval request with `answer`.
async fn run_answering(
    h: &Harness,
    request: RunRequest,
    answer: ApprovalDecision,
) -> (RunOutcome, Vec<Event>) {
    let mut events = Vec::new();
    let mut sink = FnSink(|e: Event| {
        if let Event::ApprovalRequired { reply, .. } = &e {
            assert!(reply.send(answer.clone()));
        }
        events.push(e);
    });
    let outcome = h
        .engine
        .run(request, CancellationToken::new(), &mut sink)
        .await;
    (outcome, events)
}

fn count(events: &[Event], kind: &str) -> usize {
    kinds(events).iter().filter(|k| *k == kind).count()
}

#[tokio::test]
async fn an_approval_for_the_session_is_asked_once_and_survives_a_resume() {
    let s = setup(
        vec![
            Ok(shell_calls(&["cargo test"])),
            Ok(shell_calls(&["cargo test"])),
            Ok(text("done")),
            Ok(shell_calls(&["cargo test", "cargo build"])),
            Ok(text("again")),
        ],
        Approvals::Events,
    );
    let (outcome, events) = run_answering(
        &s.h,
        RunRequest::new("test it"),
        ApprovalDecision::Approve {
            scope: ApprovalScope::Session,
        },
    )
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(
        count(&events, "approval_required"),
        1,
        "{:?}",
        kinds(&events)
    );
    assert_eq!(count(&events, "approval_resolved"), 1);
    assert_eq!(*s.ran.lock().unwrap(), ["cargo test", "cargo test"]);
    let id = outcome.session_id.clone().unwrap();
    let rule: Rule = "shell(cargo test)".parse().unwrap();
    assert_eq!(s.h.store.grants(&id).await.unwrap(), (vec![rule], 0));

    // Resumed: the grant comes back from the store; only the new command asks.
    let (outcome, events) = run_answering(
        &s.h,
        RunRequest {
            prompt: "more".into(),
            images: Vec::new(),
            resume: Some(id),
            mode: None,
            control: None,
            scope: Default::default(),
        },
        ApprovalDecision::deny(),
    )
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let asked: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequired { request, .. } => Some(request.summary.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["cargo build"]);
    assert_eq!(
        *s.ran.lock().unwrap(),
        ["cargo test", "cargo test", "cargo test"]
    );
}

#[tokio::test]
async fn a_denial_with_feedback_reaches_the_model_and_the_tool_does_not_run() {
    let s = setup(
        vec![Ok(shell_calls(&["rm -rf build"])), Ok(text("ok"))],
        Approvals::Events,
    );
    let (outcome, _) = run_answering(
        &s.h,
        RunRequest::new("clean"),
        ApprovalDecision::Deny {
            feedback: Some("use cargo clean instead".into()),
        },
    )
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert!(s.ran.lock().unwrap().is_empty());
    let results = tool_results(&s.h.stored(&outcome).await);
    assert!(results[0].is_error);
    assert!(
        results[0].output.contains("use cargo clean instead"),
        "{}",
        results[0].output
    );
    let second = &s.h.provider.requests()[1];
    assert!(format!("{:?}", second.messages).contains("use cargo clean instead"));
}

#[tokio::test]
async fn headless_refusal_tells_the_model_and_emits_what_would_allow_it() {
    let s = setup(
        vec![Ok(shell_calls(&["npm install"])), Ok(text("could not"))],
        Approvals::Refuse,
    );
    let (outcome, events) = s.h.run(RunRequest::new("install")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert!(s.ran.lock().unwrap().is_empty());
    let denied = events
        .iter()
        .find_map(|e| match e {
            Event::PermissionDenied {
                needed_approval,
                suggested_rules,
                suggested_mode,
                ..
            } => Some((*needed_approval, suggested_rules.clone(), *suggested_mode)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        denied,
        (
            true,
            vec!["shell(npm install)".parse::<Rule>().unwrap()],
            Some(PermissionMode::Auto)
        )
    );
    let results = tool_results(&s.h.stored(&outcome).await);
    assert!(results[0].output.contains("needs the user's approval"));
    // The outcome lists the refusal, as `stopped` does.
    assert_eq!(outcome.refused.len(), 1);
    assert_eq!(outcome.refused[0].summary, "npm install");
    assert!(outcome.refused[0].needed_approval);
}

/// The refusals `stopped` carries are bounded: a refused call quoting a
/// huge command does not make the last event huge.
#[tokio::test]
async fn refusals_in_the_outcome_are_bounded() {
    let huge = format!("echo {}", "x".repeat(200_000));
    let s = setup(
        vec![Ok(shell_calls(&[huge.as_str()])), Ok(text("no"))],
        Approvals::Refuse,
    );
    let (outcome, events) = s.h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.refused.len(), 1);
    assert!(
        outcome.refused[0].summary.len() < 1_000,
        "{}",
        outcome.refused[0].summary.len()
    );
    let stopped = serde_json::to_string(events.last().unwrap()).unwrap();
    assert!(stopped.len() < 5_000, "{}", stopped.len());
}

#[derive(Default)]
struct Recorded(Mutex<Vec<String>>);

impl ProjectRules for Recorded {
    fn add_allow(&self, rule: &Rule) -> Result<(), ProjectRulesError> {
        self.0.lock().unwrap().push(rule.to_string());
        Ok(())
    }
}

#[tokio::test]
async fn an_approval_for_the_project_is_written_through_the_project_rules() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let project = Arc::new(Recorded::default());
    let (r, p) = (ran.clone(), project.clone());
    let h = harness(
        Scripted::new(vec![Ok(shell_calls(&["make lint"])), Ok(text("ok"))]),
        move |b| {
            b.tool(Arc::new(Shell(r)))
                .mode(PermissionMode::Default)
                .approvals(Approvals::Events)
                .project_rules(p)
        },
    );
    let (outcome, _) = run_answering(
        &h,
        RunRequest::new("lint"),
        ApprovalDecision::Approve {
            scope: ApprovalScope::Project,
        },
    )
    .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(*project.0.lock().unwrap(), ["shell(make lint)"]);
    assert_eq!(*ran.lock().unwrap(), ["make lint"]);
}

struct Policy;

#[async_trait]
impl Approver for Policy {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        if request.summary.starts_with("git ") {
            ApprovalDecision::once()
        } else {
            ApprovalDecision::deny()
        }
    }
}

#[tokio::test]
async fn a_library_approver_decides_each_request() {
    let s = setup(
        vec![Ok(shell_calls(&["git status", "curl x"])), Ok(text("ok"))],
        Approvals::With(Arc::new(Policy)),
    );
    let (outcome, _) = s.h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(*s.ran.lock().unwrap(), ["git status"]);
}

#[tokio::test]
async fn an_unanswered_request_whose_handle_is_dropped_is_a_denial() {
    let s = setup(
        vec![Ok(shell_calls(&["make"])), Ok(text("ok"))],
        Approvals::Events,
    );
    // The sink drops every event, reply handles included.
    let outcome =
        s.h.engine
            .run(
                RunRequest::new("go"),
                CancellationToken::new(),
                &mut NullSink,
            )
            .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert!(s.ran.lock().unwrap().is_empty());
}

#[tokio::test]
async fn cancelling_while_an_approval_is_pending_stops_the_run_promptly() {
    let s = setup(
        vec![Ok(shell_calls(&["make"])), Ok(text("ok"))],
        Approvals::Events,
    );
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    let mut sink = FnSink(move |e: Event| {
        if let Event::ApprovalRequired { reply, .. } = e {
            // Keep the handle alive and never answer; cancel instead.
            keep.lock().unwrap().push(reply);
            c.cancel();
        }
    });
    let outcome = tokio::time::timeout(
        Duration::from_secs(5),
        s.h.engine.run(RunRequest::new("go"), cancel, &mut sink),
    )
    .await
    .expect("the run must not hang on a pending approval");
    assert_eq!(outcome.reason, StopReason::Cancelled);
    assert!(s.ran.lock().unwrap().is_empty());
    assert_eq!(held.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn plan_mode_hides_write_tools_but_offers_commands() {
    let s = setup(vec![Ok(text("plan"))], Approvals::Refuse);
    let names: Vec<String> =
        s.h.engine
            .tool_specs(PermissionMode::Plan)
            .into_iter()
            .map(|t| t.name)
            .collect();
    assert!(names.contains(&"shell".to_string()));
}

/// A tool that changes files: rules match its `path` argument.
struct FileTool {
    name: &'static str,
    ran: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for FileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "changes a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Write
    }
    fn assess(&self, args: &Value, _ctx: &ToolContext) -> Assessment {
        let path = args["path"].as_str().unwrap_or("").to_string();
        Assessment {
            subjects: vec![path.clone()],
            kind: SubjectKind::Path,
            summary: format!("{} {path}", self.name),
            ..Default::default()
        }
    }
    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let path = args["path"].as_str().unwrap().to_string();
        self.ran
            .lock()
            .unwrap()
            .push(format!("{} {path}", self.name));
        Ok(ToolOutput::ok("changed"))
    }
}

/// Approves every request for the session, after the user took a while.
struct SlowSession(Arc<Mutex<Vec<ApprovalRequest>>>);

#[async_trait]
impl Approver for SlowSession {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.0.lock().unwrap().push(request.clone());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        ApprovalDecision::Approve {
            scope: ApprovalScope::Session,
        }
    }
}

/// "This session" on an edit of a file covers every tool that changes
/// files, for that file only (the request lists the rules it will store),
/// and the call's duration leaves out the time the user took to answer.
#[tokio::test]
async fn a_session_approval_of_a_file_covers_every_file_tool_and_the_wait_is_not_its_duration() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (r1, r2, a) = (ran.clone(), ran.clone(), asked.clone());
    let h = harness(
        Scripted::new(vec![
            Ok(calls(&[("c1", "editor", json!({"path": "calc.py"}))])),
            Ok(calls(&[("c2", "writer", json!({"path": "calc.py"}))])),
            Ok(calls(&[("c3", "writer", json!({"path": "other.py"}))])),
            Ok(text("done")),
        ]),
        move |b| {
            b.tool(Arc::new(FileTool {
                name: "editor",
                ran: r1,
            }))
            .tool(Arc::new(FileTool {
                name: "writer",
                ran: r2,
            }))
            .mode(PermissionMode::Default)
            .approvals(Approvals::With(Arc::new(SlowSession(a))))
        },
    );
    let (outcome, events) = h.run(RunRequest::new("fix calc.py")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(
        *ran.lock().unwrap(),
        ["editor calc.py", "writer calc.py", "writer other.py"]
    );
    let asked = asked.lock().unwrap().clone();
    let summaries: Vec<&str> = asked.iter().map(|r| r.summary.as_str()).collect();
    assert_eq!(
        summaries,
        ["editor calc.py", "writer other.py"],
        "calc.py asked once"
    );
    assert_eq!(
        asked[0].suggested_rules,
        ["editor(calc.py)", "writer(calc.py)"]
    );
    let first = events
        .iter()
        .find_map(|e| match e {
            Event::ToolFinished {
                call_id,
                duration_ms,
                ..
            } if call_id == "c1" => Some(*duration_ms),
            _ => None,
        })
        .unwrap();
    assert!(
        first < 750,
        "the 1.5 s wait counted as the call's time: {first} ms"
    );
}

/// A call the user denies reports the time it took, not the time the
/// user took to answer (as an approved call already did).
#[tokio::test]
async fn a_denied_calls_duration_leaves_out_the_time_the_user_took() {
    let s = setup(
        vec![Ok(shell_calls(&["cargo test"])), Ok(text("done"))],
        Approvals::Events,
    );
    let mut events = Vec::new();
    let mut sink = FnSink(|e: Event| {
        if let Event::ApprovalRequired { reply, .. } = &e {
            let reply = reply.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(600));
                reply.send(ApprovalDecision::deny());
            });
        }
        events.push(e);
    });
    let outcome = (s.h.engine)
        .run(
            RunRequest::new("test it"),
            CancellationToken::new(),
            &mut sink,
        )
        .await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let took = events
        .iter()
        .find_map(|e| match e {
            Event::ToolFinished { duration_ms, .. } => Some(*duration_ms),
            _ => None,
        })
        .unwrap();
    assert!(took < 600, "the denied call took {took} ms");
    assert!(s.ran.lock().unwrap().is_empty());
}
