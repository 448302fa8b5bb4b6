//! Keeping a lease alive: a tokio task renews it every third of its time
//! to live (or at a period of the caller's) and says through a
//! [`CancellationToken`] when it is lost.
//!
//! A renewal that fails because the database is briefly unreachable is
//! retried at the next beat. The lease counts as lost when another owner
//! took it over, or when no renewal can succeed any more before the lease
//! could expire: the database set its expiry a time to live after the last
//! good renewal was sent, and a holder that cannot know whether it still
//! holds must stop before then rather than risk two servers driving one
//! session. So each renewal is bounded to answer a margin before that
//! moment, and the heartbeat gives up when the next one would have no time
//! left.

use std::future::Future;
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
        let period = self.ttl() / 3;
        self.keep_alive_every(period)
    }

    /// Renew this lease every `period` (at least 1 ms, at most its time to
    /// live), as [`keep_alive`](Lease::keep_alive) does every third of it.
    pub fn keep_alive_every(self, period: Duration) -> Heartbeat {
        let lost = CancellationToken::new();
        let stop = CancellationToken::new();
        let session_id = self.session_id().to_string();
        let period = period.clamp(
            Duration::from_millis(1),
            self.ttl().max(Duration::from_millis(1)),
        );
        let task = tokio::spawn(beat(self, period, stop.clone(), lost.clone()));
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
    period: Duration,
    stop: CancellationToken,
    lost: CancellationToken,
) -> Result<Lease, LeaseError> {
    let ttl = lease.ttl();
    let renew = |bound| lease.renew_within(Some(bound));
    keep_renewing(ttl, period, renew, &stop, &lost).await?;
    Ok(lease)
}

/// Renew every `period` with `renew(bound)`, which must answer within
/// `bound`, until `stop` (`Ok`) or the lease is lost (`lost` cancelled,
/// and why).
async fn keep_renewing<F, Fut>(
    ttl: Duration,
    period: Duration,
    mut renew: F,
    stop: &CancellationToken,
    lost: &CancellationToken,
) -> Result<(), LeaseError>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = Result<(), LeaseError>>,
{
    // Slack for the moment between a renewal's answer and the holder
    // acting on it.
    let margin = period / 4;
    // When the last renewal that worked was sent: the database set the
    // expiry after that moment, so the lease holds until at least here + ttl.
    let mut last_good = Instant::now();
    let give_up = |e: LeaseError| {
        lost.cancel();
        Err(e)
    };
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            () = tokio::time::sleep(period) => {}
        }
        let sent = Instant::now();
        let room = (last_good + ttl)
            .saturating_duration_since(sent)
            .saturating_sub(margin);
        if room.is_zero() {
            return give_up(out_of_time(ttl));
        }
        // Half a period at most: one renewal that hangs leaves room for
        // another try.
        match renew(room.min(period / 2)).await {
            Ok(()) => last_good = sent,
            Err(e @ LeaseError::Lost { .. }) => return give_up(e),
            // No room for another try after the next sleep.
            Err(e)
                if (last_good + ttl).saturating_duration_since(Instant::now())
                    <= period + margin =>
            {
                return give_up(e);
            }
            Err(_) => {}
        }
    }
}

/// Why a heartbeat gave up when it could not even try in time (the
/// process was not scheduled for most of a time to live).
fn out_of_time(ttl: Duration) -> LeaseError {
    LeaseError::Store(StoreError::Other(format!(
        "no lease renewal could be sent within its time to live ({} ms)",
        ttl.as_millis()
    )))
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

#[cfg(test)]
mod tests;
