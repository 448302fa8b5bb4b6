//! Approvals, cancel and mode changes for a session any server may be
//! running, through the PostgreSQL store (with SQLite there is one server
//! and they are applied in place):
//!
//! 1. The server a client asks records the control ([`send`]); nobody
//!    holding the session's lease is a clear 409 at once.
//! 2. The holder hears of it on its one listening connection ([`listen`])
//!    or by its poll ([`poll`], every [`POLL`]), applies it to the run
//!    ([`apply_pending`], one pass at a time) and settles it.
//! 3. The asking server waits for the settlement (notified, or read every
//!    [`POLL`]) and answers: applied, refused (409 with why), or not
//!    acknowledged within [`ACK_WAIT`] (504 naming the holder).

use std::sync::Arc;
use std::time::Duration;

use rein_core::{ApprovalDecision, PermissionMode};
use rein_store::events::{EVENTS_CHANNEL, parse_events_payload};
use rein_store::{CONTROLS_CHANNEL, ControlKind, Heard, Outcome, SETTLED_CHANNEL};

use super::http::Failure;
use super::served::Served;
use super::state::Server;

/// How often a holder looks for controls it did not hear of, and a
/// sender reads a settlement it did not hear of.
const POLL: Duration = Duration::from_millis(500);
/// How long a sender waits for the holder.
const ACK_WAIT: Duration = Duration::from_secs(10);

/// What a client asks of a session's run.
pub enum Ask {
    Approval {
        call_id: String,
        decision: ApprovalDecision,
    },
    Cancel,
    Mode(PermissionMode),
}

impl Ask {
    fn kind(&self) -> ControlKind {
        match self {
            Ask::Approval { .. } => ControlKind::Approval,
            Ask::Cancel => ControlKind::Cancel,
            Ask::Mode(_) => ControlKind::Mode,
        }
    }

    fn body(&self) -> String {
        match self {
            Ask::Approval { decision, .. } => serde_json::to_string(decision).unwrap_or_default(),
            Ask::Cancel => String::new(),
            Ask::Mode(mode) => mode.to_string(),
        }
    }

    /// Apply it to the run `served` holds here.
    fn apply(self, served: &Served) -> Result<(), String> {
        match self {
            Ask::Approval { call_id, decision } => {
                served.answer(&call_id, decision).map_err(|e| e.to_string())
            }
            Ask::Cancel => {
                served.cancel();
                Ok(())
            }
            Ask::Mode(mode) => {
                served.set_mode(mode);
                Ok(())
            }
        }
    }

    /// The control as the holder reads it back.
    fn read(control: &rein_store::Control) -> Result<Ask, String> {
        let bad = |e: String| format!("control {} cannot be read: {e}", control.id);
        Ok(match control.kind {
            ControlKind::Approval => Ask::Approval {
                call_id: control.call_id.clone().unwrap_or_default(),
                decision: serde_json::from_str(&control.body).map_err(|e| bad(e.to_string()))?,
            },
            ControlKind::Cancel => Ask::Cancel,
            ControlKind::Mode => Ask::Mode(
                control
                    .body
                    .parse()
                    .map_err(|e: rein_core::ParseModeError| bad(e.to_string()))?,
            ),
        })
    }
}

