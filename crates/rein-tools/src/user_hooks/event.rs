//! The events hooks are set for, by the names of Claude Code's settings.

use std::fmt;
use std::str::FromStr;

use rein_core::SessionMoment;
use serde::{Serialize, Serializer};

/// One event rein runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    PostCompact,
    Stop,
    SubagentStart,
    SubagentStop,
    Notification,
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order the docs list them.
    pub const ALL: [HookEvent; 13] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::Notification,
        HookEvent::SessionEnd,
    ];

    /// The name settings files and the event JSON use.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Notification => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event of a session moment.
    pub fn of(moment: &SessionMoment<'_>) -> HookEvent {
        match moment {
            SessionMoment::SessionStart { .. } => HookEvent::SessionStart,
            SessionMoment::UserPromptSubmit { .. } => HookEvent::UserPromptSubmit,
            SessionMoment::Stop { .. } => HookEvent::Stop,
            SessionMoment::PreCompact { .. } => HookEvent::PreCompact,
            SessionMoment::PostCompact { .. } => HookEvent::PostCompact,
            SessionMoment::SubagentStart { .. } => HookEvent::SubagentStart,
            SessionMoment::SubagentStop { .. } => HookEvent::SubagentStop,
            SessionMoment::Notification { .. } => HookEvent::Notification,
            SessionMoment::SessionEnd { .. } => HookEvent::SessionEnd,
        }
    }

    /// The names of every event, for messages.
    pub(super) fn names() -> String {
        HookEvent::ALL.map(HookEvent::as_str).join(", ")
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of [`HookEvent::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event `{0}`")]
pub struct UnknownEvent(pub String);

impl FromStr for HookEvent {
    type Err = UnknownEvent;

    fn from_str(s: &str) -> Result<HookEvent, UnknownEvent> {
        HookEvent::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownEvent(s.to_string()))
    }
}

impl Serialize for HookEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_reads_back_from_its_own_name_and_others_are_unknown() {
        for event in HookEvent::ALL {
            assert_eq!(event.as_str().parse::<HookEvent>(), Ok(event));
        }
        assert!("TeammateIdle".parse::<HookEvent>().is_err());
        assert!("stop".parse::<HookEvent>().is_err());
    }
}
