//! `RunControl`: what a front end may change while a run goes on, picked up
//! by the loop at the start of the next turn (never in the middle of one).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::permission::PermissionMode;

#[derive(Debug, Default)]
struct State {
    queued: VecDeque<String>,
    mode: Option<PermissionMode>,
}

/// A handle shared by the front end and one run (cheap to clone).
///
/// - `queue` adds a user message that the loop delivers before its next model
///   call (mid-task steering). A run that would end naturally while messages
///   wait goes on and answers them instead.
/// - `set_mode` switches the permission mode from the next turn on: the tools
///   offered, the system prompt and the gate follow it.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    state: Arc<Mutex<State>>,
}

impl RunControl {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain data behind: go on.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Deliver `text` as a user message at the next turn.
    pub fn queue(&self, text: impl Into<String>) {
        self.lock().queued.push_back(text.into());
    }

    /// How many messages wait for the next turn.
    pub fn pending(&self) -> usize {
        self.lock().queued.len()
    }

    /// Take every waiting message, oldest first.
    pub fn take_queued(&self) -> Vec<String> {
        self.lock().queued.drain(..).collect()
    }

    /// Use `mode` from the next turn on.
    pub fn set_mode(&self, mode: PermissionMode) {
        self.lock().mode = Some(mode);
    }

    /// The mode asked for since the last call, if any.
    pub fn take_mode(&self) -> Option<PermissionMode> {
        self.lock().mode.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_messages_come_out_once_in_order() {
        let c = RunControl::new();
        let other = c.clone();
        c.queue("one");
        other.queue("two");
        assert_eq!(c.pending(), 2);
        assert_eq!(c.take_queued(), vec!["one", "two"]);
        assert!(c.take_queued().is_empty());
    }

    #[test]
    fn the_latest_mode_asked_for_wins_and_is_taken_once() {
        let c = RunControl::new();
        c.set_mode(PermissionMode::Plan);
        c.set_mode(PermissionMode::AcceptEdits);
        assert_eq!(c.take_mode(), Some(PermissionMode::AcceptEdits));
        assert_eq!(c.take_mode(), None);
    }
}