/// Deliver `ask` to whichever server runs session `id` (a full id) and
/// wait for it to be applied.
pub async fn send(server: &Arc<Server>, id: &str, ask: Ask) -> Result<(), Failure> {
    let Some(leases) = &server.leases else {
        let served = server.session(id).await?;
        return ask.apply(&served).map_err(Failure::conflict);
    };
    let (kind, body) = (ask.kind(), ask.body());
    let call_id = match &ask {
        Ask::Approval { call_id, .. } => Some(call_id.as_str()),
        _ => None,
    };
    let sent = leases
        .store
        .send_control(id, kind, call_id, &body)
        .await
        .map_err(Failure::from)?;
    let Some((control, outcome)) = sent.control else {
        return Err(Failure::conflict(match &ask {
            Ask::Approval { call_id, .. } => format!(
                "no approval is waiting for call {call_id}: no server is running session {id}"
            ),
            _ => format!("session {id} is not running on any server"),
        }));
    };
    if control.body != body {
        return Err(Failure::conflict(format!(
            "call {} was already answered with another decision",
            call_id.unwrap_or_default()
        )));
    }
    let holder = sent.holder.unwrap_or_default();
    if outcome == Outcome::Pending && holder == leases.owner {
        apply_pending(server, Some(id)).await;
    }
    let mut settled = leases.settled.subscribe();
    let deadline = tokio::time::Instant::now() + ACK_WAIT;
    loop {
        settled.borrow_and_update();
        match leases.store.control_outcome(control.id).await? {
            Outcome::Applied => return Ok(()),
            Outcome::Refused(why) => return Err(Failure::conflict(why)),
            Outcome::Pending => {}
        }
        tokio::select! {
            _ = settled.changed() => {}
            _ = tokio::time::sleep(POLL) => {}
            _ = tokio::time::sleep_until(deadline) => {
                return Err(Failure::new(
                    hyper::StatusCode::GATEWAY_TIMEOUT,
                    format!(
                        "server {holder} runs session {id} but did not apply the {} within {} s",
                        kind.as_str(),
                        ACK_WAIT.as_secs()
                    ),
                ));
            }
        }
    }
}

/// Apply the controls waiting for this server's sessions (only `id`'s
/// when given), one pass at a time.
pub async fn apply_pending(server: &Arc<Server>, id: Option<&str>) {
    let Some(leases) = &server.leases else { return };
    let _one_pass = leases.applying.lock().await;
    let pending = match leases.store.pending_controls(&leases.owner, id).await {
        Ok(p) => p,
        Err(e) => {
            crate::output::err(&format!("rein serve: reading controls: {e}"));
            return;
        }
    };
    for control in pending {
        let result = match server.served_now(&control.session_id) {
            Some(served) => Ask::read(&control).and_then(|ask| ask.apply(&served)),
            None => Err(format!(
                "session {} is not running on this server",
                control.session_id
            )),
        };
        if let Err(e) = leases.store.settle_control(control.id, result).await {
            crate::output::err(&format!("rein serve: settling a control: {e}"));
        }
    }
}

/// The server's one listening connection: other servers' events, the
/// controls for sessions run here, and settlements of controls sent from
/// here.
pub fn listen(server: &Arc<Server>) -> anyhow::Result<()> {
    let Some(leases) = &server.leases else {
        return Ok(());
    };
    let weak = Arc::downgrade(server);
    let runtime = tokio::runtime::Handle::current();
    let channels = [EVENTS_CHANNEL, CONTROLS_CHANNEL, SETTLED_CHANNEL];
    let listener = leases.store.listen(&channels, move |heard| {
        let Some(server) = weak.upgrade() else { return };
        let Some(leases) = &server.leases else { return };
        match heard {
            Heard::Notified { channel, payload } if channel == EVENTS_CHANNEL => {
                if let Some((id, last)) = parse_events_payload(&payload) {
                    server.feed.heard(id, last);
                }
            }
            Heard::Notified { channel, payload } if channel == CONTROLS_CHANNEL => {
                if server.served_now(&payload).is_some() {
                    let server = server.clone();
                    runtime.spawn(async move { apply_pending(&server, Some(&payload)).await });
                }
            }
            Heard::Notified { .. } => {
                leases.settled.send_modify(|n| *n += 1);
            }
            Heard::Listening => {
                server.feed.catch_up();
                leases.settled.send_modify(|n| *n += 1);
            }
            Heard::Lost(why) => {
                crate::output::err(&format!("rein serve: {why}; listening again"));
            }
        }
    })?;
    *leases.listener.lock().unwrap_or_else(|p| p.into_inner()) = Some(listener);
    Ok(())
}

/// Look for controls missed by the listening connection, every [`POLL`]
/// while some session runs here.
pub fn poll(server: Arc<Server>) {
    if server.leases.is_none() {
        return;
    }
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = server.closing.cancelled() => return,
                _ = tokio::time::sleep(POLL) => {}
            }
            if server.all_served().iter().any(|s| s.status().running) {
                apply_pending(&server, None).await;
            }
        }
    });
}
