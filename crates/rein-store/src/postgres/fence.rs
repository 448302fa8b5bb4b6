//! Fencing: the writes a run makes to a session are refused once this
//! process no longer holds the session's lease.
//!
//! A server slow to notice that its lease was taken over (a long pause, a
//! renewal still within its bound) could otherwise store a message or an
//! event after another server took the session over, where it would land
//! among the new run's. So:
//!
//! 1. Taking a lease records its token here, per session ([`Fences`]);
//!    giving it back forgets it (only that token: a newer holding by the
//!    same store stays recorded).
//! 2. Each write a run makes to a session whose lease this store holds
//!    (a message, events, the last stop, the todos, a compaction) carries
//!    the token and is made only if the lease row still has it, reading
//!    that row `FOR SHARE` in the same statement or transaction. A
//!    takeover updates the row, so it waits until such a write commits
//!    (and then reads it), or the write waits for the takeover and finds
//!    another token. Either way nothing a stale holder writes lands after
//!    the new holder began.
//! 3. A refused write fails with [`StoreError::LeaseLost`], naming who
//!    holds the session now; the run stops on it like on any store
//!    failure.
//!
//! A session whose lease this store does not hold (the CLI on PostgreSQL,
//! a server between runs) is written unfenced, as before.

use std::collections::HashMap;
use std::sync::Mutex;

use rein_core::StoreError;
use tokio_postgres::GenericClient;

use super::error::{PgContext, PgFail};

/// The lease token this store holds per session.
#[derive(Debug, Default)]
pub(crate) struct Fences(Mutex<HashMap<String, i64>>);

impl Fences {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes to `session_id` now need `token`.
    pub(crate) fn hold(&self, session_id: &str, token: i64) {
        self.map().insert(session_id.to_string(), token);
    }

    /// The holding with `token` ended: writes go unfenced again, unless a
    /// newer holding replaced it.
    pub(crate) fn forget(&self, session_id: &str, token: i64) {
        let mut map = self.map();
        if map.get(session_id) == Some(&token) {
            map.remove(session_id);
        }
    }

    /// The token writes to `session_id` need, if any.
    pub(crate) fn token(&self, session_id: &str) -> Option<i64> {
        self.map().get(session_id).copied()
    }
}

/// Inside a transaction: fail unless session `id`'s lease still has
/// `token`, and keep the lease row from changing until the commit.
pub(crate) async fn check_held(
    db: &impl GenericClient,
    id: &str,
    token: Option<i64>,
) -> Result<(), PgFail> {
    let Some(token) = token else { return Ok(()) };
    let held = db
        .query_opt(
            "SELECT 1 FROM session_leases WHERE session_id = $1 AND token = $2 FOR SHARE",
            &[&id, &token],
        )
        .await
        .ctx("checking a session lease")?;
    match held {
        Some(_) => Ok(()),
        None => Err(refused(db, id).await),
    }
}

/// Why a fenced write changed nothing: no session, or the lease is no
/// longer this holding's.
pub(crate) async fn refused(db: &impl GenericClient, id: &str) -> PgFail {
    let row = db
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1),
                    (SELECT owner FROM session_leases WHERE session_id = $1)",
            &[&id],
        )
        .await
        .ctx("reading a session lease");
    let row = match row {
        Ok(row) => row,
        Err(e) => return e,
    };
    let exists: bool = row.try_get(0).unwrap_or(true);
    if !exists {
        return StoreError::NotFound(id.to_string()).into();
    }
    StoreError::LeaseLost {
        session_id: id.to_string(),
        now_held_by: row.try_get(1).ok().flatten(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_holding_forgets_only_its_own_token() {
        let fences = Fences::default();
        fences.hold("s", 1);
        fences.hold("s", 2); // taken again by this store
        fences.forget("s", 1); // the older holding given back late
        assert_eq!(fences.token("s"), Some(2));
        fences.forget("s", 2);
        assert_eq!(fences.token("s"), None);
    }
}
