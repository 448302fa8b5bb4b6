//! The small profile in a real run: a lean request, a tool call required
//! on the first turn only (and only when the workspace has files), and one
//! nudge when an answer talks about a file the run never opened.

use std::sync::Arc;

use rein_core::*;
use serde_json::{Value, json};

use super::support::*;

fn workspace_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    dir
}

fn small_harness(provider: Arc<Scripted>, ws: &std::path::Path) -> Harness {
    let ws = ws.to_path_buf();
    harness(provider, move |b| b.workspace(ws).profile(Profile::Small))
}

#[tokio::test]
async fn the_small_profile_requires_a_call_on_the_first_turn_only() {
    let ws = workspace_with(&[("data.csv", "a\n1\n")]);
    let provider = Scripted::new(vec![
        Ok(calls(&[(
            "c1",
            "sleep",
            json!({"ms": 1, "label": "data.csv"}),
        )])),
        Ok(text("data.csv has one row.")),
    ]);
    let h = small_harness(provider, ws.path());
    let (outcome, _) = h.run(RunRequest::new("How many rows in data.csv?")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let requests = h.provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    assert_eq!(requests[1].tool_choice, ToolChoice::Auto);
}

#[tokio::test]
async fn an_empty_workspace_or_the_full_profile_requires_nothing() {
    let empty = workspace_with(&[]);
    let h = small_harness(Scripted::new(vec![Ok(text("hello"))]), empty.path());
    h.run(RunRequest::new("hi")).await;
    assert_eq!(h.provider.requests()[0].tool_choice, ToolChoice::Auto);
    // Nor does a question with no files to look in need evidence.
    let h = small_harness(Scripted::new(vec![Ok(text("5"))]), empty.path());
    let (outcome, _) = h.run(RunRequest::new("What is 2 + 3?")).await;
    assert_eq!(outcome.turns, 1, "no nudge for evidence");

    let ws = workspace_with(&[("a.txt", "x")]);
    let path = ws.path().to_path_buf();
    let h = harness(Scripted::new(vec![Ok(text("hello"))]), move |b| {
        b.workspace(path)
    });
    h.run(RunRequest::new("hi")).await;
    assert_eq!(h.provider.requests()[0].tool_choice, ToolChoice::Auto);
}

#[tokio::test]
async fn the_small_profile_sends_short_instructions_and_compact_schemas() {
    let ws = workspace_with(&[]);
    let small = small_harness(Scripted::new(vec![Ok(text("ok"))]), ws.path());
    small.run(RunRequest::new("hi")).await;
    let path = ws.path().to_path_buf();
    let full = harness(Scripted::new(vec![Ok(text("ok"))]), move |b| {
        b.workspace(path)
    });
    full.run(RunRequest::new("hi")).await;
    let (s, f) = (&small.provider.requests()[0], &full.provider.requests()[0]);
    assert!(
        s.system.len() < f.system.len(),
        "{}\n---\n{}",
        s.system,
        f.system
    );
    // The specs name the tools; the lean prompt does not list them again.
    assert!(f.system.contains("# Tools") && !s.system.contains("# Tools"));
    assert!(
        s.system.contains("call edit_file with the exact old text"),
        "{}",
        s.system
    );
    assert!(
        !s.system.contains(&ws.path().display().to_string()),
        "no absolute path: {}",
        s.system
    );
    assert!(!f.system.contains("Files:"), "{}", f.system);
    assert_eq!(s.tools.len(), f.tools.len());
    for tool in &s.tools {
        let text = tool.parameters.to_string();
        assert!(!text.contains("description"), "{}: {text}", tool.name);
    }
}

#[tokio::test]
async fn an_answer_about_a_file_never_opened_is_nudged_once_and_the_run_goes_on() {
    let ws = workspace_with(&[("data.csv", "a\n1\n2\n")]);
    let provider = Scripted::new(vec![
        Ok(calls(&[("c1", "sleep", json!({"ms": 1, "label": "look"}))])),
        Ok(text("data.csv has 3 rows.")),
        Ok(text("data.csv still has 3 rows.")),
    ]);
    // This nudge alone: a count no command printed would get its own.
    let path = ws.path().to_path_buf();
    let h = harness(provider, move |b| {
        b.workspace(path)
            .profile(Profile::Small)
            .without(&[Lever::Evidence])
    });
    let (outcome, events) = h.run(RunRequest::new("How many rows in data.csv?")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.turns, 3, "one nudge, then the answer ends the run");
    // The turn after the nudge had to act.
    let choices: Vec<ToolChoice> = h
        .provider
        .requests()
        .iter()
        .map(|r| r.tool_choice)
        .collect();
    assert_eq!(
        choices,
        vec![ToolChoice::Required, ToolChoice::Auto, ToolChoice::Required]
    );
    let stored = h.stored(&outcome).await;
    let nudges: Vec<_> = stored
        .iter()
        .filter(|m| matches!(m, Message::User { content, .. } if content.starts_with("[rein]")))
        .collect();
    assert_eq!(nudges.len(), 1, "{stored:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { message } if message.contains("without opening"))),
        "{events:?}"
    );
}

/// Asked to fix a file, the model reads it and explains the fix in
/// words: it is told once to make the change, and its next turn must act.
/// A question about the same file gets no such nudge.
#[tokio::test]
async fn a_fix_explained_but_never_made_is_nudged_once_to_make_it() {
    let script = || {
        Scripted::new(vec![
            Ok(calls(&[(
                "c1",
                "sleep",
                json!({"ms": 1, "label": "calc.py"}),
            )])),
            Ok(text(
                "The bug is in calc.py: it divides by the wrong count.",
            )),
            Ok(calls(&[(
                "c2",
                "sleep",
                json!({"ms": 1, "label": "calc.py"}),
            )])),
            Ok(text("calc.py divides by the wrong count.")),
        ])
    };
    let ws = workspace_with(&[("calc.py", "def mean(xs): return sum(xs) / 2\n")]);
    let h = small_harness(script(), ws.path());
    let (outcome, events) = h.run(RunRequest::new("Fix the bug in calc.py.")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(
        outcome.turns, 4,
        "nudged once, then the answer ends the run"
    );
    assert_eq!(
        h.provider.requests()[2].tool_choice,
        ToolChoice::Required,
        "the turn after the nudge must act"
    );
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Notice { message } if message.contains("no file has changed"))
        ),
        "{events:?}"
    );

    let h = small_harness(script(), ws.path());
    let (outcome, events) = h.run(RunRequest::new("What is wrong with calc.py?")).await;
    assert_eq!(
        outcome.turns, 2,
        "a question ends with its answer: {events:?}"
    );
}

