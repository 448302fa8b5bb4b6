//! What one task's run did, read from its `rein exec --json` events, and
//! why it failed when it did.

use rein_core::{INVALID_ARGUMENTS, NOT_JSON, UNKNOWN_TOOL};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a task was not solved, most telling first: the order of the
/// variants is the order [`classify`] tries them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The run did not get to an answer: the provider or rein failed, or
    /// the run could not start.
    Error,
    /// The model answered without calling any tool.
    NoToolCall,
    /// The model called a tool that does not exist.
    UnknownTool,
    /// The model sent arguments that are not JSON or break the schema.
    InvalidArguments,
    /// The run used up its turns.
    TurnLimit,
    /// The run used up its time.
    TimeLimit,
    /// The model showed code in its answer but changed no file.
    AnsweredWithoutApplying,
    /// The model said it could not do it, or stopped without an answer.
    GaveUp,
    /// The run ended normally but a check failed.
    CheckFailed,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Error => "error",
            FailureKind::NoToolCall => "no_tool_call",
            FailureKind::UnknownTool => "unknown_tool",
            FailureKind::InvalidArguments => "invalid_arguments",
            FailureKind::TurnLimit => "turn_limit",
            FailureKind::TimeLimit => "time_limit",
            FailureKind::AnsweredWithoutApplying => "answered_without_applying",
            FailureKind::GaveUp => "gave_up",
            FailureKind::CheckFailed => "check_failed",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckResult {
    pub command: String,
    pub passed: bool,
    /// The end of what it printed (bounded).
    pub output: String,
}

/// One line of the results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRecord {
    pub task: String,
    pub kind: String,
    /// The task's group (results written before groups were: none).
    #[serde(default)]
    pub group: String,
    pub solved: bool,
    /// Why not, when not solved.
    pub failure: Option<FailureKind>,
    pub provider: String,
    pub model: String,
    pub profile: String,
    /// How the run ended (`completed`, `max_turns`…), or `not_started`.
    pub stop_reason: String,
    pub turns: u32,
    pub tool_calls: u32,
    pub unknown_tool_calls: u32,
    pub invalid_argument_calls: u32,
    /// Nudges the run got (small profile).
    pub nudges: u32,
    /// Alternative fixes tried (the `candidates` lever), and the one
    /// applied, if one passed the check.
    #[serde(default)]
    pub candidates: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_won: Option<u32>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The size of every request the run sent, summed, as rein counted
    /// each one (the provider's report when it gave one, else rein's own
    /// count): what a run sends even on a provider that reports no usage.
    #[serde(default)]
    pub request_tokens: u64,
    /// `None` when the model's prices are unknown.
    pub cost_usd: Option<f64>,
    pub wall_ms: u64,
    pub answer: String,
    pub checks: Vec<CheckResult>,
    /// What went wrong, for `error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The task's folder, kept with `--keep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<String>,
}

/// What a run's events say, gathered as they come.
#[derive(Debug, Default)]
pub struct RunSummary {
    pub provider: String,
    pub model: String,
    pub profile: String,
    pub stop_reason: Option<String>,
    pub turns: u32,
    pub tool_calls: u32,
    pub unknown_tool_calls: u32,
    pub invalid_argument_calls: u32,
    /// A call that can change files (an edit, a write, a command)
    /// succeeded.
    pub changed_files: bool,
    pub nudges: u32,
    /// See [`TaskRecord::candidates`].
    pub candidates: u32,
    pub candidate_won: Option<u32>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// See [`TaskRecord::request_tokens`].
    pub request_tokens: u64,
    pub cost_usd: Option<f64>,
    pub answer: String,
    pub error: Option<String>,
}

