//! The app's side of rewind: the command's [`RewindView`] lists a
//! session's checkpoints and carries out a rewind, each off the loop; the
//! answers come back as [`Side`] reports. When the conversation was cut,
//! the app continues in the new session as `/resume` would.
//!
//! [`RewindView`]: crate::rewind::RewindView

use super::{Loop, Side, resume};
use crate::app::Action;
use crate::rewind::{CheckpointRow, RewindFailure, RewindOutcome, RewindRequest};

/// What a rewind answers.
pub(super) type RewindResult = Result<RewindOutcome, RewindFailure>;

/// What the app says when the command offers no rewind.
const OFF: &str = "rewind is off: checkpoints = false in the config";

impl Loop {
    /// Esc Esc, `/rewind`: list `session`'s checkpoints in the background.
    pub(super) fn load_checkpoints(&mut self, session: String) {
        let Some(view) = &self.rewind else {
            self.app.notice(OFF);
            return;
        };
        let rows = (view.list)(session.clone());
        let side = self.side_tx.clone();
        tokio::spawn(async move {
            let rows = rows.await;
            let _ = side.send(Side::Checkpoints(session, rows));
        });
    }

    /// The checkpoints came: open the picker (or say why not).
    pub(super) fn checkpoints_loaded(
        &mut self,
        session: String,
        rows: anyhow::Result<Vec<CheckpointRow>>,
    ) -> Vec<Action> {
        match rows {
            Ok(rows) => self.app.open_rewind(session, rows),
            Err(e) => self
                .app
                .error(format!("cannot list the checkpoints: {e:#}")),
        }
        Vec::new()
    }

    /// Enter (or `f`) in the picker: rewind in the background.
    pub(super) fn start_rewind(&mut self, request: RewindRequest) {
        let Some(view) = &self.rewind else {
            let failure = RewindFailure::Other(anyhow::anyhow!(OFF));
            self.app.rewind_done(&request, Err(failure));
            return;
        };
        let done = (view.apply)(request.clone());
        let side = self.side_tx.clone();
        tokio::spawn(async move {
            let result = done.await;
            let _ = side.send(Side::Rewound(request, result));
        });
    }

    /// A rewind finished. A cut conversation continues in its new session
    /// (loaded as `/resume` does), unless a run started meanwhile.
    pub(super) async fn rewound(
        &mut self,
        request: RewindRequest,
        result: RewindResult,
    ) -> Vec<Action> {
        if let Ok(done) = &result
            && let Some(new) = &done.forked
        {
            if self.app.running() {
                self.app.notice(format!(
                    "a run started meanwhile: /resume {new} continues the rewound conversation"
                ));
            } else {
                resume(&mut self.app, &self.engine, new).await;
            }
        }
        self.app.rewind_done(&request, result);
        Vec::new()
    }
}