/// A tool called `edit_file` that changes nothing but says it did.
struct EditFile;

#[async_trait::async_trait]
impl Tool for EditFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description: "edits".into(),
            parameters: json!({"type": "object"}),
        }
    }
    fn access(&self) -> ToolAccess {
        ToolAccess::Write
    }
    async fn call(&self, _args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::ok("edited"))
    }
}

/// Told to make a change to a file it read, the model's next turn is
/// offered only the tools that change files (it must edit, not read the
/// file again); the turn after gets every tool back.
#[tokio::test]
async fn the_turn_after_a_make_the_change_nudge_is_offered_only_edits() {
    let ws = workspace_with(&[("calc.py", "def mean(xs): return sum(xs) / 2\n")]);
    let provider = Scripted::new(vec![
        Ok(calls(&[(
            "c1",
            "sleep",
            json!({"ms": 1, "label": "calc.py"}),
        )])),
        Ok(text("The bug is in calc.py: it divides by 2.")),
        Ok(calls(&[("c2", "edit_file", json!({}))])),
        Ok(text("Fixed calc.py.")),
    ]);
    let path = ws.path().to_path_buf();
    let h = harness(provider, move |b| {
        b.workspace(path)
            .profile(Profile::Small)
            .tool(Arc::new(EditFile))
    });
    let (outcome, events) = h.run(RunRequest::new("Fix the bug in calc.py.")).await;
    assert_eq!(outcome.reason, StopReason::Completed, "{events:?}");
    let offered: Vec<Vec<String>> = h
        .provider
        .requests()
        .iter()
        .map(|r| r.tools.iter().map(|t| t.name.clone()).collect())
        .collect();
    assert_eq!(offered.len(), 4, "{offered:?}");
    assert_eq!(offered[2], ["edit_file"], "{offered:?}");
    assert!(
        offered[3].len() > 1 && offered[3] == offered[1],
        "{offered:?}"
    );
    assert_eq!(h.provider.requests()[2].tool_choice, ToolChoice::Required);
}

