//! The app's side of the user's session hooks: `SessionEnd` when the app
//! leaves a session (it quits, or `/new`), and `Notification`
//! (`idle_prompt`) when a run ended and the user has not come back for a
//! while.

use rein_core::{EndReason, Event, FnSink, NotificationKind};

use super::Loop;

impl Loop {
    /// The `SessionEnd` hooks of a session the app leaves; what they say
    /// is shown.
    pub(super) async fn end_session(&mut self, id: &str, reason: EndReason) {
        let mut notes = Vec::new();
        let mut sink = FnSink(|event: Event| {
            if let Event::Notice { message } = event {
                notes.push(message);
            }
        });
        self.engine.end_session(id, reason, &mut sink).await;
        for note in notes {
            self.app.notice(note);
        }
    }

    /// The user has not come back since the run ended: tell the
    /// `Notification` hooks, in the background (once per wait).
    pub(super) fn idle(&mut self) -> Vec<crate::app::Action> {
        self.idle_at = None;
        if let Some(id) = self.app.status.session_id.clone() {
            let engine = self.engine.clone();
            tokio::spawn(async move {
                engine
                    .notify(
                        &id,
                        NotificationKind::IdlePrompt,
                        "rein is waiting for your input",
                    )
                    .await;
            });
        }
        Vec::new()
    }
}

/// Sleep until `at`; never when there is no deadline.
pub(super) async fn until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The next delivery of a signal, or never when it could not be watched.
pub(super) async fn next_signal(s: &mut Option<tokio::signal::unix::Signal>) {
    match s {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}
