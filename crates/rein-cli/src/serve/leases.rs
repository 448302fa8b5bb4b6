//! One server at a time drives a session. With a PostgreSQL store each
//! run holds the session's lease in the database, renewed by a heartbeat;
//! a server that dies stops renewing, and another server that finds the
//! expired lease takes the session over and goes on with its interrupted
//! run from the last committed message. With SQLite (one machine, one
//! server) there is nothing to share and no lease.

use std::sync::Arc;
use std::time::Duration;

use rein_core::Message;
use rein_store::{LeaseError, PgStore};

use super::http::Failure;
use super::served::{Reservation, Served, Work};
use super::state::Server;
use crate::setup::prepare::Prepared;

/// The leases of one server.
pub struct Leases {
    pub store: PgStore,
    /// This server's name in the lease table.
    pub owner: String,
    ttl: Duration,
    /// Moves when a control may have been settled (see [`super::control`]).
    pub settled: tokio::sync::watch::Sender<u64>,
    /// One pass of applying controls at a time.
    pub applying: tokio::sync::Mutex<()>,
    /// The server's one listening connection.
    pub listener: std::sync::Mutex<Option<rein_store::Listener>>,
}

impl Leases {
    pub fn new(store: PgStore, ttl: Duration) -> Leases {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "host".into());
        let owner = format!("{host}/{}/{:08x}", std::process::id(), fastrand::u32(..));
        Leases {
            store,
            owner,
            ttl,
            settled: tokio::sync::watch::channel(0).0,
            applying: tokio::sync::Mutex::new(()),
            listener: std::sync::Mutex::new(None),
        }
    }
}

/// Start `prompt` (its command expanded) on `served`: its run slot, then
/// (with leases) its lease, then the run.
pub async fn start_run(
    server: &Arc<Server>,
    served: &Arc<Served>,
    slot: Reservation,
    prompt: Prepared,
) -> Result<(), Failure> {
    let Some(leases) = &server.leases else {
        slot.launch(Work::Prompt(Box::new(prompt)), None, || {});
        return Ok(());
    };
    let lease = leases
        .store
        .acquire_lease(&served.id, &leases.owner, leases.ttl)
        .await
        .map_err(|e| match e {
            LeaseError::Held { .. } => Failure::conflict(e.to_string()),
            other => Failure::internal(other.to_string()),
        })?;
    let heartbeat = lease.keep_alive();
    let lost = heartbeat.lost();
    slot.launch(Work::Prompt(Box::new(prompt)), Some(lost), move || {
        tokio::spawn(async move {
            if let Err(e) = heartbeat.release().await {
                crate::output::err(&format!("rein serve: {e}"));
            }
        });
    });
    Ok(())
}

/// Look for sessions whose server died mid-run (an expired lease never
/// given back), every third of the lease time, and go on with them.
pub fn watch_orphans(server: Arc<Server>) {
    let Some(ttl) = server.leases.as_ref().map(|l| l.ttl) else {
        return;
    };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = server.closing.cancelled() => return,
                _ = tokio::time::sleep(ttl / 3) => {}
            }
            if let Err(e) = adopt_orphans(&server).await {
                crate::output::err(&format!("rein serve: looking for orphaned sessions: {e}"));
            }
        }
    });
}

/// Take over each orphaned session of this root whose run was left
/// unfinished.
async fn adopt_orphans(server: &Arc<Server>) -> Result<(), rein_core::StoreError> {
    let Some(leases) = &server.leases else {
        return Ok(());
    };
    for orphan in leases.store.list_orphaned(Duration::ZERO).await? {
        if server.stored(&orphan.session_id).await.is_err() {
            continue; // another root's session
        }
        let lease = match leases
            .store
            .acquire_lease(&orphan.session_id, &leases.owner, leases.ttl)
            .await
        {
            Ok(lease) => lease,
            Err(_) => continue, // another server was faster
        };
        let heartbeat = lease.keep_alive();
        if !unfinished(server, &orphan.session_id).await {
            // Its server died after the answer; its stream may lack the
            // `stopped` event.
            let closed = super::closing::close_finished_run(server, &orphan.session_id).await;
            match closed {
                Ok(_) => {
                    let _ = heartbeat.release().await;
                }
                // Its lease left to expire: tried again then.
                Err(e) => crate::output::err(&format!(
                    "rein serve: cannot close the event stream of session {}: {e}",
                    orphan.session_id
                )),
            }
            continue;
        }
        let served = match server.session(&orphan.session_id).await {
            Ok(s) => s,
            Err(f) => {
                crate::output::err(&format!(
                    "rein serve: cannot take over session {}: {}",
                    orphan.session_id, f.message
                ));
                let _ = heartbeat.release().await;
                continue;
            }
        };
        let Ok(slot) = served.reserve() else {
            let _ = heartbeat.release().await;
            continue;
        };
        crate::output::err(&format!(
            "rein serve: taking over session {} (its server {} stopped renewing its lease)",
            orphan.session_id, orphan.owner
        ));
        let lost = heartbeat.lost();
        slot.launch(Work::Continue, Some(lost), move || {
            tokio::spawn(async move {
                let _ = heartbeat.release().await;
            });
        });
    }
    Ok(())
}

/// Whether the session's last stored message still waits for the model
/// (a prompt, or tool results): its run did not end.
async fn unfinished(server: &Arc<Server>, id: &str) -> bool {
    match server.host.store().messages(id).await {
        Ok(messages) => match messages.last() {
            Some(Message::User { .. } | Message::Tool(_)) => true,
            // Calls that never got their results (the server died while
            // they ran): the resumed run records them as interrupted.
            Some(Message::Assistant(a)) => a.has_tool_calls(),
            _ => false,
        },
        Err(_) => false,
    }
}
