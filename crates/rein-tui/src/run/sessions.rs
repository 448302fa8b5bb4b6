//! A session in the app: one loaded from the store (`/resume`, a rewind's
//! new session) and a new one's model-written title.

use rein_core::{AgentEngine, CancellationToken};
use tokio::sync::mpsc;

use super::Side;
use super::reports::{refresh_context, refresh_cost};
use crate::app::App;
use crate::cells::Cell;

/// Load session `id` into the app: its transcript, todos, cost and
/// context size.
pub(super) async fn resume(app: &mut App, engine: &AgentEngine, id: &str) {
    let store = engine.store().as_ref();
    let info = match store.get_session(id).await {
        Ok(i) => i,
        Err(e) => {
            app.error(format!("cannot resume {id}: {e}"));
            return;
        }
    };
    match store.messages(&info.id).await {
        Ok(messages) => {
            app.push_cell(Cell::Info {
                title: format!("Resumed “{}” ({})", info.title, info.id),
                lines: Vec::new(),
            });
            app.replay(&messages);
            app.status.session_id = Some(info.id.clone());
            if let Ok(todos) = store.todos(&info.id).await {
                app.set_todos(todos);
            }
            refresh_cost(app, store).await;
            refresh_context(app, engine).await;
        }
        Err(e) => app.error(format!("cannot read session {}: {e}", info.id)),
    }
}

/// A short model-written title for a new session, recorded in the ledger.
/// Only where the provider says titles are worth a call (the first line of
/// the prompt stays the title otherwise).
pub(super) fn spawn_title(
    engine: &AgentEngine,
    session_id: String,
    side: mpsc::UnboundedSender<Side>,
) {
    if !engine.provider().capabilities().session_titles {
        return;
    }
    let e = engine.clone();
    tokio::spawn(async move {
        let _ = e.title_session(&session_id, CancellationToken::new()).await;
        let _ = side.send(Side::Title);
    });
}
