//! Keeping a lease alive: a tokio task renews it every third of its time
//! to live and says through a [`CancellationToken`] when it is lost.
//!
//! A renewal that fails because the database is briefly unreachable is
//! retried at the next beat. The lease counts as lost when another owner
//! took it over, or when no renewal succeeded for a whole time to live
//! since the last good one was sent: by then the database may have let it
//! expire, and a holder that cannot know must stop rather than risk two
//! servers driving one session.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::lease::{Lease, LeaseError};
use rein_core::StoreError;

/// A lease being renewed in the background. Dropping it stops the
/// renewals (the lease then expires after its time to live); call
/// [`release`](Heartbeat::release) to hand the session over at once.
#[derive(Debug)]
pub struct Heartbeat {
    session_id: String,
    lost: CancellationToken,
    stop: DropGuard,
    task: JoinHandle<Result<Lease, LeaseError>>,
}

impl Lease {
    /// Renew this lease every `ttl / 3` on a tokio task until the returned
    /// [`Heartbeat`] is stopped or dropped, or the lease is lost. Call it
    /// from within a tokio runtime.
    pub fn keep_alive(self) -> Heartbeat {
        let lost = CancellationToken::new();
        let stop = CancellationToken::new();
        let session_id = self.session_id().to_string();
        let task = tokio::spawn(beat(self, stop.clone(), lost.clone()));
        Heartbeat {
            session_id,
            lost,
            stop: stop.drop_guard(),
            task,
        }
    }
}

/// The renewal loop; returns the lease when stopped, or why it was lost.
async fn beat(
    lease: Lease,
    stop: CancellationToken,
    lost: CancellationToken,
) -> Result<Lease, LeaseError> {
    let ttl = lease.ttl();
    let period = (ttl / 3).max(Duration::from_millis(1));
    // When the last renewal that worked was sent: the database set the
    // expiry after that moment, so the lease holds until at least here + ttl.
    let mut last_good = Instant::now();
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(lease),
            () = tokio::time::sleep(period) => {}
        }
        let sent = Instant::now();
        // Bounded where it runs, so a slow renewal never lands late.
        let renewed = lease.renew_within(Some(period)).await;
        match renewed {
            Ok(()) => last_good = sent,
            Err(e @ LeaseError::Lost { .. }) => {
                lost.cancel();
                return Err(e);
            }
            // Unreachable for now: retry while the lease surely holds.
            Err(e) if last_good.elapsed() + period >= ttl => {
                lost.cancel();
                return Err(e);
            }
            Err(_) => {}
        }
    }
}

impl Heartbeat {
    /// The session whose lease this keeps.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Cancelled when the lease is lost: whoever drives the session should
    /// stop at once. Clones share the signal.
    pub fn lost(&self) -> CancellationToken {
        self.lost.clone()
    }

    /// Whether the lease was lost.
    pub fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }

    /// Stop renewing and get the lease back, or the error that lost it.
    pub async fn stop(self) -> Result<Lease, LeaseError> {
        let Heartbeat {
            session_id,
            stop,
            task,
            ..
        } = self;
        stop.disarm().cancel();
        match task.await {
            Ok(result) => result,
            Err(e) => Err(LeaseError::Store(StoreError::Other(format!(
                "the lease heartbeat of session {session_id} failed: {e}"
            )))),
        }
    }

    /// Stop renewing and release the lease.
    pub async fn release(self) -> Result<(), LeaseError> {
        self.stop().await?.release().await
    }
}
