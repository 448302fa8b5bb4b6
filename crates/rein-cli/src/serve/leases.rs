//! One server at a time drives a session. With a PostgreSQL store each
//! run holds the session's lease in the database, renewed by a heartbeat;
//! a server that dies stops renewing, and another server that finds the
//! expired lease takes the session over and goes on with its interrupted
//! run from the last committed message. With SQLite (one machine, one
//! server) there is nothing to share and no lease; a server starting
//! takes up the runs the previous one left open ([`resume_open_runs`]).

use std::sync::Arc;
use std::time::Duration;

use rein_core::Message;
use rein_store::{Heartbeat, LeaseError, PgStore};

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
    let events = served.events.clone();
    slot.launch(Work::Prompt(Box::new(prompt)), Some(lost), move || {
        release_after(events, heartbeat)
    });
    Ok(())
}

/// Once the run's events are stored (its `stopped` last), give its lease
/// back: its writes are fenced by the lease, so none may follow it.
fn release_after(events: super::events::EventWriter, heartbeat: Heartbeat) {
    tokio::spawn(async move {
        events.flush().await;
        if let Err(e) = heartbeat.release().await {
            crate::output::err(&format!("rein serve: {e}"));
        }
    });
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
/// open.
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
        let why = format!("its server {} stopped renewing its lease", orphan.owner);
        take_up(server, &orphan.session_id, Some(lease.keep_alive()), &why).await;
    }
    Ok(())
}

/// At the start of a server on SQLite (the only one on its database, see
/// `serve::one_server`): take up the runs of this root the last server
/// left open when it stopped without closing them (killed, the machine
/// down), before any request comes.
pub async fn resume_open_runs(server: &Arc<Server>) {
    let open = match server.feed.events().unclosed_streams().await {
        Ok(open) => open,
        Err(e) => {
            crate::output::err(&format!("rein serve: looking for runs left open: {e}"));
            return;
        }
    };
    for id in open {
        if server.stored(&id).await.is_ok() {
            take_up(server, &id, None, "the server running it stopped").await;
        }
    }
}

/// Go on with session `id`, whose server stopped mid-run (its lease held
/// through `heartbeat` when there are leases): close its stream when the
/// run had finished (the `stopped` event may be missing), continue the
/// run from its last committed message otherwise.
async fn take_up(server: &Arc<Server>, id: &str, heartbeat: Option<Heartbeat>, why: &str) {
    let give_back = |heartbeat: Option<Heartbeat>| async move {
        if let Some(heartbeat) = heartbeat {
            let _ = heartbeat.release().await;
        }
    };
    if !unfinished(server, id).await {
        match super::closing::close_finished_run(server, id).await {
            Ok(_) => give_back(heartbeat).await,
            // With leases, the lease is left to expire and this is tried
            // again then.
            Err(e) => crate::output::err(&format!(
                "rein serve: cannot close the event stream of session {id}: {e}"
            )),
        }
        return;
    }
    let served = match server.session(id).await {
        Ok(s) => s,
        Err(f) => {
            crate::output::err(&format!(
                "rein serve: cannot take over session {id}: {}",
                f.message
            ));
            return give_back(heartbeat).await;
        }
    };
    let Ok(slot) = served.reserve() else {
        return give_back(heartbeat).await;
    };
    crate::output::err(&format!("rein serve: taking over session {id} ({why})"));
    let Some(heartbeat) = heartbeat else {
        slot.launch(Work::Continue, None, || {});
        return;
    };
    let lost = heartbeat.lost();
    let events = served.events.clone();
    slot.launch(Work::Continue, Some(lost), move || {
        release_after(events, heartbeat)
    });
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
