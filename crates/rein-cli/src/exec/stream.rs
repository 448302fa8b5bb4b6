//! `rein exec --input-format stream-json`: a conversation on stdin, one
//! JSON object per line, the `--json` events on stdout; the session stays
//! open until stdin closes.
//!
//! Lines in ([`Input`]):
//! - `{"type": "user", "message": {"role": "user", "content": "…"}}` —
//!   Claude Code's form (`content` a string or text blocks; a line with
//!   an image block is refused: `--image` attaches images), or
//!   `{"type": "user", "text": "…"}`: a message; one that arrives during a
//!   run waits for it to end;
//! - `{"type": "approval", "call_id": "…", "decision": "approve", "scope":
//!   "once" | "session"}` or `{"type": "approval", "call_id": "…",
//!   "decision": "deny", "feedback": "…"}`: the answer to an
//!   `approval_required` event;
//! - `{"type": "interrupt"}`: stop the run under way (as Ctrl-C).
//!
//! Out, besides the events: `{"type": "ready", "format": "rein-stream",
//! "version": 1}` first, and `{"type": "input_error", "line": N,
//! "error": "…"}` for a line that could not be used (the session goes on).
//! The exit code is the last run's.

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;
use std::sync::{Arc, Mutex};

use rein_core::{
    ApprovalDecision, ApprovalReply, ApprovalScope, Approvals, CancellationToken, Event, FnSink,
    RunOutcome, RunRequest,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Opened, open};
use crate::cli::ExecArgs;
use crate::exit::{self, Failure};
use crate::output;
use crate::setup::command_context::LiveRun;

/// The version of the stream's format.
pub const VERSION: u32 = 1;
/// The longest input line read.
const MAX_LINE: usize = 1024 * 1024;

/// One line of input, understood.
#[derive(Debug, Clone, PartialEq)]
enum Input {
    User(String),
    Approval {
        call_id: String,
        decision: ApprovalDecision,
    },
    Interrupt,
    /// A line that could not be used: its number and why.
    Bad(usize, String),
}

/// Run the conversation.
pub async fn run(args: ExecArgs) -> Result<i32, Failure> {
    let opened = open(&args, None, Approvals::Events).await?;
    emit(&json!({"type": "ready", "format": "rein-stream", "version": VERSION}));
    let mut inputs = read_stdin();
    let pending: Arc<Mutex<HashMap<String, ApprovalReply>>> = Arc::default();
    let mut session_id = opened.resume.clone();
    let mut queued: VecDeque<String> = VecDeque::new();
    let mut code = exit::COMPLETED;
    let mut last: Option<RunOutcome> = None;
    let mut open_input = true;
    loop {
        let text = match queued.pop_front() {
            Some(t) => t,
            None if !open_input => break,
            None => match inputs.recv().await {
                Some(Input::User(t)) => t,
                Some(other) => {
                    refuse_outside_a_run(other);
                    continue;
                }
                None => break,
            },
        };
        let Some(request) = request_for(&opened, &text, session_id.clone()).await else {
            continue;
        };
        let cancel = CancellationToken::new();
        let outcome = {
            let pending_in = pending.clone();
            let mut sink = FnSink(move |event: Event| {
                if let Event::ApprovalRequired { request, reply } = &event
                    && let Ok(mut p) = pending_in.lock()
                {
                    p.insert(request.call_id.clone(), reply.clone());
                }
                emit_event(&event);
            });
            let run = opened
                .session
                .engine
                .run(request, cancel.clone(), &mut sink);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    outcome = &mut run => break outcome,
                    input = inputs.recv(), if open_input => match input {
                        Some(Input::User(t)) => queued.push_back(t),
                        Some(Input::Approval { call_id, decision }) => {
                            answer(&pending, &call_id, decision);
                        }
                        Some(Input::Interrupt) => cancel.cancel(),
                        Some(Input::Bad(n, why)) => input_error(n, &why),
                        // Closed: this run ends, then the session.
                        None => open_input = false,
                    },
                }
            }
        };
        if let Ok(mut p) = pending.lock() {
            p.clear();
        }
        session_id = outcome.session_id.clone().or(session_id);
        code = exit::for_outcome(&outcome);
        last = Some(outcome);
    }
    if let Some(outcome) = &last {
        let mut sink = FnSink(|event: Event| emit_event(&event));
        super::end_session(&opened.session.engine, outcome, &mut sink).await;
    }
    crate::otel::finish(opened.telemetry).await;
    Ok(code)
}

/// The request for a message: its command expanded and prepared as every
/// front end does; None (and an `input_error`) when it cannot be sent.
async fn request_for(opened: &Opened, text: &str, resume: Option<String>) -> Option<RunRequest> {
    let expanded = match opened.commands.expand(text) {
        Ok(e) => e,
        Err(e) => {
            input_error(0, &e.to_string());
            return None;
        }
    };
    let live = LiveRun {
        engine: &opened.session.engine,
        session_id: resume.as_deref(),
        mode: opened.mode,
        events: rein_core::no_events(),
        cancel: CancellationToken::new(),
    };
    let prepared = match opened.session.prompts.prepare(&expanded, &live).await {
        Ok(p) => p,
        Err(e) => {
            input_error(0, &e.to_string());
            return None;
        }
    };
    for note in &prepared.notes {
        output::err(&format!("note: {note}"));
    }
    Some(RunRequest {
        prompt: prepared.text,
        images: Vec::new(),
        resume: prepared.session.or(resume),
        mode: Some(opened.mode),
        control: None,
        scope: prepared.scope,
    })
}