#[tokio::test]
async fn the_full_profile_never_nudges() {
    let ws = workspace_with(&[("data.csv", "a\n1\n2\n")]);
    let path = ws.path().to_path_buf();
    let h = harness(
        Scripted::new(vec![Ok(text("data.csv has 3 rows."))]),
        move |b| b.workspace(path),
    );
    let (outcome, _) = h.run(RunRequest::new("How many rows?")).await;
    assert_eq!(outcome.turns, 1);
}

#[tokio::test]
async fn the_small_profile_asks_for_one_call_per_answer() {
    let ws = workspace_with(&[]);
    let small = small_harness(Scripted::new(vec![Ok(text("ok"))]), ws.path());
    small.run(RunRequest::new("hi")).await;
    assert!(small.provider.requests()[0].single_tool_call);
    let path = ws.path().to_path_buf();
    let full = harness(Scripted::new(vec![Ok(text("ok"))]), move |b| {
        b.workspace(path)
    });
    full.run(RunRequest::new("hi")).await;
    assert!(!full.provider.requests()[0].single_tool_call);
}

#[tokio::test]
async fn the_small_profile_lists_the_workspace_files_in_its_prompt() {
    let ws = workspace_with(&[("config.ini", "port = 1\n"), ("README.md", "# x\n")]);
    let h = small_harness(Scripted::new(vec![Ok(text("ok"))]), ws.path());
    h.run(RunRequest::new("hi")).await;
    let system = &h.provider.requests()[0].system;
    assert!(
        system.contains("Files: README.md, config.ini\n"),
        "{system}"
    );
}

