//! Controls sent to a running session through the database, so any server
//! can take them and the one holding the session's lease applies them:
//!
//! 1. [`PgStore::send_control`] records the control (an approval is
//!    recorded once per call: sent again, to any server, the first one is
//!    found and answered) and notifies [`CONTROLS_CHANNEL`] with the
//!    session, in one transaction; it says who holds the lease (nobody:
//!    nothing recorded, nothing will apply it).
//! 2. The holder hears it (or finds it by [`PgStore::pending_controls`],
//!    the poll that covers a lost notification), applies it and settles
//!    it ([`PgStore::settle_control`]), which notifies [`SETTLED_CHANNEL`].
//! 3. The sender waits for the outcome ([`PgStore::control_outcome`]).
//!
//! The holder also keeps the approvals its run waits for on the lease row
//! ([`PgStore::set_waiting`]), so every server shows them; the row goes
//! with the lease.

use rein_core::StoreError;

use super::PgStore;
use super::error::{PgContext, PgFail};
use super::sessions::ensure_exists;

/// Notified with a session id when a control for it is recorded.
pub const CONTROLS_CHANNEL: &str = "rein_controls";
/// Notified with a control's id when it is settled.
pub const SETTLED_CHANNEL: &str = "rein_controls_settled";

/// How long a control may wait for the holder to apply it.
pub const CONTROL_LIFETIME: std::time::Duration = std::time::Duration::from_secs(30);

/// What a control does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlKind {
    /// Answer the approval of one call.
    Approval,
    Cancel,
    /// Switch the permission mode.
    Mode,
}

impl ControlKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ControlKind::Approval => "approval",
            ControlKind::Cancel => "cancel",
            ControlKind::Mode => "mode",
        }
    }

    fn parse(s: &str) -> Option<ControlKind> {
        [
            ControlKind::Approval,
            ControlKind::Cancel,
            ControlKind::Mode,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// A control waiting to be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    pub id: i64,
    pub session_id: String,
    pub kind: ControlKind,
    /// The call an approval answers.
    pub call_id: Option<String>,
    /// What the sender asked for (JSON of the front end's choosing).
    pub body: String,
}

/// How a control ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not applied yet.
    Pending,
    /// Applied by the holder.
    Applied,
    /// Refused by the holder, with why (the call no longer waits, ...).
    Refused(String),
}

/// What [`PgStore::send_control`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The recorded control: this one, or for an approval sent before,
    /// the first one (compare its body); `None` when nobody holds the
    /// session (nothing recorded).
    pub control: Option<(Control, Outcome)>,
    /// Who holds the session's lease now.
    pub holder: Option<String>,
}

fn outcome(state: Option<String>, answer: Option<String>) -> Outcome {
    match state.as_deref() {
        None => Outcome::Pending,
        Some("applied") => Outcome::Applied,
        Some(_) => Outcome::Refused(answer.unwrap_or_default()),
    }
}

const CONTROL_COLUMNS: &str = "id, session_id, kind, call_id, body, outcome, answer";

fn control_from_row(row: &tokio_postgres::Row) -> Result<(Control, Outcome), PgFail> {
    let kind: String = row.try_get(2).ctx("reading a control")?;
    let control = Control {
        id: row.try_get(0).ctx("reading a control")?,
        session_id: row.try_get(1).ctx("reading a control")?,
        kind: ControlKind::parse(&kind)
            .ok_or_else(|| PgFail::Corrupt(format!("a control of unknown kind `{kind}`")))?,
        call_id: row.try_get(3).ctx("reading a control")?,
        body: row.try_get(4).ctx("reading a control")?,
    };
    let state = outcome(
        row.try_get(5).ctx("reading a control")?,
        row.try_get(6).ctx("reading a control")?,
    );
    Ok((control, state))
}

impl PgStore {
    /// Record a control for session `session_id` (a full id) for its
    /// lease holder; see the module's steps.
    pub async fn send_control(
        &self,
        session_id: &str,
        kind: ControlKind,
        call_id: Option<&str>,
        body: &str,
    ) -> Result<Sent, StoreError> {
        let (id, call, body) = (
            session_id.to_string(),
            call_id.map(str::to_string),
            body.to_string(),
        );
        self.run("sending a control", move |mut c| async move {
            let tx = c.transaction().await.ctx("sending a control")?;
            ensure_exists(&tx, &id).await?;
            let holder: Option<String> = tx
                .query_opt(
                    "SELECT owner FROM session_leases WHERE session_id = $1 AND expires_at > now()",
                    &[&id],
                )
                .await
                .ctx("reading a session lease")?
                .map(|r| r.try_get(0))
                .transpose()
                .ctx("reading a session lease")?;
            let earlier = match (&call, kind) {
                (Some(call), ControlKind::Approval) => tx
                    .query_opt(
                        &format!(
                            "SELECT {CONTROL_COLUMNS} FROM session_controls
                             WHERE session_id = $1 AND kind = 'approval' AND call_id = $2"
                        ),
                        &[&id, call],
                    )
                    .await
                    .ctx("reading a control")?,
                _ => None,
            };
            if let Some(row) = earlier {
                let control = Some(control_from_row(&row)?);
                tx.commit().await.ctx("sending a control")?;
                return Ok(Sent { control, holder });
            }
            if holder.is_none() {
                tx.commit().await.ctx("sending a control")?;
                return Ok(Sent {
                    control: None,
                    holder,
                });
            }
            let row = tx
                .query_one(
                    "INSERT INTO session_controls (session_id, kind, call_id, body)
                     VALUES ($1, $2, $3, $4) RETURNING id",
                    &[&id, &kind.as_str(), &call, &body],
                )
                .await
                .ctx("sending a control")?;
            tx.execute("SELECT pg_notify($1, $2)", &[&CONTROLS_CHANNEL, &id])
                .await
                .ctx("sending a control")?;
            tx.commit().await.ctx("sending a control")?;
            let control = Control {
                id: row.try_get(0).ctx("sending a control")?,
                session_id: id,
                kind,
                call_id: call,
                body,
            };
            Ok(Sent {
                control: Some((control, Outcome::Pending)),
                holder,
            })
        })
        .await
    }