fn answer(
    pending: &Mutex<HashMap<String, ApprovalReply>>,
    call_id: &str,
    decision: ApprovalDecision,
) {
    let reply = pending.lock().ok().and_then(|mut p| p.remove(call_id));
    match reply {
        Some(reply) if reply.send(decision) => {}
        _ => input_error(
            0,
            &format!("no call `{call_id}` is waiting for an approval"),
        ),
    }
}

fn refuse_outside_a_run(input: Input) {
    match input {
        Input::Bad(n, why) => input_error(n, &why),
        Input::Approval { call_id, .. } => {
            input_error(
                0,
                &format!("no call `{call_id}` is waiting for an approval"),
            );
        }
        Input::Interrupt => input_error(0, "no run to interrupt"),
        Input::User(_) => {}
    }
}

fn emit(value: &Value) {
    output::out(&value.to_string());
}

fn emit_event(event: &Event) {
    match serde_json::to_string(event) {
        Ok(line) => output::out(&line),
        Err(e) => output::err(&format!("cannot encode event: {e}")),
    }
}

fn input_error(line: usize, why: &str) {
    let mut v = json!({"type": "input_error", "error": why});
    if line > 0 {
        v["line"] = json!(line);
    }
    emit(&v);
}

/// Stdin's lines, understood, on a thread of their own.
fn read_stdin() -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for (i, line) in stdin.lock().split(b'\n').enumerate() {
            let Ok(line) = line else { break };
            let n = i + 1;
            let input = if line.len() > MAX_LINE {
                Some(Input::Bad(n, "the line is longer than 1 MiB".into()))
            } else {
                parse(n, &String::from_utf8_lossy(&line))
            };
            if let Some(input) = input
                && tx.send(input).is_err()
            {
                break;
            }
        }
    });
    rx
}

/// One line; None for a blank one.
fn parse(n: usize, line: &str) -> Option<Input> {
    if line.trim().is_empty() {
        return None;
    }
    let bad = |why: String| Some(Input::Bad(n, why));
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return bad(format!("not JSON: {e}")),
    };
    match v["type"].as_str() {
        // Dropping an image would answer about a picture never seen.
        Some("user") if has_image(&v) => bad(IMAGES_REFUSED.into()),
        Some("user") => match user_text(&v) {
            Some(t) if !t.trim().is_empty() => Some(Input::User(t)),
            _ => bad("a user line needs `message.content` (text) or `text`".into()),
        },
        Some("approval") => {
            let Some(call_id) = v["call_id"].as_str() else {
                return bad("an approval needs `call_id`".into());
            };
            let decision = match v["decision"].as_str() {
                Some("approve") => ApprovalDecision::Approve {
                    scope: match v["scope"].as_str() {
                        Some("session") => ApprovalScope::Session,
                        Some("project") => ApprovalScope::Project,
                        _ => ApprovalScope::Once,
                    },
                },
                Some("deny") => ApprovalDecision::Deny {
                    feedback: v["feedback"].as_str().map(String::from),
                },
                _ => return bad("`decision` is `approve` or `deny`".into()),
            };
            Some(Input::Approval {
                call_id: call_id.to_string(),
                decision,
            })
        }
        Some("interrupt") => Some(Input::Interrupt),
        other => bad(format!(
            "unknown `type` {:?} (user, approval, interrupt)",
            other.unwrap_or("")
        )),
    }
}

/// Why a user line with image blocks is not used.
const IMAGES_REFUSED: &str =
    "images are not taken on stream-json input: attach them with `rein exec --image FILE`";

/// Whether a user line's content holds an image block.
fn has_image(v: &Value) -> bool {
    v["message"]["content"]
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "image"))
}

/// A user line's text: `text`, or `message.content` as a string or as
/// text blocks.
fn user_text(v: &Value) -> Option<String> {
    if let Some(t) = v["text"].as_str() {
        return Some(t.to_string());
    }
    match &v["message"]["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_in_reins_and_claude_codes_forms_and_bad_ones_say_why() {
        let claude =
            r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(parse(1, claude), Some(Input::User("hi".into())));
        assert_eq!(
            parse(
                1,
                r#"{"type":"user","message":{"role":"user","content":"yo"}}"#
            ),
            Some(Input::User("yo".into()))
        );
        assert_eq!(
            parse(
                2,
                r#"{"type":"approval","call_id":"c1","decision":"approve","scope":"session"}"#
            ),
            Some(Input::Approval {
                call_id: "c1".into(),
                decision: ApprovalDecision::Approve {
                    scope: ApprovalScope::Session
                }
            })
        );
        assert_eq!(parse(3, r#"{"type":"interrupt"}"#), Some(Input::Interrupt));
        assert_eq!(parse(4, "   "), None);
        for (line, why) in [
            ("{nope", "not JSON"),
            (r#"{"type":"user"}"#, "needs `message.content`"),
            (
                r#"{"type":"approval","decision":"approve"}"#,
                "needs `call_id`",
            ),
            (
                r#"{"type":"approval","call_id":"c","decision":"maybe"}"#,
                "`decision`",
            ),
            (r#"{"type":"shout"}"#, "unknown `type`"),
            (
                r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}}"#,
                "images are not taken on stream-json input",
            ),
        ] {
            match parse(5, line) {
                Some(Input::Bad(5, w)) => assert!(w.contains(why), "{line}: {w}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }
}
