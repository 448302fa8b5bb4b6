//! Session leases: one server drives a session at a time.
//!
//! A lease is a row naming the session, its owner (a server's name) and
//! when it expires. Every judgement of time is made by the database's
//! clock (`now()`), so servers whose clocks disagree still agree on who
//! holds what. An owner keeps its lease by renewing it (see
//! [`Heartbeat`](super::Heartbeat)); once it expires any other server may
//! take it over, and the old holder's next renewal fails with
//! [`LeaseError::Lost`]. A lease that expired and was not taken over is
//! simply renewed: nobody else drove the session meanwhile.
//!
//! Acquiring again with the same owner takes the lease over at once (a
//! server restarting picks its sessions up without waiting for them to
//! expire); the older [`Lease`] value then counts as lost.
//!
//! While this store holds a session's lease, its writes to that session
//! carry the lease's token and fail once another holder has it (see the
//! `fence` module).

use std::time::Duration;

use rein_core::StoreError;

use super::error::{PgContext, PgFail};
use super::sessions::ensure_exists;
use super::{PgStore, seconds};

/// The longest lease: a server gone for longer than this should not keep
/// its sessions from everyone else.
const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Extend a lease still held with the given token.
const RENEW: &str = "UPDATE session_leases
    SET renewed_at = now(), expires_at = now() + make_interval(secs => $3)
    WHERE session_id = $1 AND token = $2";

/// Why a lease could not be had or kept.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another owner holds an unexpired lease on the session.
    #[error(
        "session {session_id} is driven by {owner}; its lease expires in {} ms unless renewed",
        .expires_in.as_millis()
    )]
    Held {
        /// The session asked for.
        session_id: String,
        /// Who holds it.
        owner: String,
        /// How long until the lease expires, by the database's clock.
        expires_in: Duration,
    },
    /// The lease expired and another owner took it over, or it was
    /// released or deleted with its session: this holder must stop.
    #[error("lost the lease on session {session_id}: {}", match .now_held_by {
        Some(owner) => format!("{owner} took it over after it expired"),
        None => "it is no longer held".to_string(),
    })]
    Lost {
        /// The session whose lease was lost.
        session_id: String,
        /// Who holds it now, if anyone.
        now_held_by: Option<String>,
    },
    /// The time to live asked for is zero or longer than a day.
    #[error("a lease lasts between 1 ms and 24 h; {} ms was asked for", .0.as_millis())]
    InvalidTtl(Duration),
    /// The database failed (unreachable, session not found, ...).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A held lease on one session. Dropping it does not release it: it then
/// expires after its time to live. Keep it alive with
/// [`keep_alive`](Lease::keep_alive) or [`renew`](Lease::renew).
#[derive(Debug)]
pub struct Lease {
    store: PgStore,
    session_id: String,
    owner: String,
    token: i64,
    ttl: Duration,
}

/// A session whose lease expired: its server stopped renewing, most likely
/// mid-run, and another server may take it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanedSession {
    /// The session's full id.
    pub session_id: String,
    /// Who held it last.
    pub owner: String,
    /// How long ago the lease expired, by the database's clock.
    pub expired_for: Duration,
}

/// A non-negative number of seconds from the database as a `Duration`.
fn from_seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::ZERO)
}

fn check_ttl(ttl: Duration) -> Result<(), LeaseError> {
    if ttl < Duration::from_millis(1) || ttl > MAX_TTL {
        return Err(LeaseError::InvalidTtl(ttl));
    }
    Ok(())
}

/// What an acquisition found.
enum Acquired {
    /// The lease is ours, with this token.
    Ours(i64),
    /// Someone else's, for this many more seconds.
    Held { owner: String, expires_in: f64 },
}