#[tokio::test]
async fn an_answer_right_after_a_failed_call_is_nudged_and_the_next_turn_must_act() {
    let ws = workspace_with(&[("a.txt", "x")]);
    let provider = Scripted::new(vec![
        Ok(calls(&[("c1", "fail", json!({}))])),
        Ok(text("It is MIT.")),
        Ok(calls(&[(
            "c2",
            "sleep",
            json!({"ms": 1, "label": "again"}),
        )])),
        Ok(text("Done.")),
    ]);
    let h = small_harness(provider, ws.path());
    let (outcome, _) = h.run(RunRequest::new("Which license?")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    let stored = h.stored(&outcome).await;
    assert!(
        stored.iter().any(
            |m| matches!(m, Message::User { content, .. } if content.contains("last tool call failed"))
        ),
        "{stored:?}"
    );
    let choices: Vec<ToolChoice> = h
        .provider
        .requests()
        .iter()
        .map(|r| r.tool_choice)
        .collect();
    assert_eq!(
        choices,
        vec![
            ToolChoice::Required,
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::Auto
        ]
    );
}

/// A call the user's policy refused is not a failure to retry: the
/// answer after it ("I could not run it") ends the run, with no nudge to
/// try again (which contradicted the refusal's "do not retry it").
#[tokio::test]
async fn an_answer_right_after_a_refused_call_is_not_nudged_to_try_again() {
    let ws = workspace_with(&[("a.txt", "x")]);
    let provider = Scripted::new(vec![
        Ok(calls(&[("c1", "write", json!({"path": "a.txt"}))])),
        Ok(text("I was not allowed to change a.txt.")),
    ]);
    let wrote = Arc::new(std::sync::Mutex::new(0));
    let w = wrote.clone();
    let path = ws.path().to_path_buf();
    let h = harness(provider, move |b| {
        b.workspace(path)
            .profile(Profile::Small)
            .tool(Arc::new(Writer(w)))
            .mode(rein_core::PermissionMode::Plan)
    });
    let (outcome, _) = h.run(RunRequest::new("Change a.txt")).await;
    assert_eq!(outcome.reason, StopReason::Completed);
    assert_eq!(outcome.final_text, "I was not allowed to change a.txt.");
    assert_eq!(*wrote.lock().unwrap(), 0);
    let stored = h.stored(&outcome).await;
    assert!(
        !stored
            .iter()
            .any(|m| matches!(m, Message::User { content, .. } if content.starts_with("[rein]"))),
        "{stored:?}"
    );
}

/// The loop guard reads the text that comes with calls: the same long
/// paragraph turn after turn stops the run, whatever the calls are.
#[tokio::test]
async fn the_same_paragraph_written_turn_after_turn_stops_the_run() {
    let para =
        "I will now look at the project once more, to understand how all of it is put together.";
    let turn = |i: usize| {
        let mut chunks = vec![StreamChunk::TextDelta(para.to_string())];
        chunks.extend(calls(&[(
            &format!("c{i}"),
            "sleep",
            json!({"ms": 1, "label": format!("step {i}")}),
        )]));
        Ok(chunks)
    };
    let provider = Scripted::new((0..8).map(turn).collect());
    let h = harness(provider, |b| b);
    let (outcome, _) = h.run(RunRequest::new("go")).await;
    assert_eq!(outcome.reason, StopReason::Repetition, "{outcome:?}");
    assert!(
        outcome.error.as_deref().unwrap_or("").contains("same text"),
        "{outcome:?}"
    );
}

/// Each lever of the small profile can be switched off on its own (to
/// measure it), leaving the others in place; the run says which are off.
#[tokio::test]
async fn each_lever_switched_off_goes_alone_and_the_run_says_so() {
    let ws = workspace_with(&[("data.csv", "a\n1\n2\n")]);
    let run = |without: Vec<Lever>| {
        let path = ws.path().to_path_buf();
        async move {
            let h = harness(
                Scripted::new(vec![
                    Ok(text("data.csv has 3 rows.")),
                    Ok(text("data.csv still has 3 rows.")),
                ]),
                move |b| b.workspace(path).profile(Profile::Small).without(&without),
            );
            let (outcome, events) = h.run(RunRequest::new("How many rows in data.csv?")).await;
            (outcome, events, h.provider.requests())
        }
    };
    // No first call required: the answer comes at once, and is nudged.
    let (outcome, events, requests) = run(vec![Lever::FirstCall, Lever::Evidence]).await;
    assert_eq!(requests[0].tool_choice, ToolChoice::Auto);
    assert!(requests[0].single_tool_call && requests[0].system.contains("Files:"));
    assert_eq!(outcome.turns, 2, "nudged once");
    assert!(matches!(
        &events[0],
        Event::RunStarted { without, .. } if without == &[Lever::FirstCall, Lever::Evidence]
    ));
    // No nudge either: the unread answer ends the run.
    let (outcome, _, _) = run(vec![Lever::FirstCall, Lever::Nudge, Lever::Evidence]).await;
    assert_eq!(outcome.turns, 1);
    // The evidence lever alone: a count no command printed is nudged once.
    let (outcome, events, requests) = run(vec![Lever::FirstCall, Lever::Nudge]).await;
    assert_eq!(outcome.turns, 2, "nudged once for evidence");
    assert_eq!(
        requests[1].tool_choice,
        ToolChoice::Required,
        "the next turn looks"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { message }
            if message.contains("No command of this run printed 3"))),
        "{events:?}"
    );
    // No lean request: the full prompt, but a first call is still required.
    let (_, _, requests) = run(vec![Lever::Lean]).await;
    assert!(!requests[0].system.contains("Files:"));
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
    // Several calls per answer allowed.
    let (_, _, requests) = run(vec![Lever::SingleCall]).await;
    assert!(!requests[0].single_tool_call);
    assert_eq!(requests[0].tool_choice, ToolChoice::Required);
}