impl RunSummary {
    /// Take one line of `rein exec --json` output; lines that are not
    /// events are ignored.
    pub fn take(&mut self, line: &str) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let text = |key: &str| event[key].as_str().unwrap_or("").to_string();
        match event["type"].as_str().unwrap_or("") {
            "run_started" => {
                self.provider = text("provider");
                self.model = text("model");
                self.profile = text("profile");
                let off: Vec<&str> = event["without"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !off.is_empty() {
                    self.profile = format!("{} without {}", self.profile, off.join(", "));
                }
            }
            "tool_started" => self.tool_calls += 1,
            "tool_finished" => {
                let preview = text("output_preview");
                if event["is_error"].as_bool() == Some(true) {
                    if preview.contains(UNKNOWN_TOOL) {
                        self.unknown_tool_calls += 1;
                    } else if preview.contains(INVALID_ARGUMENTS) || preview.contains(NOT_JSON) {
                        self.invalid_argument_calls += 1;
                    }
                } else if matches!(text("name").as_str(), "edit_file" | "write_file" | "bash") {
                    self.changed_files = true;
                }
            }
            "notice" if text("message").starts_with("nudged the model") => self.nudges += 1,
            "notice" if text("message").starts_with(CANDIDATE) => self.candidate(&text("message")),
            // One a model call: the request's size as reported, else as
            // rein counted it before sending.
            "token_update" => {
                let size = event["actual"].as_u64().or(event["estimated"].as_u64());
                self.request_tokens += size.unwrap_or(0);
            }
            "stopped" => {
                self.stop_reason = Some(text("reason"));
                self.turns = event["turns"].as_u64().unwrap_or(0) as u32;
                self.answer = text("final_text");
                let totals = &event["totals"];
                self.input_tokens = totals["input_tokens"].as_u64().unwrap_or(0);
                self.output_tokens = totals["output_tokens"].as_u64().unwrap_or(0);
                self.cost_usd = cost(totals);
                if let Some(e) = event["error"].as_str() {
                    self.error = Some(e.to_string());
                }
            }
            _ => {}
        }
    }
}

/// How the candidates lever's notices start (`engine/run/candidates.rs`
/// in rein-core): `alternative fix N: why; not kept`, `alternative fix N
/// is applied; …`.
const CANDIDATE: &str = "alternative fix ";