impl PgStore {
    /// Take the lease on session `session_id` (a full id) for `owner`,
    /// valid for `ttl` by the database's clock. Fails with
    /// [`LeaseError::Held`] while another owner holds an unexpired one.
    pub async fn acquire_lease(
        &self,
        session_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Lease, LeaseError> {
        check_ttl(ttl)?;
        let (session_id, owner) = (session_id.to_string(), owner.to_string());
        let (id, who) = (session_id.clone(), owner.clone());
        let outcome = self
            .run("taking a session lease", move |mut c| async move {
                let (session_id, owner) = (id.as_str(), who.as_str());
                let tx = c.transaction().await.ctx("taking a session lease")?;
                ensure_exists(&tx, session_id).await?;
                // On a conflict the existing row is locked even when the
                // WHERE refuses the update, so the holder read next is the
                // one that refused us.
                let taken = tx
                    .query_opt(
                        "INSERT INTO session_leases
                             (session_id, owner, token, acquired_at, renewed_at, expires_at)
                         VALUES ($1, $2, nextval('session_lease_tokens'), now(), now(),
                                 now() + make_interval(secs => $3))
                         ON CONFLICT (session_id) DO UPDATE SET
                             owner = excluded.owner, token = excluded.token,
                             acquired_at = excluded.acquired_at,
                             renewed_at = excluded.renewed_at, expires_at = excluded.expires_at,
                             waiting = NULL
                         WHERE session_leases.expires_at <= now()
                            OR session_leases.owner = excluded.owner
                         RETURNING token",
                        &[&session_id, &owner, &seconds(ttl)],
                    )
                    .await
                    .ctx("taking a session lease")?;
                let outcome = match taken {
                    Some(row) => Acquired::Ours(row.try_get(0).ctx("taking a session lease")?),
                    None => holder(&tx, session_id).await?,
                };
                tx.commit().await.ctx("committing a session lease")?;
                Ok(outcome)
            })
            .await?;
        match outcome {
            Acquired::Ours(token) => {
                self.fences.hold(&session_id, token);
                Ok(Lease {
                    store: self.clone(),
                    session_id,
                    owner,
                    token,
                    ttl,
                })
            }
            Acquired::Held { owner, expires_in } => Err(LeaseError::Held {
                session_id,
                owner,
                expires_in: from_seconds(expires_in),
            }),
        }
    }

    /// The sessions whose lease expired at least `grace` ago (zero: every
    /// expired one), longest expired first. A lease released at the end
    /// of a run is gone, so these are the runs a server abandoned.
    pub async fn list_orphaned(&self, grace: Duration) -> Result<Vec<OrphanedSession>, StoreError> {
        self.run("listing orphaned sessions", move |c| async move {
            let rows = c
                .query(
                    "SELECT session_id, owner,
                            EXTRACT(EPOCH FROM (now() - expires_at))::float8
                     FROM session_leases
                     WHERE expires_at <= now() - make_interval(secs => $1)
                     ORDER BY expires_at, session_id",
                    &[&seconds(grace)],
                )
                .await
                .ctx("listing orphaned sessions")?;
            rows.iter()
                .map(|r| {
                    Ok(OrphanedSession {
                        session_id: r.try_get(0)?,
                        owner: r.try_get(1)?,
                        expired_for: from_seconds(r.try_get(2)?),
                    })
                })
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()
                .ctx("listing orphaned sessions")
        })
        .await
    }
}

/// The current holder of a session's lease (its row is locked by the
/// caller's refused insert).
async fn holder(
    tx: &tokio_postgres::Transaction<'_>,
    session_id: &str,
) -> Result<Acquired, PgFail> {
    let row = tx
        .query_opt(
            "SELECT owner, GREATEST(EXTRACT(EPOCH FROM (expires_at - now())), 0)::float8
             FROM session_leases WHERE session_id = $1",
            &[&session_id],
        )
        .await
        .ctx("reading a session lease")?
        .ok_or_else(|| {
            StoreError::Other(format!(
                "the lease on session {session_id} changed while it was being taken; try again"
            ))
        })?;
    Ok(Acquired::Held {
        owner: row.try_get(0).ctx("reading a session lease")?,
        expires_in: row.try_get(1).ctx("reading a session lease")?,
    })
}

impl Lease {
    /// The session this lease is on.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Who holds it.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// How long each renewal keeps it.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Extend the lease by its time to live from now (the database's
    /// clock). Fails with [`LeaseError::Lost`] when another owner took it
    /// over, or it was released or its session deleted.
    pub async fn renew(&self) -> Result<(), LeaseError> {
        self.renew_within(None).await
    }

    /// [`renew`](Self::renew), given up after `limit` (then the renewal
    /// is not left running to extend the lease later).
    pub(crate) async fn renew_within(&self, limit: Option<Duration>) -> Result<(), LeaseError> {
        let (id, token, ttl) = (self.session_id.clone(), self.token, seconds(self.ttl));
        let still_ours = self
            .store
            .run_within("renewing a session lease", limit, move |mut c| async move {
                // Every held lease renews every third of its time to live,
                // so the statement is kept prepared.
                let statement = c.prepared(RENEW).await.ctx("renewing a session lease")?;
                let renewed = c
                    .execute(&statement, &[&id, &token, &ttl])
                    .await
                    .ctx("renewing a session lease")?;
                if renewed == 1 {
                    return Ok(None);
                }
                let now_held_by = c
                    .query_opt(
                        "SELECT owner FROM session_leases WHERE session_id = $1",
                        &[&id],
                    )
                    .await
                    .ctx("reading a session lease")?
                    .map(|r| r.try_get::<_, String>(0))
                    .transpose()
                    .ctx("reading a session lease")?;
                Ok(Some(now_held_by))
            })
            .await?;
        match still_ours {
            None => Ok(()),
            Some(now_held_by) => Err(self.lost(now_held_by)),
        }
    }

    /// Give the lease up now, so another server may take the session at
    /// once. Fails with [`LeaseError::Lost`] when it was no longer ours.
    pub async fn release(self) -> Result<(), LeaseError> {
        let (id, token) = (self.session_id.clone(), self.token);
        // Forgotten first: once the row is gone, a fenced write would fail.
        self.store.fences.forget(&id, token);
        let released = self
            .store
            .run("releasing a session lease", move |c| async move {
                c.execute(
                    "DELETE FROM session_leases WHERE session_id = $1 AND token = $2",
                    &[&id, &token],
                )
                .await
                .ctx("releasing a session lease")
            })
            .await?;
        if released == 1 {
            Ok(())
        } else {
            Err(self.lost(None))
        }
    }

    fn lost(&self, now_held_by: Option<String>) -> LeaseError {
        LeaseError::Lost {
            session_id: self.session_id.clone(),
            now_held_by,
        }
    }
}
