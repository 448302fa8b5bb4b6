//! Hooks at a session's moments: its start and end, each prompt the user
//! submits, the model's final answer, a compaction, a sub-agent's start
//! and stop, a notification. (A tool call's moments are the gate's:
//! [`crate::CallHook`].) The engine decides when each moment comes and what
//! a reply means; who runs the hooks (user commands, a library's code) is
//! the implementer's business.

use serde_json::Value;

use crate::gate::HookRun;

/// Why a session (or a sub-agent's run) started, as `SessionStart` hooks
/// are told (`source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartSource {
    /// A new session.
    Startup,
    /// A stored session, continued.
    Resume,
    /// The context was just compacted: what a hook added at the start
    /// may be gone from it.
    Compact,
}

impl StartSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StartSource::Startup => "startup",
            StartSource::Resume => "resume",
            StartSource::Compact => "compact",
        }
    }
}

/// What asked for a compaction (`trigger`; also the matcher of
/// `PreCompact` and `PostCompact` hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// The user asked (`rein compact`, `/compact`).
    Manual,
    /// The context was full.
    Auto,
}

impl CompactTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto => "auto",
        }
    }
}

/// Why a session ended (`reason` of `SessionEnd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The user cleared the conversation and started a new one.
    Clear,
    /// The user left the app.
    PromptInputExit,
    /// Anything else: a headless run that ended.
    Other,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Clear => "clear",
            EndReason::PromptInputExit => "prompt_input_exit",
            EndReason::Other => "other",
        }
    }
}

/// What a notification is about (`notification_type`, the matcher of
/// `Notification` hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationKind {
    /// A call waits for the user's approval.
    PermissionPrompt,
    /// The app waits for the user's next prompt.
    IdlePrompt,
}

impl NotificationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::PermissionPrompt => "permission_prompt",
            NotificationKind::IdlePrompt => "idle_prompt",
        }
    }
}

/// A moment of a session that hooks may be run at, with what they are
/// told about it.
#[derive(Debug, Clone, Copy)]
pub enum SessionMoment<'a> {
    SessionStart {
        source: StartSource,
        model: &'a str,
    },
    /// Before the prompt reaches the model.
    UserPromptSubmit {
        prompt: &'a str,
    },
    /// The model answered without a tool call; the run would end.
    Stop {
        last_message: &'a str,
        /// The run goes on because a Stop hook blocked the last stop.
        stop_hook_active: bool,
    },
    PreCompact {
        trigger: CompactTrigger,
        instructions: &'a str,
    },
    PostCompact {
        trigger: CompactTrigger,
        summary: &'a str,
    },
    /// A sub-agent's run starts (in place of `SessionStart`).
    SubagentStart {
        agent_type: &'a str,
    },
    /// A sub-agent answered without a tool call (in place of `Stop`).
    SubagentStop {
        agent_type: &'a str,
        last_message: &'a str,
        stop_hook_active: bool,
    },
    Notification {
        kind: NotificationKind,
        message: &'a str,
    },
    SessionEnd {
        reason: EndReason,
    },
}

impl SessionMoment<'_> {
    /// The event's name, as settings files spell it.
    pub fn name(&self) -> &'static str {
        match self {
            SessionMoment::SessionStart { .. } => "SessionStart",
            SessionMoment::UserPromptSubmit { .. } => "UserPromptSubmit",
            SessionMoment::Stop { .. } => "Stop",
            SessionMoment::PreCompact { .. } => "PreCompact",
            SessionMoment::PostCompact { .. } => "PostCompact",
            SessionMoment::SubagentStart { .. } => "SubagentStart",
            SessionMoment::SubagentStop { .. } => "SubagentStop",
            SessionMoment::Notification { .. } => "Notification",
            SessionMoment::SessionEnd { .. } => "SessionEnd",
        }
    }

    /// What a matcher of this event is compared with: the source, the
    /// trigger, the agent's type or the notification's type; None for
    /// events without one (every hook of theirs runs).
    pub fn subject(&self) -> Option<&str> {
        match self {
            SessionMoment::SessionStart { source, .. } => Some(source.as_str()),
            SessionMoment::PreCompact { trigger, .. }
            | SessionMoment::PostCompact { trigger, .. } => Some(trigger.as_str()),
            SessionMoment::SubagentStart { agent_type }
            | SessionMoment::SubagentStop { agent_type, .. } => Some(agent_type),
            SessionMoment::Notification { kind, .. } => Some(kind.as_str()),
            SessionMoment::SessionEnd { reason } => Some(reason.as_str()),
            SessionMoment::UserPromptSubmit { .. } | SessionMoment::Stop { .. } => None,
        }
    }

    /// The event's own fields, added to the ones every hook gets.
    pub fn fields(&self) -> Value {
        use serde_json::json;
        match *self {
            SessionMoment::SessionStart { source, model } => {
                json!({"source": source.as_str(), "model": model})
            }
            SessionMoment::UserPromptSubmit { prompt } => json!({ "prompt": prompt }),
            SessionMoment::Stop {
                last_message,
                stop_hook_active,
            } => json!({
                "stop_hook_active": stop_hook_active,
                "last_assistant_message": last_message,
            }),
            SessionMoment::PreCompact {
                trigger,
                instructions,
            } => json!({"trigger": trigger.as_str(), "custom_instructions": instructions}),
            SessionMoment::PostCompact { trigger, summary } => {
                json!({"trigger": trigger.as_str(), "compact_summary": summary})
            }
            SessionMoment::SubagentStart { agent_type } => json!({ "agent_type": agent_type }),
            SessionMoment::SubagentStop {
                agent_type,
                last_message,
                stop_hook_active,
            } => json!({
                "agent_type": agent_type,
                "stop_hook_active": stop_hook_active,
                "last_assistant_message": last_message,
            }),
            SessionMoment::Notification { kind, message } => json!({
                "notification_type": kind.as_str(),
                "message": message,
                "title": "rein",
            }),
            SessionMoment::SessionEnd { reason } => json!({ "reason": reason.as_str() }),
        }
    }
}

/// What the hooks of one moment answered, all of them together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MomentReply {
    /// Text for the model (`additionalContext`; the plain output of a
    /// `SessionStart` or `UserPromptSubmit` hook).
    pub context: Vec<String>,
    /// A hook blocked the moment (exit 2, `decision: "block"`): the prompt
    /// is refused (`UserPromptSubmit`, the reason is the user's) or the
    /// model goes on with the reason as its next instruction (`Stop`,
    /// `SubagentStop`). Other moments cannot be blocked.
    pub block: Option<String>,
    /// A hook said `continue: false`: the run stops, for this reason.
    pub halt: Option<String>,
    /// For the user: `systemMessage`s and hooks that failed.
    pub notices: Vec<String>,
}

/// Hooks run at a session's moments.
#[async_trait::async_trait]
pub trait SessionHook: Send + Sync {
    /// Whether any hook would run for event `name` (so the engine skips
    /// moments nobody listens to).
    fn listens(&self, name: &str) -> bool;

    /// Run the hooks of `moment`; their answers as one.
    async fn at(&self, moment: &SessionMoment<'_>, run: &HookRun) -> MomentReply;
}