impl RunSummary {
    /// Note a notice of the candidates lever: the highest candidate
    /// number seen, and the one applied.
    fn candidate(&mut self, message: &str) {
        let rest = &message[CANDIDATE.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse::<u32>() else {
            return;
        };
        self.candidates = self.candidates.max(n);
        if rest[digits.len()..].starts_with(" is applied") {
            self.candidate_won = Some(n);
        }
    }
}

/// The run's cost: `None` when some call's price was unknown.
fn cost(totals: &Value) -> Option<f64> {
    if totals["unpriced_calls"].as_u64().unwrap_or(0) > 0 {
        return None;
    }
    totals["cost_usd"].as_f64()
}

/// Words of an answer that give up.
const GIVING_UP: [&str; 6] = [
    "i can't",
    "i cannot",
    "i'm unable",
    "i am unable",
    "unable to",
    "i'm sorry",
];

/// Why a run whose checks did not all pass failed.
pub fn classify(run: &RunSummary) -> FailureKind {
    let reason = run.stop_reason.as_deref().unwrap_or("");
    if matches!(
        reason,
        "" | "provider_error" | "harness_error" | "cancelled"
    ) {
        return FailureKind::Error;
    }
    if run.tool_calls == 0 {
        return FailureKind::NoToolCall;
    }
    if run.unknown_tool_calls > 0 {
        return FailureKind::UnknownTool;
    }
    if run.invalid_argument_calls > 0 {
        return FailureKind::InvalidArguments;
    }
    match reason {
        "max_turns" | "repetition" | "max_tokens" => return FailureKind::TurnLimit,
        "max_wall_time" => return FailureKind::TimeLimit,
        _ => {}
    }
    if !run.changed_files && run.answer.contains("```") {
        return FailureKind::AnsweredWithoutApplying;
    }
    let lower = run.answer.to_lowercase();
    if run.answer.trim().is_empty() || GIVING_UP.iter().any(|w| lower.contains(w)) {
        return FailureKind::GaveUp;
    }
    FailureKind::CheckFailed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(lines: &[&str]) -> RunSummary {
        let mut s = RunSummary::default();
        for l in lines {
            s.take(l);
        }
        s
    }

    const STOPPED: &str = r#"{"type":"stopped","reason":"completed","turns":2,"final_text":"3","usage":{},"totals":{"input_tokens":10,"output_tokens":2,"cost_usd":0.0,"unpriced_calls":0}}"#;

    #[test]
    fn events_are_counted_and_the_stop_read() {
        let s = summary(&[
            r#"{"type":"run_started","provider":"local","model":"q","profile":"small"}"#,
            r#"{"type":"tool_started","name":"nope"}"#,
            r#"{"type":"tool_finished","name":"nope","is_error":true,"output_preview":"error: unknown tool `nope`. Available tools: read_file."}"#,
            r#"{"type":"tool_started","name":"read_file"}"#,
            r#"{"type":"tool_finished","name":"read_file","is_error":true,"output_preview":"error: invalid arguments for `read_file`: missing path"}"#,
            "not json at all",
            // Two requests: one the provider reported, one only counted.
            r#"{"type":"token_update","estimated":480,"actual":500}"#,
            r#"{"type":"token_update","estimated":620,"actual":null}"#,
            STOPPED,
        ]);
        assert_eq!(
            (s.tool_calls, s.unknown_tool_calls, s.invalid_argument_calls),
            (2, 1, 1)
        );
        assert_eq!(s.request_tokens, 1120);
        assert_eq!((s.turns, s.input_tokens, s.output_tokens), (2, 10, 2));
        assert_eq!(s.cost_usd, Some(0.0));
        assert_eq!(s.profile, "small");
        assert_eq!(classify(&s), FailureKind::UnknownTool);
        let s = summary(&[
            r#"{"type":"run_started","profile":"small","without":["nudge","first-call"]}"#,
            r#"{"type":"notice","message":"alternative fix 1: it made no edit; not kept"}"#,
            r#"{"type":"notice","message":"alternative fix 2 passed the check `t` in its copy: applying it"}"#,
            r#"{"type":"notice","message":"alternative fix 2 is applied; the check `t` passes"}"#,
        ]);
        assert_eq!(s.profile, "small without nudge, first-call");
        assert_eq!((s.candidates, s.candidate_won), (2, Some(2)));
    }

    #[test]
    fn each_failure_kind_is_told_apart() {
        let stopped = |reason: &str, text: &str| {
            format!(
                r#"{{"type":"stopped","reason":"{reason}","turns":1,"final_text":{},"totals":{{}}}}"#,
                serde_json::Value::String(text.into())
            )
        };
        let read = r#"{"type":"tool_started","name":"read_file"}"#;
        let ok_read =
            r#"{"type":"tool_finished","name":"read_file","is_error":false,"output_preview":"x"}"#;
        let ok_edit =
            r#"{"type":"tool_finished","name":"edit_file","is_error":false,"output_preview":"x"}"#;
        let cases: Vec<(Vec<String>, FailureKind)> = vec![
            (vec![stopped("provider_error", "")], FailureKind::Error),
            (vec![], FailureKind::Error),
            (vec![stopped("completed", "3")], FailureKind::NoToolCall),
            (
                vec![read.into(), stopped("max_turns", "")],
                FailureKind::TurnLimit,
            ),
            (
                vec![read.into(), stopped("max_wall_time", "")],
                FailureKind::TimeLimit,
            ),
            (
                vec![
                    read.into(),
                    ok_read.into(),
                    stopped("completed", "Use:\n```py\nx=1\n```"),
                ],
                FailureKind::AnsweredWithoutApplying,
            ),
            (
                vec![
                    read.into(),
                    ok_edit.into(),
                    stopped("completed", "Done:\n```py\nx=1\n```"),
                ],
                FailureKind::CheckFailed,
            ),
            (
                vec![read.into(), stopped("completed", "I'm sorry, I cannot.")],
                FailureKind::GaveUp,
            ),
            (
                vec![read.into(), stopped("completed", "  ")],
                FailureKind::GaveUp,
            ),
            (
                vec![read.into(), stopped("completed", "It is 4.")],
                FailureKind::CheckFailed,
            ),
        ];
        for (lines, want) in cases {
            let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
            assert_eq!(classify(&summary(&refs)), want, "{lines:?}");
        }
    }

    #[test]
    fn unknown_prices_make_the_cost_unknown_not_zero() {
        let s = summary(&[
            r#"{"type":"stopped","reason":"completed","turns":1,"final_text":"","totals":{"cost_usd":0.0,"unpriced_calls":2}}"#,
        ]);
        assert_eq!(s.cost_usd, None);
    }
}
