//! A realistic run, as the engine emits it: a prompt, a turn whose answer
//! asks for four concurrent calls (one fails, one is refused, one starts a
//! sub-agent that runs two turns and a tool of its own), a final turn, the
//! stop with its ledger totals.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rein_core::{AssistantMessage, ContentPart, FinishReason, Message, ToolCall, Usage};
use rein_core::{Event, LedgerTotals, PermissionMode, Profile, StopReason};
use rein_telemetry::{FailureReporter, TelemetryConfig};

pub const PROMPT: &str = "fix the bug in calc.py";
pub const SECRET_ARGS: &str = r#"{"path":"calc.py"}"#;

pub fn run_started(session: &str) -> Event {
    Event::RunStarted {
        session_id: session.to_string(),
        provider: "openai".to_string(),
        model: "gpt-test".to_string(),
        workspace: "/work/demo".to_string(),
        resumed: false,
        mode: PermissionMode::Default,
        plan: false,
        profile: Profile::default(),
        without: Vec::new(),
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ContentPart {
    ContentPart::ToolCall(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    })
}

pub fn answer(parts: Vec<ContentPart>, usage: Usage, finish: FinishReason) -> Event {
    Event::MessageCommitted {
        seq: 0,
        message: Message::Assistant(AssistantMessage {
            content: parts,
            usage: Some(usage),
            finish: Some(finish),
        }),
    }
}

pub fn usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    }
}

pub fn tool_started(id: &str, name: &str, arguments: &str) -> Event {
    Event::ToolStarted {
        call_id: id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

pub fn tool_finished(id: &str, name: &str, is_error: bool, output: &str) -> Event {
    Event::ToolFinished {
        call_id: id.to_string(),
        name: name.to_string(),
        duration_ms: 250,
        is_error,
        output_preview: output.to_string(),
    }
}

pub fn stopped(reason: StopReason, final_text: &str, totals: LedgerTotals) -> Event {
    Event::Stopped {
        reason,
        turns: 2,
        usage: Usage::default(),
        final_text: final_text.to_string(),
        error: None,
        totals,
        refused: Vec::new(),
    }
}

fn sub(event: Event) -> Event {
    Event::Subagent {
        agent_id: "agent-1".to_string(),
        agent: "explore".to_string(),
        description: "find the callers of add".to_string(),
        call_id: "call_task".to_string(),
        event: Box::new(event),
    }
}

/// The whole run. Totals: 3 priced calls costing $0.0123.
pub fn scenario() -> Vec<Event> {
    let child_totals = LedgerTotals {
        calls: 2,
        input_tokens: 700,
        output_tokens: 60,
        cost_usd: Some(0.002),
        known_cost_usd: 0.002,
        ..Default::default()
    };
    let totals = LedgerTotals {
        calls: 3,
        input_tokens: 3400,
        cached_input_tokens: 2200,
        output_tokens: 170,
        reasoning_tokens: 20,
        cost_usd: Some(0.0123),
        known_cost_usd: 0.0123,
        unpriced_calls: 0,
    };
    vec![
        run_started("sess-1"),
        Event::MessageCommitted {
            seq: 1,
            message: Message::user(PROMPT),
        },
        Event::TurnStarted { turn: 1 },
        Event::TextDelta {
            text: "Let me look.".to_string(),
        },
        answer(
            vec![
                ContentPart::Text {
                    text: "Let me look.".to_string(),
                },
                call("call_read", "read", SECRET_ARGS),
                call("call_sh", "shell", r#"{"cmd":"pytest"}"#),
                call("call_write", "write", r#"{"path":".git/config"}"#),
                call("call_task", "task", r#"{"agent":"explore"}"#),
            ],
            usage(1200, 80, 1000, 20),
            FinishReason::ToolCalls,
        ),
        tool_started("call_read", "read", SECRET_ARGS),
        tool_started("call_sh", "shell", r#"{"cmd":"pytest"}"#),
        tool_started("call_write", "write", r#"{"path":".git/config"}"#),
        tool_started("call_task", "task", r#"{"agent":"explore"}"#),
        Event::PermissionDenied {
            call_id: "call_write".to_string(),
            tool: "write".to_string(),
            summary: "write .git/config".to_string(),
            why: "a protected path".to_string(),
            needed_approval: false,
            suggested_rules: Vec::new(),
            suggested_mode: None,
        },
        tool_finished("call_write", "write", true, "refused: a protected path"),
        sub(run_started("sess-child")),
        sub(Event::TurnStarted { turn: 1 }),
        sub(answer(
            vec![call("c_grep", "grep", r#"{"pattern":"add("}"#)],
            usage(300, 20, 0, 0),
            FinishReason::ToolCalls,
        )),
        sub(tool_started("c_grep", "grep", r#"{"pattern":"add("}"#)),
        tool_finished("call_sh", "shell", true, "2 failed"),
        sub(tool_finished("c_grep", "grep", false, "calc.py:3")),
        sub(Event::TurnStarted { turn: 2 }),
        sub(answer(
            vec![ContentPart::Text {
                text: "add is called in main".to_string(),
            }],
            usage(400, 40, 0, 0),
            FinishReason::Stop,
        )),
        sub(stopped(
            StopReason::Completed,
            "add is called in main",
            child_totals,
        )),
        tool_finished("call_read", "read", false, "def add(a, b): ..."),
        tool_finished("call_task", "task", false, "add is called in main"),
        Event::TurnStarted { turn: 2 },
        answer(
            vec![ContentPart::Text {
                text: "Fixed.".to_string(),
            }],
            usage(1500, 30, 1200, 0),
            FinishReason::Stop,
        ),
        stopped(StopReason::Completed, "Fixed.", totals),
    ]
}

/// Lines the reporter said, for tests to count.
pub type Lines = Arc<Mutex<Vec<String>>>;

/// A configuration exporting to `endpoint`, from these variables, with
/// a reporter that collects its lines.
pub fn config(capture: bool, vars: &[(&str, &str)]) -> (TelemetryConfig, Lines) {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let config = TelemetryConfig::from_vars(true, capture, |k| vars.get(k).cloned())
        .unwrap()
        .unwrap();
    let lines: Lines = Arc::default();
    let sink = lines.clone();
    let reporter = FailureReporter::new(move |l| sink.lock().unwrap().push(l.to_string()));
    (config.with_reporter(reporter), lines)
}

pub const SHUTDOWN: Duration = Duration::from_secs(5);
