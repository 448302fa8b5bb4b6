//! Why the gate did not run a call, and the one place each reason is put
//! into words for the model. A refusal is an observation the model can act
//! on (call another tool, fix its arguments, ask the user), never a fault
//! of the harness.

use std::fmt;

use crate::text::preview;

/// How a call's error starts when the model named no offered tool (eval
/// reports count these).
pub const UNKNOWN_TOOL: &str = "unknown tool `";
/// How a call's error starts when its arguments break the tool's schema.
pub const INVALID_ARGUMENTS: &str = "invalid arguments for `";
/// Part of a call's error when its arguments are not JSON.
pub const NOT_JSON: &str = "are not valid JSON";

/// Why the gate refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The raw arguments are bigger than the gate takes.
    Oversized { tool: String, max_bytes: usize },
    /// The call is past the per-turn cap of calls.
    OverTurnCap { max_calls: usize },
    /// The call names no tool there is; `available` are those the mode
    /// offers.
    UnknownTool {
        tool: String,
        available: Vec<String>,
    },
    /// The mode does not offer the tool (plan mode and a tool that
    /// changes files).
    NotOffered { tool: String },
    /// The arguments are not JSON.
    NotJson {
        tool: String,
        error: String,
        /// The start of what was received.
        received: String,
    },
    /// The arguments break the tool's schema.
    InvalidArguments { tool: String, error: String },
    /// A hook vetoed the call.
    HookVetoed { why: String },
    /// A hook rewrote the arguments into ones the schema refuses.
    HookRewroteInvalid { tool: String, error: String },
    /// A hook stopped the run before the call ran.
    HookHalted { why: String },
    /// A rule, a protected path or the mode denies the call.
    Denied { why: String },
    /// A hook answered the approval question with no.
    HookDenied { message: String },
    /// The call needs an approval and nobody can give one in this run.
    NobodyToAsk { why: String },
    /// The user said no, with what they said, if anything.
    UserDenied { feedback: Option<String> },
    /// The run was cancelled while the call waited for an answer.
    CancelledAwaitingApproval,
    /// The run was cancelled while the call waited for its turn.
    CancelledBeforeStart,
}

impl Refusal {
    /// A refusal of arguments that do not parse, showing their start.
    pub fn not_json(tool: &str, error: impl fmt::Display, raw: &str) -> Refusal {
        Refusal::NotJson {
            tool: tool.to_string(),
            error: error.to_string(),
            received: preview(raw, 5, 300),
        }
    }

    /// Whether the user's policy refused the call (a rule, a protection,
    /// the mode, a hook, the user or nobody there to ask): a decision, not
    /// a mistake in the call to fix and try again.
    pub fn is_denial(&self) -> bool {
        matches!(
            self,
            Refusal::Denied { .. }
                | Refusal::HookVetoed { .. }
                | Refusal::HookDenied { .. }
                | Refusal::NobodyToAsk { .. }
                | Refusal::UserDenied { .. }
                | Refusal::NotOffered { .. }
        )
    }

    /// The observation the model gets, as the engine shows a refusal that
    /// never reached the gate's pipeline.
    pub fn observation(&self) -> String {
        format!("error: {self}")
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Oversized { tool, max_bytes } => write!(
                f,
                "the arguments of `{}` are larger than the limit of {max_bytes} bytes ({}), so \
                 the call was not run. Write big content in several smaller pieces (for example \
                 several files, or appends with a command), or produce it with a command.",
                preview(tool, 1, 64),
                human_bytes(*max_bytes)
            ),
            Refusal::OverTurnCap { max_calls } => write!(
                f,
                "too many tool calls in one turn: at most {max_calls} run; this one was not run. \
                 Make fewer calls per answer (batch the work, or wait for these results first)."
            ),
            Refusal::UnknownTool { tool, available } => write!(
                f,
                "{UNKNOWN_TOOL}{tool}`. Available tools: {}.",
                available.join(", ")
            ),
            Refusal::NotOffered { tool } => write!(
                f,
                "`{tool}` changes files, and plan mode is read-only, so it is not available. \
                 Finish the plan; the user switches modes to carry it out."
            ),
            Refusal::NotJson {
                tool,
                error,
                received,
            } => write!(
                f,
                "the arguments of `{tool}` {NOT_JSON} ({error}). Arguments received: {received}"
            ),
            Refusal::InvalidArguments { tool, error } => {
                write!(f, "{INVALID_ARGUMENTS}{tool}`: {error}")
            }
            Refusal::HookVetoed { why } => write!(f, "a hook refused this call: {why}"),
            Refusal::HookRewroteInvalid { tool, error } => write!(
                f,
                "a hook rewrote the arguments of `{tool}` into invalid ones: {error}"
            ),
            Refusal::HookHalted { why } => write!(f, "not run: a hook stopped the run: {why}"),
            Refusal::Denied { why } => write!(
                f,
                "permission denied: {why}. Do not retry this call; choose another way or tell \
                 the user what you need."
            ),
            Refusal::HookDenied { message } => write!(f, "a hook denied this call: {message}"),
            Refusal::NobodyToAsk { why } => write!(
                f,
                "not run: this call needs the user's approval ({why}), and nobody can approve it \
                 in this run. Do not retry it; do what you can without it, and say in your answer \
                 what you could not run."
            ),
            Refusal::UserDenied { feedback } => match feedback.as_deref().map(str::trim) {
                Some(said) if !said.is_empty() => {
                    write!(f, "the user denied this call, saying: {said}")
                }
                _ => f.write_str(
                    "the user denied this call. Do not retry it; ask or try another way.",
                ),
            },
            Refusal::CancelledAwaitingApproval => {
                f.write_str("cancelled while waiting for approval")
            }
            Refusal::CancelledBeforeStart => f.write_str("cancelled before it started"),
        }
    }
}

/// `n` bytes for people: "16 MiB", "512 KiB", "100 bytes".
fn human_bytes(n: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolError;

    #[test]
    fn a_denial_with_blank_feedback_reads_as_one_without_any() {
        let blank = Refusal::UserDenied {
            feedback: Some("  \n".into()),
        };
        assert_eq!(
            blank.to_string(),
            Refusal::UserDenied { feedback: None }.to_string()
        );
        let said = Refusal::UserDenied {
            feedback: Some(" use the test db \n".into()),
        };
        assert_eq!(
            said.to_string(),
            "the user denied this call, saying: use the test db"
        );
    }

    #[test]
    fn a_refused_call_is_told_as_its_refusal_and_stays_a_refusal() {
        let refusal = Refusal::Oversized {
            tool: "write_file".into(),
            max_bytes: 16 * 1024 * 1024,
        };
        assert!(
            refusal
                .observation()
                .starts_with("error: the arguments of `write_file` are larger than the limit of 16777216 bytes (16 MiB)"),
            "{}",
            refusal.observation()
        );
        let error = ToolError::from(refusal.clone());
        assert_eq!(error.to_string(), refusal.to_string());
        assert_eq!(error.refusal(), Some(&refusal));
        assert_eq!(ToolError::new("no such file").refusal(), None);
    }
}