    /// The controls not yet applied to sessions whose lease `owner` holds
    /// (only `session_id`'s when given), oldest first; one older than
    /// [`CONTROL_LIFETIME`] (its sender stopped waiting) is never applied.
    pub async fn pending_controls(
        &self,
        owner: &str,
        session_id: Option<&str>,
    ) -> Result<Vec<Control>, StoreError> {
        let (owner, id) = (owner.to_string(), session_id.map(str::to_string));
        self.run("reading controls", move |c| async move {
            let rows = c
                .query(
                    "SELECT c.id, c.session_id, c.kind, c.call_id, c.body, c.outcome, c.answer
                     FROM session_controls c
                     JOIN session_leases l ON l.session_id = c.session_id
                     WHERE c.outcome IS NULL AND l.owner = $1
                       AND ($2::text IS NULL OR c.session_id = $2)
                       AND c.created_at > now() - make_interval(secs => $3)
                     ORDER BY c.id",
                    &[&owner, &id, &CONTROL_LIFETIME.as_secs_f64()],
                )
                .await
                .ctx("reading controls")?;
            rows.iter()
                .map(|r| control_from_row(r).map(|(c, _)| c))
                .collect()
        })
        .await
    }

    /// Record how control `id` ended (once: a settled one stays as it
    /// was) and notify [`SETTLED_CHANNEL`].
    pub async fn settle_control(
        &self,
        id: i64,
        result: Result<(), String>,
    ) -> Result<(), StoreError> {
        let (state, answer) = match result {
            Ok(()) => ("applied", None),
            Err(why) => ("refused", Some(why)),
        };
        self.run("settling a control", move |mut c| async move {
            let tx = c.transaction().await.ctx("settling a control")?;
            tx.execute(
                "UPDATE session_controls SET outcome = $2, answer = $3, settled_at = now()
                 WHERE id = $1 AND outcome IS NULL",
                &[&id, &state, &answer],
            )
            .await
            .ctx("settling a control")?;
            tx.execute(
                "SELECT pg_notify($1, $2)",
                &[&SETTLED_CHANNEL, &id.to_string()],
            )
            .await
            .ctx("settling a control")?;
            tx.commit().await.ctx("settling a control")
        })
        .await
    }

    /// How control `id` stands.
    pub async fn control_outcome(&self, id: i64) -> Result<Outcome, StoreError> {
        self.run("reading a control", move |c| async move {
            let row = c
                .query_opt(
                    "SELECT outcome, answer FROM session_controls WHERE id = $1",
                    &[&id],
                )
                .await
                .ctx("reading a control")?
                .ok_or_else(|| StoreError::NotFound(format!("control {id}")))?;
            Ok(outcome(
                row.try_get(0).ctx("reading a control")?,
                row.try_get(1).ctx("reading a control")?,
            ))
        })
        .await
    }

    /// Who holds session `session_id`'s unexpired lease, and the approvals
    /// its run waits for (JSON array; `None` when not running).
    pub async fn running(&self, session_id: &str) -> Result<Option<(String, String)>, StoreError> {
        let id = session_id.to_string();
        self.run("reading a session lease", move |c| async move {
            let row = c
                .query_opt(
                    "SELECT owner, coalesce(waiting, '[]') FROM session_leases
                     WHERE session_id = $1 AND expires_at > now()",
                    &[&id],
                )
                .await
                .ctx("reading a session lease")?;
            row.map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .transpose()
                .ctx("reading a session lease")
        })
        .await
    }

    /// The approvals `owner`'s run of the session waits for now (a JSON
    /// array), on its lease row.
    pub async fn set_waiting(
        &self,
        session_id: &str,
        owner: &str,
        waiting: &str,
    ) -> Result<(), StoreError> {
        let (id, owner, waiting) = (
            session_id.to_string(),
            owner.to_string(),
            waiting.to_string(),
        );
        self.run("recording waiting approvals", move |c| async move {
            c.execute(
                "UPDATE session_leases SET waiting = $3 WHERE session_id = $1 AND owner = $2",
                &[&id, &owner, &waiting],
            )
            .await
            .ctx("recording waiting approvals")?;
            Ok(())
        })
        .await
    }

    /// The session's permission mode as last set through any server.
    pub async fn session_mode(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        let id = session_id.to_string();
        self.run("reading a session's mode", move |c| async move {
            let row = c
                .query_opt("SELECT mode FROM sessions WHERE id = $1", &[&id])
                .await
                .ctx("reading a session's mode")?
                .ok_or_else(|| StoreError::NotFound(id.clone()))?;
            row.try_get(0).ctx("reading a session's mode")
        })
        .await
    }

    /// Set the session's permission mode for every server's next prompt.
    pub async fn set_session_mode(&self, session_id: &str, mode: &str) -> Result<(), StoreError> {
        let (id, mode) = (session_id.to_string(), mode.to_string());
        self.run("setting a session's mode", move |c| async move {
            let n = c
                .execute("UPDATE sessions SET mode = $2 WHERE id = $1", &[&id, &mode])
                .await
                .ctx("setting a session's mode")?;
            if n == 0 {
                return Err(StoreError::NotFound(id).into());
            }
            Ok(())
        })
        .await
    }
}
